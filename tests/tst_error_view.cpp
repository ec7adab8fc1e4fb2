// The Error tab's engine (core/quant/error_view.h) against a brute-force element loop written here:
// value histogram, absolute/relative error histograms split by clipping (group bounds recomputed from
// the scale rules, their clipped total checked against apply_scheme's), NaN/inf inputs, empty tensors,
// the grid overlay, cancel, thread independence, and every compiled SIMD level of the element codes.
// Run: cmake --build build --target tst_error_view && build/tests/tst_error_view
#include "quant/error_view.h"
#include "quant/error_view_simd.h"

#include "test_rng.h"
#include "format/quantize.h"
#include "quant/scale_rule.h"
#include "quant/scheme.h"

#include <QTest>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<int64_t> parseShape(const QString& s) {
  std::vector<int64_t> shape;
  for (const QString& d : s.split('x')) shape.push_back(d.toLongLong());
  return shape;
}

std::size_t numel(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= std::size_t(d);
  return n;
}

// Normal data named by the row, with optional large outliers and NaN/inf sprinkled at known places.
std::vector<float> makeData(const char* tag, std::size_t n, bool outliers, bool specials) {
  Rng rng = Rng::from_tag(tag);
  std::vector<float> x(n);
  for (float& v : x) v = float(rng.normal());
  if (outliers)
    for (std::size_t i = 0; i < n; i += 97) x[i] = float(rng.sign() * rng.between(20, 60));
  if (n > 8) x[n / 3] = 0.0f, x[n / 5] = -0.0f;  // relative error of zero is undefined
  if (specials && n >= 16) {
    x[1] = kNaN;
    x[n - 2] = kInf;
    x[n / 2] = -kInf;
    x[n / 2 + 1] = kNaN;
  }
  return x;
}

bool affine(const qs::Format& f) { return f.is_int() && !f.is_signed; }

// Each element's clip bound, from the scale rules written out plainly (amax per group in double).
std::vector<double> elementBounds(const qs::Scheme& s, const std::vector<float>& x, const std::vector<int64_t>& shape,
                                  float tensorScale) {
  const std::size_t n = x.size();
  std::vector<std::size_t> group(n, 0);
  std::size_t groups = 1;
  if (s.granularity == qs::Granularity::Channel) {
    const int rank = int(shape.size());
    const int axis = s.axis < 0 ? s.axis + rank : s.axis;
    std::size_t inner = 1;
    for (int d = axis + 1; d < rank; ++d) inner *= std::size_t(shape[d]);
    groups = std::size_t(shape[axis]);
    for (std::size_t i = 0; i < n; ++i) group[i] = (i / inner) % groups;
  } else if (s.granularity == qs::Granularity::Block) {
    const std::size_t L = std::size_t(shape.back()), bl = std::size_t(s.block), perRow = (L + bl - 1) / bl;
    groups = (n / L) * perRow;
    for (std::size_t i = 0; i < n; ++i) group[i] = (i / L) * perRow + (i % L) / bl;
  }
  std::vector<double> lo(groups, 0), hi(groups, 0);
  std::vector<bool> any(groups, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const std::size_t g = group[i];
    lo[g] = any[g] ? std::min(lo[g], double(x[i])) : x[i];
    hi[g] = any[g] ? std::max(hi[g], double(x[i])) : x[i];
    any[g] = true;
  }
  std::vector<double> bound(groups);
  const qs::Format& f = s.format;
  if (s.granularity == qs::Granularity::None) return std::vector<double>(n, f.overflow_threshold);  // scale 1
  for (std::size_t g = 0; g < groups; ++g) {
    const double amax = std::max(std::fabs(lo[g]), std::fabs(hi[g]));
    if (affine(f)) {
      bound[g] = amax;
      continue;
    }
    float scale;
    if (s.scale_format && s.scale_format->name == "e8m0fnu") {
      scale = qs::mx_scale(f, amax);
    } else if (s.scale_format) {
      const double want = amax / (f.max_finite * double(tensorScale));
      const auto code = qs::encode_ref(*s.scale_format, want, qs::Rounding::Nearest, qs::Overflow::Saturate, 0);
      scale = amax > 0 ? float(qs::decode_ref(*s.scale_format, code)) * tensorScale : 1.0f;
      if (!(scale > 0)) scale = 1.0f;  // the block underflowed: all zero, bound at scale 1
    } else {
      scale = qs::amax_scale(f, amax);
    }
    bound[g] = double(scale) * f.overflow_threshold;  // where nearest rounding leaves the range
  }
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = bound[group[i]];
  return out;
}

