// MainWindow: assembles the panels and wires data → schemes → views; menus, drag and drop, demos,
// report export and persisted settings. Exercise: `quantscope`, tests/tst_mainwindow.cpp.
#include "io/dtype.h"
#include "mainwindow.h"
#include "blockscales/blockscalespanel.h"
#include "conformancedialog.h"
#include "observers/observerspanel.h"
#include "shared/theme.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDeadlineTimer>
#include <QActionGroup>
#include <QDir>
#include <QWhatsThis>
#include <QDialogButtonBox>
#include <QDialog>
#include <QTextBrowser>
#include <QGuiApplication>
#include <QScreen>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QProgressDialog>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

#include <cstdio>
#include <memory>

#include "cuda/device.h"
#include "dataloader.h"
#include "shared/elidedlabel.h"
#include "error/errorpanel.h"
#include "format/encode_simd.h"
#include "formats/formatgridplot.h"
#include "formats/formatspanel.h"
#include "latency/latencypanel.h"
#include "shared/plotexport.h"
#include "reportwriter.h"
#include "schemelist.h"
#include "setupdock.h"
#include "model/sqnrheatmap.h"
#include "conventions/conventionspanel.h"
#include "training/trainingpanel.h"
#include "formats/valueinspector.h"

namespace {
const QStringList kTabNames = {QStringLiteral("Formats"), QStringLiteral("Error"),    QStringLiteral("Model"),
                               QStringLiteral("Training"), QStringLiteral("Latency"), QStringLiteral("Observers"),
                               QStringLiteral("Block scales"), QStringLiteral("Conventions")};
constexpr int kMaxRecent = 10;
}  // namespace

