// TrainingPlots: QCustomPlot graphs fed incrementally (sorted keys, addData(..., true)), export menus on
// every plot (plotexport), and the layer choice of the heatmap.
#include "trainingplots.h"

#include "shared/plotstyle.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>

#include "codeusagemap.h"
#include "shared/plotexport.h"
#include "trainingrun.h"

namespace {

const Qt::PenStyle kLayerStyles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine, Qt::DashDotDotLine};

QVector<double> slice(const std::vector<double>& v, std::size_t from) { return QVector<double>(v.begin() + std::ptrdiff_t(from), v.end()); }

}  // namespace

TrainingPlots::TrainingPlots(const std::vector<std::unique_ptr<TrainingRun>>* runs, QWidget* parent)
    : QWidget(parent), m_runs(runs) {
  // Colours tell runs apart everywhere; the run legend sits on the loss plot, the layer key on the flips plot.
  m_plots[int(Plot::Loss)] = makePlot(QStringLiteral("Training loss"), QStringLiteral("cross-entropy (EMA 0.1)"), false);
  m_plots[int(Plot::Accuracy)] = makePlot(QStringLiteral("Accuracy"), QStringLiteral("batch (thin), test (dots)"), false);
  m_plots[int(Plot::Flips)] = makePlot(QStringLiteral("Flips per step"), QStringLiteral("weights whose code changed"), true);
  m_plots[int(Plot::BitStalls)] = makePlot(QStringLiteral("Bit-stall fraction"), QStringLiteral("stalled / updated weights"), false);
  m_plots[int(Plot::Accuracy)]->legend->setVisible(false);
  m_plots[int(Plot::BitStalls)]->legend->setVisible(false);
  addLayerKey();
  m_plots[int(Plot::Loss)]->setObjectName(QStringLiteral("lossPlot"));
  m_plots[int(Plot::Accuracy)]->setObjectName(QStringLiteral("accuracyPlot"));
  m_plots[int(Plot::Flips)]->setObjectName(QStringLiteral("flipsPlot"));
  m_plots[int(Plot::BitStalls)]->setObjectName(QStringLiteral("bitStallPlot"));
  m_plots[int(Plot::Accuracy)]->yAxis->setRange(0, 1);
  m_plots[int(Plot::BitStalls)]->yAxis->setRange(0, 1);
  m_codes = new CodeUsageMap;
  m_codes->setObjectName(QStringLiteral("codeUsageMap"));
  m_plots[int(Plot::Loss)]->setWhatsThis(QStringLiteral("Cross-entropy of each training batch (thin) and its exponential "
                                                        "moving average (α = 0.1), per step, for every run shown."));
  m_plots[int(Plot::Accuracy)]->setWhatsThis(QStringLiteral("Accuracy of each training batch (thin line) and on the test "
                                                            "set after each epoch (dots)."));
  m_plots[int(Plot::Flips)]->setWhatsThis(QStringLiteral("Flips: weights whose quantized code changed in a step, per layer "
                                                         "(solid fc1, dashed fc2, dotted fc3). Zero flips means the "
                                                         "network's quantized weights stopped moving."));
  m_plots[int(Plot::BitStalls)]->setWhatsThis(QStringLiteral("Bit-stalls: the fraction of updated weights whose update was "
                                                             "too small to change their code: the update was lost to "
                                                             "rounding. Stochastic rounding and GridOptim exist to avoid it."));
  m_codes->setWhatsThis(QStringLiteral("How many weights use each code of the format over the run (log colour scale); "
                                       "grey cells: codes no weight uses."));

  for (int p = 0; p < kPlotCount; ++p) {
    const Plot which = Plot(p);
    plotexport::installContextMenu(plot(which), stem(which), [this, which] { return csv(which); }, title(which));
  }

  m_layerCombo = new QComboBox;
  m_layerCombo->setObjectName(QStringLiteral("heatmapLayer"));
  m_layerCombo->addItem(QStringLiteral("all layers"), -1);
  for (int l = 0; l < 3; ++l) m_layerCombo->addItem(QStringLiteral("fc%1").arg(l + 1), l);
  m_layerCombo->setToolTip(QStringLiteral("Which weight matrix the heatmap counts"));
  connect(m_layerCombo, &QComboBox::currentIndexChanged, this, [this] { refreshCodeUsage(); });
  auto* heatBar = new QHBoxLayout;
  heatBar->addStretch(1);
  heatBar->addWidget(new QLabel(QStringLiteral("Heatmap layer:")));
  heatBar->addWidget(m_layerCombo);
  auto* heat = new QVBoxLayout;
  heat->setContentsMargins(0, 0, 0, 0);
  heat->addLayout(heatBar);
  heat->addWidget(m_codes, 1);

  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(4);
  grid->addWidget(m_plots[int(Plot::Loss)], 0, 0);
  grid->addWidget(m_plots[int(Plot::Accuracy)], 0, 1);
  grid->addWidget(m_plots[int(Plot::BitStalls)], 0, 2);
  grid->addWidget(m_plots[int(Plot::Flips)], 1, 0);
  grid->addLayout(heat, 1, 1, 1, 2);
}