// floor(log2 m) for a finite non-zero float, by frexp, as a histogram bin (subnormals in bin 0).
int log2Bin(float m) {
  int e = 0;
  std::frexp(m, &e);
  return std::clamp(e - 1 + 127, 0, 254);
}

struct Oracle {
  std::vector<uint64_t> values;
  uint64_t below = 0, above = 0, nan = 0, posInf = 0, negInf = 0;
  qs::Log2ErrorHistogram abs, rel;
  uint64_t clipped = 0;
};

Oracle bruteForce(const std::vector<float>& x, const std::vector<float>& q, const std::vector<double>& bound, double lo,
                  double hi, int bins) {
  Oracle o;
  o.values.assign(std::size_t(bins), 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float xi = x[i];
    if (std::isnan(xi)) { ++o.nan; continue; }
    if (std::isinf(xi)) { ++(xi > 0 ? o.posInf : o.negInf); continue; }
    const double xd = xi;
    if (xd < lo) ++o.below;
    else if (xd > hi) ++o.above;
    else ++o.values[std::size_t(std::min(std::floor((xd - lo) * (double(bins) / (hi - lo))), double(bins - 1)))];
    const bool clip = std::fabs(xd) > bound[i];
    o.clipped += clip;
    const float e = std::fabs(xi - q[i]);
    auto add = [&](qs::Log2ErrorHistogram& h, float m) {
      if (m == 0) ++h.zeros;
      else if (!std::isfinite(m)) ++h.non_finite;
      else ++(clip ? h.clipping : h.rounding)[std::size_t(log2Bin(m))];
    };
    add(o.abs, e);
    if (!std::isfinite(e)) ++o.rel.non_finite;
    else if (xi == 0) ++o.rel.undefined;
    else if (e == 0) ++o.rel.zeros;
    else ++(clip ? o.rel.clipping : o.rel.rounding)[std::size_t(std::min(log2Bin(std::fabs(e / xi)), 254))];
  }
  return o;
}

QByteArray describe(const qs::Log2ErrorHistogram& h) {
  QByteArray s;
  for (int k = 0; k < qs::Log2ErrorHistogram::kBins; ++k)
    if (h.rounding[k] || h.clipping[k]) s += QByteArray::number(k - 127) + ":" + QByteArray::number(h.rounding[k]) + "/" +
                                              QByteArray::number(h.clipping[k]) + " ";
  return s + "zeros " + QByteArray::number(h.zeros) + " nonfinite " + QByteArray::number(h.non_finite) + " undefined " +
         QByteArray::number(h.undefined);
}

bool sameHistogram(const qs::Log2ErrorHistogram& a, const qs::Log2ErrorHistogram& b) {
  return a.rounding == b.rounding && a.clipping == b.clipping && a.zeros == b.zeros && a.non_finite == b.non_finite &&
         a.undefined == b.undefined;
}

}  // namespace

class TestErrorView : public QObject {
  Q_OBJECT

private slots:
  void matchesBruteForce_data();
  void matchesBruteForce();
  void chosenRange();
  void specialsCounted();
  void emptyInput_data();
  void emptyInput();
  void cancel_data();
  void cancel();
  void gridOverlay_data();
  void gridOverlay();
  void simdLevelsMatchDefinition();
  void badOptions();
  void csv();
};

