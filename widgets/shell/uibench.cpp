// runUiBenchmark: an ErrorPanel at 1200 x 800, a synthetic normal tensor and three schemes (per tensor,
// per channel, MX blocks), and a 10 ms timer recording the largest gap between its ticks.
// Exercise: `quantscope --bench-ui`, tests/tst_errorpanel.cpp (a small run).
#include "uibench.h"

#include "error/errorpanel.h"
#include "observers/observerspanel.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>

#include <algorithm>
#include <memory>

#include "quant/synthetic.h"

namespace {

// The largest gap between the ticks of a 10 ms timer: how long the event loop was kept from running.
struct GapMeter {
  QTimer ticker;
  QElapsedTimer sinceTick;
  double maxGap = 0;
  GapMeter() {
    ticker.setInterval(10);
    ticker.setTimerType(Qt::PreciseTimer);
    QObject::connect(&ticker, &QTimer::timeout, [this] {
      maxGap = std::max(maxGap, double(sinceTick.nsecsElapsed()) / 1e6);
      sinceTick.restart();
    });
  }
  void start() {
    ticker.start();
    sinceTick.start();
  }
  // The work that ended the run finished after the last tick: the time since that tick is a gap too.
  double stop() {
    maxGap = std::max(maxGap, double(sinceTick.nsecsElapsed()) / 1e6);
    ticker.stop();
    return maxGap;
  }
};

}  // namespace

int runUiBenchmark(QTextStream& out, std::size_t values) {
  constexpr double kBudgetMs = 100.0;
  qs::SyntheticSpec spec;
  spec.dist = qs::Distribution::Normal;
  spec.n = values;
  spec.cols = 4096;
  spec.seed = 1;
  TensorData tensor;
  tensor.source = QStringLiteral("synthetic");
  tensor.name = QString::fromStdString(qs::describe(spec));
  tensor.values = std::make_shared<const std::vector<float>>(qs::make_synthetic(spec, 0));
  tensor.shape = {int64_t(values / spec.cols), int64_t(spec.cols)};
  const std::vector<qs::Scheme> schemes = {qs::parse_scheme("e4m3fn/tensor"), qs::parse_scheme("int8/channel:0"),
                                           qs::parse_scheme("e2m1fn/block:32:e8m0fnu")};

  ErrorPanel panel;
  panel.resize(1200, 800);
  panel.show();
  panel.setSchemes(schemes);  // no tensor yet: nothing to compute
  QCoreApplication::processEvents();

  QElapsedTimer clock;
  GapMeter gaps;
  QEventLoop loop;
  QObject::connect(&panel, &ErrorPanel::busyChanged, &loop, [&](bool busy) {
    if (!busy) loop.quit();
  });
  QTimer limit;
  limit.setSingleShot(true);
  QObject::connect(&limit, &QTimer::timeout, &loop, &QEventLoop::quit);

  gaps.start();
  clock.start();
  // The tensor is set from the event loop, as a click in the setup dock would; its cost counts.
  QTimer::singleShot(0, &panel, [&] { panel.setTensor(tensor); });
  limit.start(60000);
  loop.exec();
  const double computeMs = double(clock.nsecsElapsed()) / 1e6;
  const double maxGap = gaps.stop();

  bool ok = !panel.isBusy();
  for (int i = 0; i < int(schemes.size()); ++i) ok = ok && panel.view(i) != nullptr;
  out << "values,schemes,compute_ms,max_gap_ms,budget_ms,ratio\n"
      << values << ',' << schemes.size() << ',' << QString::number(computeMs, 'f', 1) << ','
      << QString::number(maxGap, 'f', 1) << ',' << kBudgetMs << ',' << QString::number(maxGap / kBudgetMs, 'f', 3) << '\n';
  out.flush();
  if (!ok) return 2;
  return maxGap <= kBudgetMs ? 0 : 1;
}

int runObserversUiBenchmark(QTextStream& out, int batches, int batchSize) {
  constexpr double kBudgetMs = 100.0;
  ObserversPanel panel;
  panel.resize(1200, 700);
  panel.show();
  ObserversPanel::Config c;
  c.observers = QStringLiteral("current,minmax,movavg:0.01,p99.99,mse,delayed:16:max:0");
  c.batches = batches;
  c.stream.batch_size = std::size_t(batchSize);
  c.stream.spikes = {uint64_t(batches / 2)};
  if (!panel.setConfig(c)) return 2;
  panel.setSpeed(0);  // as fast as possible: the slices are the only thing between the stream and the loop
  QCoreApplication::processEvents();
  QElapsedTimer clock;
  GapMeter gaps;
  QEventLoop loop;
  QObject::connect(&panel, &ObserversPanel::finished, &loop, &QEventLoop::quit);
  QTimer limit;
  limit.setSingleShot(true);
  QObject::connect(&limit, &QTimer::timeout, &loop, &QEventLoop::quit);
  gaps.start();
  clock.start();
  QTimer::singleShot(0, &panel, [&] { panel.start(); });
  limit.start(120000);
  loop.exec();
  const double ms = double(clock.nsecsElapsed()) / 1e6;
  const double maxGap = gaps.stop();
  const bool ok = panel.batchesDone() == std::size_t(batches);
  out << "batches,batch_size,observers,stream_ms,max_gap_ms,budget_ms,ratio\n"
      << batches << ',' << batchSize << ',' << panel.observerNames().size() << ',' << QString::number(ms, 'f', 1) << ','
      << QString::number(maxGap, 'f', 1) << ',' << kBudgetMs << ',' << QString::number(maxGap / kBudgetMs, 'f', 3) << '\n';
  out.flush();
  if (!ok) return 2;
  return maxGap <= kBudgetMs ? 0 : 1;
}