QCustomPlot* TrainingPlots::makePlot(const QString& title, const QString& yLabel, bool logY) {
  auto* p = new QCustomPlot;
  p->setMinimumSize(200, 170);  // three abreast beside the controls: the tab must fit a 1280-px window
  p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plotstyle::addTitle(p, title);
  p->xAxis->setLabel(QStringLiteral("step"));
  p->yAxis->setLabel(yLabel);
  for (QCPAxis* a : {p->xAxis, p->yAxis}) plotstyle::styleGrid(a);
  if (logY) {
    p->yAxis->setScaleType(QCPAxis::stLogarithmic);
    auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
    ticker->setSubTickCount(8);
    p->yAxis->setTicker(ticker);
    p->yAxis->setNumberFormat(QStringLiteral("eb"));
    p->yAxis->setNumberPrecision(0);
    p->yAxis->setRange(1, 1e6);
  }
  plotstyle::styleLegend(p);
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  // No run yet: no legend (an empty framed box used to sit in the corner).
  connect(p, &QCustomPlot::beforeReplot, p, [p] { p->legend->setVisible(p->legend->itemCount() > 0); });
  connect(p, &QCustomPlot::mouseDoubleClick, this, [this] { rescale(); replotAll(); });
  return p;
}

QCustomPlot* TrainingPlots::plot(Plot which) const {
  return which == Plot::CodeUsage ? static_cast<QCustomPlot*>(m_codes) : m_plots[int(which)];
}

QString TrainingPlots::stem(Plot which) {
  switch (which) {
    case Plot::Loss: return QStringLiteral("loss");
    case Plot::Accuracy: return QStringLiteral("accuracy");
    case Plot::Flips: return QStringLiteral("flip-counts");
    case Plot::BitStalls: return QStringLiteral("bit-stalls");
    case Plot::CodeUsage: return QStringLiteral("code-usage");
  }
  return {};
}

QString TrainingPlots::title(Plot which) const {
  switch (which) {
    case Plot::Loss: return QStringLiteral("Training loss per step");
    case Plot::Accuracy: return QStringLiteral("Batch and test accuracy");
    case Plot::Flips: return QStringLiteral("Weights whose code changed, per step and layer");
    case Plot::BitStalls: return QStringLiteral("Bit-stall fraction per step");
    case Plot::CodeUsage: return m_codes->title();
  }
  return {};
}

QByteArray TrainingPlots::csv(Plot which) const {
  QByteArray out;
  switch (which) {
    case Plot::Loss:
    case Plot::Accuracy:
      out = TrainingRun::stepsCsvHeader();
      for (const auto& r : *m_runs) out += r->stepsCsvRows();
      break;
    case Plot::Flips:
      out = TrainingRun::flipsCsvHeader();
      for (const auto& r : *m_runs) out += r->flipsCsvRows();
      break;
    case Plot::BitStalls:
      out = TrainingRun::stallsCsvHeader();
      for (const auto& r : *m_runs) out += r->stallsCsvRows();
      break;
    case Plot::CodeUsage:
      out = m_codes->csv();
      break;
  }
  return out;
}

void TrainingPlots::addRun(const TrainingRun& run) {
  RunGraphs g;
  auto make = [&](Plot p, const QString& name, QPen pen) {
    QCPGraph* gr = m_plots[int(p)]->addGraph();
    gr->setName(name);
    gr->setPen(pen);
    gr->setAdaptiveSampling(true);
    return gr;
  };
  const QColor c = run.color;
  g.loss = make(Plot::Loss, run.name, QPen(c, 1.6));
  QColor light = c;
  light.setAlpha(90);
  g.trainAcc = make(Plot::Accuracy, run.name + QStringLiteral(" batch"), QPen(light, 1.0));
  g.trainAcc->removeFromLegend();
  g.testAcc = make(Plot::Accuracy, run.name, QPen(c, 2.0));
  g.testAcc->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
  for (int l = 0; l < 3; ++l) {
    QPen pen(c, 1.3);
    pen.setStyle(kLayerStyles[l % 5]);
    g.flips << make(Plot::Flips, QStringLiteral("%1 fc%2").arg(run.name).arg(l + 1), pen);
    g.flips.back()->removeFromLegend();
  }
  g.stalls = make(Plot::BitStalls, run.name, QPen(c, 1.3));
  m_graphs.insert(run.id, g);
}

