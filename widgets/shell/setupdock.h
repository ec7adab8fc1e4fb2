// SetupDock: the left-hand dock — where the data comes from (a synthetic distribution, or a tensor of
// an opened file in a filterable tree of files → tensors) and the schemes to compare.
// Exercise: `quantscope`, tests/tst_mainwindow.cpp.
#pragma once

#include <QDockWidget>

#include <vector>

#include "io/tensor_file.h"
#include "quant/synthetic.h"

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QRadioButton;
class QSpinBox;
class QTreeWidget;
class QTreeWidgetItem;
class SchemeList;

class SetupDock : public QDockWidget {
  Q_OBJECT

public:
  explicit SetupDock(QWidget* parent = nullptr);

  bool syntheticSelected() const;
  qs::SyntheticSpec syntheticSpec() const;
  void setSyntheticSpec(const qs::SyntheticSpec& spec);
  void selectSynthetic();

  // Lists a file and its float tensors in the tree (replacing an earlier entry of the same path).
  void addFile(const QString& path, const QString& kind, const std::vector<qs::TensorInfo>& tensors);
  QStringList files() const;
  // Marks file/tensor as the current source; false if the tree does not have it.
  bool selectTensor(const QString& path, const QString& tensor);
  QTreeWidget* tree() const { return m_tree; }
  SchemeList* schemeList() const { return m_schemes; }

signals:
  void syntheticChanged();                                  // edited, or chosen as the source
  void tensorChosen(const QString& path, const QString& tensor);
  void openRequested();
  void fileAnalysisRequested(const QString& path);          // "Analyse all tensors" on a file item

private:
  QWidget* buildDataBox();
  void onItemActivated(QTreeWidgetItem* item);
  void applyFilter(const QString& text);

  QRadioButton* m_synthetic = nullptr;
  QRadioButton* m_fromFile = nullptr;
  QComboBox* m_dist = nullptr;
  QComboBox* m_size = nullptr;
  QSpinBox* m_seed = nullptr;
  QDoubleSpinBox* m_sigma = nullptr;
  QDoubleSpinBox* m_outlierScale = nullptr;
  QDoubleSpinBox* m_dof = nullptr;
  qs::SyntheticSpec m_spec;  // fields without a control (columns, outlier share and rows) come from here
  QLineEdit* m_filter = nullptr;
  QTreeWidget* m_tree = nullptr;
  SchemeList* m_schemes = nullptr;
  bool m_loading = false;
};
