// FormatPicker: choose a number format — the named formats and the 8-bit sweep in a combo, or a
// custom spec typed in a field that is validated as you type (the parser's reason shown in red).
// Used by the Formats tab and by each scheme row of the setup dock. Exercise: tests/tst_formatspanel.cpp.
#pragma once

#include <QWidget>

#include "format/format.h"

class QComboBox;
class ElidedLabel;
class QLineEdit;

class FormatPicker : public QWidget {
  Q_OBJECT

public:
  // `namePrefix` prefixes the children's object names ("formatCombo", "customSpecEdit",
  // "specMessageLabel"), so tests and scripts can find one picker among several.
  // Compact: combo and field on one row, the message as the field's tooltip and a red frame.
  explicit FormatPicker(const QString& namePrefix = QString(), bool compact = false, QWidget* parent = nullptr);

  const qs::Format& format() const { return m_format; }
  // What to write into settings/schemes: the table name, or the custom spec as typed.
  QString spec() const { return m_spec; }
  bool isValid() const { return m_valid; }   // false while the custom field holds an invalid spec
  QString message() const { return m_message; }  // the parser's reason when invalid, else empty

  // Selects a table name or a custom spec. Returns false with the parser's one-line reason.
  bool setSpec(const QString& spec, QString* error = nullptr);

  QComboBox* combo() const { return m_combo; }
  QLineEdit* customEdit() const { return m_custom; }

  static QString describe(const qs::Format& f);  // "8-bit float, E4 M3, bias 7, max 448"

signals:
  void formatChanged(const QString& spec);        // a valid format was chosen (not while invalid)
  void validityChanged(bool valid, const QString& message);

private:
  void applyComboEntry(int index);
  void applyCustomSpec(const QString& text);
  void setState(bool valid, const QString& message);
  void syncComboTo(const QString& name);

  QComboBox* m_combo = nullptr;
  QLineEdit* m_custom = nullptr;
  ElidedLabel* m_label = nullptr;  // the message under the field; null in compact mode
  bool m_compact = false;
  qs::Format m_format;
  QString m_spec;
  bool m_valid = true;
  QString m_message;
};
