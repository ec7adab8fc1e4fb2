// ErrorHistogramPlot: log2-binned error histograms, one colour per scheme, clipping apart from rounding.
// Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel` (writes /tmp/qs-errorpanel.png).
#include "io/csv.h"
#include "errorhistogramplot.h"

#include "shared/plotstyle.h"

#include <tuple>

#include "shared/errortext.h"
#include "shared/plotexport.h"

#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace {

// "2⁻⁹" for the exponent axis.
QString powerOfTwo(int k) {
  static const char16_t* digits[] = {u"⁰", u"¹", u"²", u"³", u"⁴", u"⁵", u"⁶", u"⁷", u"⁸", u"⁹"};
  QString s = QStringLiteral("2");
  if (k < 0) s += QChar(u'⁻');
  for (QChar c : QString::number(std::abs(k))) s += QString::fromUtf16(digits[c.digitValue()]);
  return s;
}

// Integer ticks on the exponent axis, labelled as powers of two.
class ExponentTicker : public QCPAxisTicker {
public:
  ExponentTicker() { setTickCount(8); }

protected:
  double getTickStep(const QCPRange& range) override {
    double step = 1;
    while (range.size() / step > tickCount() + 2) step *= 2;
    return step;
  }
  int getSubTickCount(double tickStep) override { return tickStep >= 2 && tickStep <= 8 ? int(tickStep) - 1 : 0; }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override { return powerOfTwo(int(std::lround(tick))); }
};

int exponentOf(int bin) { return bin - 127; }  // bin 0 (subnormals) is drawn at 2^-127

}  // namespace

ErrorHistogramPlot::ErrorHistogramPlot(QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(280, 220);
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setMouseTracking(true);  // hover tips
  std::tie(m_title, m_subtitle) = plotstyle::addTitleAndSubtitle(this);

  xAxis->setTicker(QSharedPointer<ExponentTicker>::create());
  yAxis->setScaleType(QCPAxis::stLogarithmic);
  auto logTicker = QSharedPointer<QCPAxisTickerLog>::create();
  logTicker->setSubTickCount(8);
  yAxis->setTicker(logTicker);
  yAxis->setNumberFormat(QStringLiteral("eb"));
  yAxis->setNumberPrecision(0);
  yAxis->setLabel(QStringLiteral("fraction of the finite values"));
  for (QCPAxis* a : {xAxis, yAxis}) plotstyle::styleGrid(a);

  plotstyle::styleLegend(this);
  plotstyle::placeLegendBelow(this);

  connect(this, &QCustomPlot::mouseDoubleClick, this, &ErrorHistogramPlot::resetView);
  connect(this, &QCustomPlot::mouseMove, this, &ErrorHistogramPlot::showTip);
  rebuild();
}

void ErrorHistogramPlot::setSeries(const QVector<Series>& series) {
  m_series = series;
  rebuild();
}

void ErrorHistogramPlot::setMode(Mode mode) {
  if (mode == m_mode) return;
  m_mode = mode;
  rebuild();
}

QCPGraph* ErrorHistogramPlot::roundingGraph(int index) const {
  return index >= 0 && index < m_rounding.size() ? m_rounding[index] : nullptr;
}

QCPGraph* ErrorHistogramPlot::clippingGraph(int index) const {
  return index >= 0 && index < m_clipping.size() ? m_clipping[index] : nullptr;
}