MainWindow::MainWindow(QWidget* parent, bool persistent) : QMainWindow(parent), m_persistent(persistent) {
  setWindowTitle(QStringLiteral("QuantScope"));
  setObjectName(QStringLiteral("mainWindow"));
  setAcceptDrops(true);
  setDockNestingEnabled(true);

  m_loader = new DataLoader(this);
  m_formats = new FormatsPanel;
  m_error = new ErrorPanel;
  m_error->setObjectName(QStringLiteral("errorPanel"));
  m_heatmap = new SqnrHeatmap;
  m_heatmap->setObjectName(QStringLiteral("sqnrHeatmap"));
  m_training = new TrainingPanel;
  m_training->setObjectName(QStringLiteral("trainingPanel"));
  m_latency = new LatencyPanel;
  m_latency->setObjectName(QStringLiteral("latencyPanel"));
  m_observers = new ObserversPanel;
  m_observers->setObjectName(QStringLiteral("observersPanel"));
  m_blockScales = new BlockScalesPanel;
  m_blockScales->setObjectName(QStringLiteral("blockScalesPanel"));
  m_conventions = new ConventionsPanel;
  m_conventions->setObjectName(QStringLiteral("conventionsPanel"));

  m_tabs = new QTabWidget;
  m_tabs->setObjectName(QStringLiteral("viewTabs"));
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(m_formats, kTabNames[0]);
  m_tabs->addTab(m_error, kTabNames[1]);
  m_tabs->addTab(m_heatmap, kTabNames[2]);
  m_tabs->addTab(m_training, kTabNames[3]);
  m_tabs->addTab(m_latency, kTabNames[4]);
  m_tabs->addTab(m_observers, kTabNames[5]);
  m_tabs->addTab(m_blockScales, kTabNames[6]);
  m_tabs->addTab(m_conventions, kTabNames[7]);
  m_tabs->setTabToolTip(7, QStringLiteral("Where libraries' conventions (ml_dtypes, torch, satfinite, QPyTorch, "
                                          "microxcaling, torch's int8 rules) disagree on a format"));
  m_tabs->setTabToolTip(0, QStringLiteral("What a format can represent: values, spacing, bits"));
  m_tabs->setTabToolTip(1, QStringLiteral("What each scheme does to the current tensor"));
  m_tabs->setTabToolTip(2, QStringLiteral("SQNR of every tensor of a model file under every scheme"));

  auto* central = new QWidget;
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->setSpacing(0);
  cl->addWidget(buildDemoBar());
  cl->addWidget(m_tabs, 1);
  setCentralWidget(central);

  m_setup = new SetupDock(this);
  addDockWidget(Qt::LeftDockWidgetArea, m_setup);
  m_log = new QPlainTextEdit;
  m_log->setObjectName(QStringLiteral("logView"));
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(5000);
  auto* logDock = new QDockWidget(QStringLiteral("Log"), this);
  logDock->setObjectName(QStringLiteral("logDock"));
  logDock->setWidget(m_log);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  resizeDocks({logDock}, {90}, Qt::Vertical);
  resizeDocks({m_setup}, {370}, Qt::Horizontal);

  buildMenus();
  buildStatusBar();

  connect(m_setup, &SetupDock::syntheticChanged, this, &MainWindow::reloadData);
  connect(m_setup, &SetupDock::tensorChosen, this, [this](const QString& path, const QString& tensor) {
    log(QStringLiteral("Loading %1 from %2").arg(tensor, QDir::toNativeSeparators(path)));
    m_loader->loadTensor(path, tensor);
  });
  connect(m_setup, &SetupDock::openRequested, this, &MainWindow::openFileDialog);
  connect(m_setup, &SetupDock::fileAnalysisRequested, this, &MainWindow::analyseFile);
  connect(m_heatmap, &SqnrHeatmap::openRequested, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, QStringLiteral("Analyse a model file"), m_recent.isEmpty() ? QDir::homePath() : QFileInfo(m_recent.front()).path(),
        QStringLiteral("Model files (*.safetensors *.json *.gguf *.pt *.pth *.bin *.onnx *.npz *.npy);;All files (*)"));
    if (!path.isEmpty()) analyseFile(path);
  });
  connect(m_heatmap, &SqnrHeatmap::rerunRequested, this, [this] {
    if (!m_heatmap->filePath().isEmpty()) analyseFile(m_heatmap->filePath());
  });
  connect(m_setup->schemeList(), &SchemeList::schemesChanged, this, &MainWindow::applySchemes);
  connect(m_loader, &DataLoader::loaded, this, &MainWindow::onTensorLoaded);
  connect(m_loader, &DataLoader::fileListed, this,
          [this](const QString& path, const QString& kind, const std::vector<qs::TensorInfo>& tensors) {
            m_setup->addFile(path, kind, tensors);
            addRecent(path);
            log(QStringLiteral("Opened %1: %2 tensors (%3)").arg(QDir::toNativeSeparators(path)).arg(tensors.size()).arg(kind));
            if (m_pendingFile == path) {
              QString tensor = m_pendingTensor;
              m_pendingFile.clear();
              if (tensor.isEmpty()) {  // openFiles: the first tensor the Error tab can show
                for (const qs::TensorInfo& t : tensors)
                  if (qs::dtype_is_float(t.dtype)) {
                    tensor = QString::fromStdString(t.name);
                    break;
                  }
                if (tensor.isEmpty()) {
                  log(QStringLiteral("%1 holds no floating-point tensor to show").arg(QDir::toNativeSeparators(path)));
                  return;
                }
                m_tabs->setCurrentWidget(m_error);
              }
              if (m_setup->selectTensor(path, tensor)) m_loader->loadTensor(path, tensor);
              else showError(QStringLiteral("Cannot show the tensor"), QStringLiteral("%1: no tensor named '%2'").arg(path, tensor));
            }
          });
  connect(m_loader, &DataLoader::failed, this,
          [this](const QString& message) { showError(QStringLiteral("Cannot load the data"), message); });
  connect(m_loader, &DataLoader::busyChanged, this, &MainWindow::setBusy);
  connect(m_error, &ErrorPanel::message, this, &MainWindow::log);
  connect(m_blockScales, &BlockScalesPanel::message, this, &MainWindow::log);
  connect(m_observers, &ObserversPanel::message, this, &MainWindow::log);
  connect(m_heatmap, &SqnrHeatmap::tensorActivated, this, [this](const QString& path, const QString& tensor, int) {
    // A map computed under other schemes opens its tensor under those, not under the Setup dock's new ones.
    if (m_heatmap->isStale() && !m_heatmapSchemes.isEmpty()) {
      m_setup->schemeList()->setSettings(m_heatmapSchemes);
      log(QStringLiteral("Schemes set back to the Model tab's: %1").arg(m_heatmap->schemeNames().join(QStringLiteral(", "))));
    }
    if (!m_setup->files().contains(path)) {
      m_pendingFile = path;
      m_pendingTensor = tensor;
      m_loader->listFile(path);
    } else if (m_setup->selectTensor(path, tensor)) {
      m_loader->loadTensor(path, tensor);
    }
    m_tabs->setCurrentWidget(m_error);
  });
  connect(m_heatmap, &SqnrHeatmap::failed, this,
          [this](const QString& message) { showError(QStringLiteral("Cannot analyse the file"), message); });

  // 1400 x 860, or the screen's available area when that is smaller (a 1366 x 768 or 1280 x 720 laptop):
  // the layout's minimum fits 1280 x 720.
  QSize size(1400, 860);
  if (const QScreen* screen = QGuiApplication::primaryScreen()) size = size.boundedTo(screen->availableGeometry().size());
  resize(size);
  // On a short screen the plots need the height: the log starts hidden (View → Log shows it) and its
  // lines appear in the status bar meanwhile.
  if (size.height() < 800) logDock->hide();
  m_setup->schemeList()->setSettings(ViewSettings{}.schemes);  // the defaults: e4m3fn and int8 per tensor
  if (m_persistent) restorePersistent();
  applySchemes();
  reloadData();
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::buildDemoBar() {
  m_demoBar = new QFrame;
  m_demoBar->setObjectName(QStringLiteral("demoBar"));
  m_demoBar->setStyleSheet(theme::demoBarCss(this));
  // Title and explanation come from settings files too (F2: a long title made the window as wide as
  // itself): the title is one elided line, the explanation wraps and keeps to a few lines.
  m_demoTitle = new ElidedLabel;
  m_demoTitle->setObjectName(QStringLiteral("demoTitle"));
  m_demoTitle->setElideMode(Qt::ElideRight);
  QFont bold = m_demoTitle->font();
  bold.setBold(true);
  m_demoTitle->setFont(bold);
  m_demoText = new ElidedLabel;
  m_demoText->setObjectName(QStringLiteral("demoText"));
  m_demoText->setWordWrap(true);
  m_demoText->setTextFormat(Qt::RichText);
  m_demoText->setMaximumLines(6);
  auto* close = new QToolButton;
  close->setText(QStringLiteral("✕"));
  close->setToolTip(QStringLiteral("Hide the explanation"));
  connect(close, &QToolButton::clicked, m_demoBar, &QWidget::hide);
  auto* text = new QVBoxLayout;
  text->addWidget(m_demoTitle);
  text->addWidget(m_demoText);
  auto* layout = new QHBoxLayout(m_demoBar);
  layout->setContentsMargins(12, 6, 8, 6);
  layout->addLayout(text, 1);
  layout->addWidget(close, 0, Qt::AlignTop);
  m_demoBar->hide();
  return m_demoBar;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("&Open…"), QKeySequence::Open, this, &MainWindow::openFileDialog);
  m_recentMenu = file->addMenu(QStringLiteral("Open &Recent"));
  file->addSeparator();
  QAction* exportAction = file->addAction(QStringLiteral("&Export plot…"), this, &MainWindow::exportPlot);
  exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  exportAction->setStatusTip(QStringLiteral("Save the current view's plot as PNG, PDF or SVG, or its data as CSV"));
  QMenu* resolution = file->addMenu(QStringLiteral("Image &resolution"));
  resolution->setObjectName(QStringLiteral("resolutionMenu"));
  auto* scales = new QActionGroup(resolution);
  for (const auto& [scale, text] : {std::pair{1.0, "1× (as on screen)"}, std::pair{2.0, "2× (HiDPI, slides)"},
                                    std::pair{3.0, "3× (print)"}}) {
    QAction* a = resolution->addAction(QString::fromUtf8(text), this, [scale] { plotexport::setPngScale(scale); });
    a->setCheckable(true);
    a->setChecked(scale == plotexport::pngScale());
    a->setData(scale);
    scales->addAction(a);
  }
  file->addAction(QStringLiteral("Export &report…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E), this,
                  &MainWindow::exportReportInteractive);
  file->addSeparator();
  file->addAction(QStringLiteral("Load settings…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Load settings"), QDir::homePath(),
                                                      QStringLiteral("QuantScope settings (*.json)"));
    if (path.isEmpty()) return;
    QFile f(path);
    QString why;
    ViewSettings s;
    if (!f.open(QIODevice::ReadOnly)) why = f.errorString();
    else if (ViewSettings::fromJsonText(f.readAll(), &s, &why) && applySettings(s, &why)) return;
    showError(QStringLiteral("Cannot load settings"), QStringLiteral("%1: %2").arg(path, why));
  });
  file->addAction(QStringLiteral("Save settings…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save settings"),
                                                      QDir::home().filePath(QStringLiteral("settings.json")),
                                                      QStringLiteral("QuantScope settings (*.json)"));
    QString why;
    if (!path.isEmpty() &&
        !plotexport::writeFileAtomic(path, QJsonDocument(currentSettings().toJson()).toJson(), &why))
      showError(QStringLiteral("Cannot save settings"), why);
  });
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  // Some platforms (and the offscreen one) bind no key to the standard action: the guide promises these.
  if (quit->shortcut().isEmpty()) quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  view->setObjectName(QStringLiteral("viewMenu"));
  for (int i = 0; i < m_tabs->count(); ++i) {
    QAction* tab = view->addAction(m_tabs->tabText(i), QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)), this,
                                   [this, i] { m_tabs->setCurrentIndex(i); });
    tab->setObjectName(QStringLiteral("tabAction%1").arg(i + 1));
  }
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) {
    QAction* toggle = dock->toggleViewAction();
    if (dock == m_setup) toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    view->addAction(toggle);
  }
  view->addSeparator();
  QAction* full = view->addAction(QStringLiteral("&Full screen"), QKeySequence::FullScreen, this,
                                  [this] { isFullScreen() ? showNormal() : showFullScreen(); });
  if (full->shortcut().isEmpty()) full->setShortcut(QKeySequence(Qt::Key_F11));

  QMenu* demos = menuBar()->addMenu(QStringLiteral("&Demos"));
  demos->setObjectName(QStringLiteral("demosMenu"));
  for (const Preset& p : builtinPresets()) {
    QAction* a = demos->addAction(p.settings.title.isEmpty() ? p.name : p.settings.title);
    a->setData(p.name);
    a->setStatusTip(QStringLiteral("--preset %1").arg(p.name));
    connect(a, &QAction::triggered, this, [this, name = p.name] {
      QString why;
      if (!applyPreset(name, &why)) showError(QStringLiteral("Cannot start the demo"), why);
    });
  }

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  help->setObjectName(QStringLiteral("helpMenu"));
  QAction* guide = help->addAction(QStringLiteral("&Guide"), QKeySequence::HelpContents, this, &MainWindow::showGuide);
  if (guide->shortcut().isEmpty()) guide->setShortcut(QKeySequence(Qt::Key_F1));
  help->addAction(QStringLiteral("&Conformance…"), this, &MainWindow::showConformance);
  QAction* whatsThis = QWhatsThis::createAction(this);
  whatsThis->setText(QStringLiteral("What's &this?"));
  help->addAction(whatsThis);
  help->addSeparator();
  help->addAction(QStringLiteral("&About QuantScope"), this, [this] {
    QMessageBox::about(this, QStringLiteral("About QuantScope"),
                       QStringLiteral("<b>QuantScope %1</b><br>Number formats and quantization, bit-exact.<br>"
                                      "CPU: %2<br>%3")
                           .arg(QStringLiteral(QS_VERSION), QString::fromLatin1(qs::to_string(qs::best_simd_level())),
                                QString::fromStdString(qs::cuda::device_info().message)));
  });
}

