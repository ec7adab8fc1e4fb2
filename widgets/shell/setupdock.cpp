// SetupDock: data source (synthetic or file tensor) and the scheme list.
#include "setupdock.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "quant/analyze.h"
#include "shared/elidedlabel.h"
#include "schemelist.h"

namespace {
constexpr int kPathRole = Qt::UserRole + 1;
constexpr int kTensorRole = Qt::UserRole + 2;
}  // namespace

SetupDock::SetupDock(QWidget* parent) : QDockWidget(QStringLiteral("Setup"), parent) {
  setObjectName(QStringLiteral("setupDock"));
  setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
  m_schemes = new SchemeList;
  m_schemes->setObjectName(QStringLiteral("schemeList"));
  auto* schemesBox = new QGroupBox(QStringLiteral("Schemes to compare"));
  auto* sl = new QVBoxLayout(schemesBox);
  sl->addWidget(m_schemes);

  auto* content = new QWidget;
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(buildDataBox(), 3);
  layout->addWidget(schemesBox);
  layout->addStretch(0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(content);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(340);
  content->setMinimumWidth(320);
  setWidget(scroll);
}

QWidget* SetupDock::buildDataBox() {
  auto* box = new QGroupBox(QStringLiteral("Data"));
  m_synthetic = new QRadioButton(QStringLiteral("Synthetic"));
  m_synthetic->setObjectName(QStringLiteral("syntheticRadio"));
  m_fromFile = new QRadioButton(QStringLiteral("Tensor from a file"));
  m_fromFile->setObjectName(QStringLiteral("fileRadio"));
  m_synthetic->setChecked(true);

  m_dist = new QComboBox;
  m_dist->setObjectName(QStringLiteral("distributionCombo"));
  m_dist->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_dist->setMinimumContentsLength(14);
  const QStringList labels = {QStringLiteral("normal"), QStringLiteral("Laplace"), QStringLiteral("uniform"),
                              QStringLiteral("Student-t"), QStringLiteral("normal + outliers (LLM-like)")};
  const auto dists = qs::all_distributions();
  for (std::size_t i = 0; i < dists.size(); ++i)
    m_dist->addItem(labels[int(i)], QString::fromLatin1(qs::distribution_name(dists[i]).data()));
  m_size = new QComboBox;
  m_size->setObjectName(QStringLiteral("sizeCombo"));
  for (int k : {12, 14, 16, 18, 20, 22, 24}) {
    const qint64 n = qint64(1) << k;
    m_size->addItem(n >= (1 << 20) ? QStringLiteral("%1 M").arg(n >> 20) : QStringLiteral("%1 K").arg(n >> 10), n);
  }
  m_size->setCurrentIndex(m_size->findData(qint64(1) << 20));
  m_seed = new QSpinBox;
  m_seed->setObjectName(QStringLiteral("dataSeedSpin"));
  m_seed->setRange(0, 1'000'000'000);
  m_seed->setValue(1);
  m_sigma = new QDoubleSpinBox;
  m_sigma->setObjectName(QStringLiteral("sigmaSpin"));
  m_sigma->setDecimals(4);
  m_sigma->setRange(1e-4, 1e6);
  m_sigma->setValue(1.0);
  m_outlierScale = new QDoubleSpinBox;
  m_outlierScale->setObjectName(QStringLiteral("outlierScaleSpin"));
  m_outlierScale->setRange(1, 1e5);
  m_outlierScale->setValue(50);
  m_outlierScale->setToolTip(QStringLiteral("Outliers: their size in units of σ (0.1% of the values of 4 rows)"));
  m_dof = new QDoubleSpinBox;
  m_dof->setObjectName(QStringLiteral("dofSpin"));
  m_dof->setRange(0.5, 1000);
  m_dof->setDecimals(1);
  m_dof->setValue(3);
  m_dof->setToolTip(QStringLiteral("Student-t degrees of freedom ν: smaller means heavier tails"));

  auto* form = new QFormLayout;
  form->setContentsMargins(18, 0, 0, 0);
  form->addRow(QStringLiteral("Distribution"), m_dist);
  form->addRow(QStringLiteral("Values"), m_size);
  form->addRow(QStringLiteral("Scale σ"), m_sigma);
  form->addRow(QStringLiteral("Outliers ×σ"), m_outlierScale);
  form->addRow(QStringLiteral("Student-t ν"), m_dof);
  form->addRow(QStringLiteral("Seed"), m_seed);

  m_filter = new QLineEdit;
  m_filter->setObjectName(QStringLiteral("tensorFilter"));
  m_filter->setPlaceholderText(QStringLiteral("filter tensors…"));
  m_filter->setClearButtonEnabled(true);
  m_tree = new QTreeWidget;
  m_tree->setObjectName(QStringLiteral("tensorTree"));
  m_tree->setHeaderLabels({QStringLiteral("tensor"), QStringLiteral("dtype"), QStringLiteral("shape")});
  m_tree->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  m_tree->setRootIsDecorated(true);
  m_tree->setMinimumHeight(140);
  m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
  auto* open = new QPushButton(QStringLiteral("Open file…"));
  open->setObjectName(QStringLiteral("openButton"));
  open->setToolTip(QStringLiteral(".npy, .npz, .safetensors, .onnx, .gguf, PyTorch .pt (or drop files on the window)"));

  auto* layout = new QVBoxLayout(box);
  layout->addWidget(m_synthetic);
  layout->addLayout(form);
  layout->addWidget(m_fromFile);
  auto* fileRow = new QHBoxLayout;
  fileRow->addWidget(m_filter, 1);
  fileRow->addWidget(open);
  layout->addLayout(fileRow);
  layout->addWidget(m_tree, 1);

  auto changed = [this] {
    if (m_loading) return;
    m_synthetic->setChecked(true);
    emit syntheticChanged();
  };
  connect(m_dist, &QComboBox::currentIndexChanged, this, changed);
  connect(m_size, &QComboBox::currentIndexChanged, this, changed);
  connect(m_seed, &QSpinBox::valueChanged, this, changed);
  connect(m_sigma, &QDoubleSpinBox::valueChanged, this, changed);
  connect(m_outlierScale, &QDoubleSpinBox::valueChanged, this, changed);
  connect(m_dof, &QDoubleSpinBox::valueChanged, this, changed);
  connect(m_synthetic, &QRadioButton::clicked, this, changed);
  connect(m_fromFile, &QRadioButton::clicked, this, [this] {
    if (auto* item = m_tree->currentItem()) onItemActivated(item);
  });
  connect(open, &QPushButton::clicked, this, &SetupDock::openRequested);
  connect(m_filter, &QLineEdit::textChanged, this, &SetupDock::applyFilter);
  connect(m_tree, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) { onItemActivated(item); });
  connect(m_tree, &QTreeWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    QTreeWidgetItem* item = m_tree->itemAt(pos);
    if (!item) return;
    const QString path = item->data(0, kPathRole).toString();
    QMenu menu(this);
    menu.addAction(QStringLiteral("Analyse all tensors (SQNR heatmap)"), this, [this, path] { emit fileAnalysisRequested(path); });
    menu.addAction(QStringLiteral("Remove from the list"), this, [item] { delete (item->parent() ? item->parent() : item); });
    menu.exec(m_tree->viewport()->mapToGlobal(pos));
  });
  return box;
}

