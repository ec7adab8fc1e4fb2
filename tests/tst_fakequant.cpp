// FakeQuant and the straight-through estimator (core/train/fake_quant.h): values and statistics bit-identical
// to apply_scheme for every granularity (nearest rounding), codes that decode to the values, the clip mask
// equal to the encoder's overflow count, delayed scaling from the amax history, STE unchanged / zeroed where
// clipped, and the errors. Run: build/tests/tst_fakequant
#include "format/format.h"
#include "quant/scheme.h"
#include "train/fake_quant.h"
#include "train/shard_pool.h"

#include "test_rng.h"

#include <QTest>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* tag() { return QTest::currentDataTag() ? QTest::currentDataTag() : QTest::currentTestFunction(); }

// rows x cols with a magnitude per row (2^(r % 7 - 3)), a few exact zeros and (optionally) one NaN.
std::vector<float> matrix(Rng& rng, int rows, int cols, bool with_nan) {
  std::vector<float> m(std::size_t(rows) * std::size_t(cols));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double mag = std::ldexp(1.0, r % 7 - 3);
      float v = float(rng.normal() * mag);
      if (rng.next() % 11 == 0) v = 0.0f;
      m[std::size_t(r) * std::size_t(cols) + std::size_t(c)] = v;
    }
  if (with_nan && m.size() > 3) m[m.size() / 3] = std::nanf("");
  return m;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, std::string* where) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], 4) != 0) {
      *where = "index " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      return false;
    }
  return a.size() == b.size();
}

}  // namespace

class tst_FakeQuant : public QObject {
  Q_OBJECT

 private slots:
  void matchesApplyScheme_data();
  void matchesApplyScheme();
  void clipMaskAndCodes_data();
  void clipMaskAndCodes();
  void delayedScaling();
  void twoLevelBlockUnderflowIsZero();
  void stochasticRounding();
  void steBackward();
  void errors();
};

void tst_FakeQuant::matchesApplyScheme_data() {
  QTest::addColumn<QString>("scheme");
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::addColumn<bool>("pool");
  const char* schemes[] = {"e4m3fn/tensor", "e5m2/tensor",  "int8/tensor",         "e4m3fn/channel:0",
                           "int8/channel:1", "e3m2fn/channel:-1", "e4m3fn/block:32", "e2m1fn/block:32:e8m0fnu",
                           "e2m1fn/block:16:e4m3fn", "int4/block:7", "uint8/tensor", "bf16/tensor",
                           "e5m2/block:5:e8m0fnu",
                           // no scale (a plain cast): FakeQuant::apply once looped forever on these
                           "e4m3fn/none", "e2m1fn/none", "int8/none"};
  struct Shape { int r, c; };
  const Shape shapes[] = {{1, 1}, {3, 5}, {17, 33}, {64, 100}};
  int n = 0;
  for (const char* s : schemes)
    for (const Shape& sh : shapes) {
      const bool pool = (n++ % 2) == 1;
      const std::string name = std::string(s) + "/" + std::to_string(sh.r) + "x" + std::to_string(sh.c) + (pool ? "/pool" : "");
      QTest::newRow(name.c_str()) << QString(s) << sh.r << sh.c << pool;
    }
}

void tst_FakeQuant::matchesApplyScheme() {
  QFETCH(QString, scheme);
  QFETCH(int, rows);
  QFETCH(int, cols);
  QFETCH(bool, pool);
  Rng rng = Rng::from_tag(tag());
  const std::vector<float> x = matrix(rng, rows, cols, true);
  const qs::Scheme s = qs::parse_scheme(scheme.toStdString());
  std::vector<float> ref(x.size()), got(x.size());
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {rows, cols}, ref.data());
  qs::FakeQuant fq(s);
  qs::ShardPool sp(2);
  const qs::FakeQuantResult r = fq.apply(x.data(), std::size_t(rows), std::size_t(cols), got.data(), nullptr, nullptr, 0,
                                         true, pool ? &sp : nullptr);
  std::string where;
  QVERIFY2(same_bits(ref, got, &where), where.c_str());
  QCOMPARE(r.stats.overflow, out.stats.overflow);
  QCOMPARE(r.stats.underflow, out.stats.underflow);
  QCOMPARE(r.stats.nan, out.stats.nan);
  QCOMPARE(r.amax, out.amax);
  if (s.granularity == qs::Granularity::Tensor && fq.has_codes()) QCOMPARE(r.scale, qs::amax_scale(s.format, out.amax));
}

