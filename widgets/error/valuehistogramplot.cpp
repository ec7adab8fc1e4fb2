// ValueHistogramPlot: a step histogram of the values over [lo, hi]; under it, each scheme's grid as an
// impulse rug on its own hidden axis, so the bands never overlap whatever the count axis does.
// Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel` (writes /tmp/qs-errorpanel.png).
#include "valuehistogramplot.h"

#include "shared/plotstyle.h"

#include <tuple>

#include "shared/elidedlabel.h"
#include "shared/errortext.h"
#include "shared/plotexport.h"

#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace {

const QColor kHistColor(90, 110, 140);

// Count ticks from 0 (or 1 on the log axis) up: the rugs live below, where counts mean nothing.
class CountTicker : public QCPAxisTicker {
protected:
  QVector<double> createTickVector(double step, const QCPRange& range) override {
    QVector<double> t = QCPAxisTicker::createTickVector(step, range);
    t.erase(std::remove_if(t.begin(), t.end(), [](double v) { return v < 0; }), t.end());
    return t;
  }
};
class LogCountTicker : public QCPAxisTickerLog {
protected:
  QVector<double> createTickVector(double step, const QCPRange& range) override {
    QVector<double> t = QCPAxisTickerLog::createTickVector(step, range);
    t.erase(std::remove_if(t.begin(), t.end(), [](double v) { return v < 1; }), t.end());
    return t;
  }
};
constexpr double kBandFraction = 0.065;  // of the plot height, per scheme
constexpr double kMaxStrip = 0.32;

}  // namespace

ValueHistogramPlot::ValueHistogramPlot(QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(280, 220);
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setMouseTracking(true);  // hover tips
  axisRect()->setRangeDrag(Qt::Horizontal);
  axisRect()->setRangeZoom(Qt::Horizontal);
  setNoAntialiasingOnDrag(true);

  std::tie(m_title, m_subtitle) = plotstyle::addTitleAndSubtitle(this);
  plotstyle::setText(m_title, QStringLiteral("Values"));

  xAxis->setLabel(QStringLiteral("value"));
  yAxis->setLabel(QStringLiteral("count"));
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::DotLine));
    a->setLabelFont(QFont(font().family(), 9));
  }
  yAxis->setNumberFormat(QStringLiteral("gb"));
  yAxis->setTicker(QSharedPointer<CountTicker>::create());
  yAxis->setSubTicks(false);

  m_histGraph = addGraph();
  m_histGraph->setName(QStringLiteral("values"));
  m_histGraph->setLineStyle(QCPGraph::lsStepCenter);
  m_histGraph->setPen(QPen(kHistColor, 1.2));
  m_histGraph->setBrush(QColor(kHistColor.red(), kHistColor.green(), kHistColor.blue(), 60));

  plotstyle::styleLegend(this);
  plotstyle::placeLegendBelow(this);

  connect(this, &QCustomPlot::mouseDoubleClick, this, &ValueHistogramPlot::resetView);
  connect(this, &QCustomPlot::mouseMove, this, &ValueHistogramPlot::showTip);
  clearHistogram(QStringLiteral("no tensor selected"));
}

void ValueHistogramPlot::setHistogram(const qs::LinearHistogram& h, const QString& name) {
  m_hist = h;
  m_name = name;
  const int bins = h.bins();
  QVector<double> keys(bins), values(bins);
  m_maxCount = 0;
  for (int k = 0; k < bins; ++k) {
    keys[k] = 0.5 * (h.bin_lo(k) + h.bin_hi(k));
    values[k] = double(h.counts[std::size_t(k)]);
    m_maxCount = std::max(m_maxCount, values[k]);
    if (m_log && values[k] == 0) values[k] = std::nan("");  // a gap on the log axis
  }
  m_histGraph->setData(keys, values, true);
  m_histGraph->setName(QStringLiteral("values (%1 bins)").arg(bins));

  updateTitle();
  const uint64_t finite = h.total() - h.nan - h.pos_inf - h.neg_inf;
  QString text = QStringLiteral("%1 values in [%2, %3]")
                     .arg(errortext::count(finite), errortext::value(h.lo), errortext::value(h.hi));
  if (h.below || h.above)
    text += QStringLiteral("; %1 below, %2 above").arg(errortext::count(h.below), errortext::count(h.above));
  const uint64_t special = h.nan + h.pos_inf + h.neg_inf;
  if (special)
    text += QStringLiteral("\n%1 NaN, %2 +inf, %3 −inf: counted, not drawn")
                .arg(errortext::count(h.nan), errortext::count(h.pos_inf), errortext::count(h.neg_inf));
  plotstyle::setText(m_subtitle, text);
  m_subtitle->setTextColor(special ? QColor(183, 28, 28) : QColor(70, 70, 70));
  rebuildRange();
  resetView();
}