void MainWindow::showConformance() {
  auto* dialog = findChild<ConformanceDialog*>();
  if (!dialog) {
    dialog = new ConformanceDialog(this);
    QSize size(760, 560);
    if (const QScreen* screen = QGuiApplication::primaryScreen())
      size = size.boundedTo(screen->availableGeometry().size() - QSize(40, 60));
    dialog->resize(size);
  }
  dialog->show();
  dialog->raise();
  if (!dialog->isRunning() && dialog->report().families.empty()) dialog->run();
}

QString MainWindow::guideHtml() {
  QFile f(QStringLiteral(":/guide.html"));
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

void MainWindow::showGuide() {
  // One guide window, raised again when already open; not modal, so it can stay beside the tabs.
  auto* dialog = findChild<QDialog*>(QStringLiteral("guideDialog"));
  if (!dialog) {
    dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("guideDialog"));
    dialog->setWindowTitle(QStringLiteral("QuantScope guide"));
    auto* text = new QTextBrowser;
    text->setObjectName(QStringLiteral("guideText"));
    text->setHtml(guideHtml());
    text->setOpenExternalLinks(true);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    layout->addWidget(buttons);
    // Fits the screen: at most 720 x 640, less on a smaller one.
    QSize size(720, 640);
    if (const QScreen* screen = QGuiApplication::primaryScreen())
      size = size.boundedTo(screen->availableGeometry().size() - QSize(40, 60));
    dialog->resize(size);
  }
  dialog->show();
  dialog->raise();
}

