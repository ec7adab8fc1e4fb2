// SchemeList: the schemes to compare, one row each — format (named, sweep or custom spec, validated as
// you type), granularity, rounding and overflow — plus Add / remove. Exercise: setup dock of `quantscope`,
// tests/tst_mainwindow.cpp.
#pragma once

#include <QList>
#include <QWidget>

#include <vector>

#include "quant/scheme.h"
#include "viewsettings.h"

class QComboBox;
class ElidedLabel;
class QSpinBox;
class QVBoxLayout;
class FormatPicker;

class SchemeRow : public QWidget {
  Q_OBJECT

public:
  explicit SchemeRow(const SchemeSetting& s, QWidget* parent = nullptr);
  SchemeSetting setting() const;
  // Empty when the row parses; otherwise the reason (shown under the row in red).
  QString problem() const { return m_problem; }
  FormatPicker* picker() const { return m_picker; }
  QComboBox* granularityCombo() const { return m_granularity; }
  QComboBox* roundingCombo() const { return m_rounding; }
  QComboBox* overflowCombo() const { return m_overflow; }

signals:
  void changed();
  void removeRequested(SchemeRow* row);

private:
  void validate();

  FormatPicker* m_picker = nullptr;
  QComboBox* m_granularity = nullptr;
  QComboBox* m_rounding = nullptr;
  QComboBox* m_overflow = nullptr;
  ElidedLabel* m_message = nullptr;
  QString m_problem;
};

class SchemeList : public QWidget {
  Q_OBJECT

public:
  explicit SchemeList(QWidget* parent = nullptr);

  QList<SchemeSetting> settings() const;
  void setSettings(const QList<SchemeSetting>& settings);
  quint64 seed() const;
  void setSeed(quint64 seed);
  // All rows parsed with the seed; false with *error ("scheme 2 (...): reason") if one does not.
  bool schemes(std::vector<qs::Scheme>* out, QString* error = nullptr) const;
  QList<SchemeRow*> rows() const { return m_rows; }

public slots:
  SchemeRow* addScheme(const SchemeSetting& s = SchemeSetting{});

signals:
  // The list changed and every row parses (an invalid row keeps the last valid list in effect).
  void schemesChanged();

private:
  void onRowChanged();
  void removeRow(SchemeRow* row);

  QVBoxLayout* m_rowLayout = nullptr;
  QList<SchemeRow*> m_rows;
  QSpinBox* m_seed = nullptr;
  bool m_loading = false;
};