void TestErrorView::matchesBruteForce_data() {
  QTest::addColumn<QString>("scheme");
  QTest::addColumn<QString>("shape");
  QTest::addColumn<QString>("overflow");
  QTest::addColumn<bool>("outliers");
  QTest::addColumn<bool>("specials");
  QTest::addColumn<int>("bins");
  QTest::newRow("e4m3fn/tensor") << "e4m3fn/tensor" << "64x257" << "saturate" << false << false << 512;
  QTest::newRow("e4m3fn/tensor specials") << "e4m3fn/tensor" << "64x257" << "saturate" << false << true << 300;
  QTest::newRow("e5m2/tensor outliers") << "e5m2/tensor" << "33x100" << "ieee" << true << false << 1024;
  QTest::newRow("int8/tensor") << "int8/tensor" << "4096" << "saturate" << false << false << 256;
  QTest::newRow("int8/channel:0 outliers") << "int8/channel:0" << "48x130" << "saturate" << true << false << 512;
  QTest::newRow("int8/channel:1 (stride 1)") << "int8/channel:1" << "130x48" << "saturate" << true << true << 512;
  QTest::newRow("int4/channel:-2 3d") << "int4/channel:-2" << "3x20x17" << "saturate" << false << false << 64;
  QTest::newRow("uint8/tensor") << "uint8/tensor" << "5000" << "saturate" << false << true << 512;
  QTest::newRow("uint8/channel:0") << "uint8/channel:0" << "16x300" << "saturate" << true << false << 512;
  QTest::newRow("e2m1fn/block:32:e8m0fnu (MX clips)") << "e2m1fn/block:32:e8m0fnu" << "50x320" << "saturate" << true << false << 512;
  QTest::newRow("e4m3fn/block:32:e8m0fnu ieee (clips to NaN)") << "e4m3fn/block:32:e8m0fnu" << "40x96" << "ieee" << true << true << 512;
  QTest::newRow("e5m2/block:32:e8m0fnu ieee (clips to inf)") << "e5m2/block:32:e8m0fnu" << "40x96" << "ieee" << true << false << 512;
  QTest::newRow("e2m1fn/block:16:e4m3fn (NVFP4)") << "e2m1fn/block:16:e4m3fn" << "30x200" << "saturate" << true << false << 512;
  QTest::newRow("e3m2fn/block:7 short tail") << "e3m2fn/block:7" << "9x30" << "saturate" << false << true << 100;
  QTest::newRow("fp16/tensor") << "fp16/tensor" << "3000" << "saturate" << false << false << 2048;
  QTest::newRow("bf16/block:64") << "bf16/block:64" << "20x128" << "saturate" << true << false << 512;
  QTest::newRow("e2m1fn/none (a plain cast clips)") << "e2m1fn/none" << "40x50" << "saturate" << true << true << 512;
  QTest::newRow("e3m4/none ieee (clips to inf)") << "e3m4/none" << "40x50" << "ieee" << true << false << 512;
  QTest::newRow("e3m4/tensor one bin") << "e3m4/tensor" << "777" << "saturate" << false << false << 1;
}

void TestErrorView::matchesBruteForce() {
  QFETCH(QString, scheme);
  QFETCH(QString, shape);
  QFETCH(QString, overflow);
  QFETCH(bool, outliers);
  QFETCH(bool, specials);
  QFETCH(int, bins);
  qs::EncodeOptions eo;
  eo.overflow = qs::parse_overflow(overflow.toStdString());
  const qs::Scheme s = qs::parse_scheme(scheme.toStdString(), eo);
  const std::vector<int64_t> sh = parseShape(shape);
  const std::vector<float> x = makeData(QTest::currentDataTag(), numel(sh), outliers, specials);

  qs::ErrorViewOptions opt;
  opt.value_bins = bins;
  std::vector<float> q;
  const qs::ErrorView v = qs::compute_error_view(s, x.data(), sh, opt, {}, &q);
  QVERIFY(!v.cancelled);
  QCOMPARE(v.n, x.size());
  QCOMPARE(q.size(), x.size());

  // The quantized tensor and the metrics are apply_scheme's.
  std::vector<float> y(x.size());
  qs::ErrorMetrics m;
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), sh, y.data(), 1, {}, &m);
  QVERIFY(std::equal(y.begin(), y.end(), q.begin(), [](float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
  }));
  QCOMPARE(v.metrics.count, m.count);
  QCOMPARE(v.metrics.sum_e2, m.sum_e2);
  QCOMPARE(v.out.stats.overflow, out.stats.overflow);
  QCOMPARE(v.out.stats.underflow, out.stats.underflow);
  QCOMPARE(v.out.stats.nan, out.stats.nan);

  // The value range defaults to [-amax, amax].
  QCOMPARE(v.values.hi, out.amax);
  QCOMPARE(v.values.lo, -out.amax);
  QCOMPARE(v.values.bins(), bins);

  const std::vector<double> bound = elementBounds(s, x, sh, out.tensor_scale);
  const Oracle o = bruteForce(x, q, bound, v.values.lo, v.values.hi, bins);
  QCOMPARE(o.clipped, m.clipped);  // the oracle's bounds are apply_scheme's
  QCOMPARE(v.clipped, o.clipped);
  QVERIFY(v.values.counts == o.values);
  QCOMPARE(v.values.below, o.below);
  QCOMPARE(v.values.above, o.above);
  QCOMPARE(v.values.nan, o.nan);
  QCOMPARE(v.values.pos_inf, o.posInf);
  QCOMPARE(v.values.neg_inf, o.negInf);
  QVERIFY2(sameHistogram(v.abs_error, o.abs), describe(v.abs_error) + "\n  vs " + describe(o.abs));
  QVERIFY2(sameHistogram(v.rel_error, o.rel), describe(v.rel_error) + "\n  vs " + describe(o.rel));

  // Every element exactly once.
  QCOMPARE(v.values.total(), uint64_t(x.size()));
  QCOMPARE(v.finite + v.nan + v.pos_inf + v.neg_inf, uint64_t(x.size()));
  QCOMPARE(v.abs_error.total(), v.finite);
  QCOMPARE(v.rel_error.total(), v.finite);
  QCOMPARE(v.abs_error.undefined, uint64_t(0));

  // Thread count changes nothing.
  opt.threads = 3;
  const qs::ErrorView v3 = qs::compute_error_view(s, x.data(), sh, opt);
  QVERIFY(v3.values.counts == v.values.counts);
  QVERIFY(sameHistogram(v3.abs_error, v.abs_error) && sameHistogram(v3.rel_error, v.rel_error));
  QCOMPARE(v3.grid.values, v.grid.values);
}

