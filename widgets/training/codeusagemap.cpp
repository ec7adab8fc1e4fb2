// CodeUsageMap: rows are the finite codes of the format ordered by value (-0 before +0), columns the
// histogram samples; the y axis is labelled with the values of a few rows.
#include "codeusagemap.h"

#include "shared/plotstyle.h"

namespace {
const QColor kUnusedColor(206, 206, 206);
}

#include <algorithm>
#include <cmath>

#include "trainingrun.h"

CodeUsageMap::CodeUsageMap(QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(300, 170);
  m_title = plotstyle::addTitle(this, QStringLiteral("Code usage of the weights"));
  m_map = new QCPColorMap(xAxis, yAxis);
  m_map->setInterpolate(false);
  m_map->setTightBoundary(true);
  m_scale = new QCPColorScale(this);
  plotLayout()->addElement(1, 1, m_scale);
  m_scale->setType(QCPAxis::atRight);
  m_scale->axis()->setLabel(QStringLiteral("log10(1 + weights) · grey: unused"));
  m_map->setColorScale(m_scale);
  // Dark (few weights) to gold (many), never white: unused codes are grey, a colour of their own (they were
  // transparent, i.e. white, which read as the busiest end of the old thermal scale).
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(27, 12, 65));
  g.setColorStopAt(0.35, QColor(165, 44, 96));
  g.setColorStopAt(0.7, QColor(247, 132, 43));
  g.setColorStopAt(1.0, QColor(248, 211, 71));
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(kUnusedColor);
  m_scale->setGradient(g);  // the map takes the scale's gradient
  auto* group = new QCPMarginGroup(this);
  axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  xAxis->setLabel(QStringLiteral("step"));
  yAxis->setLabel(QStringLiteral("code (sorted by value)"));
  for (QCPAxis* a : {xAxis, yAxis}) a->setLabelFont(QFont(font().family(), 9));
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  rebuild();
}

void CodeUsageMap::setRun(const TrainingRun* run, int layer) {
  const int samples = run ? int(run->codeSamples.size()) : 0;
  if (run == m_run && layer == m_layer && samples == m_samples) return;
  const bool formatChanged = run != m_run;
  m_run = run;
  m_layer = layer;
  m_samples = samples;
  if (formatChanged) m_codesByValue.clear();
  rebuild();
}

QString CodeUsageMap::title() const {
  if (!m_run || !m_run->hasFormat) return QStringLiteral("Code usage of the weights");
  const QString layer = m_layer < 0 ? QStringLiteral("all layers") : QStringLiteral("fc%1").arg(m_layer + 1);
  return QStringLiteral("Code usage of the %1 weights (%2), %3")
      .arg(QString::fromStdString(m_run->format.name), layer, m_run->name);
}

QByteArray CodeUsageMap::csv() const {
  QByteArray out = TrainingRun::codeUsageCsvHeader();
  if (m_run) out += m_run->codeUsageCsvRows(m_layer);
  return out;
}

void CodeUsageMap::rebuild() {
  plotstyle::setText(m_title, title());
  const bool have = m_run && m_run->hasFormat && !m_run->codeSamples.empty();
  // Without a run there is nothing to colour: an empty map, not one grey "unused" field.
  m_map->setVisible(have);
  if (!have) {
    m_map->data()->setSize(1, 1);
    m_map->data()->setCell(0, 0, std::nan(""));
    m_map->data()->setRange(QCPRange(0, 1), QCPRange(0, 1));
    xAxis->setRange(0, 1);
    yAxis->setRange(0, 1);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    yAxis->setTicker(ticker);
    replot(rpQueuedReplot);
    return;
  }
  const qs::Format& f = m_run->format;
  if (m_codesByValue.empty()) {
    std::vector<std::pair<double, uint32_t>> rows;
    for (const qs::GridEntry& e : qs::grid(f))
      if (e.cls != qs::ValueClass::Nan && e.cls != qs::ValueClass::Inf)
        rows.push_back({e.value == 0 && std::signbit(e.value) ? -0x1p-200 : e.value, e.code});  // -0 below +0
    std::sort(rows.begin(), rows.end());
    for (const auto& r : rows) m_codesByValue.push_back(r.second);
    // Value labels at about nine evenly spaced rows (and at zero).
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const int n = int(m_codesByValue.size());
    for (int k = 0; k <= 8; ++k) {
      const int row = std::min(n - 1, k * (n - 1) / 8);
      ticker->addTick(row, QString::number(qs::decode_ref(f, m_codesByValue[std::size_t(row)]), 'g', 3));
    }
    yAxis->setTicker(ticker);
  }
  const auto& samples = m_run->codeSamples;
  const int nx = int(samples.size()), ny = int(m_codesByValue.size());
  QCPColorMapData* d = m_map->data();
  d->setSize(nx, ny);
  const double x0 = samples.front().step, x1 = samples.back().step;
  d->setRange(QCPRange(x0, nx > 1 ? x1 : x0 + 1), QCPRange(0, ny - 1));
  for (int i = 0; i < nx; ++i) {
    const auto& counts = samples[std::size_t(i)].counts;
    for (int j = 0; j < ny; ++j) {
      const uint32_t code = m_codesByValue[std::size_t(j)];
      uint64_t c = 0;
      for (std::size_t l = 0; l < counts.size(); ++l)
        if ((m_layer < 0 || int(l) == m_layer) && code < counts[l].size()) c += counts[l][code];
      d->setCell(i, j, c ? std::log10(1.0 + double(c)) : std::nan(""));
    }
  }
  m_map->rescaleDataRange(true);
  xAxis->setRange(x0 - 0.5, (nx > 1 ? x1 : x0 + 1) + 0.5);
  yAxis->setRange(-0.5, ny - 0.5);
  replot(rpQueuedReplot);
}
