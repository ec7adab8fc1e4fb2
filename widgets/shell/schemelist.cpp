// SchemeList: editable list of schemes for the Error tab and the model heatmap.
#include "schemelist.h"
#include "shared/theme.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "shared/elidedlabel.h"
#include "shared/formatpicker.h"

SchemeRow::SchemeRow(const SchemeSetting& s, QWidget* parent) : QWidget(parent) {
  m_picker = new FormatPicker(QStringLiteral("scheme"), true);
  m_picker->setSpec(s.format);
  m_granularity = new QComboBox;
  m_granularity->setObjectName(QStringLiteral("schemeGranularity"));
  m_granularity->setEditable(true);
  m_granularity->addItems({QStringLiteral("tensor"), QStringLiteral("channel:0"), QStringLiteral("channel:1"),
                           QStringLiteral("block:32"), QStringLiteral("block:32:e8m0fnu"),
                           QStringLiteral("block:16:e4m3fn"), QStringLiteral("block:16:e4m3fn:mse"),
                           QStringLiteral("block:32:e8m0fnu:rceil"), QStringLiteral("block:128"),
                           QStringLiteral("tensor:p99.9"), QStringLiteral("none"), QStringLiteral("q4_k"),
                           QStringLiteral("q6_k"), QStringLiteral("q8_0")});
  m_granularity->setToolTip(QStringLiteral(
      "tensor · channel:<axis> · block:<n>[:<scale format>][/axis:<k>] (e8m0fnu = OCP MX, add :ceil/:even/:rceil for "
      "the other exponent roundings; e4m3fn = NVFP4 two-level, :mse searches its block scales) · block:<r>x<c> "
      "tiles · tensor:p<percentile> or :mse observer clips · none = no scale (a plain cast) · or a llama.cpp type "
      "(q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k), whose element format is ggml's own"));
  m_granularity->setCurrentText(s.granularity);
  m_rounding = new QComboBox;
  m_rounding->setObjectName(QStringLiteral("schemeRounding"));
  m_rounding->addItems({QStringLiteral("nearest"), QStringLiteral("stochastic"), QStringLiteral("nearest-away"),
                        QStringLiteral("toward-zero")});
  m_rounding->setToolTip(QStringLiteral("nearest: ties to even · stochastic: up with probability of the distance · "
                                        "nearest-away: ties away from zero (microxcaling, QPyTorch) · toward-zero: truncation"));
  m_rounding->setCurrentText(s.rounding);
  m_overflow = new QComboBox;
  m_overflow->setObjectName(QStringLiteral("schemeOverflow"));
  m_overflow->addItems({QStringLiteral("saturate"), QStringLiteral("ieee")});
  m_overflow->setCurrentText(s.overflow);
  auto* remove = new QToolButton;
  remove->setText(QStringLiteral("✕"));
  remove->setToolTip(QStringLiteral("Remove this scheme"));
  m_message = new ElidedLabel;  // the parser quotes the granularity typed: any length
  m_message->setStyleSheet(theme::errorCss(this));
  m_message->setWordWrap(true);
  m_message->setMaximumLines(3);
  m_message->hide();

  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(0, 2, 0, 2);
  grid->setHorizontalSpacing(4);
  grid->setVerticalSpacing(2);
  grid->addWidget(m_picker, 0, 0, 1, 3);
  grid->addWidget(remove, 0, 3);
  // The granularity ("block:32:e8m0fnu:rceil") has a line of its own, readable whole in the dock; rounding
  // and overflow share the next one.
  grid->addWidget(m_granularity, 1, 0, 1, 4);
  auto* modes = new QHBoxLayout;
  modes->setSpacing(4);
  modes->addWidget(m_rounding, 1);
  modes->addWidget(m_overflow, 1);
  grid->addLayout(modes, 2, 0, 1, 4);
  grid->addWidget(m_message, 3, 0, 1, 4);
  grid->setColumnStretch(0, 2);

  connect(m_picker, &FormatPicker::formatChanged, this, &SchemeRow::validate);
  connect(m_picker, &FormatPicker::validityChanged, this, &SchemeRow::validate);
  connect(m_granularity, &QComboBox::currentTextChanged, this, &SchemeRow::validate);
  connect(m_rounding, &QComboBox::currentTextChanged, this, &SchemeRow::validate);
  connect(m_overflow, &QComboBox::currentTextChanged, this, &SchemeRow::validate);
  connect(remove, &QToolButton::clicked, this, [this] { emit removeRequested(this); });
  validate();
}

