// The Conventions tab: the probe comparison it shows is the engine's (compare_conventions), its table lists
// exactly the disagreeing inputs with each convention's code, integer formats offer only integer conventions,
// bad selections are refused with a reason, and the current tensor's count of differing values is right for a
// tensor built to differ in a known number of places.
#include <QLabel>
#include <QListWidget>
#include <QTableWidget>
#include <QtTest>

#include <cmath>

#include "conventionspanel.h"
#include "elidedlabel.h"
#include "format/convention.h"

class TestConventionsPanel : public QObject {
  Q_OBJECT

private slots:
  void probesAreTheEngines();
  void integerFormatsTakeIntegerConventions();
  void refusesBadSelections();
  void tensorCount();
};

void TestConventionsPanel::probesAreTheEngines() {
  ConventionsPanel p;
  QString err;
  QVERIFY2(p.setComparison(QStringLiteral("e4m3fn"), {QStringLiteral("ml_dtypes"), QStringLiteral("satfinite")}, &err),
           qPrintable(err));
  const qs::ConventionComparison want = qs::compare_conventions(qs::parse_format("e4m3fn"), {"ml_dtypes", "satfinite"});
  const qs::ConventionComparison* got = p.probeResult();
  QVERIFY(got);
  QCOMPARE(got->differing, want.differing);
  QCOMPARE(got->ranges.size(), std::size_t(2));
  QCOMPARE(p.table()->rowCount(), int(want.differing));
  QCOMPARE(p.table()->columnCount(), 3);
  // The first disagreeing input is -inf: NaN (0xff) under ml_dtypes, -448 (0xfe) under satfinite.
  QCOMPARE(p.table()->item(0, 0)->text(), QStringLiteral("−inf"));
  QVERIFY(p.table()->item(0, 1)->text().startsWith(QStringLiteral("0xff")));
  QVERIFY(p.table()->item(0, 2)->text().startsWith(QStringLiteral("0xfe = -448")));
  // The plot's CSV: a header and one row per probe input, the disagreeing ones marked.
  const QList<QByteArray> lines = p.csv().trimmed().split('\n');
  QCOMPARE(lines.size(), int(want.inputs.size()) + 1);
  QCOMPARE(lines[0], QByteArray("input,differ,ml_dtypes_code,ml_dtypes_value,satfinite_code,satfinite_value"));
  int marked = 0;
  for (const QByteArray& l : lines) marked += l.split(',').value(1) == "1";
  QCOMPARE(marked, int(want.differing));
}

void TestConventionsPanel::integerFormatsTakeIntegerConventions() {
  ConventionsPanel p;
  QString err;
  QVERIFY2(p.setComparison(QStringLiteral("int8"), {QStringLiteral("torch-qint8"), QStringLiteral("narrow-symmetric")}, &err),
           qPrintable(err));
  QCOMPARE(p.checkedConventions(), (QStringList{QStringLiteral("torch-qint8"), QStringLiteral("narrow-symmetric")}));
  QList<QListWidgetItem*> all = p.findChild<QListWidget*>(QStringLiteral("conventionsList"))->findItems(QStringLiteral("*"), Qt::MatchWildcard);
  QCOMPARE(all.size(), 2);  // the uint8 and float conventions are not offered for int8
  QVERIFY(p.probeResult() && p.probeResult()->differing > 0);
}

void TestConventionsPanel::refusesBadSelections() {
  ConventionsPanel p;
  QString err;
  QVERIFY(!p.setComparison(QStringLiteral("e4m3fn"), {QStringLiteral("ml_dtypes")}, &err));
  QVERIFY(err.contains(QStringLiteral("two or more")));
  QVERIFY(!p.setComparison(QStringLiteral("e4m3fn"), {QStringLiteral("ml_dtypes"), QStringLiteral("torch-qint8")}, &err));
  QVERIFY(!p.setComparison(QStringLiteral("e9m9"), {QStringLiteral("ml_dtypes"), QStringLiteral("satfinite")}, &err));
  QVERIFY(err.contains(QStringLiteral("unknown format")));
  QVERIFY(p.checkedConventions().size() >= 2);  // still usable: a valid pair stays ticked
  QVERIFY(p.probeResult());
}

void TestConventionsPanel::tensorCount() {
  ConventionsPanel p;
  QVERIFY(p.setComparison(QStringLiteral("e4m3fn"), {QStringLiteral("ml_dtypes"), QStringLiteral("satfinite")}));
  // 1000 values inside the range plus 7 beyond 464: exactly those 7 differ (NaN vs ±448).
  auto v = std::make_shared<std::vector<float>>();
  for (int i = 0; i < 1000; ++i) v->push_back(float(i % 200) - 100.0f);
  for (float x : {465.0f, 500.0f, -600.0f, 1e6f, -470.0f, 10000.0f, 480.0f}) v->push_back(x);
  TensorData t;
  t.source = QStringLiteral("synthetic");
  t.name = QStringLiteral("t");
  t.values = v;
  t.shape = {int64_t(v->size())};
  p.setTensor(t);
  QVERIFY(p.waitForIdle(10000));
  QVERIFY(p.tensorResult());
  QCOMPARE(p.tensorResult()->differing, std::size_t(7));
  QVERIFY2(p.tensorLine()->text().contains(QStringLiteral("7 of 1,007 values differ")), qPrintable(p.tensorLine()->text()));
}

QTEST_MAIN(TestConventionsPanel)
#include "tst_conventionspanel.moc"
