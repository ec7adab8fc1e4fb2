// ValueInspector: one value through one format, every mode, exactly (encode_ref / decode_ref).
// Exercise: Formats tab of `quantscope`; tests/tst_formatspanel.cpp.
#include "valueinspector.h"
#include "shared/theme.h"

#include "shared/elidedlabel.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QLineEdit>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace {

QString num(double v) {
  if (std::isnan(v)) return QStringLiteral("NaN");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("+inf") : QStringLiteral("−inf");
  return QString::number(v, 'g', 10).replace(u'-', u'−');
}

QString hexCode(const qs::Format& f, uint32_t code) {
  return QStringLiteral("0x%1").arg(code, (f.bits + 3) / 4, 16, QChar(u'0')).toUpper().replace(QStringLiteral("0X"), QStringLiteral("0x"));
}

bool parseValue(const QString& text, double* out) {
  const QString t = text.trimmed().toLower().replace(u'−', u'-');
  if (t.isEmpty()) return false;
  if (t == u"nan") return *out = std::numeric_limits<double>::quiet_NaN(), true;
  if (t == u"inf" || t == u"+inf") return *out = HUGE_VAL, true;
  if (t == u"-inf") return *out = -HUGE_VAL, true;
  const QByteArray b = t.toLatin1();
  char* end = nullptr;
  const double v = std::strtod(b.constData(), &end);  // decimal and hex floats, exact
  if (end == b.constData() || *end != '\0' || std::isnan(v) || std::isinf(v)) return false;
  *out = v;
  return true;
}

}  // namespace

QString ValueInspector::bitGroups(const qs::Format& f, uint32_t code) {
  QString bits;
  for (int i = f.bits - 1; i >= 0; --i) bits += (code >> i) & 1u ? u'1' : u'0';
  if (f.is_int()) return bits;
  QStringList groups;
  int pos = 0;
  if (f.is_signed) groups << bits.mid(pos++, 1);
  if (f.ebits > 0) groups << bits.mid(pos, f.ebits);
  pos += f.ebits;
  if (f.mbits > 0) groups << bits.mid(pos, f.mbits);
  return groups.join(u' ');
}

ValueInspector::ValueInspector(QWidget* parent) : QWidget(parent) {
  m_input = new QLineEdit(QStringLiteral("0.3"));
  m_input->setObjectName(QStringLiteral("inspectorInput"));
  m_input->setPlaceholderText(QStringLiteral("a number: 0.3, -1e-3, 0x1.8p-7, inf, nan"));
  m_error = new ElidedLabel;  // quotes what was typed (or read from settings.json): any length
  m_error->setStyleSheet(theme::errorCss(this));
  m_error->setWordWrap(true);
  m_error->setMaximumLines(2);
  m_bitsLabel = new QLabel;
  m_bitsLabel->setObjectName(QStringLiteral("inspectorBits"));
  m_bitsLabel->setTextFormat(Qt::RichText);
  m_bitsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont mono(QStringLiteral("DejaVu Sans Mono"));
  mono.setStyleHint(QFont::Monospace);
  mono.setPointSize(15);
  m_bitsLabel->setFont(mono);
  m_summary = new QLabel;
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_neighbours = new QLabel;
  m_neighbours->setWordWrap(true);
  m_neighbours->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_modes = new QTableWidget(4, 4);
  m_modes->setObjectName(QStringLiteral("inspectorModes"));
  m_modes->setHorizontalHeaderLabels({QStringLiteral("mode"), QStringLiteral("code"),
                                      QStringLiteral("value"), QStringLiteral("note")});
  m_modes->horizontalHeaderItem(0)->setToolTip(QStringLiteral("rounding, then what happens beyond the largest finite value"));
  m_modes->horizontalHeaderItem(3)->setToolTip(
      QStringLiteral("Stochastic rounding: the chance of each candidate (the line beside it). "
                     "On average the result equals the input: unbiased."));
  m_modes->verticalHeader()->hide();
  // Four columns that fit the inspector's width: the first three as narrow as their (two-line) contents,
  // the note takes the rest and wraps; no horizontal scrolling hides a column.
  m_modes->setWordWrap(true);
  m_modes->setTextElideMode(Qt::ElideNone);
  m_modes->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  for (int c = 0; c < 3; ++c) m_modes->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  m_modes->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
  m_modes->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_modes->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_modes->setSelectionMode(QAbstractItemView::NoSelection);
  m_modes->setMinimumHeight(150);

  auto* legend = new QLabel(QStringLiteral("<span style='color:#c62828'>■ sign</span>&nbsp;&nbsp;"
                                           "<span style='color:#1565c0'>■ exponent</span>&nbsp;&nbsp;"
                                           "<span style='color:#2e7d32'>■ mantissa</span>"));
  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Value:"), m_input);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  auto* title = new QLabel(QStringLiteral("<b>Value inspector</b>"));
  layout->addWidget(title);
  layout->addLayout(form);
  layout->addWidget(m_error);
  layout->addWidget(m_bitsLabel);
  layout->addWidget(legend);
  layout->addWidget(m_summary);
  layout->addWidget(m_neighbours);
  layout->addWidget(m_modes, 1);

  connect(m_input, &QLineEdit::textChanged, this, [this](const QString& t) { setValueText(t); });
  m_format = qs::parse_format("e4m3fn");
  refresh();
}