void TestErrorView::chosenRange() {
  const qs::Scheme s = qs::parse_scheme("int8/tensor");
  const std::vector<float> x = makeData("chosenRange", 10000, true, true);
  qs::ErrorViewOptions opt;
  opt.value_bins = 40;
  opt.range_lo = -1.0;
  opt.range_hi = 1.5;
  std::vector<float> q;
  const qs::ErrorView v = qs::compute_error_view(s, x.data(), {10000}, opt, {}, &q);
  QCOMPARE(v.values.lo, -1.0);
  QCOMPARE(v.values.hi, 1.5);
  const Oracle o = bruteForce(x, q, std::vector<double>(x.size(), INFINITY), -1.0, 1.5, 40);
  QVERIFY(v.values.counts == o.values);
  QCOMPARE(v.values.below, o.below);
  QCOMPARE(v.values.above, o.above);
  QVERIFY(v.values.below > 1000 && v.values.above > 500);
  QCOMPARE(v.values.total(), uint64_t(x.size()));
  // The grid is cut to the range too.
  QVERIFY(!v.grid.values.empty());
  QVERIFY(v.grid.values.front() < -1.0 && v.grid.values[1] >= -1.0);  // the nearest value beyond each end
  QVERIFY(v.grid.values.back() > 1.5 && v.grid.values.rbegin()[1] <= 1.5);
  QVERIFY(v.grid.total_values > v.grid.values.size());
}

void TestErrorView::specialsCounted() {
  std::vector<float> x = {1.0f, kNaN, -2.0f, kInf, kInf, -kInf, 0.5f, kNaN, kNaN, 3.0f, -0.0f, 0.25f};
  for (const char* scheme : {"e4m3fn/tensor", "int8/channel:0", "e2m1fn/block:4:e8m0fnu", "uint8/tensor"}) {
    const qs::Scheme s = qs::parse_scheme(scheme);
    const qs::ErrorView v = qs::compute_error_view(s, x.data(), {3, 4});
    QVERIFY2(!v.cancelled, scheme);
    QCOMPARE(v.nan, uint64_t(3));
    QCOMPARE(v.pos_inf, uint64_t(2));
    QCOMPARE(v.neg_inf, uint64_t(1));
    QCOMPARE(v.finite, uint64_t(6));
    QCOMPARE(v.out.stats.nan, uint64_t(3));
    QCOMPARE(v.values.nan + v.values.pos_inf + v.values.neg_inf, uint64_t(6));
    QCOMPARE(v.values.total(), uint64_t(x.size()));
    QCOMPARE(v.abs_error.total(), uint64_t(6));
    QCOMPARE(v.rel_error.undefined, uint64_t(1));  // -0.0
    QCOMPARE(v.metrics.count, uint64_t(6));
    QVERIFY(!std::isnan(v.metrics.sqnr_db()));  // +inf where these few values are exact
    QCOMPARE(v.values.hi, 3.0);  // amax over finite values only
  }
  // Nothing finite at all: a default range, no error to measure.
  const std::vector<float> all = {kNaN, kInf, -kInf, kNaN};
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme("e5m2/tensor"), all.data(), {4});
  QCOMPARE(v.finite, uint64_t(0));
  QCOMPARE(v.values.total(), uint64_t(4));
  QCOMPARE(v.values.lo, -1.0);
  QCOMPARE(v.values.hi, 1.0);
  QCOMPARE(v.abs_error.total(), uint64_t(0));
  QVERIFY(std::isnan(v.metrics.sqnr_db()));
}

