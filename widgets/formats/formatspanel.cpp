// FormatsPanel: format picker + compare picker + custom-format builder over the grid plot and the value
// inspector. Exercise: `quantscope`, tests/tst_formatspanel.cpp.
#include "formatspanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "formatgridplot.h"
#include "shared/formatpicker.h"
#include "shared/plotexport.h"
#include "valueinspector.h"

FormatsPanel::FormatsPanel(QWidget* parent) : QWidget(parent) {
  m_picker = new FormatPicker;
  m_compareCheck = new QCheckBox(QStringLiteral("Compare with"));
  m_compareCheck->setObjectName(QStringLiteral("compareCheck"));
  m_comparePicker = new FormatPicker(QStringLiteral("compare"), true);
  m_comparePicker->setEnabled(false);
  m_comparePicker->setSpec(QStringLiteral("e5m2"));
  m_logScale = new QCheckBox(QStringLiteral("Log scale"));
  m_logScale->setObjectName(QStringLiteral("logScaleCheck"));
  m_logScale->setToolTip(QStringLiteral("Log axis of |value|: shows every binade, down to the subnormals"));

  // The builder: E, M, bias, specials and sign of the shown format; editing any of them writes the
  // matching custom spec, so a bias or special-value change redraws everything at once.
  m_eSpin = new QSpinBox;
  m_eSpin->setObjectName(QStringLiteral("builderE"));
  m_eSpin->setRange(0, 8);
  m_mSpin = new QSpinBox;
  m_mSpin->setObjectName(QStringLiteral("builderM"));
  m_mSpin->setRange(0, 15);
  m_biasSpin = new QSpinBox;
  m_biasSpin->setObjectName(QStringLiteral("builderBias"));
  m_biasSpin->setRange(-64, 300);
  m_specialsCombo = new QComboBox;
  m_specialsCombo->setObjectName(QStringLiteral("builderSpecials"));
  for (const char* s : {"ieee", "fn", "fnuz", "none"}) m_specialsCombo->addItem(QString::fromLatin1(s));
  m_unsignedCheck = new QCheckBox(QStringLiteral("unsigned"));
  m_unsignedCheck->setObjectName(QStringLiteral("builderUnsigned"));

  // Two rows that fit a 1280 x 720 window beside the Setup dock: the format (with its custom spec and the
  // parser's message under it), then the builder, the compared format and the axis.
  auto* top = new QHBoxLayout;
  top->addWidget(m_picker, 1);

  auto* builder = new QHBoxLayout;
  builder->addWidget(new QLabel(QStringLiteral("Edit:  E")));
  builder->addWidget(m_eSpin);
  builder->addWidget(new QLabel(QStringLiteral("M")));
  builder->addWidget(m_mSpin);
  builder->addWidget(new QLabel(QStringLiteral("bias")));
  builder->addWidget(m_biasSpin);
  builder->addWidget(new QLabel(QStringLiteral("specials")));
  builder->addWidget(m_specialsCombo);
  builder->addWidget(m_unsignedCheck);
  builder->addSpacing(16);
  builder->addWidget(m_compareCheck);
  builder->addWidget(m_comparePicker, 1);
  builder->addSpacing(12);
  builder->addWidget(m_logScale);

  m_plot = new FormatGridPlot;
  m_plot->setObjectName(QStringLiteral("formatGridPlot"));
  plotexport::installContextMenu(m_plot, QStringLiteral("format-grid"), [this] { return m_plot->csv(); },
                                 QStringLiteral("Representable values"));
  m_inspector = new ValueInspector;
  m_inspector->setObjectName(QStringLiteral("valueInspector"));
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(m_plot);
  split->addWidget(m_inspector);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  m_inspector->setMinimumWidth(360);  // the mode table's four columns stay readable

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(10, 8, 10, 4);
  layout->addLayout(top);
  layout->addLayout(builder);
  layout->addWidget(split, 1);

  connect(m_picker, &FormatPicker::formatChanged, this, &FormatsPanel::applyFormat);
  connect(m_comparePicker, &FormatPicker::formatChanged, this, &FormatsPanel::applyFormat);
  connect(m_compareCheck, &QCheckBox::toggled, this, [this](bool on) {
    m_comparePicker->setEnabled(on);
    applyFormat();
  });
  connect(m_logScale, &QCheckBox::toggled, m_plot, &FormatGridPlot::setLogScale);
  connect(m_logScale, &QCheckBox::toggled, this, &FormatsPanel::viewChanged);
  connect(m_inspector, &ValueInspector::valueChanged, m_plot, &FormatGridPlot::setMarker);
  connect(m_inspector, &ValueInspector::valueChanged, this, &FormatsPanel::viewChanged);
  for (QSpinBox* s : {m_eSpin, m_mSpin, m_biasSpin}) connect(s, &QSpinBox::valueChanged, this, &FormatsPanel::applyBuilder);
  connect(m_specialsCombo, &QComboBox::currentIndexChanged, this, &FormatsPanel::applyBuilder);
  connect(m_unsignedCheck, &QCheckBox::toggled, this, &FormatsPanel::applyBuilder);
  applyFormat();
  m_plot->setMarker(m_inspector->value());
}

