// Plot export: one atomic writer for PNG/PDF/SVG/CSV used by every panel of the window.
// Exercise: tests/tst_plotexport.cpp.
#include "plotexport.h"

#include <algorithm>

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QToolButton>
#include <QMessageBox>
#include <QPageLayout>
#include <QPdfWriter>
#include <QSaveFile>
#ifdef QS_HAVE_QTSVG
#include <QSvgGenerator>
#endif

#include <charconv>
#include <cmath>

#include <qcustomplot.h>

#include "plotstyle.h"

namespace plotexport {

namespace {

// Texts and ticks fitted to the size a figure is drawn at, not the size it has on screen (toPixmap and
// toPainter lay the plot out again but emit no beforeReplot): a title that wraps in a 400-px panel keeps
// one line in a 1200-px figure. Restored afterwards.
class SizedForExport {
 public:
  SizedForExport(QCustomPlot* plot, QSize size) : m_plot(plot), m_old(plot->viewport()) {
    fit(QRect(QPoint(0, 0), size));
  }
  ~SizedForExport() {
    fit(m_old);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
  }

 private:
  void fit(const QRect& viewport) {
    m_plot->setViewport(viewport);
    plotstyle::fitTexts(m_plot);
    for (auto phase : {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
      m_plot->plotLayout()->update(phase);
    plotstyle::fitTicks(m_plot);
  }
  QCustomPlot* m_plot;
  QRect m_old;
};

bool paintVector(QCustomPlot* plot, QPaintDevice* device, QSize size) {
  QCPPainter painter;
  if (!painter.begin(device)) return false;
  painter.setMode(QCPPainter::pmVectorized);
  plot->toPainter(&painter, size.width(), size.height());
  return painter.end();
}

QSize defaultSize(QCustomPlot* plot, QSize size) {
  if (size.isValid() && !size.isEmpty()) return size;
  return QSize(plot->width() >= 300 ? plot->width() : 1000, plot->height() >= 200 ? plot->height() : 600);
}

}  // namespace

QStringList imageSuffixes() {
#ifdef QS_HAVE_QTSVG
  return {QStringLiteral("png"), QStringLiteral("pdf"), QStringLiteral("svg")};
#else
  return {QStringLiteral("png"), QStringLiteral("pdf")};
#endif
}

QStringList allSuffixes() { return imageSuffixes() << QStringLiteral("csv"); }

QByteArray number(double v) {
  if (std::isnan(v)) return QByteArrayLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QByteArrayLiteral("inf") : QByteArrayLiteral("-inf");
  char buf[40];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return QByteArray(buf, int(p - buf));
}

bool writeFileAtomic(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  if (file.write(bytes) != bytes.size() || !file.commit()) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
    file.cancelWriting();
    return false;
  }
  return true;
}

namespace {
double g_pngScale = 1.0;
}

double pngScale() { return g_pngScale; }
void setPngScale(double scale) { g_pngScale = std::clamp(scale, 1.0, 4.0); }

bool exportPlot(QCustomPlot* plot, const QString& path, const CsvWriter& csv, const QString& title,
                QString* error, QSize size) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == u"csv") {
    if (!csv) return fail(QStringLiteral("this plot has no data to export as CSV"));
    return writeFileAtomic(path, csv(), error);
  }
  if (!imageSuffixes().contains(suffix))
    return fail(QStringLiteral("unsupported file type '%1' (use .%2)")
                    .arg(suffix.isEmpty() ? path : QStringLiteral(".") + suffix, allSuffixes().join(QStringLiteral(", ."))));
  size = defaultSize(plot, size);
  const SizedForExport sized(plot, size);
  QSaveFile file(path);  // temp file + rename: an interrupted export never leaves half a file
  if (!file.open(QIODevice::WriteOnly)) return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
  bool ok = false;
  if (suffix == u"pdf") {
    // savePdf() only takes a file name; painting into a QPdfWriter on the QSaveFile keeps it atomic.
    QPdfWriter writer(&file);
    writer.setResolution(72);  // one device pixel per point: the page is exactly the plot
    writer.setCreator(QStringLiteral("QuantScope"));
    writer.setTitle(title);
    writer.setPageLayout(QPageLayout(QPageSize(QSizeF(size), QPageSize::Point, QString(), QPageSize::ExactMatch),
                                     QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
    ok = paintVector(plot, &writer, size);
  } else if (suffix == u"svg") {
#ifdef QS_HAVE_QTSVG
    QSvgGenerator generator;
    generator.setOutputDevice(&file);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(title);
    generator.setDescription(QStringLiteral("QuantScope: %1").arg(title));
    ok = paintVector(plot, &generator, size);
#endif
  } else {
    ok = plot->toPixmap(size.width(), size.height(), pngScale()).save(&file, "PNG");
  }
  if (!ok) {
    file.cancelWriting();
    return fail(QStringLiteral("cannot write %1: encoding the %2 failed").arg(path, suffix.toUpper()));
  }
  if (!file.commit()) return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
  return true;
}

bool exportAll(QCustomPlot* plot, const QString& dir, const QString& stem, const CsvWriter& csv,
               const QString& title, QString* error, QSize size) {
  for (const QString& suffix : allSuffixes())
    if (!exportPlot(plot, QDir(dir).filePath(stem + u'.' + suffix), csv, title, error, size)) return false;
  return true;
}

QString askSavePath(QWidget* parent, const QString& dialogTitle, const QString& stem, const QStringList& suffixes) {
  QStringList filters;
  for (const QString& s : suffixes) filters << QStringLiteral("%1 (*.%2)").arg(s.toUpper(), s);
  QString filter = filters.front();
  QString path = QFileDialog::getSaveFileName(parent, dialogTitle, QDir::home().filePath(stem + u'.' + suffixes.front()),
                                              filters.join(QStringLiteral(";;")), &filter);
  if (path.isEmpty()) return {};
  if (QFileInfo(path).suffix().isEmpty()) path += filter.mid(filter.lastIndexOf(u'.')).chopped(1);
  return path;
}

QString exportInteractive(QWidget* parent, QCustomPlot* plot, const QString& stem, const CsvWriter& csv,
                          const QString& title, bool csvOnly) {
  const QStringList suffixes = csvOnly ? QStringList{QStringLiteral("csv")} : imageSuffixes();
  const QString path = askSavePath(parent, csvOnly ? QStringLiteral("Export data") : QStringLiteral("Export plot"), stem, suffixes);
  if (path.isEmpty()) return {};
  QString error;
  if (!exportPlot(plot, path, csv, title, &error)) {
    QMessageBox::warning(parent, QStringLiteral("Export failed"), error);
    return {};
  }
  return path;
}

QToolButton* makeExportButton(QMenu** menu) {
  auto* button = new QToolButton;
  button->setObjectName(QStringLiteral("exportButton"));
  button->setText(QStringLiteral("Export…"));
  button->setPopupMode(QToolButton::InstantPopup);
  auto* m = new QMenu(button);
  button->setMenu(m);
  if (menu) *menu = m;
  return button;
}

void installContextMenu(QCustomPlot* plot, const QString& stem, CsvWriter csv, QString title) {
  plot->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot, stem, csv, title](const QPoint& pos) {
    QMenu menu(plot);
    menu.addAction(QStringLiteral("Export image…"), plot, [=] { exportInteractive(plot, plot, stem, csv, title); });
    QAction* data = menu.addAction(QStringLiteral("Export data (CSV)…"), plot,
                                   [=] { exportInteractive(plot, plot, stem, csv, title, true); });
    data->setEnabled(bool(csv));
    menu.addSeparator();
    menu.addAction(QStringLiteral("Reset view"), plot, [plot] {
      plot->rescaleAxes();
      plot->replot(QCustomPlot::rpQueuedReplot);
    });
    menu.exec(plot->mapToGlobal(pos));
  });
}

}  // namespace plotexport