SchemeSetting SchemeRow::setting() const {
  SchemeSetting s;
  s.format = m_picker->spec();
  s.granularity = m_granularity->currentText().trimmed();
  s.rounding = m_rounding->currentText();
  s.overflow = m_overflow->currentText();
  return s;
}

void SchemeRow::validate() {
  QString problem;
  if (!m_picker->isValid()) {
    problem = m_picker->message();
  } else {
    try {
      setting().toScheme(0);
    } catch (const std::exception& e) {
      problem = QString::fromUtf8(e.what());
    }
  }
  m_problem = problem;
  m_message->setText(problem);
  m_message->setVisible(!problem.isEmpty());
  m_granularity->setStyleSheet(problem.isEmpty() || !m_picker->isValid() ? QString()
                                                                         : QStringLiteral("QComboBox { border: 1px solid #c62828; }"));
  emit changed();
}

SchemeList::SchemeList(QWidget* parent) : QWidget(parent) {
  m_rowLayout = new QVBoxLayout;
  m_rowLayout->setContentsMargins(0, 0, 0, 0);
  m_rowLayout->setSpacing(6);
  auto* add = new QPushButton(QStringLiteral("Add scheme"));
  add->setObjectName(QStringLiteral("addSchemeButton"));
  connect(add, &QPushButton::clicked, this, [this] { addScheme(); });
  m_seed = new QSpinBox;
  m_seed->setObjectName(QStringLiteral("seedSpin"));
  m_seed->setRange(0, 1'000'000'000);
  m_seed->setToolTip(QStringLiteral("Seed of stochastic rounding (the same seed gives the same codes on CPU and GPU)"));
  connect(m_seed, &QSpinBox::valueChanged, this, &SchemeList::onRowChanged);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(add);
  bottom->addStretch(1);
  bottom->addWidget(new QLabel(QStringLiteral("seed")));
  bottom->addWidget(m_seed);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(m_rowLayout);
  layout->addLayout(bottom);
}

SchemeRow* SchemeList::addScheme(const SchemeSetting& s) {
  auto* row = new SchemeRow(s);
  m_rows << row;
  m_rowLayout->addWidget(row);
  connect(row, &SchemeRow::changed, this, &SchemeList::onRowChanged);
  connect(row, &SchemeRow::removeRequested, this, &SchemeList::removeRow);
  onRowChanged();
  return row;
}

void SchemeList::removeRow(SchemeRow* row) {
  m_rows.removeOne(row);
  row->deleteLater();
  onRowChanged();
}

void SchemeList::onRowChanged() {
  if (m_loading) return;
  for (const SchemeRow* r : m_rows)
    if (!r->problem().isEmpty()) return;  // the previous list stays in effect until this one parses
  emit schemesChanged();
}

QList<SchemeSetting> SchemeList::settings() const {
  QList<SchemeSetting> out;
  for (const SchemeRow* r : m_rows) out << r->setting();
  return out;
}

void SchemeList::setSettings(const QList<SchemeSetting>& settings) {
  m_loading = true;
  for (SchemeRow* r : m_rows) delete r;
  m_rows.clear();
  for (const SchemeSetting& s : settings) addScheme(s);
  m_loading = false;
  onRowChanged();
}

quint64 SchemeList::seed() const { return quint64(m_seed->value()); }
void SchemeList::setSeed(quint64 seed) { m_seed->setValue(int(std::min<quint64>(seed, 1'000'000'000))); }

bool SchemeList::schemes(std::vector<qs::Scheme>* out, QString* error) const {
  ViewSettings v;
  v.schemes = settings();
  v.seed = seed();
  return v.parseSchemes(out, error);
}
