// ValueInspector: type a number, see how a format encodes it — the code bit by bit (sign, exponent
// and mantissa coloured), its value and error, the neighbouring grid values, and what each rounding
// and overflow mode does with it. Exercise: Formats tab of `quantscope`; tests/tst_formatspanel.cpp.
#pragma once

#include <QWidget>

#include "format/format.h"

class QLabel;
class ElidedLabel;
class QLineEdit;
class QTableWidget;

class ValueInspector : public QWidget {
  Q_OBJECT

public:
  explicit ValueInspector(QWidget* parent = nullptr);

  void setFormat(const qs::Format& f);
  // Accepts decimal and C99 hex floats, "inf", "-inf", "nan". Returns false (and shows why) otherwise.
  bool setValueText(const QString& text);
  double value() const { return m_value; }
  QString valueText() const;  // as typed (it parses back to value() exactly)

  // What is shown, for tests and scripts: the nearest/saturate code, its bit string grouped as
  // "S EEEE MMM" (int formats: the two's-complement bits), and the mode table.
  uint32_t code() const { return m_code; }
  QString bitString() const { return m_bits; }
  QTableWidget* modeTable() const { return m_modes; }
  QString neighboursText() const;

  // "S EEEE MMM" for `code` of `f` (no spaces for int formats).
  static QString bitGroups(const qs::Format& f, uint32_t code);

signals:
  void valueChanged(double value);  // a new valid input (the plot marks it)

private:
  void refresh();

  qs::Format m_format;
  double m_value = 0.3;
  uint32_t m_code = 0;
  QString m_bits;
  QLineEdit* m_input = nullptr;
  ElidedLabel* m_error = nullptr;
  QLabel* m_bitsLabel = nullptr;
  QLabel* m_summary = nullptr;
  QLabel* m_neighbours = nullptr;
  QTableWidget* m_modes = nullptr;
};
