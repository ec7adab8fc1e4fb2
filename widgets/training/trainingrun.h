// TrainingRun: what the Training tab keeps of one run — its configuration, the per-step series the plots
// draw (loss, accuracy, flips per layer, bit-stall fraction) and the sampled code-usage histograms of the
// weights — filled from qs::StepMetrics on the GUI thread. Exercise: tests/tst_trainingpanel.cpp.
#pragma once

#include <QByteArray>
#include <QColor>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

#include "format/format.h"
#include "train/trainer.h"

struct TrainingRun {
  int id = 0;
  QString name;               // e.g. "#2 adam e4m3fn/e4m3fn"
  QString dataset;            // "fashion-mnist" | "synthetic"
  QColor color;
  qs::TrainConfig config;
  bool visible = true;
  bool finished = false;
  QString status;             // "running", "paused", "completed", "stopped", "diverged", "failed: ..."
  double finalTestAcc = -1;
  int layers = 0;

  // Per step (index i <-> steps[i]).
  std::vector<double> steps, loss, lossEma, trainAcc, stallFraction;
  std::vector<int> epoch;
  std::vector<uint64_t> flipsTotal, updates, bitStalls, overflow, underflow;
  std::vector<std::vector<double>> flips;   // [layer][i]; 0 flips is NaN (a gap on the log axis)
  std::vector<std::vector<uint64_t>> flipsRaw;
  std::vector<double> stepTestAcc;          // per step: the test accuracy at epoch ends, -1 elsewhere
  std::vector<double> testSteps, testAcc;   // at epoch ends

  // Code usage of the weights, sampled every few steps: counts[layer][code].
  struct CodeSample {
    double step = 0;
    std::vector<std::vector<uint32_t>> counts;
  };
  bool hasFormat = false;
  qs::Format format;          // whose codes the samples count
  std::vector<CodeSample> codeSamples;

  static constexpr double kLossEma = 0.1;  // weight of the newest step in the plotted loss

  void append(const qs::StepMetrics& m);

  // CSVs of the plots (also the steps CSV of `quantscope-cli train`, with a run column first).
  static QByteArray stepsCsvHeader();     // "run,step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow"
  QByteArray stepsCsvRows() const;
  static QByteArray flipsCsvHeader();     // "run,step,layer,flips"
  QByteArray flipsCsvRows() const;
  static QByteArray stallsCsvHeader();    // "run,step,bit_stall_fraction"
  QByteArray stallsCsvRows() const;
  static QByteArray codeUsageCsvHeader(); // "run,layer,step,code,value,count" (non-zero counts)
  QByteArray codeUsageCsvRows(int layer) const;  // layer < 0: all layers summed (layer column "all")
};
