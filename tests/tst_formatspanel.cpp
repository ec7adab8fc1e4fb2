// Tests of the Formats tab: FormatPicker validation, FormatsPanel (compare format, the live E/M/bias/
// specials editor) and ValueInspector (bits, neighbours and every rounding/overflow mode for known values).
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QtTest>

#include <cmath>

#include "format/format.h"
#include "formatgridplot.h"
#include "formatpicker.h"
#include "formatspanel.h"
#include "valueinspector.h"

namespace {
int finiteCount(const qs::Format& f) {
  int n = 0;
  for (double v : qs::distinct_values(f)) n += std::isfinite(v) ? 1 : 0;
  return n;
}
}  // namespace

class TestFormatsPanel : public QObject {
  Q_OBJECT

private slots:
  void pickerValidatesAsYouType();
  void pickerPrefixesNames();
  void inspectorBits_data();
  void inspectorBits();
  void inspectorModes();
  void inspectorNeighbours();
  void inspectorRejectsText();
  void compareFormatDrawsBoth();
  void builderUpdatesLive();
  void builderInvalidCombinationKeepsPlot();
};

void TestFormatsPanel::pickerValidatesAsYouType() {
  FormatPicker picker;
  QSignalSpy changed(&picker, &FormatPicker::formatChanged);
  QSignalSpy validity(&picker, &FormatPicker::validityChanged);
  picker.customEdit()->setText(QStringLiteral("e3m3:bias="));
  QVERIFY(!picker.isValid());
  QVERIFY(picker.message().contains(QStringLiteral("bias")));
  QCOMPARE(picker.format().name, std::string("e4m3fn"));  // the last good one stays
  QCOMPARE(changed.count(), 0);
  picker.customEdit()->setText(QStringLiteral("e3m3:bias=2"));
  QVERIFY(picker.isValid());
  QCOMPARE(picker.format(), qs::parse_format("e3m3:bias=2"));
  QCOMPARE(changed.count(), 1);
  QCOMPARE(validity.count(), 2);  // invalid, then valid again
  // A custom spelling of a table format is that format, stored by its table name.
  picker.customEdit()->setText(QStringLiteral("e5m2:bias=15:specials=ieee"));
  QCOMPARE(picker.spec(), QStringLiteral("e5m2"));
  QCOMPARE(picker.combo()->currentData().toString(), QStringLiteral("e5m2"));
  QString error;
  QVERIFY(!picker.setSpec(QStringLiteral("e9m9"), &error));
  QVERIFY(error.startsWith(QStringLiteral("e9m9")));
}

void TestFormatsPanel::pickerPrefixesNames() {
  QWidget parent;
  auto* a = new FormatPicker(QString(), false, &parent);
  auto* b = new FormatPicker(QStringLiteral("scheme"), true, &parent);
  QCOMPARE(parent.findChild<QComboBox*>(QStringLiteral("formatCombo")), a->combo());
  QCOMPARE(parent.findChild<QComboBox*>(QStringLiteral("schemeFormatCombo")), b->combo());
  QVERIFY(parent.findChild<QLabel*>(QStringLiteral("specMessageLabel")));
  QVERIFY(!parent.findChild<QLabel*>(QStringLiteral("schemeSpecMessageLabel")));  // compact: no label
}