// The tensor's name in the title, wrapped to the plot's width by plotstyle (a synthetic tensor's
// "student-t(ν=2, scale 20), …" used to be cut at its first comma); a name from a file can be any
// length: at most 160 characters, elided in the middle (the line above the plots has the whole name).
void ValueHistogramPlot::updateTitle() {
  // A synthetic tensor's description "student-t(ν=2, scale 20), 1048576 values = …, seed 11": the title
  // keeps the distribution, up to the first comma outside brackets (the line above has the rest).
  QString name = m_name;
  int depth = 0;
  for (qsizetype i = 0; i + 1 < name.size(); ++i) {
    const QChar c = name[i];
    depth += c == u'(' || c == u'[' ? 1 : c == u')' || c == u']' ? -1 : 0;
    if (depth == 0 && c == u',' && name[i + 1] == u' ' && name.size() > 48) {
      name.truncate(i);
      break;
    }
  }
  const QString shown = elide::middle(name, 160);
  if (shown.isEmpty()) return plotstyle::setText(m_title, QStringLiteral("Values"));
  plotstyle::setText(m_title, QStringLiteral("Values of ") + shown);
}

void ValueHistogramPlot::resizeEvent(QResizeEvent* event) {
  if (!m_name.isEmpty()) updateTitle();  // before the base class lays out and replots
  QCustomPlot::resizeEvent(event);
}

void ValueHistogramPlot::clearHistogram(const QString& why) {
  m_hist = qs::LinearHistogram{};
  m_name.clear();
  m_maxCount = 0;
  m_histGraph->data()->clear();
  plotstyle::setText(m_title, QStringLiteral("Values"));
  plotstyle::setText(m_subtitle, why);
  m_subtitle->setTextColor(QColor(70, 70, 70));
  setGrids({});
}

QCPGraph* ValueHistogramPlot::gridGraph(int index) const {
  return index >= 0 && index < m_gridGraphs.size() ? m_gridGraphs[index] : nullptr;
}

void ValueHistogramPlot::setGrids(const QVector<Grid>& grids) {
  for (QCPGraph* g : m_gridGraphs) removeGraph(g);
  m_gridGraphs.clear();
  m_grids = grids;
  while (m_rugAxes.size() < grids.size()) {
    QCPAxis* a = axisRect()->addAxis(QCPAxis::atRight);
    a->setVisible(false);
    m_rugAxes << a;
  }
  for (int i = 0; i < grids.size(); ++i) {
    const Grid& g = grids[i];
    QCPGraph* graph = addGraph(xAxis, m_rugAxes[i]);
    graph->setLineStyle(QCPGraph::lsImpulse);
    graph->setPen(QPen(g.color, g.values.size() > 2000 ? 0.6 : 1.2));
    graph->setData(g.values, QVector<double>(g.values.size(), 1.0), true);
    // Few values (4- and 6-bit formats): a dot on each tick makes them easy to count.
    if (g.values.size() <= 64) graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, g.color, 4));
    // Long notes (a group's index, its scale) wrap onto indented lines rather than run out of the plot.
    const QString note = errortext::superscriptPowers(g.note);
    const QString head = QStringLiteral("%1 grid (%2 values)").arg(g.scheme).arg(g.values.size());
    plotstyle::setLegendName(graph, head + QStringLiteral(": ") + note);
    m_gridGraphs << graph;
  }
  rebuildRange();
  replot(QCustomPlot::rpQueuedReplot);
}

