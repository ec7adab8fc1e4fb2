// MainWindow: assembles the views and wires the format picker to the grid plot.
// Exercise: `quantscope --format e2m1fn`, or headless `QT_QPA_PLATFORM=offscreen quantscope --screenshot x.png`.
#include "mainwindow.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QGridLayout>
#include <QHash>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabWidget>

#include "cuda/device.h"
#include "format/encode_simd.h"
#include "format/format.h"
#include "formatgridplot.h"
#include "latencypanel.h"

namespace {

QString describe(const qs::Format& f) {
  if (f.is_int()) return QStringLiteral("%1-bit integer, range up to %2").arg(f.bits).arg(f.max_finite);
  return QStringLiteral("%1-bit float, E%2 M%3, bias %4, max %5")
      .arg(f.bits)
      .arg(f.ebits)
      .arg(f.mbits)
      .arg(f.bias)
      .arg(f.max_finite, 0, 'g', 6);
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(QStringLiteral("QuantScope"));
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  // Later views (Error, Training, Latency) add their own tabs next to this one.
  m_tabs->addTab(buildFormatsTab(), QStringLiteral("Formats"));
  m_tabs->addTab(new LatencyPanel, QStringLiteral("Latency"));
  setCentralWidget(m_tabs);
  buildMenus();
  buildStatusBar();
  resize(1100, 700);
}

QWidget* MainWindow::buildFormatsTab() {
  auto* page = new QWidget;
  m_formatCombo = new QComboBox;
  m_formatCombo->setObjectName(QStringLiteral("formatCombo"));
  m_formatCombo->setPlaceholderText(QStringLiteral("(custom)"));  // shown while a custom spec rules
  m_formatCombo->setMinimumContentsLength(16);
  m_formatCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  for (const qs::Format& f : qs::named_formats()) {
    const QString name = QString::fromStdString(f.name);
    m_formatCombo->addItem(name, name);
    m_formatCombo->setItemData(m_formatCombo->count() - 1, describe(f), Qt::ToolTipRole);
  }
  m_formatCombo->insertSeparator(m_formatCombo->count());
  m_formatCombo->addItem(QStringLiteral("8-bit sweep (training studies)"));
  if (auto* model = qobject_cast<QStandardItemModel*>(m_formatCombo->model()))
    model->item(m_formatCombo->count() - 1)->setEnabled(false);  // a header, not a choice
  for (const std::string& spec : qs::sweep_8bit_specs()) {
    const qs::Format f = qs::parse_format(spec);  // the table's own specs: cannot fail
    const QString name = QString::fromStdString(spec);
    m_formatCombo->addItem(QStringLiteral("  ") + name, QString::fromStdString(f.name));
    m_formatCombo->setItemData(m_formatCombo->count() - 1, describe(f), Qt::ToolTipRole);
  }

  m_customSpec = new QLineEdit;
  m_customSpec->setObjectName(QStringLiteral("customSpecEdit"));
  m_customSpec->setPlaceholderText(QStringLiteral("custom spec, e.g. e3m3:bias=2:specials=none"));
  m_customSpec->setClearButtonEnabled(true);
  m_specMessage = new QLabel;
  m_specMessage->setObjectName(QStringLiteral("specMessageLabel"));
  m_specMessage->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_specMessage->setMinimumHeight(m_specMessage->fontMetrics().height());  // no jump on errors

  m_logScale = new QCheckBox(QStringLiteral("Log scale"));
  m_logScale->setObjectName(QStringLiteral("logScaleCheck"));
  m_logScale->setToolTip(QStringLiteral("Log axis of |value|: shows every binade, down to the subnormals"));

  m_plot = new FormatGridPlot;
  m_plot->setObjectName(QStringLiteral("formatGridPlot"));

  auto* grid = new QGridLayout;
  grid->addWidget(new QLabel(QStringLiteral("Format:")), 0, 0);
  grid->addWidget(m_formatCombo, 0, 1);
  grid->addItem(new QSpacerItem(16, 0), 0, 2);
  grid->addWidget(new QLabel(QStringLiteral("Custom:")), 0, 3);
  grid->addWidget(m_customSpec, 0, 4);
  grid->addItem(new QSpacerItem(16, 0), 0, 5);
  grid->addWidget(m_logScale, 0, 6);
  grid->addWidget(m_specMessage, 1, 4, 1, 3);
  grid->setColumnStretch(4, 1);
  grid->setVerticalSpacing(2);

  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(10, 8, 10, 4);
  layout->addLayout(grid);
  layout->addWidget(m_plot, 1);

  connect(m_formatCombo, &QComboBox::currentIndexChanged, this, &MainWindow::applyComboEntry);
  connect(m_customSpec, &QLineEdit::textChanged, this, &MainWindow::applyCustomSpec);
  connect(m_logScale, &QCheckBox::toggled, m_plot, &FormatGridPlot::setLogScale);
  showSpecHint();
  syncComboTo(QString::fromStdString(m_plot->format().name));
  return page;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  QAction* exportAction = file->addAction(QStringLiteral("&Export plot…"), this, &MainWindow::exportPlot);
  exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  exportAction->setStatusTip(QStringLiteral("Save the plot as an image or document, or its data as CSV"));
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
}

void MainWindow::buildStatusBar() {
  statusBar()->addWidget(new QLabel(QStringLiteral("Drag to pan · wheel to zoom · double-click to reset")));
  auto* simd = new QLabel(QStringLiteral("CPU: %1").arg(qs::to_string(qs::best_simd_level())));
  simd->setObjectName(QStringLiteral("simdLabel"));
  simd->setToolTip(QStringLiteral("SIMD level the CPU encoders use"));
  const QString gpu = QString::fromStdString(qs::cuda::device_info().message);
  auto* cuda = new QLabel(gpu);
  cuda->setObjectName(QStringLiteral("cudaLabel"));
  cuda->setToolTip(gpu);
  auto* separator = new QFrame;
  separator->setFrameShape(QFrame::VLine);
  separator->setFrameShadow(QFrame::Sunken);
  statusBar()->addPermanentWidget(simd);
  statusBar()->addPermanentWidget(separator);
  statusBar()->addPermanentWidget(cuda);
}

void MainWindow::applyComboEntry(int index) {
  const QString name = m_formatCombo->itemData(index).toString();
  if (index < 0 || name.isEmpty()) return;
  try {
    m_plot->setFormat(qs::parse_format(name.toStdString()));
  } catch (const qs::FormatError& e) {  // entries come from the table; kept so a bad row cannot crash the UI
    m_specMessage->setText(QString::fromUtf8(e.what()));
    return;
  }
  // The combo now rules: a stale custom spec next to it would be misleading.
  const QSignalBlocker block(m_customSpec);
  m_customSpec->clear();
  showSpecHint();
}

void MainWindow::applyCustomSpec(const QString& text) {
  if (text.trimmed().isEmpty()) {
    showSpecHint();
    return;
  }
  qs::Format f;
  try {
    f = qs::parse_format(text.toStdString());
  } catch (const qs::FormatError& e) {
    m_specMessage->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_specMessage->setText(QString::fromUtf8(e.what()));
    return;  // half-typed specs are normal: keep showing the last good format
  }
  showSpecHint();
  m_plot->setFormat(f);
  syncComboTo(QString::fromStdString(f.name));
}

void MainWindow::showSpecHint() {
  m_specMessage->setStyleSheet(QStringLiteral("color: #777;"));
  m_specMessage->setText(QStringLiteral("e<E>m<M>[:bias=B][:specials=ieee|fn|fnuz|none][:unsigned]"));
}

void MainWindow::syncComboTo(const QString& name) {
  const QSignalBlocker block(m_formatCombo);
  m_formatCombo->setCurrentIndex(m_formatCombo->findData(name));  // -1 shows "(custom)"
}

bool MainWindow::selectFormat(const QString& spec, QString* error) {
  qs::Format f;
  try {
    f = qs::parse_format(spec.toStdString());
  } catch (const qs::FormatError& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  const int index = m_formatCombo->findData(QString::fromStdString(f.name));
  if (index >= 0) {
    m_formatCombo->setCurrentIndex(index);
    applyComboEntry(index);  // in case it was already current
  } else {
    m_customSpec->setText(spec);
  }
  return true;
}

void MainWindow::setLogScale(bool on) { m_logScale->setChecked(on); }

void MainWindow::exportPlot() {
  static const QHash<QString, QString> kinds = {
      {QStringLiteral("png"), QStringLiteral("PNG image")},
      {QStringLiteral("pdf"), QStringLiteral("PDF document")},
      {QStringLiteral("svg"), QStringLiteral("SVG drawing")},
      {QStringLiteral("csv"), QStringLiteral("CSV data: value,spacing")}};
  QStringList filters;
  for (const QString& suffix : FormatGridPlot::exportSuffixes())
    filters << QStringLiteral("%1 (*.%2)").arg(kinds.value(suffix, suffix.toUpper()), suffix);
  QString name = QString::fromStdString(m_plot->format().name);
  name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]")), QStringLiteral("_"));
  QString filter = filters.front();
  QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export plot"),
                                              QDir::home().filePath(name + QStringLiteral("-grid.png")),
                                              filters.join(QStringLiteral(";;")), &filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty())  // take it from the chosen filter, "... (*.pdf)"
    path += filter.mid(filter.lastIndexOf(u'.')).chopped(1);
  QString error;
  if (!m_plot->exportTo(path, &error)) {
    QMessageBox::warning(this, QStringLiteral("Export failed"), error);
    return;
  }
  statusBar()->showMessage(QStringLiteral("Exported %1").arg(QDir::toNativeSeparators(path)), 5000);
}
