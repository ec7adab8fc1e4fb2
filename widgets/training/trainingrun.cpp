// TrainingRun: appending step metrics to the plotted series and the CSVs of the Training tab's plots.
#include "io/csv.h"
#include "trainingrun.h"

#include <cmath>
#include <limits>

#include "shared/plotexport.h"

namespace {

QByteArray quoted(const QString& s) {  // CSV cell (RFC 4180): run names may hold commas, quotes, line breaks
  return QByteArray::fromStdString(qs::csv_field(s.toStdString()));
}

}  // namespace

void TrainingRun::append(const qs::StepMetrics& m) {
  if (layers == 0) {
    layers = int(m.layers.size());
    flips.assign(std::size_t(layers), {});
    flipsRaw.assign(std::size_t(layers), {});
  }
  const double step = double(m.step);
  steps.push_back(step);
  epoch.push_back(m.epoch);
  loss.push_back(m.loss);
  const double prev = lossEma.empty() || !std::isfinite(lossEma.back()) ? m.loss : lossEma.back();
  lossEma.push_back(prev + kLossEma * (m.loss - prev));
  trainAcc.push_back(m.train_acc);
  flipsTotal.push_back(m.flips());
  updates.push_back(m.updates());
  bitStalls.push_back(m.bit_stalls());
  overflow.push_back(m.overflow());
  underflow.push_back(m.underflow());
  stallFraction.push_back(m.updates() ? double(m.bit_stalls()) / double(m.updates())
                                      : std::numeric_limits<double>::quiet_NaN());
  for (int l = 0; l < layers && l < int(m.layers.size()); ++l) {
    const uint64_t f = m.layers[std::size_t(l)].flips;
    flipsRaw[std::size_t(l)].push_back(f);
    flips[std::size_t(l)].push_back(f ? double(f) : std::numeric_limits<double>::quiet_NaN());
  }
  stepTestAcc.push_back(m.epoch_end && m.test_acc >= 0 ? m.test_acc : -1.0);
  if (m.epoch_end && m.test_acc >= 0) {
    testSteps.push_back(step);
    testAcc.push_back(m.test_acc);
  }
  if (!m.layers.empty() && !m.layers.front().code_histogram.empty()) {
    CodeSample s;
    s.step = step;
    for (const qs::LayerMetrics& l : m.layers) s.counts.push_back(l.code_histogram);
    codeSamples.push_back(std::move(s));
  }
}

QByteArray TrainingRun::stepsCsvHeader() {
  return QByteArrayLiteral("run,step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow\n");
}

QByteArray TrainingRun::stepsCsvRows() const {
  QByteArray out;
  const QByteArray run = quoted(name);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    out += run + ',' + QByteArray::number(qulonglong(steps[i])) + ',' + QByteArray::number(epoch[i]) + ',' +
           plotexport::number(loss[i]) + ',' + plotexport::number(trainAcc[i]) + ',' +
           (stepTestAcc[i] >= 0 ? plotexport::number(stepTestAcc[i]) : QByteArray()) + ',' +
           QByteArray::number(qulonglong(flipsTotal[i])) + ',' + QByteArray::number(qulonglong(updates[i])) + ',' +
           QByteArray::number(qulonglong(bitStalls[i])) + ',' + QByteArray::number(qulonglong(overflow[i])) + ',' +
           QByteArray::number(qulonglong(underflow[i])) + '\n';
  }
  return out;
}

QByteArray TrainingRun::flipsCsvHeader() { return QByteArrayLiteral("run,step,layer,flips\n"); }

QByteArray TrainingRun::flipsCsvRows() const {
  QByteArray out;
  const QByteArray run = quoted(name);
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (int l = 0; l < layers; ++l)
      out += run + ',' + QByteArray::number(qulonglong(steps[i])) + ",fc" + QByteArray::number(l + 1) + ',' +
             QByteArray::number(qulonglong(flipsRaw[std::size_t(l)][i])) + '\n';
  return out;
}

QByteArray TrainingRun::stallsCsvHeader() { return QByteArrayLiteral("run,step,bit_stall_fraction\n"); }

QByteArray TrainingRun::stallsCsvRows() const {
  QByteArray out;
  const QByteArray run = quoted(name);
  for (std::size_t i = 0; i < steps.size(); ++i)
    out += run + ',' + QByteArray::number(qulonglong(steps[i])) + ',' + plotexport::number(stallFraction[i]) + '\n';
  return out;
}

QByteArray TrainingRun::codeUsageCsvHeader() { return QByteArrayLiteral("run,layer,step,code,value,count\n"); }

QByteArray TrainingRun::codeUsageCsvRows(int layer) const {
  QByteArray out;
  if (!hasFormat) return out;
  const QByteArray run = quoted(name);
  const QByteArray lname = layer < 0 ? QByteArrayLiteral("all") : "fc" + QByteArray::number(layer + 1);
  for (const CodeSample& s : codeSamples) {
    const std::size_t codes = s.counts.empty() ? 0 : s.counts.front().size();
    for (std::size_t c = 0; c < codes; ++c) {
      uint64_t n = 0;
      for (std::size_t l = 0; l < s.counts.size(); ++l)
        if (layer < 0 || int(l) == layer) n += s.counts[l][c];
      if (n == 0) continue;
      out += run + ',' + lname + ',' + QByteArray::number(qulonglong(s.step)) + ',' + QByteArray::number(qulonglong(c)) +
             ',' + plotexport::number(qs::decode_ref(format, uint32_t(c))) + ',' + QByteArray::number(qulonglong(n)) + '\n';
    }
  }
  return out;
}
