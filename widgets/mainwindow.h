// MainWindow: the QuantScope window — tabs of views (for now "Formats"), the File menu and a status
// bar naming the CPU SIMD level and the GPU. Exercise: `quantscope`, tests/tst_formatgridplot.cpp.
#pragma once

#include <QMainWindow>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QTabWidget;
class FormatGridPlot;

class MainWindow : public QMainWindow {
  Q_OBJECT

public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Shows `spec` (a table name or a custom spec): picks its combo entry if it has one, otherwise
  // puts it in the custom-spec field. Returns false, with the parser's one-line message in *error,
  // when it does not parse; the plot is then left as it was.
  bool selectFormat(const QString& spec, QString* error = nullptr);

  FormatGridPlot* formatPlot() const { return m_plot; }
  QTabWidget* tabs() const { return m_tabs; }

public slots:
  void setLogScale(bool on);  // the "Log scale" checkbox, for scripted starts (--log-scale)
  void exportPlot();  // asks for a file name; PNG, PDF or CSV by suffix

private:
  QWidget* buildFormatsTab();
  void buildMenus();
  void buildStatusBar();
  void applyComboEntry(int index);
  void applyCustomSpec(const QString& text);
  void showSpecHint();
  void syncComboTo(const QString& name);

  QTabWidget* m_tabs = nullptr;
  QComboBox* m_formatCombo = nullptr;
  QLineEdit* m_customSpec = nullptr;
  QLabel* m_specMessage = nullptr;  // syntax hint in grey, or the parse error in red
  QCheckBox* m_logScale = nullptr;
  FormatGridPlot* m_plot = nullptr;
};