// Bit patterns written from the formats' definitions (docs/DESIGN.md, Named formats), not from the encoder.
void TestFormatsPanel::inspectorBits_data() {
  QTest::addColumn<QString>("format");
  QTest::addColumn<QString>("input");
  QTest::addColumn<QString>("bits");
  QTest::addColumn<uint>("code");
  QTest::newRow("e4m3fn 0.3 -> 0.3125") << "e4m3fn" << "0.3" << "0 0101 010" << 0x2Au;
  QTest::newRow("e4m3fn max 448") << "e4m3fn" << "448" << "0 1111 110" << 0x7Eu;
  QTest::newRow("e4m3fn -2") << "e4m3fn" << "-2" << "1 1000 000" << 0xC0u;
  QTest::newRow("e4m3fn min subnormal") << "e4m3fn" << "0x1p-9" << "0 0000 001" << 0x01u;
  QTest::newRow("e4m3fn underflow") << "e4m3fn" << "1e-9" << "0 0000 000" << 0x00u;
  QTest::newRow("e4m3fn nan") << "e4m3fn" << "nan" << "0 1111 111" << 0x7Fu;
  QTest::newRow("e5m2 1") << "e5m2" << "1" << "0 01111 00" << 0x3Cu;
  QTest::newRow("e5m2 -inf") << "e5m2" << "-inf" << "1 11110 11" << 0xFBu;  // saturate: -max
  QTest::newRow("e2m1fn 6") << "e2m1fn" << "6" << "0 11 1" << 0x7u;
  QTest::newRow("e2m1fn 0.5") << "e2m1fn" << "0.5" << "0 00 1" << 0x1u;
  QTest::newRow("e8m0fnu 1") << "e8m0fnu" << "1" << "01111111" << 0x7Fu;
  QTest::newRow("int8 -3") << "int8" << "-3" << "11111101" << 0xFDu;
  QTest::newRow("bf16 1") << "bf16" << "1" << "0 01111111 0000000" << 0x3F80u;
  QTest::newRow("fp16 hex 0x1.8p-14") << "fp16" << "0x1.8p-14" << "0 00001 1000000000" << 0x0600u;
}

void TestFormatsPanel::inspectorBits() {
  QFETCH(QString, format);
  QFETCH(QString, input);
  QFETCH(QString, bits);
  QFETCH(uint, code);
  ValueInspector inspector;
  inspector.setFormat(qs::parse_format(format.toStdString()));
  QVERIFY(inspector.setValueText(input));
  QCOMPARE(inspector.bitString(), bits);
  QCOMPARE(inspector.code(), code);
  QCOMPARE(ValueInspector::bitGroups(qs::parse_format(format.toStdString()), code), bits);
}

void TestFormatsPanel::inspectorModes() {
  ValueInspector inspector;
  inspector.setFormat(qs::parse_format("e4m3fn"));
  QVERIFY(inspector.setValueText(QStringLiteral("500")));
  QTableWidget* t = inspector.modeTable();
  QCOMPARE(t->rowCount(), 4);
  QCOMPARE(t->item(0, 0)->text(), QStringLiteral("nearest\nsaturate"));
  QCOMPARE(t->item(0, 1)->text(), QStringLiteral("0x7E"));  // clamped to 448
  QCOMPARE(t->item(0, 2)->text(), QStringLiteral("448"));
  QCOMPARE(t->item(1, 1)->text(), QStringLiteral("0x7F"));  // IEEE: E4M3FN has NaN, no inf
  QCOMPARE(t->item(1, 2)->text(), QStringLiteral("NaN"));
  // 464 is the tie between 448 and the first value beyond: ties to even, so 448 under IEEE too.
  QVERIFY(inspector.setValueText(QStringLiteral("464")));
  QCOMPARE(t->item(1, 1)->text(), QStringLiteral("0x7E"));
  // Stochastic: 0.3 lies between 0.28125 and 0.3125: P(up) = (0.3 - 0.28125) / 0.03125 = 0.6.
  QVERIFY(inspector.setValueText(QStringLiteral("0.3")));
  QCOMPARE(t->item(2, 1)->text(), QStringLiteral("0x29\n0x2A"));
  QVERIFY2(t->item(2, 3)->text().contains(QStringLiteral("0.6000")), qPrintable(t->item(2, 3)->text()));
  // An exact value is deterministic under stochastic rounding.
  QVERIFY(inspector.setValueText(QStringLiteral("0.3125")));
  QCOMPARE(t->item(2, 1)->text(), QStringLiteral("0x2A"));
}

void TestFormatsPanel::inspectorNeighbours() {
  ValueInspector inspector;
  inspector.setFormat(qs::parse_format("e2m1fn"));
  QVERIFY(inspector.setValueText(QStringLiteral("2.4")));
  QVERIFY(inspector.neighboursText().contains(QStringLiteral("below: 2 (0x4)")));
  QVERIFY(inspector.neighboursText().contains(QStringLiteral("above: 3 (0x5)")));
  QVERIFY(inspector.setValueText(QStringLiteral("3")));
  QVERIFY(inspector.neighboursText().contains(QStringLiteral("exactly representable")));
}