void ValueInspector::setFormat(const qs::Format& f) {
  m_format = f;
  refresh();
}

bool ValueInspector::setValueText(const QString& text) {
  if (m_input->text() != text) {
    m_input->setText(text);  // comes back here through textChanged
    return m_error->text().isEmpty();
  }
  double v = 0;
  if (!parseValue(text, &v) && text.trimmed().toLower() != u"nan") {
    m_error->setText(QStringLiteral("not a number: “%1”").arg(text));
    return false;
  }
  if (text.trimmed().toLower() == u"nan") v = std::numeric_limits<double>::quiet_NaN();
  m_error->setText(QString());
  m_value = v;
  refresh();
  emit valueChanged(v);
  return true;
}

QString ValueInspector::valueText() const {
  // The field while it holds the value shown (a half-typed entry does not); else the shortest decimal
  // that reads back to the same double.
  double v = 0;
  const QString typed = m_input->text().trimmed();
  if (parseValue(typed, &v) && (v == m_value || (std::isnan(v) && std::isnan(m_value)))) return typed;
  if (typed.toLower() == u"nan" && std::isnan(m_value)) return typed;
  return QString::number(m_value, 'g', QLocale::FloatingPointShortest);
}

QString ValueInspector::neighboursText() const { return m_neighbours->text(); }