void FormatsPanel::applyFormat() {
  const qs::Format& f = m_picker->format();
  if (!(m_plot->format() == f)) m_plot->setFormat(f);
  QList<qs::Format> compare;
  if (m_compareCheck->isChecked()) compare << m_comparePicker->format();
  if (compare.size() != m_plot->compareFormats().size() ||
      (!compare.isEmpty() && !(compare.front() == m_plot->compareFormats().front())))
    m_plot->setCompareFormats(compare);
  m_inspector->setFormat(f);
  syncBuilder(f);
  emit formatChanged(m_picker->spec());
  emit viewChanged();
}

void FormatsPanel::syncBuilder(const qs::Format& f) {
  m_syncing = true;
  const QSignalBlocker b1(m_eSpin), b2(m_mSpin), b3(m_biasSpin), b4(m_specialsCombo), b5(m_unsignedCheck);
  const bool editable = !f.is_int() && !f.no_zero;  // int grids and E8M0 are not E/M/bias specs
  for (QWidget* w : std::initializer_list<QWidget*>{m_eSpin, m_mSpin, m_biasSpin, m_specialsCombo, m_unsignedCheck})
    w->setEnabled(editable);
  m_eSpin->setValue(f.ebits);
  m_mSpin->setValue(f.mbits);
  m_biasSpin->setValue(f.bias);
  m_specialsCombo->setCurrentText(QString::fromLatin1(qs::to_string(f.specials)));
  m_unsignedCheck->setChecked(!f.is_signed);
  m_syncing = false;
}

void FormatsPanel::applyBuilder() {
  if (m_syncing) return;
  QString spec = QStringLiteral("e%1m%2:bias=%3:specials=%4")
                     .arg(m_eSpin->value())
                     .arg(m_mSpin->value())
                     .arg(m_biasSpin->value())
                     .arg(m_specialsCombo->currentText());
  if (m_unsignedCheck->isChecked()) spec += QStringLiteral(":unsigned");
  // Through the picker's custom field: an invalid combination is shown there with the reason.
  m_picker->customEdit()->setText(spec);
}

bool FormatsPanel::selectFormat(const QString& spec, QString* error) { return m_picker->setSpec(spec, error); }

bool FormatsPanel::setCompareSpecs(const QStringList& specs, QString* error) {
  if (specs.isEmpty() || specs.front().trimmed().isEmpty()) {
    m_compareCheck->setChecked(false);
    return true;
  }
  if (!m_comparePicker->setSpec(specs.front(), error)) return false;
  m_compareCheck->setChecked(true);
  applyFormat();
  return true;
}

QStringList FormatsPanel::compareSpecs() const {
  return m_compareCheck->isChecked() ? QStringList{m_comparePicker->spec()} : QStringList{};
}

QString FormatsPanel::spec() const { return m_picker->spec(); }
bool FormatsPanel::logScale() const { return m_logScale->isChecked(); }
void FormatsPanel::setLogScale(bool on) { m_logScale->setChecked(on); }

QString FormatsPanel::reportStage() const { return QStringLiteral("format grid"); }

bool FormatsPanel::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  FormatGridPlot* grid = plot();
  if (!plotexport::exportAll(grid, ctx.dir, QStringLiteral("format-grid"), [grid] { return grid->csv(); },
                             QStringLiteral("Representable values of %1").arg(spec()), error, ctx.size))
    return false;
  ctx.message(QStringLiteral("report: format-grid written"));
  return true;
}
