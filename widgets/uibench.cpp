// runUiBenchmark: an ErrorPanel at 1200 x 800, a synthetic normal tensor and three schemes (per tensor,
// per channel, MX blocks), and a 10 ms timer recording the largest gap between its ticks.
// Exercise: `quantscope --bench-ui`, tests/tst_errorpanel.cpp (a small run).
#include "uibench.h"

#include "errorpanel.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>

#include <algorithm>
#include <memory>

#include "quant/synthetic.h"

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

  QElapsedTimer clock, sinceTick;
  double maxGap = 0;
  QTimer ticker;
  ticker.setInterval(10);
  ticker.setTimerType(Qt::PreciseTimer);
  QObject::connect(&ticker, &QTimer::timeout, [&] {
    maxGap = std::max(maxGap, double(sinceTick.nsecsElapsed()) / 1e6);
    sinceTick.restart();
  });
  QEventLoop loop;
  QObject::connect(&panel, &ErrorPanel::busyChanged, &loop, [&](bool busy) {
    if (!busy) loop.quit();
  });
  QTimer limit;
  limit.setSingleShot(true);
  QObject::connect(&limit, &QTimer::timeout, &loop, &QEventLoop::quit);

  ticker.start();
  sinceTick.start();
  clock.start();
  // The tensor is set from the event loop, as a click in the setup dock would; its cost counts.
  QTimer::singleShot(0, &panel, [&] { panel.setTensor(tensor); });
  limit.start(60000);
  loop.exec();
  const double computeMs = double(clock.nsecsElapsed()) / 1e6;
  // The final refresh ran after the last tick: the time since that tick is a gap too.
  maxGap = std::max(maxGap, double(sinceTick.nsecsElapsed()) / 1e6);
  ticker.stop();

  bool ok = !panel.isBusy();
  for (int i = 0; i < int(schemes.size()); ++i) ok = ok && panel.view(i) != nullptr;
  out << "values,schemes,compute_ms,max_gap_ms,budget_ms,ratio\n"
      << values << ',' << schemes.size() << ',' << QString::number(computeMs, 'f', 1) << ','
      << QString::number(maxGap, 'f', 1) << ',' << kBudgetMs << ',' << QString::number(maxGap / kBudgetMs, 'f', 3) << '\n';
  out.flush();
  if (!ok) return 2;
  return maxGap <= kBudgetMs ? 0 : 1;
}