void tst_FakeQuant::clipMaskAndCodes_data() {
  QTest::addColumn<QString>("scheme");
  QTest::newRow("e4m3fn/tensor") << "e4m3fn/tensor";
  QTest::newRow("int8/channel:0") << "int8/channel:0";
  QTest::newRow("int8/channel:1") << "int8/channel:1";
  QTest::newRow("e2m1fn/block:32:e8m0fnu") << "e2m1fn/block:32:e8m0fnu";  // MX scales clip
  QTest::newRow("e4m3fn/block:16:e8m0fnu") << "e4m3fn/block:16:e8m0fnu";
  QTest::newRow("e2m1fn/block:16:e4m3fn") << "e2m1fn/block:16:e4m3fn";
  QTest::newRow("e5m2/block:8") << "e5m2/block:8";
}

// The mask marks exactly the elements the encoder counted as overflow; every code decodes (times its group's
// scale) to the value, which we check through re-encoding the value with the recovered scale.
void tst_FakeQuant::clipMaskAndCodes() {
  QFETCH(QString, scheme);
  Rng rng = Rng::from_tag(tag());
  const int rows = 24, cols = 96;
  const std::vector<float> x = matrix(rng, rows, cols, false);
  qs::FakeQuant fq(qs::parse_scheme(scheme.toStdString()));
  std::vector<float> y(x.size());
  std::vector<uint16_t> codes(x.size());
  std::vector<uint8_t> clip(x.size(), 7);
  const qs::FakeQuantResult r = fq.apply(x.data(), rows, cols, y.data(), codes.data(), clip.data());
  uint64_t marked = 0;
  for (uint8_t c : clip) {
    QVERIFY(c == 0 || c == 1);
    marked += c;
  }
  QCOMPARE(marked, r.clipped);
  QCOMPARE(r.clipped, r.stats.overflow);
  if (scheme.contains("e8m0fnu")) QVERIFY2(r.clipped > 0, "MX scales should clip some of this data");
  else if (!scheme.contains(":e4m3fn")) QCOMPARE(r.clipped, uint64_t(0));  // amax scales never clip
  const qs::Format& f = fq.scheme().format;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = qs::decode_ref(f, codes[i]);
    QVERIFY2(std::isfinite(v), ("code " + std::to_string(codes[i]) + " at " + std::to_string(i)).c_str());
    if (v == 0) {
      QCOMPARE(y[i], 0.0f);
    } else {
      const double s = double(y[i]) / v;  // the group's scale, the same for every element of the group
      QVERIFY2(s > 0, ("sign mismatch at " + std::to_string(i)).c_str());
      if (clip[i]) QCOMPARE(std::fabs(v), f.max_finite);  // clipped values saturate at the largest code
    }
  }
}

void tst_FakeQuant::delayedScaling() {
  const qs::Scheme s = qs::parse_scheme("e4m3fn/tensor");
  qs::FakeQuant fq(s, qs::ScalingMode::Delayed, 4);
  std::vector<float> x = {0.5f, -1.0f, 0.25f, 2.0f}, y(4);
  std::vector<uint8_t> clip(4);
  // First call: no history yet, its own amax.
  qs::FakeQuantResult r = fq.apply(x.data(), 1, 4, y.data(), nullptr, clip.data());
  QCOMPARE(r.scale, qs::amax_scale(s.format, 2.0));
  QCOMPARE(r.clipped, uint64_t(0));
  // Larger data: the scale still comes from the history (amax 2), so 8 and -6 clip and saturate at 2.
  std::vector<float> big = {8.0f, -6.0f, 1.0f, 0.0f};
  r = fq.apply(big.data(), 1, 4, y.data(), nullptr, clip.data());
  QCOMPARE(r.scale, qs::amax_scale(s.format, 2.0));
  QCOMPARE(r.amax, 8.0);
  QCOMPARE(r.clipped, uint64_t(2));
  QCOMPARE(clip, (std::vector<uint8_t>{1, 1, 0, 0}));
  QCOMPARE(y[0], 2.0f);
  QCOMPARE(y[1], -2.0f);
  // Now the history holds 8: the next call uses it. record = false leaves the history alone.
  r = fq.apply(x.data(), 1, 4, y.data(), nullptr, clip.data(), 0, false);
  QCOMPARE(r.scale, qs::amax_scale(s.format, 8.0));
  QCOMPARE(fq.history().history().size(), std::size_t(2));
  // The history is 4 long: after four small calls the 8 is forgotten.
  for (int i = 0; i < 4; ++i) fq.apply(x.data(), 1, 4, y.data());
  QCOMPARE(fq.tensor_scale(0.0), qs::amax_scale(s.format, 2.0));
}

