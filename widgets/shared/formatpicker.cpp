// FormatPicker: the named formats + the 8-bit sweep in a combo, and a custom spec field validated as
// you type. Exercise: `quantscope` (Formats tab, setup dock), tests/tst_formatspanel.cpp.
#include "formatpicker.h"
#include "theme.h"

#include "elidedlabel.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QStandardItemModel>

namespace {
const QString kHint = QStringLiteral("e<E>m<M>[:bias=B][:specials=ieee|fn|fnuz|none][:unsigned]");
}

QString FormatPicker::describe(const qs::Format& f) {
  if (f.is_int()) return QStringLiteral("%1-bit integer, range up to %2").arg(f.bits).arg(f.max_finite);
  return QStringLiteral("%1-bit float, E%2 M%3, bias %4, max %5")
      .arg(f.bits)
      .arg(f.ebits)
      .arg(f.mbits)
      .arg(f.bias)
      .arg(f.max_finite, 0, 'g', 6);
}

FormatPicker::FormatPicker(const QString& prefix, bool compact, QWidget* parent)
    : QWidget(parent), m_compact(compact) {
  auto name = [&](const char* base) {
    QString n = QString::fromLatin1(base);
    if (!prefix.isEmpty()) n = prefix + n.left(1).toUpper() + n.mid(1);
    return n;
  };
  m_combo = new QComboBox;
  m_combo->setObjectName(name("formatCombo"));
  m_combo->setPlaceholderText(QStringLiteral("(custom)"));  // shown while a custom spec rules
  m_combo->setMinimumContentsLength(compact ? 8 : 16);
  m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  for (const qs::Format& f : qs::named_formats()) {
    const QString n = QString::fromStdString(f.name);
    m_combo->addItem(n, n);
    m_combo->setItemData(m_combo->count() - 1, describe(f), Qt::ToolTipRole);
  }
  m_combo->insertSeparator(m_combo->count());
  m_combo->addItem(QStringLiteral("8-bit sweep (training studies)"));
  if (auto* model = qobject_cast<QStandardItemModel*>(m_combo->model()))
    model->item(m_combo->count() - 1)->setEnabled(false);  // a header, not a choice
  for (const std::string& spec : qs::sweep_8bit_specs()) {
    const qs::Format f = qs::parse_format(spec);  // the table's own specs: cannot fail
    m_combo->addItem(QStringLiteral("  ") + QString::fromStdString(spec), QString::fromStdString(f.name));
    m_combo->setItemData(m_combo->count() - 1, describe(f), Qt::ToolTipRole);
  }

  m_custom = new QLineEdit;
  m_custom->setObjectName(name("customSpecEdit"));
  m_custom->setPlaceholderText(compact ? QStringLiteral("or custom e3m3:bias=2")
                                       : QStringLiteral("custom spec, e.g. e3m3:bias=2:specials=none"));
  m_custom->setClearButtonEnabled(true);
  m_custom->setToolTip(kHint);
  if (compact) m_custom->setMinimumWidth(60);

  if (compact) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(4);
    row->addWidget(m_combo);
    row->addWidget(m_custom, 1);
  } else {
    // One line, elided: the parser quotes the spec, which can be any length (the field's tooltip and
    // this label's have the whole message).
    m_label = new ElidedLabel;
    m_label->setObjectName(name("specMessageLabel"));
    m_label->setElideMode(Qt::ElideRight);
    m_label->setMinimumHeight(m_label->fontMetrics().height());  // no jump on errors
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(new QLabel(QStringLiteral("Format:")), 0, 0);
    grid->addWidget(m_combo, 0, 1);
    grid->addItem(new QSpacerItem(12, 0), 0, 2);
    grid->addWidget(new QLabel(QStringLiteral("Custom:")), 0, 3);
    grid->addWidget(m_custom, 0, 4);
    grid->addWidget(m_label, 1, 1, 1, 4);  // under the combo and the field: the whole width for the message
    grid->setColumnStretch(4, 1);
    grid->setVerticalSpacing(2);
  }

  connect(m_combo, &QComboBox::currentIndexChanged, this, &FormatPicker::applyComboEntry);
  connect(m_custom, &QLineEdit::textChanged, this, &FormatPicker::applyCustomSpec);
  m_format = qs::parse_format("e4m3fn");
  m_spec = QStringLiteral("e4m3fn");
  setState(true, QString());
  syncComboTo(m_spec);
}

void FormatPicker::setState(bool valid, const QString& message) {
  const bool changed = valid != m_valid || message != m_message;
  m_valid = valid;
  m_message = message;
  if (m_label) {
    m_label->setStyleSheet(valid ? theme::hintCss(this) : theme::errorCss(this));
    m_label->setText(valid ? kHint : message);
  }
  m_custom->setStyleSheet(valid ? QString() : QStringLiteral("QLineEdit { border: 1px solid #c62828; }"));
  m_custom->setToolTip(valid ? kHint : elide::toolTip(message));
  if (changed) emit validityChanged(valid, message);
}

void FormatPicker::applyComboEntry(int index) {
  const QString n = m_combo->itemData(index).toString();
  if (index < 0 || n.isEmpty()) return;
  try {
    m_format = qs::parse_format(n.toStdString());
  } catch (const qs::FormatError& e) {  // entries come from the table; kept so a bad row cannot crash the UI
    setState(false, QString::fromUtf8(e.what()));
    return;
  }
  m_spec = n;
  {
    // The combo now rules: a stale custom spec next to it would be misleading.
    const QSignalBlocker block(m_custom);
    m_custom->clear();
  }
  setState(true, QString());
  emit formatChanged(m_spec);
}

void FormatPicker::applyCustomSpec(const QString& text) {
  if (text.trimmed().isEmpty()) {
    setState(true, QString());
    return;
  }
  qs::Format f;
  try {
    f = qs::parse_format(text.trimmed().toStdString());
  } catch (const qs::FormatError& e) {
    setState(false, QString::fromUtf8(e.what()));
    return;  // half-typed specs are normal: keep the last good format
  }
  m_format = f;
  // A spec equal to a table row is that row: store its name, so settings read the same either way.
  m_spec = m_combo->findData(QString::fromStdString(f.name)) >= 0 ? QString::fromStdString(f.name) : text.trimmed();
  setState(true, QString());
  syncComboTo(QString::fromStdString(f.name));
  emit formatChanged(m_spec);
}

void FormatPicker::syncComboTo(const QString& n) {
  const QSignalBlocker block(m_combo);
  m_combo->setCurrentIndex(m_combo->findData(n));  // -1 shows "(custom)"
}

bool FormatPicker::setSpec(const QString& spec, QString* error) {
  qs::Format f;
  try {
    f = qs::parse_format(spec.trimmed().toStdString());
  } catch (const qs::FormatError& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  const int index = m_combo->findData(QString::fromStdString(f.name));
  if (index >= 0) {
    if (m_combo->currentIndex() == index) {
      applyComboEntry(index);  // clears a custom field that spelled the same format
    } else {
      m_combo->setCurrentIndex(index);
    }
  } else {
    m_custom->setText(spec.trimmed());
  }
  return true;
}
