// ConformanceDialog: the conformance suite in the app, see conformancedialog.h.
#include "conformancedialog.h"

#include "shared/jobcontrols.h"

#include "shared/plotexport.h"
#include "shared/theme.h"

#include <QDialogButtonBox>
#include <QEventLoop>
#include <QFileDialog>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "cuda/device.h"
#include "format/encode_simd.h"

ConformanceDialog::ConformanceDialog(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("conformanceDialog"));
  setWindowTitle(QStringLiteral("Conformance"));
  m_summary = new QLabel(QStringLiteral("Checks every format against its definition, and the encoders against each other."));
  m_summary->setObjectName(QStringLiteral("conformanceSummary"));
  m_summary->setWordWrap(true);
  m_table = new QTableWidget(0, 4);
  m_table->setObjectName(QStringLiteral("conformanceTable"));
  m_table->setHorizontalHeaderLabels({QStringLiteral("family"), QStringLiteral("checks"), QStringLiteral("failed"), QStringLiteral("what is checked")});
  m_table->verticalHeader()->setVisible(false);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setWordWrap(true);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_details = new QPlainTextEdit;
  m_details->setObjectName(QStringLiteral("conformanceDetails"));
  m_details->setReadOnly(true);
  m_details->setPlaceholderText(QStringLiteral("Failures, with the format, the code and the input, appear here."));
  m_controls = new JobControls(&m_job, this);
  m_progress = m_controls->progressBar();
  m_progress->setFormat(QStringLiteral("%v / %m families"));
  m_runButton = new QPushButton(QStringLiteral("Run again"));
  m_exportButton = new QPushButton(QStringLiteral("Export report…"));
  m_exportButton->setObjectName(QStringLiteral("conformanceExport"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_progress, 1);
  buttons->addWidget(m_runButton);
  buttons->addWidget(m_controls->cancelButton());
  buttons->addWidget(m_exportButton);
  auto* close = new QDialogButtonBox(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_summary);
  layout->addWidget(m_table, 2);
  layout->addWidget(m_details, 1);
  layout->addLayout(buttons);
  layout->addWidget(close);
  connect(close, &QDialogButtonBox::rejected, this, &QDialog::close);
  connect(m_runButton, &QPushButton::clicked, this, [this] { run(); });
  connect(m_exportButton, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export the conformance report"),
                                                      QDir::home().filePath(QStringLiteral("conformance.md")),
                                                      QStringLiteral("Markdown (*.md)"));
    QString why;
    if (!path.isEmpty() && !exportTo(path, &why)) QMessageBox::warning(this, QStringLiteral("Export failed"), why);
  });
  connect(&m_job, &JobRunnerBase::finished, this, &ConformanceDialog::onFinished);
  m_exportButton->setEnabled(false);
}

ConformanceDialog::~ConformanceDialog() { m_job.cancelAndWait(); }

void ConformanceDialog::run(const qs::EncodeFn& encode) {
  if (isRunning()) return;
  m_runButton->setEnabled(false);
  m_exportButton->setEnabled(false);
  m_progress->setRange(0, 6);
  m_progress->setValue(0);
  m_summary->setStyleSheet(QString());
  m_summary->setText(QStringLiteral("Running: every code of every format, midpoints, specials, stochastic rounding and "
                                    "every SIMD level against the scalar reference…"));
  m_job.start([encode](JobRunner<std::monostate, qs::ConformanceReport>::Sink& sink) {
    qs::ConformanceOptions opt;
    opt.encode = encode;
    opt.progress = [&sink](int done, int total) {
      sink.setProgressRange(0, total);
      sink.setProgressValue(done);
      return !sink.cancelFlag()->load();
    };
    sink.setResult(qs::run_conformance(opt));
  });
}

void ConformanceDialog::cancel() { m_controls->cancel(); }

bool ConformanceDialog::waitForFinished(int ms) {
  if (!isRunning()) return true;
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(this, &ConformanceDialog::finished, &loop, &QEventLoop::quit);
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  timeout.start(ms);
  loop.exec();
  return !isRunning();
}

void ConformanceDialog::onFinished() {
  if (std::optional<qs::ConformanceReport> r = m_job.takeResult()) {
    m_report = std::move(*r);
  } else {  // cancelled before the worker started (or the suite threw): nothing to show
    m_report = {};
    m_report.cancelled = true;
  }
  m_runButton->setEnabled(true);
  m_exportButton->setEnabled(!m_report.cancelled);
  m_table->setRowCount(int(m_report.families.size()));
  QStringList details;
  for (int i = 0; i < int(m_report.families.size()); ++i) {
    const qs::ConformanceFamily& f = m_report.families[std::size_t(i)];
    const QString cells[] = {QString::fromStdString(f.name), QString::number(qulonglong(f.checks)),
                             f.skipped ? QStringLiteral("skipped") : QString::number(qulonglong(f.failed)),
                             QString::fromStdString(f.description)};
    for (int c = 0; c < 4; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == 0 || c == 2) item->setForeground(f.failed ? theme::errorColor(this) : palette().color(QPalette::Text));
      if (c == 0) item->setText((f.skipped ? QStringLiteral("– ") : f.failed ? QStringLiteral("✗ ") : QStringLiteral("✓ ")) + cells[0]);
      if (c == 1 || c == 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_table->setItem(i, c, item);
    }
    for (const qs::ConformanceFailure& x : f.failures)
      details << QStringLiteral("%1: %2 code 0x%3, input %4: %5")
                     .arg(QString::fromStdString(f.name), QString::fromStdString(x.format))
                     .arg(x.code, 0, 16)
                     .arg(x.input, 0, 'g', 17)
                     .arg(QString::fromStdString(x.what));
  }
  m_table->resizeRowsToContents();
  m_details->setPlainText(details.join(u'\n'));
  m_summary->setStyleSheet(m_report.passed() ? QString() : theme::errorCss(this));
  m_summary->setText(summaryText());
  emit finished();
}

QString ConformanceDialog::summaryText() const {
  if (m_report.cancelled) return QStringLiteral("Cancelled: the families not run are not shown.");
  uint64_t checks = 0, failed = 0;
  for (const auto& f : m_report.families) checks += f.checks, failed += f.failed;
  return m_report.passed() ? QStringLiteral("All %1 families passed: %2 checks.").arg(m_report.families.size()).arg(checks)
                           : QStringLiteral("%1 of %2 checks FAILED: the failures are listed below.").arg(failed).arg(checks);
}

QString ConformanceDialog::markdown() const {
  const auto& d = qs::cuda::device_info();
  return QString::fromStdString(m_report.markdown(QS_VERSION, qs::to_string(qs::best_simd_level()),
                                                  d.available ? d.message + " (CPU = CUDA: quantscope-cli selftest --backend cuda)"
                                                              : "none (" + d.message + ")"));
}

bool ConformanceDialog::exportTo(const QString& path, QString* error) const {
  return plotexport::writeFileAtomic(path, markdown().toUtf8(), error);
}
