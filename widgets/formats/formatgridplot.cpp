// FormatGridPlot: the grid of representable values as a rug of ticks plus the spacing staircase.
// Exercise: `quantscope --format e4m3fn`, `QT_QPA_PLATFORM=offscreen ./build/tst_formatgridplot`.
#include "formatgridplot.h"

#include "shared/palette.h"
#include "shared/plotstyle.h"

#include <tuple>

#include "shared/plotexport.h"

#include <QToolTip>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace {

const QColor kRugColor = palette::color(0);
const QColor kSpacingColor(230, 110, 20);
constexpr double kRugHeight = 0.07;
constexpr double kCompareRugHeight = 0.045;
const QColor kCompareColors[] = {palette::color(2), palette::color(4), palette::color(3), palette::color(5)};  // fraction of the plot height taken by the value ticks

// "2⁻⁹": tick labels and facts of binary formats read best as powers of two.
QString powerOfTwo(int k) {
  static const char16_t* digits[] = {u"⁰", u"¹", u"²", u"³", u"⁴", u"⁵", u"⁶", u"⁷", u"⁸", u"⁹"};
  QString s = QStringLiteral("2");
  if (k < 0) s += QChar(u'⁻');
  for (QChar c : QString::number(std::abs(k))) s += QString::fromUtf16(digits[c.digitValue()]);
  return s;
}

bool exactPowerOfTwo(double v, int* k) {
  if (!(v > 0) || !std::isfinite(v)) return false;
  int e = 0;
  const double m = std::frexp(v, &e);
  *k = e - 1;
  return m == 0.5;
}

QByteArray shortest(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? QByteArray(buf, int(end - buf)) : QByteArray::number(v, 'g', 17);
}

QString number(double v) { return QString::fromLatin1(shortest(v)).replace(u'-', u'−'); }

// A value for the subtitle: exact when that is short, and powers of two far from 1 as "2⁻⁹ = 0.001953125".
QString fact(double v) {
  QString text = number(v);
  int digits = 0;
  for (QChar c : text.section(u'e', 0, 0)) digits += c.isDigit() ? 1 : 0;
  const bool exact = digits <= 10;
  if (!exact) text = QString::number(v, 'g', 4).replace(u'-', u'−');
  int k = 0;
  if (exactPowerOfTwo(v, &k) && (k < -3 || k > 10))
    return powerOfTwo(k) + (exact ? QStringLiteral(" = ") : QStringLiteral(" ≈ ")) + text;
  return exact ? text : QStringLiteral("≈ ") + text;
}

// Log ticker at powers of two, labelled "2⁻⁹": the natural ruler for binary formats. The exponent
// step is a power of two too, so bf16's 260 binades get ticks at 2⁻¹²⁸, 2⁻⁹⁶, ... not every binade.
class Pow2Ticker : public QCPAxisTicker {
public:
  Pow2Ticker() {
    setTickCount(10);
    setTickStepStrategy(QCPAxisTicker::tssMeetTickCount);
  }

protected:
  QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
    QVector<double> ticks;
    if (!(range.lower > 0) || !(range.upper > range.lower)) return ticks;
    const double lo = std::log2(range.lower), hi = std::log2(range.upper);
    // Zoomed into a binade or two, powers of two alone would leave the axis without labels.
    m_plain = hi - lo < 3;
    if (m_plain) return QCPAxisTicker::createTickVector(tickStep, range);
    int step = 1;
    while (step < 1024 && (hi - lo) / step > tickCount()) step *= 2;
    for (int k = int(std::floor(lo / step)) * step; k <= int(std::ceil(hi)) + step; k += step)
      ticks << std::ldexp(1.0, k);
    return ticks;
  }
  int getSubTickCount(double tickStep) override { return m_plain ? QCPAxisTicker::getSubTickCount(tickStep) : 0; }
  QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override {
    int k = 0;
    if (!m_plain && exactPowerOfTwo(tick, &k)) return powerOfTwo(k);
    return QCPAxisTicker::getTickLabel(tick, locale, formatChar, precision);
  }

private:
  bool m_plain = false;
};

QSharedPointer<QCPAxisTicker> makePow2Ticker() { return QSharedPointer<Pow2Ticker>::create(); }

}  // namespace

