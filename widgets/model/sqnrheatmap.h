// SqnrHeatmap: SQNR of every float tensor of a model file under every scheme, as a colour map of
// tensors × schemes (qs::analyze_file in QtConcurrent, with progress and Cancel). Hover a cell for its
// numbers, click it to open that tensor (tensorActivated). Files that fail to load emit failed
// with a message naming the file and the reason; the window shows it.
// Exercise: the Error tab of `quantscope`, `QT_QPA_PLATFORM=offscreen ./build/tests/tst_sqnrheatmap`.
//
//   heatmap->analyzeFile("model.safetensors", schemes);
//   connect(heatmap, &SqnrHeatmap::tensorActivated, window, &MainWindow::openTensor);
#pragma once

#include <QPoint>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

#include "quant/scheme.h"
#include "shared/jobrunner.h"
#include "shared/reportsection.h"

class QCPColorMap;
class QCPColorScale;
class QCustomPlot;
class ElidedLabel;
class JobControls;
class QProgressBar;
class QPushButton;
class QToolButton;
class QComboBox;
class QSpinBox;
class QDoubleSpinBox;

class SqnrHeatmap : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  struct Cell {
    bool computed = false;
    double sqnr_db = 0, mse = 0, max_abs_error = 0;
    uint64_t count = 0, clipped = 0, overflow = 0, underflow = 0;
  };

  explicit SqnrHeatmap(QWidget* parent = nullptr);
  ~SqnrHeatmap() override;  // cancels a running analysis and waits for the tensor in progress

  // Starts the analysis of `path` (any reader: .npy, .npz, .safetensors, .onnx). A running analysis is
  // cancelled first; the new one starts as soon as it has stopped, and the replaced one reports nothing
  // more (no analysisFinished).
  void analyzeFile(const QString& path, const std::vector<qs::Scheme>& schemes);
  bool isRunning() const { return m_job.isRunning(); }
  bool waitForFinished(int ms);  // runs the event loop; false on timeout

  QString filePath() const { return m_path; }
  QStringList tensorNames() const { return m_tensors; }  // float tensors with >= 2 elements, in file order
  // Tensors of the file left out of the map, and why ("300 integer or bool (int64), 13 with fewer than 2 values").
  int skippedCount() const { return m_skipped; }
  QString skippedText() const { return m_skippedText; }

  // Row order on screen: the file's, by name, by size (largest first), or worst SQNR first (the lowest
  // SQNR of the row over the schemes). Cell and tensor indices in this API stay in file order.
  enum class Order { File, Name, Size, WorstSqnr };
  void setOrder(Order order);
  Order order() const { return m_orderBy; }
  int displayRow(int tensor) const;  // where a tensor is drawn, top = 0

  // The colour scale: Auto spans the 2nd to 98th percentile of the finite SQNRs (cells beyond take the
  // end colours; exact ∞ cells have a colour of their own, never the scale's); Full spans min..max;
  // Fixed uses setColorRange's bounds.
  enum class ColorRange { Auto, Full, Fixed };
  void setColorRange(ColorRange mode, double lo = 0, double hi = 60);
  QPair<double, double> colorRange() const;  // the dB range in use
  ColorRange colorRangeMode() const { return m_rangeMode; }
  // Width of the tensor-name column in pixels; names longer than it keep their end (the distinguishing
  // suffix: ".q_proj.weight") and the tooltip has the whole name.
  void setNameWidth(int px);

  // Stale: the schemes listed in the Setup dock are no longer the ones the map was computed with. The
  // map says so, offers Re-run, and a click still opens the tensor under the map's own schemes.
  void setStale(bool stale);
  bool isStale() const { return m_stale; }
  QStringList schemeNames() const { return m_schemeNames; }
  const Cell& cell(int tensor, int scheme) const;  // an empty Cell outside the map
  QString statusText() const;

  QCustomPlot* plot() const { return m_plot; }
  QCPColorMap* colorMap() const { return m_map; }
  // The widget pixel at the centre of a cell, and the cell under a pixel ((-1, -1) outside); x is
  // the scheme, y the tensor.
  QPoint cellCenter(int tensor, int scheme) const;
  QPoint cellAt(const QPoint& pixel) const;

  // By suffix: .png/.pdf/.svg (the plot) or .csv ("file,tensor,shape,scheme,sqnr_db,mse,max_abs_error,
  // clipped,overflow,underflow,count" for the computed cells). Atomic; on failure *error says why.
  bool exportTo(const QString& path, QString* error = nullptr);
  bool exportAll(const QString& dir, const QString& stem, QString* error = nullptr);  // every suffix
  QByteArray csv() const;

