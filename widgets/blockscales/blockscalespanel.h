// BlockScalesPanel: the "Block scales" tab (issue "block-scale rules and observer dynamics", item 2). For the
// current tensor and a family of block schemes it puts the scale rules side by side: MX with E8M0 scales
// (FLOOR = the OCP spec, CEIL, EVEN, RCEIL = cuBLAS) or NVFP4 (amax/6 rounded to E4M3, or searched for the
// least squared error). A table of SQNR, bits per value, clipped and flushed-to-zero values and blocks that
// clip per rule; SQNR against the block size (16 .. 128) per rule; the distribution of the chosen scale
// exponents; a map of every block (clipped, flushed or log2 scale under one rule) and, for a clicked block,
// its values and what each rule makes of them. The work runs off the UI thread with progress and Cancel.
// The per-block scales are recomputed here from the engine's one scale rule (group_scale, search_block_scale),
// and their clipped counts add up to the engine's own (checked by tests/tst_blockscalespanel.cpp).
#pragma once

#include <QWidget>

#include <atomic>
#include <memory>
#include <vector>

#include "quant/error_view.h"
#include "quant/scheme.h"
#include "shared/jobrunner.h"
#include "shared/tensordata.h"
#include "shared/reportsection.h"

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class JobControls;
class QMenu;
class QPushButton;
class QToolButton;
class QTableWidget;
class ElidedLabel;

class BlockScalesPanel : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  enum class Family { Mx, Nvfp4 };

  // One rule's result on the tensor at the chosen block size.
  struct Rule {
    QString name;                  // "floor", "ceil", "even", "rceil"; "amax/6", "mse"
    qs::Scheme scheme;
    qs::ErrorView view;            // SQNR, clipped, underflow, bits per value (the engine's)
    std::vector<float> q;          // the quantized tensor
    std::vector<float> scale;      // per block (0: a block with nothing to scale)
    std::vector<uint32_t> clipped, flushed;  // per block: |x| beyond the clip bound; x != 0 that became 0
  };
  struct Result {
    Family family = Family::Mx;
    QString element;
    int block = 32;
    std::size_t rows = 0, cols = 0, blocksPerRow = 0;
    std::vector<Rule> rules;
    std::vector<int> sweepBlocks;               // 16, 32, 64, 128
    std::vector<std::vector<double>> sweepSqnr;  // [rule][sweep block]
    QString error;
    bool cancelled = false;
  };

  explicit BlockScalesPanel(QWidget* parent = nullptr);
  ~BlockScalesPanel() override;  // cancels and waits for the computation in flight

  void setTensor(const TensorData& tensor);  // computes again when the tab is showing, else on showing
  // The schemes a family compares at a block size ("e2m1fn/block:32:e8m0fnu", "…:ceil", …).
  static std::vector<std::pair<QString, QString>> ruleSchemes(Family f, const QString& element, int block);
  bool setFamily(Family f, const QString& element, int block, QString* error = nullptr);
  Family family() const;
  QString element() const;
  int blockSize() const;

  void compute();
  void cancel();
  bool isBusy() const { return m_job.isRunning(); }
  bool waitForIdle(int ms);
  const Result* result() const { return m_result.get(); }

  // The block map shows `quantity` (0 clipped, 1 flushed to zero, 2 log2 scale) under rule `rule`;
  // selectBlock fills the inspector with block `index` (row-major over rows x blocksPerRow).
  void showMap(int rule, int quantity);
  void selectBlock(std::size_t index);
  QTableWidget* table() const { return m_table; }
  QTableWidget* inspector() const { return m_inspector; }
  QCustomPlot* sweepPlot() const { return m_sweep; }
  QCustomPlot* exponentPlot() const { return m_exponents; }
  QCustomPlot* mapPlot() const { return m_mapPlot; }
  QCPColorMap* colorMap() const { return m_map; }
  QString statusText() const;
  QByteArray csv() const;  // one row per rule: the table's numbers
  bool exportAll(const QString& dir, QString* error = nullptr);

  // The computation itself (any thread): `cancelled` is polled between rules and blocks.
  static Result run(const TensorData& t, Family f, const QString& element, int block, const std::atomic<bool>& cancelled,
                    const std::function<void(int done, int total)>& progress = {});

signals:
  void busyChanged(bool busy);
  void message(const QString& text);

protected:
  void showEvent(QShowEvent* event) override;

private:
  void buildUi();
  void onFinished();
  void fillTable();
  void fillSweep();
  void fillExponents();
  void setStatus(const QString& text, bool error = false);

  TensorData m_tensor;
  bool m_stale = true;
  JobRunner<std::monostate, Result> m_job;  // run() on a worker (latest wins): progress and Cancel, no rows
  std::unique_ptr<Result> m_result;
  int m_mapRule = 0, m_mapQuantity = 0;

  QComboBox* m_familyBox = nullptr;
  QComboBox* m_elementBox = nullptr;
  QComboBox* m_blockBox = nullptr;
  QComboBox* m_mapRuleBox = nullptr;
  QComboBox* m_mapQuantityBox = nullptr;
  QPushButton* m_computeButton = nullptr;
  QToolButton* m_exportButton = nullptr;
  QMenu* m_exportMenu = nullptr;  // the Export… button's entries
  JobControls* m_controls = nullptr;  // progress and Cancel (shared/jobcontrols.h)
  ElidedLabel* m_status = nullptr;
  QTableWidget* m_table = nullptr;
  QTableWidget* m_inspector = nullptr;
  QCustomPlot* m_sweep = nullptr;
  QCustomPlot* m_exponents = nullptr;
  QCustomPlot* m_mapPlot = nullptr;
  QCPColorMap* m_map = nullptr;
};