FormatGridPlot::FormatGridPlot(QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(480, 320);
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setNoAntialiasingOnDrag(true);  // keeps dragging fluid with 65k impulses on screen

  std::tie(m_title, m_subtitle) = plotstyle::addTitleAndSubtitle(this, 13, 10);

  yAxis->setScaleType(QCPAxis::stLogarithmic);
  yAxis->setTicker(makePow2Ticker());
  yAxis->setLabel(QStringLiteral("spacing to the next value"));
  yAxis2->setRange(0, 1);  // the rug lives on the hidden right axis, fixed at the bottom
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->grid()->setPen(QPen(QColor(220, 220, 220), 0, Qt::DotLine));
    a->setLabelFont(QFont(font().family(), 10));
  }

  m_valueGraph = addGraph(xAxis, yAxis2);
  m_valueGraph->setName(QStringLiteral("representable values"));
  m_valueGraph->setLineStyle(QCPGraph::lsImpulse);
  m_valueGraph->setPen(QPen(kRugColor, 1));

  m_spacingGraph = addGraph(xAxis, yAxis);
  m_spacingGraph->setName(QStringLiteral("spacing to the next value"));
  m_spacingGraph->setLineStyle(QCPGraph::lsStepLeft);
  m_spacingGraph->setPen(QPen(kSpacingColor, 1.8));

  plotstyle::styleLegend(this, 9);

  connect(this, &QCustomPlot::mouseDoubleClick, this, &FormatGridPlot::resetView);
  connect(this, &QCustomPlot::mouseMove, this, &FormatGridPlot::showValueTip);

  m_marker = new QCPItemStraightLine(this);
  m_marker->setPen(QPen(QColor(200, 30, 30), 1.2, Qt::DashLine));
  m_marker->point1->setAxes(xAxis, yAxis2);
  m_marker->point2->setAxes(xAxis, yAxis2);
  m_marker->setVisible(false);

  setFormat(qs::parse_format("e4m3fn"));
}

void FormatGridPlot::setFormat(const qs::Format& format) {
  m_format = format;
  m_allFinite.clear();
  for (double v : qs::distinct_values(format))
    if (std::isfinite(v)) m_allFinite.push_back(v);
  if (!m_compare.isEmpty()) {
    setCompareFormats(m_compare);  // renames the legend entries and rebuilds
  } else {
    rebuild();
  }
  emit formatChanged(QString::fromStdString(m_format.name));
}

void FormatGridPlot::setLogScale(bool on) {
  if (on == m_logScale) return;
  m_logScale = on;
  rebuild();
  setMarker(m_markerValue);
  emit logScaleChanged(on);
}

void FormatGridPlot::setCompareFormats(const QList<qs::Format>& formats) {
  for (auto [rug, spacing] : m_compareGraphs) {
    removeGraph(rug);
    removeGraph(spacing);
  }
  m_compareGraphs.clear();
  m_compare = formats;
  for (int k = 0; k < m_compare.size(); ++k) {
    const QColor color = kCompareColors[k % std::size(kCompareColors)];
    const QString name = QString::fromStdString(m_compare[k].name);
    QCPGraph* rug = addGraph(xAxis, yAxis2);
    rug->setLineStyle(QCPGraph::lsImpulse);
    rug->setPen(QPen(color, 1));
    rug->removeFromLegend();
    QCPGraph* spacing = addGraph(xAxis, yAxis);
    spacing->setLineStyle(QCPGraph::lsStepLeft);
    spacing->setPen(QPen(color, 1.8, Qt::DashLine));
    int finite = 0;
    for (double v : qs::distinct_values(m_compare[k])) finite += std::isfinite(v) ? 1 : 0;
    spacing->setName(QStringLiteral("%1: spacing (%2 distinct finite values)").arg(name).arg(finite));
    m_compareGraphs.append(qMakePair(rug, spacing));
  }
  m_valueGraph->setName(m_compare.isEmpty() ? QStringLiteral("representable values")
                                            : QString::fromStdString(m_format.name) + QStringLiteral(": values"));
  m_spacingGraph->setName(m_compare.isEmpty() ? QStringLiteral("spacing to the next value")
                                              : QString::fromStdString(m_format.name) + QStringLiteral(": spacing"));
  rebuild();
}

void FormatGridPlot::setMarker(double value) {
  m_markerValue = value;
  const bool visible = std::isfinite(value) && (!m_logScale || value != 0);
  m_marker->setVisible(visible);
  if (visible) {
    const double x = m_logScale ? std::abs(value) : value;
    m_marker->point1->setCoords(x, 0);
    m_marker->point2->setCoords(x, 1);
  }
  replot(QCustomPlot::rpQueuedReplot);
}

