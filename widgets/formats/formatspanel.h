// FormatsPanel: the Formats tab — one format (and optionally others to compare) on a number line with
// the spacing between neighbours, a live editor of a custom format's E, M, bias and special values,
// and the value inspector. Exercise: `quantscope --format e5m2`, tests/tst_formatspanel.cpp.
#pragma once

#include <QWidget>

#include "format/format.h"
#include "shared/reportsection.h"

class QCheckBox;
class QComboBox;
class QSpinBox;
class FormatGridPlot;
class FormatPicker;
class ValueInspector;

class FormatsPanel : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  explicit FormatsPanel(QWidget* parent = nullptr);

  bool selectFormat(const QString& spec, QString* error = nullptr);
  // Formats drawn next to the main one ("" or an empty list: none). Returns false on a bad spec.
  bool setCompareSpecs(const QStringList& specs, QString* error = nullptr);
  QStringList compareSpecs() const;
  QString spec() const;  // the main format as a spec

  FormatGridPlot* plot() const { return m_plot; }
  FormatPicker* picker() const { return m_picker; }
  ValueInspector* inspector() const { return m_inspector; }
  bool logScale() const;

public slots:
  void setLogScale(bool on);

signals:
  void formatChanged(const QString& spec);
  void viewChanged();  // anything that settings.json records changed

private:
  void applyFormat();
  void syncBuilder(const qs::Format& f);
  void applyBuilder();

  FormatPicker* m_picker = nullptr;
  QCheckBox* m_compareCheck = nullptr;
  FormatPicker* m_comparePicker = nullptr;
  QCheckBox* m_logScale = nullptr;
  QSpinBox* m_eSpin = nullptr;
  QSpinBox* m_mSpin = nullptr;
  QSpinBox* m_biasSpin = nullptr;
  QComboBox* m_specialsCombo = nullptr;
  QCheckBox* m_unsignedCheck = nullptr;
  bool m_syncing = false;
  FormatGridPlot* m_plot = nullptr;
  ValueInspector* m_inspector = nullptr;
};