void ValueInspector::refresh() {
  const qs::Format& f = m_format;
  const double x = m_value;
  qs::EncodeStats stats;
  m_code = qs::encode_ref(f, x, qs::Rounding::Nearest, qs::Overflow::Saturate, 0, &stats);
  const double q = qs::decode_ref(f, m_code);
  m_bits = bitGroups(f, m_code);

  // Coloured bits: sign, exponent, mantissa (int formats: one colour).
  QString html;
  const QStringList groups = m_bits.split(u' ');
  static const char* colors[] = {"#c62828", "#1565c0", "#2e7d32"};
  if (f.is_int()) {
    html = QStringLiteral("<span style='color:#444'>%1</span>").arg(m_bits);
  } else {
    int colour = f.is_signed ? 0 : 1;
    for (const QString& part : groups) {
      if (colour == 1 && f.ebits == 0) colour = 2;
      html += QStringLiteral("<span style='color:%1'>%2</span> ").arg(QString::fromLatin1(colors[std::min(colour, 2)]), part);
      ++colour;
    }
  }
  m_bitsLabel->setText(html.trimmed());

  const qs::ValueClass cls = qs::classify_ref(f, m_code);
  QString summary = QStringLiteral("<b>%1</b> → code <b>%2</b> (%3) = <b>%4</b>")
                        .arg(num(x), hexCode(f, m_code), QString::fromLatin1(qs::to_string(cls)), num(q));
  if (std::isfinite(x) && std::isfinite(q)) {
    const double err = q - x;
    summary += QStringLiteral("<br>error %1").arg(num(err));
    if (x != 0) summary += QStringLiteral(", relative %1").arg(num(err / std::abs(x)));
  }
  if (stats.overflow) summary += QStringLiteral("<br><span style='color:#c62828'>beyond the range: clipped</span>");
  if (stats.underflow) summary += QStringLiteral("<br><span style='color:#c62828'>underflow: became zero</span>");
  if (stats.nan) summary += QStringLiteral("<br>NaN input");
  m_summary->setText(summary);

  // Neighbours on the grid: the values just below and above x.
  const std::vector<double> values = qs::distinct_values(f);
  QString nb;
  if (std::isfinite(x)) {
    auto it = std::lower_bound(values.begin(), values.end(), x);
    const bool exact = it != values.end() && *it == x;
    auto codeOf = [&](double v) { return hexCode(f, qs::encode_ref(f, v, qs::Rounding::Nearest, qs::Overflow::Ieee, 0)); };
    QStringList parts;
    if (it != values.begin()) parts << QStringLiteral("below: %1 (%2)").arg(num(*(it - 1)), codeOf(*(it - 1)));
    if (exact) parts << QStringLiteral("<b>exactly representable</b>");
    auto above = exact ? it + 1 : it;
    if (above != values.end()) parts << QStringLiteral("above: %1 (%2)").arg(num(*above), codeOf(*above));
    if (!exact && it != values.begin() && above != values.end())
      parts << QStringLiteral("gap %1").arg(num(*above - *(it - 1)));
    nb = parts.join(QStringLiteral(" · "));
  }
  m_neighbours->setText(nb);

  // Every mode. Stochastic rounding: the two candidates and the chance of each (P(up) = (|x|-lo)/(hi-lo)).
  struct Mode {
    qs::Rounding r;
    qs::Overflow o;
  };
  const Mode modes[] = {{qs::Rounding::Nearest, qs::Overflow::Saturate},
                        {qs::Rounding::Nearest, qs::Overflow::Ieee},
                        {qs::Rounding::Stochastic, qs::Overflow::Saturate},
                        {qs::Rounding::Stochastic, qs::Overflow::Ieee}};
  for (int row = 0; row < 4; ++row) {
    const Mode m = modes[row];
    QString codeText, valueText, note;
    if (m.r == qs::Rounding::Nearest) {
      qs::EncodeStats st;
      const uint32_t c = qs::encode_ref(f, x, m.r, m.o, 0, &st);
      codeText = hexCode(f, c);
      valueText = num(qs::decode_ref(f, c));
      if (st.overflow) note = m.o == qs::Overflow::Saturate ? QStringLiteral("clamped to ±max") : QStringLiteral("overflow → ") + valueText;
    } else {
      // The two outcomes: random = 0 always rounds away from lo, random = 2^32-1 never (unless exact).
      const uint32_t up = qs::encode_ref(f, x, m.r, m.o, 0u);
      const uint32_t down = qs::encode_ref(f, x, m.r, m.o, 0xffffffffu);
      const double vu = qs::decode_ref(f, up), vd = qs::decode_ref(f, down);
      if (up == down) {
        codeText = hexCode(f, up);
        valueText = num(vu);
        note = QStringLiteral("deterministic here");
      } else {
        // One candidate per line (below, above), so the cells stay narrow.
        codeText = hexCode(f, down) + u'\n' + hexCode(f, up);
        valueText = num(vd) + u'\n' + num(vu);
        const double p = std::isfinite(vu) && vu != vd ? (std::abs(x) - std::abs(vd)) / (std::abs(vu) - std::abs(vd)) : 0.0;
        // The chance of each candidate, line by line beside it: E[q] = x (unbiased on average).
        note = QStringLiteral("P = %1\nP = %2").arg(1.0 - p, 0, 'f', 4).arg(p, 0, 'f', 4);
      }
    }
    const QString modeName = QStringLiteral("%1\n%2").arg(qs::to_string(m.r), qs::to_string(m.o));
    const QString cells[] = {modeName, codeText, valueText, note};
    for (int col = 0; col < 4; ++col) {
      auto* item = new QTableWidgetItem(cells[col]);
      m_modes->setItem(row, col, item);
    }
  }
  m_modes->resizeRowsToContents();
}