void TrainingPlots::appendData(const TrainingRun& run, std::size_t from) {
  auto it = m_graphs.find(run.id);
  if (it == m_graphs.end() || from >= run.steps.size()) return;
  RunGraphs& g = *it;
  const QVector<double> x = slice(run.steps, from);
  g.loss->addData(x, slice(run.lossEma, from), true);
  g.trainAcc->addData(x, slice(run.trainAcc, from), true);
  g.stalls->addData(x, slice(run.stallFraction, from), true);
  for (int l = 0; l < run.layers && l < g.flips.size(); ++l) g.flips[l]->addData(x, slice(run.flips[std::size_t(l)], from), true);
  // Test points: those at or after the first new step.
  const double first = run.steps[from];
  for (std::size_t i = 0; i < run.testSteps.size(); ++i)
    if (run.testSteps[i] >= first) g.testAcc->addData(run.testSteps[i], run.testAcc[i]);
}

void TrainingPlots::setRunVisible(const TrainingRun& run, bool visible) {
  auto it = m_graphs.find(run.id);
  if (it == m_graphs.end()) return;
  for (QCPGraph* g : {it->loss, it->trainAcc, it->testAcc, it->stalls}) g->setVisible(visible);
  for (QCPGraph* g : it->flips) g->setVisible(visible);
  // Hidden runs leave the legend too.
  visible ? (void)it->loss->addToLegend() : (void)it->loss->removeFromLegend();
}

void TrainingPlots::addLayerKey() {
  QCustomPlot* p = m_plots[int(Plot::Flips)];
  for (int l = 0; l < 3; ++l) {
    QCPGraph* key = p->addGraph();  // no data: a legend entry for the layer's line style
    QPen pen(QColor(90, 90, 90), 1.3);
    pen.setStyle(kLayerStyles[l % 5]);
    key->setPen(pen);
    key->setName(QStringLiteral("fc%1").arg(l + 1));
  }
}

void TrainingPlots::clear() {
  for (QCustomPlot* p : m_plots) p->clearGraphs();
  addLayerKey();
  m_graphs.clear();
  m_codes->setRun(nullptr, -1);
}

void TrainingPlots::setCodeUsageRun(const TrainingRun* run) { m_codes->setRun(run, m_layerCombo->currentData().toInt()); }

void TrainingPlots::refreshCodeUsage() { m_codes->setRun(m_codes->run(), m_layerCombo->currentData().toInt()); }

void TrainingPlots::rescale() {
  double xmax = 1;
  for (const auto& r : *m_runs)
    if (r->visible && !r->steps.empty()) xmax = std::max(xmax, r->steps.back());
  for (QCustomPlot* p : m_plots) p->xAxis->setRange(0, xmax * 1.02);
  // Loss: from 0 to the largest visible value (the first steps can be far above the rest: cap at 3x the median).
  std::vector<double> l;
  double fmin = 1e300, fmax = 0;
  for (const auto& r : *m_runs) {
    if (!r->visible) continue;
    for (double v : r->lossEma)
      if (std::isfinite(v)) l.push_back(v);
    for (const auto& layer : r->flips)
      for (double v : layer)
        if (std::isfinite(v)) fmin = std::min(fmin, v), fmax = std::max(fmax, v);
  }
  if (!l.empty()) {
    std::vector<double> s = l;
    std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(s.size() / 2), s.end());
    const double top = std::min(*std::max_element(l.begin(), l.end()), 3 * s[s.size() / 2]);
    m_plots[int(Plot::Loss)]->yAxis->setRange(0, std::max(top * 1.05, 1e-3));
  }
  if (fmax > 0) m_plots[int(Plot::Flips)]->yAxis->setRange(std::max(0.5, fmin / 1.5), fmax * 2);
  m_plots[int(Plot::Accuracy)]->yAxis->setRange(0, 1.02);
  m_plots[int(Plot::BitStalls)]->yAxis->setRange(0, 1.02);
}

void TrainingPlots::replotAll() {
  for (QCustomPlot* p : m_plots) p->replot(QCustomPlot::rpQueuedReplot);
  m_codes->replot(QCustomPlot::rpQueuedReplot);
}

QVector<QCPGraph*> TrainingPlots::graphs(Plot which, int runId) const {
  const auto it = m_graphs.constFind(runId);
  if (it == m_graphs.cend()) return {};
  switch (which) {
    case Plot::Loss: return {it->loss};
    case Plot::Accuracy: return {it->trainAcc, it->testAcc};
    case Plot::Flips: return it->flips;
    case Plot::BitStalls: return {it->stalls};
    case Plot::CodeUsage: return {};
  }
  return {};
}