void TestErrorView::emptyInput_data() {
  QTest::addColumn<QString>("scheme");
  QTest::addColumn<QString>("shape");
  QTest::newRow("tensor 0") << "e4m3fn/tensor" << "0";
  QTest::newRow("channel 0x16") << "int8/channel:0" << "0x16";
  QTest::newRow("channel 16x0") << "int8/channel:0" << "16x0";
  QTest::newRow("block 0x32") << "e2m1fn/block:32:e8m0fnu" << "0x32";
  QTest::newRow("block 4x0") << "e2m1fn/block:32" << "4x0";
  QTest::newRow("affine 0") << "uint8/tensor" << "0";
}

void TestErrorView::emptyInput() {
  QFETCH(QString, scheme);
  QFETCH(QString, shape);
  const float dummy = 0;
  std::size_t calls = 0;
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(scheme.toStdString()), &dummy, parseShape(shape), {},
                                                 [&](std::size_t, std::size_t) { ++calls; return true; });
  QVERIFY(!v.cancelled);
  QCOMPARE(v.n, std::size_t(0));
  QCOMPARE(v.values.total(), uint64_t(0));
  QCOMPARE(v.values.bins(), 512);
  QCOMPARE(v.abs_error.total(), uint64_t(0));
  QVERIFY(std::isnan(v.metrics.sqnr_db()));
  QVERIFY(v.abs_error.first_bin() > v.abs_error.last_bin());
}

void TestErrorView::cancel_data() {
  QTest::addColumn<QString>("scheme");
  QTest::addColumn<int>("stopAfter");  // progress calls answered true before the false
  QTest::newRow("tensor at once") << "e4m3fn/tensor" << 0;
  QTest::newRow("tensor in the pass") << "e4m3fn/tensor" << 20;
  QTest::newRow("channel in the pass") << "int8/channel:0" << 2060;  // 2048 channels + 1 in apply_scheme
  QTest::newRow("block in the pass") << "e2m1fn/block:32:e8m0fnu" << 40;
}

void TestErrorView::cancel() {
  QFETCH(QString, scheme);
  QFETCH(int, stopAfter);
  const std::vector<float> x = makeData("cancel", std::size_t(1) << 21, false, false);
  const std::vector<int64_t> shape{2048, 1024};
  std::size_t calls = 0, lastDone = 0, lastTotal = 0;
  bool monotone = true;
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(scheme.toStdString()), x.data(), shape, {},
                                                 [&](std::size_t done, std::size_t total) {
    monotone &= done >= lastDone && done <= total;
    lastDone = done;
    lastTotal = total;
    return int(calls++) < stopAfter;
  });
  QVERIFY(v.cancelled);
  QVERIFY(monotone);
  QCOMPARE(lastTotal, 2 * x.size());
  QCOMPARE(calls, std::size_t(stopAfter) + 1);  // no call after the refusal
  if (stopAfter >= 20) QVERIFY(lastDone >= x.size());  // the refusal came in the histogram pass

  // Without cancelling, progress ends at total.
  lastDone = 0;
  const qs::ErrorView full = qs::compute_error_view(qs::parse_scheme(scheme.toStdString()), x.data(), shape, {},
                                                    [&](std::size_t done, std::size_t total) {
    lastDone = done;
    lastTotal = total;
    return true;
  });
  QVERIFY(!full.cancelled);
  QCOMPARE(lastDone, lastTotal);
  QCOMPARE(full.values.total(), uint64_t(x.size()));
}

