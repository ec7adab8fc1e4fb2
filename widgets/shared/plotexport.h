// Plot export shared by every view: PNG, PDF and SVG of a QCustomPlot and its data as CSV, written
// atomically (QSaveFile: temp file + rename, never half a file), plus an "Export…" context menu.
// Exercise: tests/tst_plotexport.cpp; any plot's right-click menu in `quantscope`.
#pragma once

#include <QByteArray>
#include <QSize>
#include <QString>
#include <QStringList>

#include <functional>

class QCustomPlot;
class QMenu;
class QToolButton;
class QWidget;

namespace plotexport {

// Image suffixes this build can write, lower case without the dot ("png", "pdf", "svg" with Qt SVG).
QStringList imageSuffixes();
// imageSuffixes() + "csv".
QStringList allSuffixes();

// PNG pixels per point: 1 (as on screen), 2 (HiDPI screens, slides), up to 4. The layout is the same at
// every scale (fonts and lines grow with it); PDF and SVG are vector and need none. Process-wide, set by
// File -> Image resolution, used by every PNG export and the report.
double pngScale();
void setPngScale(double scale);  // clamped to [1, 4]

// The CSV body of a plot, produced on demand (so no export pays for CSV it does not write).
using CsvWriter = std::function<QByteArray()>;

// Writes `plot` (or, for .csv, csv()) to `path` by suffix. `size` empty: what is on screen, or a
// figure-sized default (1000 x 600) for a plot never shown. On failure *error says why in one line
// ("cannot write PATH: REASON") and nothing is left at `path`.
bool exportPlot(QCustomPlot* plot, const QString& path, const CsvWriter& csv, const QString& title,
                QString* error = nullptr, QSize size = {});

// Writes `bytes` to `path` atomically.
bool writeFileAtomic(const QString& path, const QByteArray& bytes, QString* error = nullptr);

// Writes DIR/STEM.png/.pdf/.svg/.csv (every suffix this build has). Stops at the first failure.
bool exportAll(QCustomPlot* plot, const QString& dir, const QString& stem, const CsvWriter& csv,
               const QString& title, QString* error = nullptr, QSize size = {});

// Right-click on `plot` offers "Export image…" and "Export data (CSV)…"; a file dialog asks where,
// failures show a message box. `stem` is the default file name.
void installContextMenu(QCustomPlot* plot, const QString& stem, CsvWriter csv, QString title);

// The same dialog flow, for menu actions: asks for a path (default ~/STEM.png) and exports. Returns the
// path written; empty when the user cancelled or the export failed (a message box said why).
QString exportInteractive(QWidget* parent, QCustomPlot* plot, const QString& stem, const CsvWriter& csv,
                          const QString& title, bool csvOnly = false);

// The save dialog of exportInteractive and of the tabs' own data exports (the Latency tab's rows):
// `dialogTitle`, default ~/STEM.<first suffix>, one filter per suffix ("PNG (*.png)"). A name typed
// without a suffix gets the chosen filter's. Empty when cancelled.
QString askSavePath(QWidget* parent, const QString& dialogTitle, const QString& stem, const QStringList& suffixes);

// The "Export…" button of a tab's controls: a tool button (object name "exportButton") that pops up
// `menu`'s entries when pressed; the caller fills the menu.
QToolButton* makeExportButton(QMenu** menu);

// Shortest round-trip decimal of v ("nan", "inf", "-inf" for non-finite), for CSV cells.
QByteArray number(double v);

}  // namespace plotexport