void ValueHistogramPlot::setLogCounts(bool on) {
  if (on == m_log) return;
  m_log = on;
  // A fill on the log axis would run down through the rugs: the outline alone reads fine there.
  m_histGraph->setBrush(on ? QBrush(Qt::NoBrush) : QBrush(QColor(kHistColor.red(), kHistColor.green(), kHistColor.blue(), 60)));
  yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (on) yAxis->setTicker(QSharedPointer<LogCountTicker>::create());
  else yAxis->setTicker(QSharedPointer<CountTicker>::create());
  if (m_hist.bins() > 0) setHistogram(m_hist, m_name);
  else rebuildRange();
  replot(QCustomPlot::rpQueuedReplot);
}

// The count axis leaves the bottom strip to the rugs; each rug axis maps [0, 1] onto its own band.
void ValueHistogramPlot::rebuildRange() {
  const int k = int(m_grids.size());
  const double strip = std::min(kMaxStrip, kBandFraction * k);
  const double top = std::max(m_maxCount, 1.0) * (m_log ? 3.0 : 1.12);
  if (m_log) {
    // With the strip fraction s at the bottom, count 0.8 sits at s: lo = (0.8 / top^s)^(1 / (1 - s)).
    const double lo = strip > 0 ? std::pow(0.8 / std::pow(top, strip), 1.0 / (1.0 - strip)) : 0.5;
    yAxis->setRange(lo, top);
  } else {
    yAxis->setRange(-top * strip / (1.0 - strip), top);
  }
  for (int i = 0; i < m_rugAxes.size(); ++i) {
    if (i >= k) {
      m_rugAxes[i]->setRange(10, 11);  // unused: out of view
      continue;
    }
    const double band = strip / k, gap = band * 0.12;
    const double f0 = strip - band * (i + 1) + gap, f1 = strip - band * i - gap;  // first scheme on top
    const double span = 1.0 / (f1 - f0);
    m_rugAxes[i]->setRange(-f0 * span, (1.0 - f0) * span);
  }
}

void ValueHistogramPlot::resetView() {
  if (m_hist.bins() > 0) {
    const double pad = 0.02 * (m_hist.hi - m_hist.lo);
    xAxis->setRange(m_hist.lo - pad, m_hist.hi + pad);
  } else {
    xAxis->setRange(-1, 1);
  }
  rebuildRange();
  replot(QCustomPlot::rpQueuedReplot);
}

void ValueHistogramPlot::showTip(QMouseEvent* event) {
  const int bins = m_hist.bins();
  if (bins == 0 || !axisRect()->rect().contains(event->pos())) return;
  const double x = xAxis->pixelToCoord(event->pos().x());
  if (x < m_hist.lo || x > m_hist.hi) return;
  const int k = std::min(int((x - m_hist.lo) / m_hist.bin_width()), bins - 1);
  QToolTip::showText(event->globalPosition().toPoint(),
                     QStringLiteral("[%1, %2): %3 values")
                         .arg(errortext::value(m_hist.bin_lo(k), 6), errortext::value(m_hist.bin_hi(k), 6),
                              errortext::count(m_hist.counts[std::size_t(k)])),
                     this);
}

QByteArray ValueHistogramPlot::csv() const {
  QByteArray out("series,bin_lo,bin_hi,count\n");
  for (int k = 0; k < m_hist.bins(); ++k)
    out += "values," + plotexport::number(m_hist.bin_lo(k)) + ',' + plotexport::number(m_hist.bin_hi(k)) + ',' +
           QByteArray::number(qulonglong(m_hist.counts[std::size_t(k)])) + '\n';
  const std::pair<const char*, uint64_t> extra[] = {{"below", m_hist.below}, {"above", m_hist.above}, {"nan", m_hist.nan},
                                                    {"+inf", m_hist.pos_inf}, {"-inf", m_hist.neg_inf}};
  if (m_hist.bins() > 0)
    for (const auto& [name, n] : extra) out += QByteArray(name) + ",,," + QByteArray::number(qulonglong(n)) + '\n';
  for (const Grid& g : m_grids) {
    const QByteArray series = "grid:" + g.scheme.toUtf8();
    for (double v : g.values) out += series + ',' + plotexport::number(v) + ',' + plotexport::number(v) + ",\n";
  }
  return out;
}
