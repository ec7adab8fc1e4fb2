// Number formatting shared by the Error tab's plots, table and heatmap: counts with thousands
// separators, errors with 4 significant digits, dB with 2 decimals, ∞ and "—" for inf and NaN.
#pragma once

#include <QLocale>
#include <QRegularExpression>
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

// "scale 2^-3" (the engine's plain-text notes) as "scale 2⁻³".
inline QString superscriptPowers(QString text) {
  static const QRegularExpression power(QStringLiteral("2\\^(-?)(\\d+)"));
  static const char16_t* digits[] = {u"⁰", u"¹", u"²", u"³", u"⁴", u"⁵", u"⁶", u"⁷", u"⁸", u"⁹"};
  QRegularExpressionMatch m;
  while ((m = power.match(text)).hasMatch()) {
    QString sup = QStringLiteral("2");
    if (!m.captured(1).isEmpty()) sup += QChar(u'⁻');
    for (QChar c : m.captured(2)) sup += QString::fromUtf16(digits[c.digitValue()]);
    text.replace(m.capturedStart(), m.capturedLength(), sup);
  }
  return text;
}

}  // namespace errortext