public slots:
  void cancel();
  void exportInteractive();  // a file dialog, then the image or CSV by the chosen suffix (File → Export)

signals:
  void analysisStarted(const QString& path);
  void progressChanged(int done, int total);  // tensors
  void analysisFinished(const QString& path, bool cancelled);
  void failed(const QString& message);  // "cannot analyse FILE: REASON"
  void tensorActivated(const QString& filePath, const QString& tensorName, int schemeIndex);
  void openRequested();   // "Analyse a file…": the window asks for a file and analyses it
  void rerunRequested();  // "Re-run": the same file under the current schemes

protected:
  void resizeEvent(QResizeEvent* event) override;

private:
  struct Listing {  // the file's tensors, sent once when the file is open
    QStringList tensors, shapes;
    QVector<qint64> numel;
    int skipped = 0;
    QString skippedText;
  };
  struct Update {  // what the worker streams: the listing first, then one cell at a time
    std::shared_ptr<const Listing> listing;
    int index = -1;  // tensor * schemes + scheme
    Cell cell;
  };

  void buildUi();
  void start(const QString& path, const std::vector<qs::Scheme>& schemes);
  void flush();  // pending cells -> the map, coalesced (~40 ms)
  void onFinished();
  void rebuildAxes();
  void updateLabels();
  void updateTickStride();
  void showTip(QMouseEvent* event);
  void setStatus(const QString& text, bool error = false);
  void applyOrder();
  void drawInfinityCells(double lo, double hi);

  QCustomPlot* m_plot = nullptr;
  QCPColorMap* m_map = nullptr;
  QCPColorScale* m_scale = nullptr;
  QProgressBar* m_progress = nullptr;
  JobControls* m_controls = nullptr;  // Cancel and m_progress (shared/jobcontrols.h)
  QToolButton* m_exportButton = nullptr;
  ElidedLabel* m_status = nullptr;
  ElidedLabel* m_staleLabel = nullptr;
  QPushButton* m_analyseButton = nullptr;
  QPushButton* m_rerunButton = nullptr;
  QComboBox* m_orderBox = nullptr;
  QComboBox* m_rangeBox = nullptr;
  QDoubleSpinBox* m_loSpin = nullptr;
  QDoubleSpinBox* m_hiSpin = nullptr;
  QSpinBox* m_nameWidthSpin = nullptr;

  JobRunner<Update> m_job;  // analyze_file on a worker; cells coalesced into one redraw per ~40 ms
  bool m_opened = false;   // the listing arrived
  QString m_path;
  QStringList m_tensors, m_shapes, m_schemeNames;
  QVector<qint64> m_numel;
  QVector<int> m_order, m_rowOf;  // display row -> tensor, tensor -> display row
  Order m_orderBy = Order::File;
  ColorRange m_rangeMode = ColorRange::Auto;
  double m_fixedLo = 0, m_fixedHi = 60, m_lo = 0, m_hi = 60;
  int m_nameWidth = 240;
  int m_skipped = 0;
  QString m_skippedText;
  bool m_stale = false;
  std::vector<Cell> m_cells;  // tensors x schemes, row-major by tensor
  QPoint m_pressPos;
};
