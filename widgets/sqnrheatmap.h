// SqnrHeatmap: SQNR of every float tensor of a model file under every scheme, as a colour map of
// tensors × schemes (qs::analyze_file in QtConcurrent, with progress and Cancel). Hover a cell for its
// numbers, click it to open that tensor (tensorActivated). Files that fail to load emit failed
// with a message naming the file and the reason; the window shows it.
// Exercise: the Error tab of `quantscope`, `QT_QPA_PLATFORM=offscreen ./build/tests/tst_sqnrheatmap`.
//
//   heatmap->analyzeFile("model.safetensors", schemes);
//   connect(heatmap, &SqnrHeatmap::tensorActivated, window, &MainWindow::openTensor);
#pragma once

#include <QFutureWatcher>
#include <QMutex>
#include <QPoint>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

#include "quant/scheme.h"

class QCPColorMap;
class QCPColorScale;
class QCustomPlot;
class ElidedLabel;
class QProgressBar;
class QPushButton;
class QToolButton;

class SqnrHeatmap : public QWidget {
  Q_OBJECT

public:
  struct Cell {
    bool computed = false;
    double sqnr_db = 0, mse = 0, max_abs_error = 0;
    uint64_t count = 0, clipped = 0, overflow = 0, underflow = 0;
  };

  explicit SqnrHeatmap(QWidget* parent = nullptr);
  ~SqnrHeatmap() override;  // cancels a running analysis and waits for the tensor in progress

  // Starts the analysis of `path` (any reader: .npy, .npz, .safetensors, .onnx). A running analysis is
  // cancelled first; the new one starts as soon as it has stopped.
  void analyzeFile(const QString& path, const std::vector<qs::Scheme>& schemes);
  bool isRunning() const { return m_running; }
  bool waitForFinished(int ms);  // runs the event loop; false on timeout

  QString filePath() const { return m_path; }
  QStringList tensorNames() const { return m_tensors; }  // the rows: float tensors with >= 2 elements
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

protected:
  void resizeEvent(QResizeEvent* event) override;

private:
  struct Shared {  // the worker's side
    QMutex mutex;
    bool opened = false;
    QStringList tensors, shapes;
    std::vector<std::pair<int, Cell>> pending;  // (tensor * schemes + scheme, cell)
    QString error;
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

  QCustomPlot* m_plot = nullptr;
  QCPColorMap* m_map = nullptr;
  QCPColorScale* m_scale = nullptr;
  QProgressBar* m_progress = nullptr;
  QPushButton* m_cancelButton = nullptr;
  QToolButton* m_exportButton = nullptr;
  ElidedLabel* m_status = nullptr;

  QFutureWatcher<void> m_watcher;
  std::shared_ptr<Shared> m_shared;
  QTimer m_coalesce;
  bool m_running = false;
  bool m_cancelled = false;
  QString m_path;
  QStringList m_tensors, m_shapes, m_schemeNames;
  std::vector<Cell> m_cells;  // tensors x schemes, row-major by tensor
  QString m_pendingPath;
  std::vector<qs::Scheme> m_pendingSchemes;
  bool m_hasPending = false;
  QPoint m_pressPos;
};