void TestErrorView::gridOverlay_data() {
  QTest::addColumn<QString>("scheme");
  QTest::addColumn<int>("which");  // GridGroup
  QTest::addColumn<QString>("noteStart");
  QTest::newRow("e4m3fn/tensor") << "e4m3fn/tensor" << 0 << "per-tensor scale";
  QTest::newRow("int8/tensor") << "int8/tensor" << 0 << "per-tensor scale";
  QTest::newRow("uint8/tensor") << "uint8/tensor" << 0 << "per-tensor scale";
  QTest::newRow("int8/channel:0 largest") << "int8/channel:0" << 0 << "channel ";
  QTest::newRow("int8/channel:0 median") << "int8/channel:0" << 1 << "channel ";
  QTest::newRow("mx largest") << "e2m1fn/block:32:e8m0fnu" << 0 << "block ";
  QTest::newRow("mx median") << "e2m1fn/block:32:e8m0fnu" << 1 << "block ";
  QTest::newRow("uint8/block:64 median") << "uint8/block:64" << 1 << "block ";
  QTest::newRow("uint4/channel:0 median") << "uint4/channel:0" << 1 << "channel ";
  QTest::newRow("nvfp4 largest") << "e2m1fn/block:16:e4m3fn" << 0 << "block ";
  QTest::newRow("nvfp4 median") << "e2m1fn/block:16:e4m3fn" << 1 << "block ";
  QTest::newRow("e4m3fn/block:32 median") << "e4m3fn/block:32" << 1 << "block ";
  QTest::newRow("e3m2fn/none") << "e3m2fn/none" << 0 << "no scale";
}

void TestErrorView::gridOverlay() {
  QFETCH(QString, scheme);
  QFETCH(int, which);
  QFETCH(QString, noteStart);
  const qs::Scheme s = qs::parse_scheme(scheme.toStdString());
  const std::vector<int64_t> shape{32, 256};
  const std::vector<float> x = makeData(QTest::currentDataTag(), numel(shape), true, false);
  qs::ErrorViewOptions opt;
  opt.grid_group = which ? qs::GridGroup::Median : qs::GridGroup::Largest;
  std::vector<float> q;
  const qs::ErrorView v = qs::compute_error_view(s, x.data(), shape, opt, {}, &q);
  const QString note = QString::fromStdString(v.grid.note);
  QVERIFY2(note.startsWith(noteStart), qPrintable(note));
  QVERIFY(std::is_sorted(v.grid.values.begin(), v.grid.values.end()));
  QVERIFY(std::adjacent_find(v.grid.values.begin(), v.grid.values.end()) == v.grid.values.end());
  // Within the range, but for at most one value beyond each end.
  QVERIFY(v.grid.values.size() < 2 || (v.grid.values[1] >= v.values.lo && v.grid.values.rbegin()[1] <= v.values.hi));

  // The picked group's quantized values all lie on the grid drawn.
  std::vector<std::size_t> members;
  if (s.granularity == qs::Granularity::Tensor || s.granularity == qs::Granularity::None) {
    QCOMPARE(v.grid.groups, std::size_t(1));
    for (std::size_t i = 0; i < x.size(); ++i) members.push_back(i);
  } else if (s.granularity == qs::Granularity::Channel) {
    QCOMPARE(v.grid.groups, std::size_t(32));
    for (std::size_t i = 0; i < 256; ++i) members.push_back(v.grid.group * 256 + i);
  } else {
    QCOMPARE(v.grid.groups, std::size_t(32 * 256 / s.block));
    for (std::size_t i = 0; i < std::size_t(s.block); ++i) members.push_back(v.grid.group * s.block + i);
  }
  const std::set<double> grid(v.grid.values.begin(), v.grid.values.end());
  for (std::size_t i : members) QVERIFY2(grid.count(double(q[i])), qPrintable(QString::number(q[i], 'g', 9)));
  // The grid's scale and zero point are the scheme's rule (scale_rule.h, the one apply_scheme uses) applied
  // to the picked group's statistics.
  qs::GroupStats st;
  bool any = false;
  for (std::size_t i : members) {
    if (!std::isfinite(x[i])) continue;
    st.lo = any ? std::min(st.lo, double(x[i])) : x[i];
    st.hi = any ? std::max(st.hi, double(x[i])) : x[i];
    any = true;
  }
  st.amax = std::max(std::fabs(st.lo), std::fabs(st.hi));
  const qs::GroupScale want =
      qs::group_scale(qs::scale_rule_params(s), st, v.out.tensor_scale, qs::scale_format_round(s));
  QCOMPARE(std::bit_cast<uint32_t>(v.grid.scale), std::bit_cast<uint32_t>(want.scale));
  QCOMPARE(v.grid.zero_point, want.zero_point);
  // Largest: no group has a larger amax; so the grid spans the value axis.
  if (which == 0 && v.grid.groups > 1) {
    double amax = 0;
    for (std::size_t i : members) amax = std::max(amax, double(std::fabs(x[i])));
    QCOMPARE(amax, v.out.amax);
  }
  if (which == 1) QVERIFY(note.contains(QStringLiteral("median scale")));
}