void TestFormatsPanel::inspectorRejectsText() {
  ValueInspector inspector;
  QVERIFY(inspector.setValueText(QStringLiteral("1.5")));
  QSignalSpy spy(&inspector, &ValueInspector::valueChanged);
  QVERIFY(!inspector.setValueText(QStringLiteral("1.5x")));
  QCOMPARE(spy.count(), 0);
  QCOMPARE(inspector.value(), 1.5);  // the last good value stays
}

void TestFormatsPanel::compareFormatDrawsBoth() {
  FormatsPanel panel;
  QVERIFY(panel.selectFormat(QStringLiteral("e4m3fn")));
  QVERIFY(panel.setCompareSpecs({QStringLiteral("e5m2")}));
  FormatGridPlot* plot = panel.plot();
  QCOMPARE(plot->compareFormats().size(), 1);
  QCOMPARE(plot->valueGraph()->dataCount(), finiteCount(qs::parse_format("e4m3fn")));
  QCOMPARE(plot->compareValueGraph(0)->dataCount(), finiteCount(qs::parse_format("e5m2")));
  // The view spans both: E5M2 reaches 57344.
  QVERIFY(plot->xAxis->range().upper >= 57344);
  const QByteArray csv = plot->csv();
  QVERIFY(csv.startsWith("format,value,spacing\n"));
  QCOMPARE(csv.count('\n'), 1 + finiteCount(qs::parse_format("e4m3fn")) + finiteCount(qs::parse_format("e5m2")));
  panel.setLogScale(true);
  QCOMPARE(plot->compareValueGraph(0)->dataCount(), (finiteCount(qs::parse_format("e5m2")) - 1) / 2);
  QVERIFY(panel.setCompareSpecs({}));
  QCOMPARE(plot->compareFormats().size(), 0);
  QCOMPARE(plot->graphCount(), 2);
}

void TestFormatsPanel::builderUpdatesLive() {
  FormatsPanel panel;
  QVERIFY(panel.selectFormat(QStringLiteral("e4m3fn")));
  auto* bias = panel.findChild<QSpinBox*>(QStringLiteral("builderBias"));
  auto* specials = panel.findChild<QComboBox*>(QStringLiteral("builderSpecials"));
  QVERIFY(bias && specials);
  QCOMPARE(bias->value(), 7);
  QCOMPARE(specials->currentText(), QStringLiteral("fn"));
  bias->setValue(8);  // e4m3 with bias 8: max halves to 224
  QCOMPARE(panel.plot()->format(), qs::parse_format("e4m3:bias=8:specials=fn"));
  QCOMPARE(panel.plot()->format().max_finite, 224.0);
  QCOMPARE(panel.inspector()->code(), qs::encode_ref(panel.plot()->format(), panel.inspector()->value(),
                                                     qs::Rounding::Nearest, qs::Overflow::Saturate, 0));
  specials->setCurrentText(QStringLiteral("ieee"));  // IEEE specials: the top binade becomes inf/NaN
  QCOMPARE(panel.plot()->format(), qs::parse_format("e4m3:bias=8:specials=ieee"));
  QCOMPARE(panel.plot()->valueGraph()->dataCount(), finiteCount(qs::parse_format("e4m3:bias=8:specials=ieee")));
  QVERIFY(panel.plot()->format().max_finite < 224.0);
}

void TestFormatsPanel::builderInvalidCombinationKeepsPlot() {
  FormatsPanel panel;
  QVERIFY(panel.selectFormat(QStringLiteral("e2m1fn")));
  const qs::Format before = panel.plot()->format();
  auto* e = panel.findChild<QSpinBox*>(QStringLiteral("builderE"));
  auto* specials = panel.findChild<QComboBox*>(QStringLiteral("builderSpecials"));
  specials->setCurrentText(QStringLiteral("ieee"));  // e2m1 with IEEE specials is not a valid format...
  e->setValue(1);  // ...and neither is e1m1 with them
  QVERIFY(!panel.picker()->isValid());
  QVERIFY(!panel.picker()->message().isEmpty());
  QVERIFY(panel.plot()->format() == before || panel.plot()->format() == qs::parse_format("e2m1:bias=1:specials=ieee"));
}

QTEST_MAIN(TestFormatsPanel)
#include "tst_formatspanel.moc"