void MainWindow::buildStatusBar() {
  m_progress = new QProgressBar;
  m_progress->setObjectName(QStringLiteral("busyProgress"));
  m_progress->setMaximumWidth(160);
  m_progress->setRange(0, 0);
  m_progress->hide();
  m_cancel = new QPushButton(QStringLiteral("Cancel"));
  m_cancel->setObjectName(QStringLiteral("busyCancel"));
  m_cancel->hide();
  // Stops what the bar shows: the tensor being made or read, and the Error tab's computation.
  connect(m_cancel, &QPushButton::clicked, this, [this] {
    m_loader->cancel();
    m_error->cancel();
  });
  connect(m_error, &ErrorPanel::busyChanged, this, [this](bool) { setBusy(m_loader->isBusy()); });
  connect(m_error, &ErrorPanel::progressChanged, this, [this](int done, int total) {
    m_progress->setRange(0, std::max(total, 1));
    m_progress->setValue(done);
  });
  statusBar()->addWidget(m_progress);
  statusBar()->addWidget(m_cancel);
  auto* simd = new QLabel(QStringLiteral("CPU: %1").arg(qs::to_string(qs::best_simd_level())));
  simd->setObjectName(QStringLiteral("simdLabel"));
  simd->setToolTip(QStringLiteral("SIMD level the CPU encoders use"));
  const qs::cuda::DeviceInfo info = qs::cuda::device_info();
  const QString gpu = QString::fromStdString(info.message);
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

void MainWindow::setBusy(bool) {
  const bool busy = m_loader->isBusy() || m_error->isBusy();
  m_progress->setVisible(busy);
  m_cancel->setVisible(busy);
  if (!m_error->isBusy()) m_progress->setRange(0, 0);
}

void MainWindow::log(const QString& message) {
  const QString line = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + message;
  m_log->appendPlainText(elide::middle(line, 1000));  // names from files can be any length; stderr has all
  if (auto* dock = findChild<QDockWidget*>(QStringLiteral("logDock")); dock && dock->isHidden())
    statusBar()->showMessage(elide::middle(message, 300), 6000);
  if (!m_interactive) std::fprintf(stderr, "quantscope: %s\n", qPrintable(message));
}

void MainWindow::showError(const QString& title, const QString& message) {
  m_lastError = message;
  log(title + QStringLiteral(": ") + message);
  statusBar()->showMessage(message, 8000);
  if (m_interactive && isVisible()) QMessageBox::warning(this, title, message);
}

void MainWindow::reloadData() {
  if (!m_setup->syntheticSelected()) return;
  qs::SyntheticSpec spec = m_setup->syntheticSpec();
  m_loader->loadSynthetic(spec);
}

void MainWindow::applySchemes() {
  m_heatmap->setStale(!m_heatmapSchemes.isEmpty() && m_setup->schemeList()->settings() != m_heatmapSchemes);
  std::vector<qs::Scheme> schemes;
  QString why;
  if (!m_setup->schemeList()->schemes(&schemes, &why)) return;  // the row shows why
  // A weight read from a pre-quantized checkpoint: its stored scheme is a row of its own ("stored:…"), beside
  // the user's schemes, as in `analyze` (its SQNR says how exactly the stored scheme reproduces the weight).
  if (!m_tensor.storedScheme.isEmpty()) {
    try {
      qs::Scheme stored = qs::parse_scheme(m_tensor.storedScheme.toStdString());
      stored.text = "stored:" + stored.text;
      schemes.push_back(stored);
    } catch (const std::exception& e) {
      log(QStringLiteral("stored scheme %1 not shown: %2").arg(m_tensor.storedScheme, QString::fromUtf8(e.what())));
    }
  }
  m_error->setSchemes(schemes);
}

bool MainWindow::analyseFile(const QString& path) {
  std::vector<qs::Scheme> schemes;
  QString why;
  if (!m_setup->schemeList()->schemes(&schemes, &why)) {
    showError(QStringLiteral("Invalid scheme"), why);
    return false;
  }
  m_tabs->setCurrentWidget(m_heatmap);
  m_heatmapSchemes = m_setup->schemeList()->settings();
  m_heatmap->analyzeFile(path, schemes);
  addRecent(path);
  return true;
}

void MainWindow::onTensorLoaded(const TensorData& d) {
  const bool storedChanged = d.storedScheme != m_tensor.storedScheme;
  m_tensor = d;
  if (storedChanged) applySchemes();  // the stored row comes or goes with the tensor
  if (!d.storedSummary.isEmpty()) log(d.storedSummary);
  log(QStringLiteral("Data: %1%2 (%3 values)")
          .arg(d.source == u"synthetic" ? QString() : QDir::toNativeSeparators(d.source) + QStringLiteral(" → "), d.name)
          .arg(d.size()));
  m_error->setTensor(d);
  m_observers->setTensor(d);
  m_blockScales->setTensor(d);
  m_conventions->setTensor(d);
  emit tensorLoaded(d);
}

bool MainWindow::selectFormat(const QString& spec, QString* error) { return m_formats->selectFormat(spec, error); }
FormatGridPlot* MainWindow::formatPlot() const { return m_formats->plot(); }
void MainWindow::setLogScale(bool on) { m_formats->setLogScale(on); }

ViewSettings MainWindow::currentSettings() const {
  ViewSettings s;
  s.tab = kTabNames.value(m_tabs->currentIndex(), kTabNames[0]);
  s.format = m_formats->spec();
  s.compare = m_formats->compareSpecs();
  s.logScale = m_formats->logScale();
  // What was typed ("0.3", "0x1.8p-7") reads back exactly; 17 digits made "0.29999999999999999".
  s.inspectorValue = m_formats->inspector()->valueText();
  s.synthetic = m_setup->syntheticSpec();
  if (m_setup->syntheticSelected() || m_tensor.source == u"synthetic" || m_tensor.isEmpty()) {
    s.source = QStringLiteral("synthetic");
  } else {
    s.source = QStringLiteral("file");
    s.file = m_tensor.source;
    s.tensor = m_tensor.name;
  }
  s.schemes = m_setup->schemeList()->settings();
  s.seed = m_setup->schemeList()->seed();
  s.errorMode = m_error->errorMode() == ErrorPanel::ErrorMode::Relative ? QStringLiteral("relative") : QStringLiteral("absolute");
  s.logCounts = m_error->logCounts();
  s.gridGroup = m_error->gridGroup() == qs::GridGroup::Median ? QStringLiteral("median") : QStringLiteral("largest");
  s.bins = m_error->valueBins();
  if (!m_heatmap->filePath().isEmpty()) {
    static const QStringList orders = {QStringLiteral("file"), QStringLiteral("name"), QStringLiteral("size"), QStringLiteral("worst")};
    static const QStringList colours = {QStringLiteral("auto"), QStringLiteral("full"), QStringLiteral("fixed")};
    s.modelFile = m_heatmap->filePath();
    s.modelOrder = orders.value(int(m_heatmap->order()));
    s.modelColours = colours.value(int(m_heatmap->colorRangeMode()));
    s.modelLo = m_heatmap->colorRange().first;
    s.modelHi = m_heatmap->colorRange().second;
  }
  s.convFormat = m_conventions->format();
  s.convNames = m_conventions->checkedConventions();
  s.blockFamily = m_blockScales->family() == BlockScalesPanel::Family::Nvfp4 ? QStringLiteral("nvfp4") : QStringLiteral("mx");
  s.blockElement = m_blockScales->element();
  s.blockSize = m_blockScales->blockSize();
  {
    const ObserversPanel::Config oc = m_observers->config();
    ViewSettings::Observe& ob = s.observe;
    ob.format = oc.format;
    ob.observers = oc.observers;
    ob.batches = oc.batches;
    ob.source = oc.fromTensor ? QStringLiteral("tensor") : QStringLiteral("synthetic");
    ob.distribution = QString::fromLatin1(qs::distribution_name(oc.stream.dist).data());
    ob.batchSize = int(oc.stream.batch_size);
    ob.drift = oc.stream.drift;
    ob.spikes.clear();
    for (uint64_t b : oc.stream.spikes) ob.spikes << qint64(b);
    ob.spikeScale = oc.stream.spike_scale;
    ob.seed = qint64(oc.stream.seed);
    ob.run = m_observers->batchesDone() > 0;
  }
  if (m_demoBar->isVisibleTo(const_cast<MainWindow*>(this)) && !m_demoPreset.isEmpty()) {
    s.preset = m_demoPreset;
    s.title = m_demoTitle->text();
    s.explanation = m_demoText->text();
  }
  return s;
}

bool MainWindow::applySettings(const ViewSettings& s, QString* error) {
  // Check everything before changing anything.
  std::vector<qs::Scheme> schemes;
  QString why;
  auto fail = [&](const QString& w) {
    if (error) *error = w;
    return false;
  };
  if (!s.parseSchemes(&schemes, &why)) return fail(why);
  try {
    qs::parse_format(s.format.toStdString());
    for (const QString& c : s.compare) qs::parse_format(c.toStdString());
  } catch (const qs::FormatError& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  if (!kTabNames.contains(s.tab)) return fail(QStringLiteral("unknown tab '%1'").arg(s.tab));
  ObserversPanel::Config observe;
  observe.format = s.observe.format;
  observe.observers = s.observe.observers;
  observe.batches = s.observe.batches;
  observe.fromTensor = s.observe.source == u"tensor";
  try {
    observe.stream.dist = qs::parse_distribution(s.observe.distribution.toStdString());
  } catch (const std::exception& e) {
    return fail(QStringLiteral("observe: ") + QString::fromUtf8(e.what()));
  }
  observe.stream.batch_size = std::size_t(s.observe.batchSize);
  observe.stream.drift = s.observe.drift;
  for (qint64 b : s.observe.spikes) observe.stream.spikes.push_back(uint64_t(b));
  observe.stream.spike_scale = s.observe.spikeScale;
  observe.stream.seed = uint64_t(s.observe.seed);
  {
    ObserversPanel probe;  // checked before anything changes
    if (!probe.setConfig(observe, &why)) return fail(QStringLiteral("observe: ") + why);
  }
  for (const QString& f : {s.source == u"file" ? s.file : QString(), s.modelFile})
    if (!f.isEmpty() && !QFileInfo(f).isFile())
      return fail(QFileInfo::exists(f) ? QStringLiteral("%1: is not a regular file (a folder, device, FIFO or socket)").arg(f)
                                       : QStringLiteral("%1: no such file").arg(f));

  m_formats->selectFormat(s.format);
  m_formats->setCompareSpecs(s.compare);
  m_formats->setLogScale(s.logScale);
  m_formats->inspector()->setValueText(s.inspectorValue);
  m_setup->schemeList()->setSeed(s.seed);
  m_setup->schemeList()->setSettings(s.schemes);
  m_setup->setSyntheticSpec(s.synthetic);
  if (s.source == u"synthetic") {
    m_setup->selectSynthetic();
  } else if (m_setup->selectTensor(s.file, s.tensor)) {
    m_loader->loadTensor(s.file, s.tensor);
  } else {
    m_pendingFile = s.file;
    m_pendingTensor = s.tensor;
    m_loader->listFile(s.file);
  }
  m_error->setErrorMode(s.errorMode == u"relative" ? ErrorPanel::ErrorMode::Relative : ErrorPanel::ErrorMode::Absolute);
  m_error->setLogCounts(s.logCounts);
  m_error->setGridGroup(s.gridGroup == u"median" ? qs::GridGroup::Median : qs::GridGroup::Largest);
  m_error->setValueBins(s.bins);
  static const QStringList orders = {QStringLiteral("file"), QStringLiteral("name"), QStringLiteral("size"), QStringLiteral("worst")};
  static const QStringList colours = {QStringLiteral("auto"), QStringLiteral("full"), QStringLiteral("fixed")};
  m_heatmap->setOrder(SqnrHeatmap::Order(std::max<qsizetype>(0, orders.indexOf(s.modelOrder))));
  m_heatmap->setColorRange(SqnrHeatmap::ColorRange(std::max<qsizetype>(0, colours.indexOf(s.modelColours))), s.modelLo, s.modelHi);
  if (!s.modelFile.isEmpty()) analyseFile(s.modelFile);
  m_observers->setConfig(observe);
  if (s.observe.run) m_observers->start();
  m_blockScales->setFamily(s.blockFamily == u"nvfp4" ? BlockScalesPanel::Family::Nvfp4 : BlockScalesPanel::Family::Mx,
                           s.blockElement, s.blockSize);
  {
    QString why;
    if (!m_conventions->setComparison(s.convFormat, s.convNames, &why)) log(QStringLiteral("Conventions: ") + why);
  }
  m_tabs->setCurrentIndex(kTabNames.indexOf(s.tab));
  showDemo(s);
  return true;
}

bool MainWindow::applyPreset(const QString& name, QString* error) {
  ViewSettings s;
  if (!findPreset(name, &s, error)) return false;
  if (!applySettings(s, error)) return false;
  log(QStringLiteral("Demo: %1").arg(s.title.isEmpty() ? name : s.title));
  return true;
}

void MainWindow::showDemo(const ViewSettings& s) {
  m_demoPreset = s.preset;
  if (s.preset.isEmpty() || (s.title.isEmpty() && s.explanation.isEmpty())) {
    m_demoBar->hide();
    return;
  }
  m_demoTitle->setText(s.title);
  m_demoText->setText(s.explanation);
  m_demoBar->show();
}

void MainWindow::openFileDialog() {
  const QStringList paths = QFileDialog::getOpenFileNames(
      this, QStringLiteral("Open tensor files"), m_recent.isEmpty() ? QDir::homePath() : QFileInfo(m_recent.front()).path(),
      QStringLiteral("Tensor files (*.npy *.npz *.safetensors *.onnx *.gguf *.pt *.pth *.bin *.json);;All files (*)"));
  for (const QString& p : paths) openFile(p);
}

void MainWindow::openFile(const QString& path) {
  log(QStringLiteral("Opening %1").arg(QDir::toNativeSeparators(path)));
  m_loader->listFile(path);
}

void MainWindow::openFiles(const QStringList& paths) {
  for (int i = 0; i < paths.size(); ++i) {
    const QString path = QFileInfo(paths[i]).absoluteFilePath();
    if (i == 0) {
      m_pendingFile = path;
      m_pendingTensor.clear();  // the first float tensor, once listed
    }
    openFile(path);
  }
}

void MainWindow::addRecent(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  m_recent.removeAll(abs);
  m_recent.prepend(abs);
  while (m_recent.size() > kMaxRecent) m_recent.removeLast();
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  m_recentMenu->clear();
  for (const QString& p : m_recent) {
    QAction* a = m_recentMenu->addAction(elide::middle(QDir::toNativeSeparators(p), 120), this, [this, p] { openFile(p); });
    a->setToolTip(elide::toolTip(QDir::toNativeSeparators(p)));
  }
  m_recentMenu->setEnabled(!m_recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) openFile(url.toLocalFile());
  event->acceptProposedAction();
}

void MainWindow::exportPlot() {
  QWidget* current = m_tabs->currentWidget();
  if (current == m_formats) {
    plotexport::exportInteractive(this, m_formats->plot(), QStringLiteral("format-grid"),
                                  [this] { return m_formats->plot()->csv(); }, QStringLiteral("Representable values"));
  } else if (current == m_error) {
    m_error->exportInteractive();
  } else if (current == m_heatmap) {
    m_heatmap->exportInteractive();
  } else if (current == m_training) {
    m_training->exportInteractive();
  } else if (current == m_conventions) {
    m_conventions->exportInteractive();
  } else if (current == m_observers || current == m_blockScales) {
    // Their Export… button offers the choice of plot (Ctrl+E used to export the Latency tab's plot here).
    const QString name = current == m_observers ? QStringLiteral("observerExport") : QStringLiteral("blockScalesExport");
    if (auto* b = current->findChild<QPushButton*>(name)) b->click();
  } else {
    m_latency->exportInteractive(LatencyPanel::Plot::Time);
  }
}

bool MainWindow::waitForIdle(int ms) {
  QDeadlineTimer deadline(ms);
  // A stream the settings started (a demo) runs to its end at full speed: reports and pictures show it whole.
  if (m_observers->isRunning() && !m_observers->isPaused() && !m_observers->runToEnd(ms)) return false;
  while (!deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    if (!m_loader->isBusy() && !m_error->isBusy() && !m_blockScales->isBusy()) {
      QCoreApplication::processEvents();
      if (!m_loader->isBusy() && !m_error->isBusy() && !m_blockScales->isBusy()) return true;
    }
    QThread::msleep(2);
  }
  return false;
}

bool MainWindow::exportReport(const QString& dir, QString* error, bool interactive) {
  waitForIdle(120000);
  ReportWriter writer(reportSections());
  connect(&writer, &ReportWriter::message, this, &MainWindow::log);
  std::unique_ptr<QProgressDialog> dialog;
  if (interactive) {
    dialog = std::make_unique<QProgressDialog>(QStringLiteral("Writing the report…"), QStringLiteral("Cancel"), 0, 5, this);
    dialog->setWindowTitle(QStringLiteral("Export report"));
    dialog->setWindowModality(Qt::WindowModal);
    dialog->setMinimumDuration(0);
    connect(dialog.get(), &QProgressDialog::canceled, &writer, &ReportWriter::cancel);
    connect(&writer, &ReportWriter::progressed, dialog.get(), [d = dialog.get()](int stage, int stages, const QString& what) {
      d->setMaximum(stages);
      d->setValue(stage);
      d->setLabelText(QStringLiteral("Writing the report: %1…").arg(what));
    });
  }
  const bool ok = writer.write(dir, error);
  if (ok) log(QStringLiteral("Report written to %1").arg(QDir::toNativeSeparators(dir)));
  return ok;
}

QList<ReportSection*> MainWindow::reportSections() {
  return {m_formats, m_error, m_heatmap, m_blockScales, m_observers, m_training, m_latency, this};
}

QString MainWindow::reportStage() const { return QStringLiteral("settings.json"); }

bool MainWindow::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  const QByteArray json = QJsonDocument(currentSettings().toJson()).toJson();
  return plotexport::writeFileAtomic(QDir(ctx.dir).filePath(QStringLiteral("settings.json")), json, error);
}

void MainWindow::exportReportInteractive() {
  const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Export report into folder"), QDir::homePath());
  if (dir.isEmpty()) return;
  QString why;
  const bool ok = exportReport(dir, &why, true);
  if (!ok) showError(QStringLiteral("Report not written"), why);
  else statusBar()->showMessage(QStringLiteral("Report written to %1").arg(QDir::toNativeSeparators(dir)), 6000);
}

void MainWindow::restorePersistent() {
  QSettings settings;
  m_recent = settings.value(QStringLiteral("recentFiles")).toStringList();
  rebuildRecentMenu();
  restoreGeometry(settings.value(QStringLiteral("geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("windowState")).toByteArray());
  const QJsonDocument doc = QJsonDocument::fromJson(settings.value(QStringLiteral("view")).toByteArray());
  ViewSettings s;
  QString why;
  if (doc.isObject() && ViewSettings::fromJson(doc.object(), &s, &why)) {
    s.preset.clear();
    if (s.source == u"file" && !QFileInfo(s.file).isFile()) s.source = QStringLiteral("synthetic");
    applySettings(s, &why);
  }
}

void MainWindow::savePersistent() {
  QSettings settings;
  settings.setValue(QStringLiteral("recentFiles"), m_recent);
  settings.setValue(QStringLiteral("geometry"), saveGeometry());
  settings.setValue(QStringLiteral("windowState"), saveState());
  settings.setValue(QStringLiteral("view"), QJsonDocument(currentSettings().toJson()).toJson(QJsonDocument::Compact));
}

QString MainWindow::workInProgress() const {
  QStringList busy;
  if (m_training->isRunning()) busy << QStringLiteral("a training run");
  if (m_heatmap->isRunning()) busy << QStringLiteral("a model analysis");
  if (m_latency->isRunning()) busy << QStringLiteral("a latency sweep");
  return busy.join(QStringLiteral(" and "));
}

bool MainWindow::mayClose() {
  const QString busy = workInProgress();
  if (busy.isEmpty()) return true;
  const QString question = QStringLiteral("%1%2 is in progress and will be lost. Quit anyway?").arg(busy.left(1).toUpper(), busy.mid(1));
  if (m_confirmClose) return m_confirmClose(question);
  if (!m_interactive || !isVisible()) return true;  // scripted runs: nobody to ask
  return QMessageBox::question(this, QStringLiteral("Quit QuantScope?"), question, QMessageBox::Yes | QMessageBox::No,
                               QMessageBox::No) == QMessageBox::Yes;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // Work in progress is not thrown away without asking (Ctrl+Q during training used to quit at once).
  if (!mayClose()) {
    event->ignore();
    return;
  }
  if (m_persistent) savePersistent();
  m_error->cancel();
  QMainWindow::closeEvent(event);
}