void ErrorHistogramPlot::rebuild() {
  clearGraphs();
  m_rounding.clear();
  m_clipping.clear();
  const bool abs = m_mode == Mode::Absolute;
  plotstyle::setText(m_title, abs ? QStringLiteral("Round-trip error  |x − q|") : QStringLiteral("Relative error  |x − q| / |x|"));
  xAxis->setLabel(abs ? QStringLiteral("|x − q|  (log₂ bins)") : QStringLiteral("|x − q| / |x|  (log₂ bins)"));
  plotstyle::setText(m_subtitle, QStringLiteral("filled: rounding   ·   hatched: clipping (|x/scale| beyond the format's range)"));

  int first = qs::Log2ErrorHistogram::kBins, last = -1;
  double ymin = 1, ymax = 0;
  for (int i = 0; i < m_series.size(); ++i) {
    const Series& s = m_series[i];
    const qs::Log2ErrorHistogram& h = current(s);
    const double denom = double(std::max<uint64_t>(s.finite, 1));
    auto build = [&](const std::array<uint64_t, qs::Log2ErrorHistogram::kBins>& counts, bool clip) -> QCPGraph* {
      int lo = qs::Log2ErrorHistogram::kBins, hi = -1;
      for (int k = 0; k < qs::Log2ErrorHistogram::kBins; ++k)
        if (counts[std::size_t(k)]) lo = std::min(lo, k), hi = std::max(hi, k);
      if (hi < 0 && clip) return nullptr;
      QVector<double> keys, values;
      // One empty bin either side closes the steps down to the axis.
      for (int k = std::max(0, lo - 1); k <= std::min(qs::Log2ErrorHistogram::kBins - 1, hi + 1); ++k) {
        const double f = double(counts[std::size_t(k)]) / denom;
        keys << exponentOf(k) + 0.5;
        values << (f > 0 ? f : std::nan(""));
        if (f > 0) ymin = std::min(ymin, f), ymax = std::max(ymax, f);
      }
      first = std::min(first, lo);
      last = std::max(last, hi);
      QCPGraph* g = addGraph();
      g->setLineStyle(QCPGraph::lsStepCenter);
      g->setData(keys, values, true);
      QColor fill = s.color;
      if (clip) {
        g->setPen(QPen(s.color.darker(115), 1.8, Qt::DashLine));
        g->setBrush(QBrush(s.color, Qt::BDiagPattern));
      } else {
        g->setPen(QPen(s.color, 1.8));
        fill.setAlpha(45);
        g->setBrush(fill);
      }
      return g;
    };
    QCPGraph* r = build(h.rounding, false);
    QString name = s.scheme + QStringLiteral(": rounding");
    QStringList extra;
    if (h.zeros) extra << QStringLiteral("%1 exact").arg(errortext::count(h.zeros));
    if (!abs && h.undefined) extra << QStringLiteral("%1 zeros of x").arg(errortext::count(h.undefined));
    if (!extra.isEmpty()) name += QStringLiteral(" (%1)").arg(extra.join(QStringLiteral(", ")));
    m_rounding << r;
    QCPGraph* c = build(h.clipping, true);
    uint64_t clipped = 0;
    for (uint64_t n : h.clipping) clipped += n;
    if (c)
      plotstyle::setLegendName(c, QStringLiteral("%1: clipping (%2 value%3%4)")
                                      .arg(s.scheme, errortext::count(clipped), clipped == 1 ? QString() : QStringLiteral("s"),
                                           h.non_finite ? QStringLiteral(", %1 → inf/NaN").arg(errortext::count(h.non_finite))
                                                        : QString()));
    else if (h.non_finite)
      name += QStringLiteral("; %1 → inf/NaN").arg(errortext::count(h.non_finite));
    if (r) plotstyle::setLegendName(r, name);
    m_clipping << c;
  }
  if (last >= first) {
    m_fullX = QCPRange(exponentOf(first) - 1.5, exponentOf(last) + 2.5);
    // Headroom above for the legend, and down to the rarest bin.
    m_fullY = QCPRange(ymin / 3, std::min(ymax * 3, 2.0));
  } else {
    m_fullX = QCPRange(-12, 0);
    m_fullY = QCPRange(1e-6, 1);
  }
  legend->setVisible(!m_series.isEmpty());
  resetView();
}

void ErrorHistogramPlot::resetView() {
  xAxis->setRange(m_fullX);
  yAxis->setRange(m_fullY);
  replot(QCustomPlot::rpQueuedReplot);
}

void ErrorHistogramPlot::showTip(QMouseEvent* event) {
  if (m_series.isEmpty() || !axisRect()->rect().contains(event->pos())) return;
  const int e = int(std::floor(xAxis->pixelToCoord(event->pos().x())));
  const int k = e + 127;
  if (k < 0 || k >= qs::Log2ErrorHistogram::kBins) return;
  QStringList lines{k == 0 ? QStringLiteral("below 2⁻¹²⁶ (subnormal)")
                           : QStringLiteral("%1 ≤ %2 < %3").arg(powerOfTwo(e), m_mode == Mode::Absolute ? "|e|" : "|e|/|x|",
                                                                powerOfTwo(e + 1))};
  for (const Series& s : m_series) {
    const qs::Log2ErrorHistogram& h = current(s);
    lines << QStringLiteral("%1: %2 rounding, %3 clipping")
                 .arg(s.scheme, errortext::count(h.rounding[std::size_t(k)]), errortext::count(h.clipping[std::size_t(k)]));
  }
  QToolTip::showText(event->globalPosition().toPoint(), lines.join(u'\n'), this);
}

QByteArray ErrorHistogramPlot::csv() const {
  QByteArray out("scheme,kind,part,bin_lo,bin_hi,count\n");
  for (const Series& s : m_series) {
    qs::ErrorView v;  // the CSV writer reads only the two histograms
    v.abs_error = s.abs;
    v.rel_error = s.rel;
    QByteArray scheme = s.scheme.toUtf8();
    if (scheme.contains(',')) scheme = '"' + scheme + '"';
    out += QByteArray::fromStdString(qs::error_view_histogram_csv(v, qs::csv_field(scheme.toStdString()) + ","));
  }
  return out;
}