void FormatGridPlot::rebuild() {
  m_values.clear();
  for (double v : m_allFinite)
    if (!m_logScale || v > 0) m_values.push_back(v);
  const qsizetype n = m_values.size();
  m_spacings = QVector<double>(n, std::numeric_limits<double>::quiet_NaN());
  for (qsizetype i = 0; i + 1 < n; ++i) m_spacings[i] = m_values[i + 1] - m_values[i];

  // Bulk, already-sorted setData: fp16/bf16 give ~63k points, far too many for per-item drawing.
  m_valueGraph->setData(m_values, QVector<double>(n, kRugHeight), true);
  // A dot on each tick makes the few values of 4- and 6-bit formats easy to count.
  m_valueGraph->setScatterStyle(n <= 80 ? QCPScatterStyle(QCPScatterStyle::ssDisc, kRugColor, 5)
                                        : QCPScatterStyle());
  // The step line needs a closing point so the last interval [v[n-2], v[n-1]] is drawn.
  QVector<double> steps = m_spacings;
  if (n >= 2) steps[n - 1] = steps[n - 2];
  m_spacingGraph->setData(n >= 2 ? m_values : QVector<double>(),
                          n >= 2 ? steps : QVector<double>(), true);

  if (m_logScale) {
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    xAxis->setTicker(makePow2Ticker());
    xAxis->setLabel(m_format.is_signed ? QStringLiteral("|value|  (log scale; negative values mirror these)")
                                       : QStringLiteral("value  (log scale)"));
  } else {
    xAxis->setScaleType(QCPAxis::stLinear);
    xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    xAxis->setLabel(QStringLiteral("value"));
  }
  // In the linear view the spacing is a V (fine near zero), so the top centre is free; on the log
  // axis it rises to the right, leaving the top left free.
  axisRect()->insetLayout()->setInsetAlignment(
      0, Qt::AlignTop | (m_logScale ? Qt::AlignLeft : Qt::AlignHCenter));

  // Compare formats: the same treatment, each in its own colour; the view spans all of them.
  double lo = n > 0 ? m_values.front() : 0, hi = n > 0 ? m_values.back() : 0;
  double gmin = 0, gmax = 0;
  auto spacingRange = [&](const QVector<double>& v) {
    for (qsizetype i = 0; i + 1 < v.size(); ++i) {
      const double g = v[i + 1] - v[i];
      if (gmin == 0 || g < gmin) gmin = g;
      gmax = std::max(gmax, g);
    }
  };
  spacingRange(m_values);
  for (int k = 0; k < m_compare.size(); ++k) {
    QVector<double> values;
    for (double v : qs::distinct_values(m_compare[k]))
      if (std::isfinite(v) && (!m_logScale || v > 0)) values.push_back(v);
    QVector<double> steps(values.size());
    for (qsizetype i = 0; i + 1 < values.size(); ++i) steps[i] = values[i + 1] - values[i];
    if (values.size() >= 2) steps.back() = steps[steps.size() - 2];
    auto [rug, spacing] = m_compareGraphs[k];
    rug->setData(values, QVector<double>(values.size(), kCompareRugHeight), true);
    rug->setScatterStyle(values.size() <= 80 ? QCPScatterStyle(QCPScatterStyle::ssCircle, rug->pen().color(), 5)
                                             : QCPScatterStyle());
    spacing->setData(values.size() >= 2 ? values : QVector<double>(), values.size() >= 2 ? steps : QVector<double>(), true);
    if (!values.isEmpty()) {
      if (n == 0 && k == 0) lo = values.front(), hi = values.back();
      lo = std::min(lo, values.front());
      hi = std::max(hi, values.back());
    }
    spacingRange(values);
  }

  if (n > 0 || !m_compare.isEmpty()) {
    if (m_logScale) {
      const double pad = std::exp2(0.03 * std::max(std::log2(hi / lo), 2.0) + 0.3);
      m_fullX = QCPRange(lo / pad, hi * pad);
    } else {
      const double pad = 0.03 * (hi > lo ? hi - lo : std::max(std::abs(hi), 1.0));
      m_fullX = QCPRange(lo - pad, hi + pad);
    }
  }
  if (gmin > 0) {
    // Extra room below the finest spacing keeps the staircase clear of the rug of value ticks.
    const double lo = std::log2(gmin), hi = std::log2(gmax), span = std::max(hi - lo, 2.0);
    double bottom = lo - 0.22 * span - 0.5, top = hi + 0.12 * span + 0.5;
    // At least four octaves, so even a constant spacing (integers) gets power-of-two ticks.
    if (top - bottom < 4) {
      const double grow = 4 - (top - bottom);
      bottom -= 0.6 * grow;
      top += 0.4 * grow;
    }
    m_fullY = QCPRange(std::exp2(bottom), std::exp2(top));
  } else {
    m_fullY = QCPRange(0.5, 2);
  }
  updateTitle();
  resetView();
}