// A two-level (NVFP4) block scale that rounds to 0 (scale_is_usable false): FakeQuant writes the block as zeros,
// codes 0 and nothing clipped, counting its non-zero inputs as underflow, as apply_scheme does.
void tst_FakeQuant::twoLevelBlockUnderflowIsZero() {
  const qs::Scheme s = qs::parse_scheme("e2m1fn/block:16:e4m3fn");
  QCOMPARE(int(s.rule), int(qs::ScaleRule::TwoLevel));
  std::vector<float> x(32, 0.0f);
  x[0] = 2688.0f;                                         // ts = 2688 / (448 * 6) = 1
  for (int i = 16; i < 32; ++i) x[std::size_t(i)] = (i % 2 ? 1e-6f : -2e-6f);  // want ~ 3e-7: sb rounds to 0
  x[20] = 0.0f;
  std::vector<float> ref(x.size()), got(x.size());
  std::vector<uint16_t> codes(x.size(), 0xffff);
  std::vector<uint8_t> clipped(x.size(), 0xff);
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {1, 32}, ref.data());
  QCOMPARE(out.tensor_scale, 1.0f);
  qs::FakeQuant fq(s);
  const qs::FakeQuantResult r = fq.apply(x.data(), 1, 32, got.data(), codes.data(), clipped.data());
  std::string where;
  QVERIFY2(same_bits(ref, got, &where), where.c_str());
  for (std::size_t i = 16; i < 32; ++i) {
    QCOMPARE(got[i], 0.0f);
    QCOMPARE(codes[i], uint16_t(0));
    QCOMPARE(clipped[i], uint8_t(0));
  }
  QCOMPARE(r.stats.underflow, out.stats.underflow);
  QCOMPARE(r.stats.underflow, uint64_t(15));  // the block's 15 non-zero inputs
  QCOMPARE(r.clipped, uint64_t(0));
}

void tst_FakeQuant::stochasticRounding() {
  qs::EncodeOptions opt;
  opt.rounding = qs::Rounding::Stochastic;
  const qs::Scheme s = qs::parse_scheme("int8/tensor", opt);
  qs::FakeQuant fq(s);
  std::vector<float> x(4096), a(x.size()), b(x.size()), c(x.size());
  x[0] = 127.0f;  // sets the scale to 1: the grid is the integers
  for (std::size_t i = 1; i < x.size(); ++i) x[i] = 10.25f;
  fq.apply(x.data(), 1, x.size(), a.data(), nullptr, nullptr, 1);
  fq.apply(x.data(), 1, x.size(), b.data(), nullptr, nullptr, 1);
  fq.apply(x.data(), 1, x.size(), c.data(), nullptr, nullptr, 2);
  QVERIFY(a == b);  // the same seed draws the same numbers
  QVERIFY(a != c);  // another seed other ones
  double mean = 0;
  for (std::size_t i = 1; i < a.size(); ++i) {
    QVERIFY(a[i] == 10.0f || a[i] == 11.0f);
    mean += a[i];
  }
  mean /= double(a.size() - 1);
  QVERIFY2(std::fabs(mean - 10.25) < 0.03, std::to_string(mean).c_str());  // unbiased (sd of the mean 0.007)
}

void tst_FakeQuant::steBackward() {
  const std::vector<float> dy = {1.5f, -2.0f, 0.0f, std::nanf(""), 3.0f};
  std::vector<float> dx(dy.size(), 9.0f);
  qs::ste_backward(dy.data(), nullptr, dy.size(), dx.data());
  std::string where;
  QVERIFY2(same_bits(dx, dy, &where), where.c_str());  // unchanged, NaN included
  const std::vector<uint8_t> clip = {0, 1, 0, 0, 1};
  qs::ste_backward(dy.data(), clip.data(), dy.size(), dx.data());
  QCOMPARE(dx[0], 1.5f);
  QCOMPARE(dx[1], 0.0f);
  QCOMPARE(dx[2], 0.0f);
  QVERIFY(std::isnan(dx[3]));
  QCOMPARE(dx[4], 0.0f);
  // In place.
  std::vector<float> io = dy;
  qs::ste_backward(io.data(), clip.data(), io.size(), io.data());
  QCOMPARE(io[1], 0.0f);
  QCOMPARE(io[0], 1.5f);
}

void tst_FakeQuant::errors() {
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::FakeQuant(qs::parse_scheme("int8/channel:0"), qs::ScalingMode::Delayed));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::FakeQuant(qs::parse_scheme("uint8/tensor"), qs::ScalingMode::Delayed));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::FakeQuant(qs::parse_scheme("e4m3fn"), qs::ScalingMode::Delayed, 0));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::parse_scaling_mode("sometimes"));
  QCOMPARE(qs::parse_scaling_mode("delayed"), qs::ScalingMode::Delayed);
  qs::FakeQuant fq(qs::parse_scheme("e4m3fn/channel:2"));
  std::vector<float> x(6), y(6);
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, fq.apply(x.data(), 2, 3, y.data()));
}

QTEST_APPLESS_MAIN(tst_FakeQuant)
#include "tst_fakequant.moc"