bool SetupDock::syntheticSelected() const { return m_synthetic->isChecked(); }

qs::SyntheticSpec SetupDock::syntheticSpec() const {
  qs::SyntheticSpec s = m_spec;
  s.dist = qs::parse_distribution(m_dist->currentData().toString().toStdString());
  s.n = std::size_t(m_size->currentData().toLongLong());
  if (s.cols == 0 || s.n % s.cols != 0) s.cols = std::min<std::size_t>(1024, s.n);
  s.dof = m_dof->value();
  s.seed = uint64_t(m_seed->value());
  s.sigma = m_sigma->value();
  s.outlier_scale = m_outlierScale->value();
  return s;
}

void SetupDock::setSyntheticSpec(const qs::SyntheticSpec& s) {
  m_loading = true;
  m_spec = s;
  m_dof->setValue(s.dof);
  m_dist->setCurrentIndex(m_dist->findData(QString::fromLatin1(qs::distribution_name(s.dist).data())));
  int sizeIndex = m_size->findData(qint64(s.n));
  if (sizeIndex < 0) {
    m_size->addItem(QStringLiteral("%1").arg(s.n), qint64(s.n));
    sizeIndex = m_size->count() - 1;
  }
  m_size->setCurrentIndex(sizeIndex);
  m_seed->setValue(int(std::min<uint64_t>(s.seed, 1'000'000'000)));
  m_sigma->setValue(s.sigma);
  m_outlierScale->setValue(s.outlier_scale);
  m_loading = false;
}

void SetupDock::selectSynthetic() {
  m_synthetic->setChecked(true);
  emit syntheticChanged();
}

void SetupDock::addFile(const QString& path, const QString& kind, const std::vector<qs::TensorInfo>& tensors) {
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i)
    if (m_tree->topLevelItem(i)->data(0, kPathRole).toString() == path) delete m_tree->takeTopLevelItem(i--);
  auto* file = new QTreeWidgetItem({QFileInfo(path).fileName(), kind, QStringLiteral("%1 tensors").arg(tensors.size())});
  file->setData(0, kPathRole, path);
  file->setToolTip(0, elide::toolTip(path));
  for (const qs::TensorInfo& t : tensors) {
    auto* item = new QTreeWidgetItem(file, {QString::fromStdString(t.name), QString::fromLatin1(qs::to_string(t.dtype)),
                                            QString::fromStdString(qs::shape_string(t.shape))});
    item->setData(0, kPathRole, path);
    item->setData(0, kTensorRole, QString::fromStdString(t.name));
    item->setToolTip(0, elide::toolTip(QString::fromStdString(t.name)));  // the tree elides the name itself
    const bool usable = qs::dtype_is_float(t.dtype) && t.numel() >= 1;
    if (!usable) {
      item->setDisabled(true);
      item->setToolTip(0, QStringLiteral("not a floating-point tensor"));
    }
  }
  m_tree->addTopLevelItem(file);
  file->setExpanded(true);
  applyFilter(m_filter->text());
}

QStringList SetupDock::files() const {
  QStringList out;
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) out << m_tree->topLevelItem(i)->data(0, kPathRole).toString();
  return out;
}

bool SetupDock::selectTensor(const QString& path, const QString& tensor) {
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
    QTreeWidgetItem* file = m_tree->topLevelItem(i);
    if (file->data(0, kPathRole).toString() != path) continue;
    for (int j = 0; j < file->childCount(); ++j) {
      QTreeWidgetItem* item = file->child(j);
      if (item->data(0, kTensorRole).toString() == tensor) {
        m_tree->setCurrentItem(item);
        m_fromFile->setChecked(true);
        return true;
      }
    }
  }
  return false;
}

void SetupDock::onItemActivated(QTreeWidgetItem* item) {
  const QString tensor = item->data(0, kTensorRole).toString();
  if (tensor.isEmpty()) {  // a file: pick its first usable tensor
    for (int j = 0; j < item->childCount(); ++j)
      if (!item->child(j)->isDisabled() && !item->child(j)->isHidden()) return onItemActivated(item->child(j));
    return;
  }
  if (item->isDisabled()) return;
  m_tree->setCurrentItem(item);
  m_fromFile->setChecked(true);
  emit tensorChosen(item->data(0, kPathRole).toString(), tensor);
}

void SetupDock::applyFilter(const QString& text) {
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
    QTreeWidgetItem* file = m_tree->topLevelItem(i);
    for (int j = 0; j < file->childCount(); ++j)
      file->child(j)->setHidden(!text.isEmpty() && !file->child(j)->text(0).contains(text, Qt::CaseInsensitive));
  }
}
