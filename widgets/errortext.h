// Number formatting shared by the Error tab's plots, table and heatmap: counts with thousands
// separators, errors with 4 significant digits, dB with 2 decimals, ∞ and "—" for inf and NaN.
#pragma once

#include <QLocale>
#include <QString>

#include <cmath>
#include <cstdint>

namespace errortext {

inline QString count(uint64_t n) { return QLocale(QLocale::English).toString(qulonglong(n)); }

inline QString value(double v, int digits = 4) {
  if (std::isnan(v)) return QStringLiteral("—");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("∞") : QStringLiteral("−∞");
  return QString::number(v, 'g', digits).replace(u'-', u'−');
}

inline QString decibel(double v) {
  if (std::isnan(v)) return QStringLiteral("—");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("∞ (exact)") : QStringLiteral("−∞");
  return QString::number(v, 'f', 2).replace(u'-', u'−');
}

}  // namespace errortext