void FormatGridPlot::resetView() {
  xAxis->setRange(m_fullX);
  yAxis->setRange(m_fullY);
  replot(QCustomPlot::rpQueuedReplot);
}

void FormatGridPlot::updateTitle() {
  const qs::Format& f = m_format;
  const QString sep = QStringLiteral("   ·   ");
  QString kind;
  if (f.is_int()) {
    kind = QStringLiteral("%1-bit %2integer").arg(f.bits).arg(f.is_signed ? "" : "unsigned ");
  } else {
    kind = QStringLiteral("%1-bit %2float: E%3 M%4, bias %5, specials %6")
               .arg(f.bits)
               .arg(f.is_signed ? "" : "unsigned ")
               .arg(f.ebits)
               .arg(f.mbits)
               .arg(f.bias)
               .arg(qs::to_string(f.specials));
  }
  plotstyle::setText(m_title, QString::fromStdString(f.name) + QStringLiteral("  —  ") + kind);

  QStringList facts;
  const QString lowest = m_allFinite.isEmpty() ? QString() : number(m_allFinite.front());
  if (f.is_int() || f.ebits == 0) {
    facts << QStringLiteral("range [%1, %2]").arg(lowest, number(f.max_finite))
          << QStringLiteral("step ") + fact(f.min_subnormal);
  } else {
    facts << QStringLiteral("max ") + fact(f.max_finite);
    if (f.no_zero) {
      facts << QStringLiteral("smallest ") + fact(f.min_normal) + QStringLiteral(" (no zero)");
    } else {
      facts << QStringLiteral("min normal ") + fact(f.min_normal);
      if (f.min_subnormal < f.min_normal)
        facts << QStringLiteral("min subnormal ") + fact(f.min_subnormal);
      else
        facts << QStringLiteral("no subnormals");
    }
  }
  const qsizetype finite = m_allFinite.size();
  facts << (f.has_inf ? QStringLiteral("%1 distinct values (%2 finite + ±inf)").arg(finite + 2).arg(finite)
                      : QStringLiteral("%1 distinct values").arg(finite));
  plotstyle::setText(m_subtitle, facts.join(sep));
}

void FormatGridPlot::showValueTip(QMouseEvent* event) {
  if (m_values.isEmpty() || !axisRect()->rect().contains(event->pos())) {
    QToolTip::hideText();
    return;
  }
  const double key = xAxis->pixelToCoord(event->position().x());
  auto it = std::lower_bound(m_values.cbegin(), m_values.cend(), key);
  if (it == m_values.cend() || (it != m_values.cbegin() && key - *(it - 1) < *it - key)) --it;
  // Only when the pointer is within a few pixels of a value, or the tip would chase the mouse.
  if (std::abs(xAxis->coordToPixel(*it) - event->position().x()) > 6) {
    QToolTip::hideText();
    return;
  }
  const qsizetype i = it - m_values.cbegin();
  QString text = QStringLiteral("value %1").arg(QString::fromLatin1(shortest(*it)));
  if (std::isfinite(m_spacings[i]))
    text += QStringLiteral("\nspacing to next %1").arg(QString::fromLatin1(shortest(m_spacings[i])));
  QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

QByteArray FormatGridPlot::csv() const {
  if (!m_compare.isEmpty()) {
    QByteArray buf("format,value,spacing\n");
    auto rows = [&](const QString& name, const QCPGraph* rug) {
      const auto data = rug->data();
      for (auto it = data->constBegin(); it != data->constEnd(); ++it) {
        buf += name.toUtf8() + ',' + shortest(it->key) + ',';
        if (it + 1 != data->constEnd()) buf += shortest((it + 1)->key - it->key);
        buf += '\n';
      }
    };
    rows(QString::fromStdString(m_format.name), m_valueGraph);
    for (int k = 0; k < m_compare.size(); ++k) rows(QString::fromStdString(m_compare[k].name), m_compareGraphs[k].first);
    return buf;
  }
  QByteArray buf("value,spacing\n");
  buf.reserve(int(m_values.size()) * 24 + 16);
  for (qsizetype i = 0; i < m_values.size(); ++i) {
    buf += shortest(m_values[i]);
    buf += ',';
    if (std::isfinite(m_spacings[i])) buf += shortest(m_spacings[i]);  // the largest has no next
    buf += '\n';
  }
  return buf;
}

QStringList FormatGridPlot::exportSuffixes() { return plotexport::allSuffixes(); }

bool FormatGridPlot::exportTo(const QString& path, QString* error) {
  return plotexport::exportPlot(this, path, [this] { return csv(); },
                                QStringLiteral("Representable values of %1").arg(QString::fromStdString(m_format.name)),
                                error);
}