void TestErrorView::simdLevelsMatchDefinition() {
  Rng rng = Rng::from_tag("simd levels");
  const std::size_t n = 1000;  // not a multiple of any lane count: the tails run too
  std::vector<float> x(n), q(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double kind = rng.unit();
    x[i] = kind < 0.05 ? kNaN : kind < 0.08 ? float(rng.sign()) * kInf : kind < 0.12 ? 0.0f
         : kind < 0.15 ? float(rng.sign() * 1e-40) : float(rng.normal() * std::ldexp(1.0, int(rng.between(-30, 30))));
    const double qk = rng.unit();
    q[i] = qk < 0.1 ? x[i] : qk < 0.15 ? 0.0f : qk < 0.18 ? kInf : qk < 0.2 ? kNaN : float(x[i] * (1 + rng.between(-0.1, 0.1)));
  }
  x[7] = 1e-45f, q[7] = 3e38f;  // relative error past FLT_MAX
  for (double hiV : {1.0, 1e6}) {
    const qs::detail::ErrorCodeParams p{-hiV, hiV, 97.0 / (2 * hiV), 0.5 * hiV, 97};
    std::vector<int32_t> v0(n), a0(n), r0(n);
    for (std::size_t i = 0; i < n; ++i) qs::detail::error_code_one(x[i], q[i], p, v0[i], a0[i], r0[i]);
    QCOMPARE(a0[7], 254);  // |e| ~ 3e38: exponent field 127 + 127
    QCOMPARE(r0[7] % qs::detail::kErrCodes, 254);
    for (qs::SimdLevel level : qs::available_simd_levels()) {
      std::vector<int32_t> v(n), a(n), r(n);
      qs::detail::error_codes(x.data(), q.data(), n, p, v.data(), a.data(), r.data(), level);
      for (std::size_t i = 0; i < n; ++i)
        QVERIFY2(v[i] == v0[i] && a[i] == a0[i] && r[i] == r0[i],
                 qPrintable(QStringLiteral("%1 element %2: x=%3 q=%4").arg(qs::to_string(level)).arg(i).arg(x[i]).arg(q[i])));
    }
  }
}

void TestErrorView::badOptions() {
  const std::vector<float> x(16, 1.0f);
  qs::ErrorViewOptions opt;
  opt.value_bins = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::compute_error_view(qs::parse_scheme("int8"), x.data(), {16}, opt));
  opt.value_bins = 70000;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::compute_error_view(qs::parse_scheme("int8"), x.data(), {16}, opt));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::compute_error_view(qs::parse_scheme("int8/channel:2"), x.data(), {4, 4}));
  // A reversed or empty range falls back to [-amax, amax].
  opt.value_bins = 8;
  opt.range_lo = 2;
  opt.range_hi = 2;
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme("int8"), x.data(), {16}, opt);
  QCOMPARE(v.values.lo, -1.0);
  QCOMPARE(v.values.counts.back(), uint64_t(16));  // x == hi lands in the last bin
}

void TestErrorView::csv() {
  const std::vector<float> x = makeData("csv", 4096, true, true);
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme("e2m1fn/block:32:e8m0fnu"), x.data(), {4096});
  const QByteArray text = QByteArray::fromStdString(qs::error_view_histogram_csv(v, "mx,"));
  uint64_t absSum = 0, relSum = 0;
  bool sawClipping = false;
  for (const QByteArray& line : text.split('\n')) {
    if (line.isEmpty()) continue;
    const QList<QByteArray> f = line.split(',');
    QCOMPARE(f.size(), 6);
    QCOMPARE(f[0], QByteArray("mx"));
    (f[1] == "abs_error" ? absSum : relSum) += f[5].toULongLong();
    sawClipping |= f[2] == "clipping";
  }
  QCOMPARE(absSum, v.finite);
  QCOMPARE(relSum, v.finite);
  QVERIFY(sawClipping);
}

QTEST_APPLESS_MAIN(TestErrorView)
#include "tst_error_view.moc"
