// CodeUsageMap: a heatmap (QCPColorMap) of how many weights use each code of the weight format over a
// training run: x is the step, y every code sorted by its value, colour log10(1 + weights). Fed from
// TrainingRun's sampled histograms. Exercise: the Training tab, tests/tst_trainingpanel.cpp.
#pragma once

#include <QByteArray>
#include <QString>

#include <vector>

#include <qcustomplot.h>

struct TrainingRun;

class CodeUsageMap : public QCustomPlot {
  Q_OBJECT

public:
  explicit CodeUsageMap(QWidget* parent = nullptr);

  // Shows `run` (null: empty), layer < 0 for all layers summed. Call again when the run has new samples;
  // it redraws only when the sample count, run or layer changed.
  void setRun(const TrainingRun* run, int layer);
  const TrainingRun* run() const { return m_run; }
  int layer() const { return m_layer; }
  int sampleCount() const { return m_samples; }
  QCPColorMap* colorMap() const { return m_map; }

  // "run,layer,step,code,value,count" rows of the shown run and layer (non-zero counts).
  QByteArray csv() const;
  QString title() const;

private:
  void rebuild();

  const TrainingRun* m_run = nullptr;
  int m_layer = -1;
  int m_samples = -1;
  QCPColorMap* m_map = nullptr;
  QCPColorScale* m_scale = nullptr;
  QCPTextElement* m_title = nullptr;
  std::vector<uint32_t> m_codesByValue;  // row -> code
};
