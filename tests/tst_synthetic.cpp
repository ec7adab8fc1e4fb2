// Tests of the synthetic tensors: deterministic per (seed, index) for any thread count, the moments of
// each distribution within statistical bounds, outliers confined to a few rows, bad specs refused.
#include <QtTest>

#include <cmath>
#include <numeric>

#include "quant/synthetic.h"

class TestSynthetic : public QObject {
  Q_OBJECT

private slots:
  void threadsAgree_data();
  void threadsAgree();
  void moments_data();
  void moments();
  void outliersInFewRows();
  void badSpecs_data();
  void badSpecs();
  void names();
  void cancel();
};

void TestSynthetic::threadsAgree_data() {
  QTest::addColumn<QString>("dist");
  for (qs::Distribution d : qs::all_distributions()) QTest::newRow(qs::distribution_name(d).data()) << QString(qs::distribution_name(d).data());
}

void TestSynthetic::threadsAgree() {
  QFETCH(QString, dist);
  qs::SyntheticSpec s;
  s.dist = qs::parse_distribution(dist.toStdString());
  s.n = 300'000;
  s.cols = 1000;
  s.seed = 9;
  const auto a = qs::make_synthetic(s, 1), b = qs::make_synthetic(s, 3);
  QCOMPARE(a.size(), s.n);
  QVERIFY(a == b);
  s.seed = 10;
  QVERIFY(qs::make_synthetic(s, 2) != a);
  for (float v : a) QVERIFY(std::isfinite(v));
}

// Mean and variance within 6 standard errors of the distribution's values.
void TestSynthetic::moments_data() {
  QTest::addColumn<QString>("dist");
  QTest::addColumn<double>("sigma");
  QTest::addColumn<double>("variance");  // of the distribution with that scale
  QTest::newRow("normal") << "normal" << 2.0 << 4.0;
  QTest::newRow("laplace") << "laplace" << 1.5 << 2 * 1.5 * 1.5;
  QTest::newRow("uniform") << "uniform" << 3.0 << 9.0 / 3.0;
  QTest::newRow("student-t dof 5") << "student-t" << 1.0 << 5.0 / 3.0;
}

void TestSynthetic::moments() {
  QFETCH(QString, dist);
  QFETCH(double, sigma);
  QFETCH(double, variance);
  qs::SyntheticSpec s;
  s.dist = qs::parse_distribution(dist.toStdString());
  s.n = 1 << 20;
  s.sigma = sigma;
  s.dof = 5;
  const auto x = qs::make_synthetic(s, 2);
  double sum = 0, sum2 = 0;
  for (float v : x) sum += v, sum2 += double(v) * v;
  const double n = double(x.size()), mean = sum / n, var = sum2 / n - mean * mean;
  QVERIFY2(std::abs(mean) < 6 * std::sqrt(variance / n), qPrintable(QString::number(mean)));
  // Student-t with 5 dof has a large fourth moment: a looser bound on its variance.
  const double tol = dist == u"student-t" ? 0.05 : 0.01;
  QVERIFY2(std::abs(var / variance - 1) < tol, qPrintable(QString::number(var / variance)));
}

void TestSynthetic::outliersInFewRows() {
  qs::SyntheticSpec s;
  s.dist = qs::Distribution::Outliers;
  s.n = 1 << 20;
  s.cols = 1024;
  s.outlier_rows = 4;
  s.outlier_fraction = 1e-3;
  s.outlier_scale = 100;
  const auto x = qs::make_synthetic(s, 2);
  std::vector<int> rowsWithBig;
  std::size_t big = 0;
  for (std::size_t r = 0; r < 1024; ++r) {
    std::size_t inRow = 0;
    for (std::size_t c = 0; c < 1024; ++c) inRow += std::abs(x[r * 1024 + c]) > 8 ? 1 : 0;  // > 8 sigma of the bulk
    if (inRow) rowsWithBig.push_back(int(r));
    big += inRow;
  }
  QCOMPARE(int(rowsWithBig.size()), 4);
  // About fraction * n outliers, nearly all beyond 8 sigma at scale 100.
  QVERIFY2(big > 700 && big < 1300, qPrintable(QString::number(big)));
}

void TestSynthetic::badSpecs_data() {
  QTest::addColumn<qulonglong>("n");
  QTest::addColumn<qulonglong>("cols");
  QTest::addColumn<double>("sigma");
  QTest::newRow("empty") << 0ull << 1ull << 1.0;
  QTest::newRow("ragged") << 1000ull << 3ull << 1.0;
  QTest::newRow("zero cols") << 1000ull << 0ull << 1.0;
  QTest::newRow("sigma 0") << 1000ull << 10ull << 0.0;
  QTest::newRow("sigma nan") << 1000ull << 10ull << std::nan("");
}

void TestSynthetic::badSpecs() {
  QFETCH(qulonglong, n);
  QFETCH(qulonglong, cols);
  QFETCH(double, sigma);
  qs::SyntheticSpec s;
  s.n = n;
  s.cols = cols;
  s.sigma = sigma;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::make_synthetic(s));
}

void TestSynthetic::names() {
  for (qs::Distribution d : qs::all_distributions()) QCOMPARE(qs::parse_distribution(qs::distribution_name(d)), d);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::parse_distribution("gauss"));
  qs::SyntheticSpec s;
  QVERIFY(QString::fromStdString(qs::describe(s)).contains(QStringLiteral("1048576 values = 1024 x 1024")));
}

void TestSynthetic::cancel() {
  qs::SyntheticSpec s;
  s.n = 1 << 22;
  const auto x = qs::make_synthetic(s, 1, [](std::size_t, std::size_t) { return false; });
  QVERIFY(x.empty());
}

QTEST_APPLESS_MAIN(TestSynthetic)
#include "tst_synthetic.moc"
