// The int8 GEMM (core/gemm/gemm.h) at every level this CPU runs against the scalar oracle, which is itself
// checked against int64 sums: exact int32 on tails, M = 1, K = 1, K not a multiple of 4, K at the int32
// bound, strided and transposed operands, both thread splits and the K-blocked path; the fused dequant
// epilogue (bit-identical to dequant_ref, within a named tolerance of float64); uint8 affine zero points
// against the direct sum (qa - za)(qb - zb); the K bound and bad input refused; the fast activation
// quantizer code for code against the int8 encoder; the Eigen fp32 baseline against float64.
// Run: cmake --build build --target tst_gemm && build/tests/tst_gemm   (one row: tst_gemm "exact:7x13x50/random/t1/vnni")
#include "format/encode_simd.h"

#include "test_rng.h"
#include "format/format.h"
#include "gemm/gemm.h"
#include "gemm/gemm_f32.h"
#include "gemm/gemm_quant.h"

#include <QTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

Q_DECLARE_METATYPE(qs::SimdLevel)
Q_DECLARE_METATYPE(qs::QType)

namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // float32
// The epilogue rounds four times: float(acc), * scale_a, * scale_b, + bias.
constexpr double kDequantTol = 4 * kUnitRoundoff;
// A float32 GEMM of depth K stays within (K + 2) u sum |a b| of the exact product in any summation order.
constexpr double kF32ExtraRoundings = 2;
constexpr int64_t kMaxKInt8 = 131071;  // (2^31 - 1) / (128 * 128)

// SplitMix64 seeded from the row name, so a failing row reproduces its input exactly.

const char* tag() { return QTest::currentDataTag() ? QTest::currentDataTag() : QTest::currentTestFunction(); }

// Fills: "random" (uniform bytes), "extreme" (only -128, -127, 0, 127 for int8; 0 and 255 for uint8),
// "minmax" (every value the most negative: the largest positive products), "zeros".
std::vector<uint8_t> fill(std::size_t n, const std::string& how, bool is_unsigned, Rng& rng) {
  std::vector<uint8_t> v(n);
  for (auto& x : v) {
    if (how == "random") {
      x = uint8_t(rng.next());
    } else if (how == "extreme") {
      static const uint8_t s8[] = {0x80, 0x81, 0x00, 0x7f}, u8[] = {0x00, 0xff, 0xff, 0x00};
      x = (is_unsigned ? u8 : s8)[rng.next() & 3];
    } else if (how == "minmax") {
      x = is_unsigned ? 0xff : 0x80;
    } else {
      x = 0;
    }
  }
  return v;
}

std::vector<int64_t> matmul64(const int8_t* A, const int8_t* B, int M, int K, int N) {
  std::vector<int64_t> C(std::size_t(M) * N, 0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      const int64_t a = A[std::size_t(i) * K + k];
      for (int j = 0; j < N; ++j) C[std::size_t(i) * N + j] += a * B[std::size_t(k) * N + j];
    }
  return C;
}

// First mismatch as a readable failure; true when equal.
template <class T, class U>
bool same(const T* got, const U* want, int M, int N, std::ptrdiff_t ldg, const char* what) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      if (!(int64_t(got[std::ptrdiff_t(i) * ldg + j]) == int64_t(want[std::ptrdiff_t(i) * N + j]))) {
        QTest::qFail(qPrintable(QString("%1 differs at (%2, %3): %4 vs %5")
                                    .arg(what).arg(i).arg(j)
                                    .arg(qlonglong(got[std::ptrdiff_t(i) * ldg + j]))
                                    .arg(qlonglong(want[std::ptrdiff_t(i) * N + j]))),
                     __FILE__, __LINE__);
        return false;
      }
  return true;
}

bool same_bits(const float* got, const float* want, std::size_t n, const char* what) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(got + i, want + i, 4) != 0) {
      QTest::qFail(qPrintable(QString("%1 differs at %2: %3 vs %4").arg(what).arg(i).arg(got[i], 0, 'g', 9).arg(want[i], 0, 'g', 9)),
                   __FILE__, __LINE__);
      return false;
    }
  return true;
}

// One row per gemm level; fill_row streams the other columns, the level column comes last.
void add_levels(const QString& base, const std::function<void(QTestData&)>& fill_row) {
  for (qs::SimdLevel l : qs::available_gemm_levels()) {
    QTestData& row = QTest::addRow("%s/%s", qPrintable(base), qs::gemm_level_name(l));
    fill_row(row);
    row << l;
  }
}

}  // namespace

class tst_Gemm : public QObject {
  Q_OBJECT

 private slots:
  void levels();
  void exact_data();
  void exact();
  void stridedAndTransposed_data();
  void stridedAndTransposed();
  void dequant_data();
  void dequant();
  void affine_data();
  void affine();
  void kBound_data();
  void kBound();
  void badInput();
  void quantizeAct_data();
  void quantizeAct();
  void eigenBaseline_data();
  void eigenBaseline();
};

void tst_Gemm::levels() {
  const auto& l = qs::available_gemm_levels();
  QVERIFY(!l.empty());
  QCOMPARE(l.front(), qs::SimdLevel::Generic);
  QCOMPARE(qs::best_gemm_level(), l.back());
  QCOMPARE(QString(qs::gemm_level_name(qs::SimdLevel::Avx512)), QString("vnni"));
  QString names;
  for (qs::SimdLevel x : l) names += QString(names.isEmpty() ? "" : ", ") + qs::gemm_level_name(x);
  qInfo("gemm levels on this CPU: %s", qPrintable(names));
}

// Shapes x fills x threads x levels: gemm_int8 == gemm_int8_ref == int64 sums, exactly.
void tst_Gemm::exact_data() {
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("K");
  QTest::addColumn<int>("N");
  QTest::addColumn<QString>("how");
  QTest::addColumn<int>("threads");
  QTest::addColumn<qs::SimdLevel>("level");
  struct S { int M, K, N; const char* how; int threads; };
  const S shapes[] = {
      {1, 1, 1, "random", 1},         {1, 1, 1, "minmax", 1},        {1, 100, 77, "random", 1},
      {3, 1, 200, "random", 1},       {2, 2, 2, "extreme", 1},       {7, 13, 50, "random", 1},
      {9, 5, 49, "extreme", 1},       {8, 64, 48, "random", 1},      {17, 3, 97, "random", 2},
      {33, 130, 145, "extreme", 2},   {64, 257, 96, "random", 3},    {100, 1000, 100, "random", 2},
      {1, 4096, 1000, "random", 2},   {16, 4095, 130, "extreme", 1}, {200, 67, 20, "random", 2},
      {23, 9000, 50, "random", 1},    {5, 8193, 97, "minmax", 2},    {40, 300, 1, "random", 3},
      {2, int(kMaxKInt8), 3, "minmax", 1}, {3, int(kMaxKInt8), 2, "extreme", 2}, {12, 34, 56, "zeros", 1},
      {96, 500, 300, "random", 0},  // threads 0: all cores, as many as the work is worth
  };
  for (const S& t : shapes) {
    add_levels(QString("%1x%2x%3/%4/t%5").arg(t.M).arg(t.K).arg(t.N).arg(t.how).arg(t.threads),
               [&](QTestData& row) { row << t.M << t.K << t.N << QString(t.how) << t.threads; });
  }
}

void tst_Gemm::exact() {
  QFETCH(int, M);
  QFETCH(int, K);
  QFETCH(int, N);
  QFETCH(QString, how);
  QFETCH(int, threads);
  QFETCH(qs::SimdLevel, level);
  // Every level sees the same data: seed from the row name without its level suffix.
  const std::string name = tag();
  Rng rng = Rng::from_tag(name.substr(0, name.rfind('/')).c_str());
  const auto a = fill(std::size_t(M) * K, how.toStdString(), false, rng);
  auto b = fill(std::size_t(K) * N, how.toStdString(), false, rng);
  if (how == "minmax") std::fill(b.begin(), b.end(), 0x80);  // (-128) * (-128) = the largest product
  const auto* A = reinterpret_cast<const int8_t*>(a.data());
  const auto* B = reinterpret_cast<const int8_t*>(b.data());
  const std::vector<int64_t> want = matmul64(A, B, M, K, N);
  for (int64_t v : want) QVERIFY(v >= INT32_MIN && v <= INT32_MAX);  // the bound holds
  std::vector<int32_t> ref(std::size_t(M) * N);
  if (int64_t(M) * K * N <= (int64_t(1) << 26)) {
    qs::gemm_int8_ref(A, B, ref.data(), M, K, N);
    if (!same(ref.data(), want.data(), M, N, N, "gemm_int8_ref vs int64")) return;
  }
  const qs::PackedB packed = qs::pack_b_int8(B, K, N);
  QCOMPARE(packed.K(), K);
  QCOMPARE(packed.N(), N);
  std::vector<int32_t> C(std::size_t(M) * N, 0x5a5a5a5a);
  qs::gemm_int8(A, M, K, K, packed, C.data(), N, threads, level);
  QVERIFY(same(C.data(), want.data(), M, N, N, "gemm_int8"));
}

// A and C with leading dimensions larger than their widths, B packed from N x K (a linear layer's weight).
void tst_Gemm::stridedAndTransposed_data() {
  QTest::addColumn<qs::SimdLevel>("level");
  add_levels("lda+5/ldc+3/NxK", [](QTestData&) {});
}

void tst_Gemm::stridedAndTransposed() {
  QFETCH(qs::SimdLevel, level);
  const int M = 11, K = 37, N = 61, lda = K + 5, ldc = N + 3, ldbt = K + 2;
  Rng rng = Rng::from_tag("strided");
  const auto a = fill(std::size_t(M) * lda, "random", false, rng);
  const auto bt = fill(std::size_t(N) * ldbt, "random", false, rng);  // N x K, row stride ldbt
  std::vector<int8_t> Ad(std::size_t(M) * K), B(std::size_t(K) * N);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) Ad[std::size_t(i) * K + k] = int8_t(a[std::size_t(i) * lda + k]);
  for (int j = 0; j < N; ++j)
    for (int k = 0; k < K; ++k) B[std::size_t(k) * N + j] = int8_t(bt[std::size_t(j) * ldbt + k]);
  const auto want = matmul64(Ad.data(), B.data(), M, K, N);
  const qs::PackedB packed = qs::pack_b_int8(reinterpret_cast<const int8_t*>(bt.data()), K, N, ldbt, qs::BLayout::NxK);
  std::vector<int32_t> C(std::size_t(M) * ldc, 0x5a5a5a5a);
  qs::gemm_int8(reinterpret_cast<const int8_t*>(a.data()), M, K, lda, packed, C.data(), ldc, 1, level);
  QVERIFY(same(C.data(), want.data(), M, N, ldc, "strided gemm_int8"));
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j) QCOMPARE(C[std::size_t(i) * ldc + j], int32_t(0x5a5a5a5a));  // padding untouched
}

// Y = ((float(acc) * sa) * sb) + bias: bit-identical to dequant_ref at every level, and within kDequantTol
// of the float64 value acc * sa * sb + bias.
void tst_Gemm::dequant_data() {
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("K");
  QTest::addColumn<int>("N");
  QTest::addColumn<bool>("rowScales");
  QTest::addColumn<bool>("colScales");
  QTest::addColumn<bool>("bias");
  QTest::addColumn<qs::SimdLevel>("level");
  struct S { int M, K, N; };
  for (S s : {S{1, 64, 4096}, S{13, 70, 99}, S{9, 5000, 50}})
    for (int mode = 0; mode < 4; ++mode) {
      const bool rs = mode & 1, cs = mode & 2, bias = mode != 0;
      add_levels(QString("%1x%2x%3/%4/%5/%6").arg(s.M).arg(s.K).arg(s.N).arg(rs ? "row" : "tensor").arg(cs ? "col" : "tensor")
                     .arg(bias ? "bias" : "nobias"),
                 [&](QTestData& row) { row << s.M << s.K << s.N << rs << cs << bias; });
    }
}

void tst_Gemm::dequant() {
  QFETCH(int, M);
  QFETCH(int, K);
  QFETCH(int, N);
  QFETCH(bool, rowScales);
  QFETCH(bool, colScales);
  QFETCH(bool, bias);
  QFETCH(qs::SimdLevel, level);
  const std::string name = tag();
  Rng rng = Rng::from_tag(name.substr(0, name.rfind('/')).c_str());
  const auto a = fill(std::size_t(M) * K, "random", false, rng);
  const auto b = fill(std::size_t(K) * N, "random", false, rng);
  const auto* A = reinterpret_cast<const int8_t*>(a.data());
  const auto* B = reinterpret_cast<const int8_t*>(b.data());
  std::vector<float> sa(rowScales ? M : 1), sb(colScales ? N : 1), bv(bias ? N : 0);
  for (auto& s : sa) s = float(std::ldexp(0.5 + rng.unit(), -int(rng.next() % 12)));
  for (auto& s : sb) s = float(std::ldexp(0.5 + rng.unit(), -int(rng.next() % 12)));
  for (auto& x : bv) x = float(rng.unit() * 20 - 10);
  const qs::Dequant dq{.scale_a = sa, .scale_b = sb, .bias = bv};
  std::vector<int32_t> acc(std::size_t(M) * N);
  const auto want64 = matmul64(A, B, M, K, N);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = int32_t(want64[i]);
  std::vector<float> ref(acc.size()), Y(acc.size(), std::numeric_limits<float>::quiet_NaN());
  qs::dequant_ref(acc.data(), M, N, N, dq, ref.data());
  const qs::PackedB packed = qs::pack_b_int8(B, K, N);
  qs::gemm_q8_dequant(qs::QMatrixA{.data = A, .M = M, .K = K}, packed, dq, Y.data(), N, 2, level);
  QVERIFY(same_bits(Y.data(), ref.data(), Y.size(), "gemm_q8_dequant vs dequant_ref"));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const double p = double(acc[std::size_t(i) * N + j]) * sa[rowScales ? i : 0] * sb[colScales ? j : 0];
      const double bj = bias ? bv[std::size_t(j)] : 0.0;
      const double tol = kDequantTol * (std::fabs(p) + std::fabs(bj)) + std::numeric_limits<float>::denorm_min();
      const double err = std::fabs(double(Y[std::size_t(i) * N + j]) - (p + bj));
      if (!(err <= tol)) QFAIL(qPrintable(QString("(%1, %2): error %3 > tolerance %4").arg(i).arg(j).arg(err).arg(tol)));
    }
}

// uint8 A and/or B with zero points (tensor, per row / per column): the kernels' expansion
// sum qa qb - zb sum qa - za sum qb + K za zb equals the direct sum (qa - za)(qb - zb).
void tst_Gemm::affine_data() {
  QTest::addColumn<qs::QType>("ta");
  QTest::addColumn<qs::QType>("tb");
  QTest::addColumn<QString>("zpa");  // none | tensor | row
  QTest::addColumn<QString>("zpb");  // none | tensor | col
  QTest::addColumn<QString>("how");
  QTest::addColumn<int>("K");
  QTest::addColumn<qs::SimdLevel>("level");
  struct S { qs::QType ta, tb; const char* za; const char* zb; const char* how; int K; };
  using qs::QType;
  const S cases[] = {
      {QType::U8, QType::S8, "none", "none", "random", 77},      {QType::U8, QType::S8, "tensor", "none", "random", 130},
      {QType::U8, QType::S8, "row", "none", "extreme", 33},      {QType::S8, QType::U8, "none", "tensor", "random", 64},
      {QType::S8, QType::U8, "none", "col", "extreme", 201},     {QType::U8, QType::U8, "tensor", "tensor", "random", 99},
      {QType::U8, QType::U8, "row", "col", "random", 1},         {QType::U8, QType::U8, "row", "col", "extreme", 4097},
      {QType::U8, QType::U8, "tensor", "col", "minmax", 33025},
  };
  for (const S& c : cases)
    add_levels(QString("%1.%2/za=%3/zb=%4/%5/K%6").arg(qs::to_string(c.ta)).arg(qs::to_string(c.tb)).arg(c.za).arg(c.zb)
                   .arg(c.how).arg(c.K),
               [&](QTestData& row) { row << c.ta << c.tb << QString(c.za) << QString(c.zb) << QString(c.how) << c.K; });
}

void tst_Gemm::affine() {
  QFETCH(qs::QType, ta);
  QFETCH(qs::QType, tb);
  QFETCH(QString, zpa);
  QFETCH(QString, zpb);
  QFETCH(QString, how);
  QFETCH(int, K);
  QFETCH(qs::SimdLevel, level);
  const int M = 10, N = 53;
  const std::string name = tag();
  Rng rng = Rng::from_tag(name.substr(0, name.rfind('/')).c_str());
  const auto a = fill(std::size_t(M) * K, how.toStdString(), ta == qs::QType::U8, rng);
  const auto b = fill(std::size_t(K) * N, how.toStdString(), tb == qs::QType::U8, rng);
  // Zero points: the ends of [0, 255] and values between; "minmax" puts them where |q - z| is largest.
  auto zeros = [&](const QString& kind, int n) {
    std::vector<int32_t> z(kind == "none" ? 0 : kind == "tensor" ? 1 : n);
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = how == "minmax" ? 0 : i % 3 == 0 ? 255 : i % 3 == 1 ? 0 : int(rng.next() % 256);
    return z;
  };
  const auto za = zeros(zpa, M), zb = zeros(zpb, N);
  qs::QMatrixA A{.data = a.data(), .type = ta, .M = M, .K = K, .ld = K, .zero_point = za};
  // Direct sum in int64, then the oracle (int32) and the kernel.
  std::vector<int64_t> want(std::size_t(M) * N, 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int64_t s = 0;
      const int64_t zai = za.empty() ? 0 : za[za.size() == 1 ? 0 : std::size_t(i)];
      const int64_t zbj = zb.empty() ? 0 : zb[zb.size() == 1 ? 0 : std::size_t(j)];
      for (int k = 0; k < K; ++k) {
        const uint8_t ra = a[std::size_t(i) * K + k], rb = b[std::size_t(k) * N + j];
        const int64_t qa = ta == qs::QType::U8 ? int64_t(ra) : int64_t(int8_t(ra));
        const int64_t qb = tb == qs::QType::U8 ? int64_t(rb) : int64_t(int8_t(rb));
        s += (qa - zai) * (qb - zbj);
      }
      want[std::size_t(i) * N + j] = s;
    }
  std::vector<int32_t> ref(want.size()), C(want.size(), 0x5a5a5a5a);
  qs::gemm_q8_ref(A, b.data(), tb, zb, N, ref.data());
  if (!same(ref.data(), want.data(), M, N, N, "gemm_q8_ref vs int64")) return;
  const qs::PackedB packed = tb == qs::QType::U8 ? qs::pack_b_uint8(b.data(), K, N, zb)
                                                 : qs::pack_b_int8(reinterpret_cast<const int8_t*>(b.data()), K, N);
  qs::gemm_q8(A, packed, C.data(), N, 2, level);
  QVERIFY(same(C.data(), want.data(), M, N, N, "gemm_q8 (expansion)"));
}

// gemm_max_k from the operand ranges; one past it is refused with a message that names the bound.
void tst_Gemm::kBound_data() {
  QTest::addColumn<qs::QType>("ta");
  QTest::addColumn<qs::QType>("tb");
  QTest::addColumn<int>("za");
  QTest::addColumn<int>("zb");
  QTest::addColumn<qlonglong>("bound");
  using qs::QType;
  QTest::newRow("int8.int8") << QType::S8 << QType::S8 << 0 << 0 << qlonglong(131071);         // 2^31-1 / 128^2
  QTest::newRow("uint8(z0).int8") << QType::U8 << QType::S8 << 0 << 0 << qlonglong(65793);     // 2^31 / (255*128)
  QTest::newRow("uint8(z128).int8") << QType::U8 << QType::S8 << 128 << 0 << qlonglong(131071); // (q-z) in [-128,127]
  QTest::newRow("uint8(z0).uint8(z0)") << QType::U8 << QType::U8 << 0 << 0 << qlonglong(33025); // 2^31-1 / 255^2
  QTest::newRow("uint8(z255).uint8(z0)") << QType::U8 << QType::U8 << 255 << 0 << qlonglong(33025); // 2^31 / 255^2
}

void tst_Gemm::kBound() {
  QFETCH(qs::QType, ta);
  QFETCH(qs::QType, tb);
  QFETCH(int, za);
  QFETCH(int, zb);
  QFETCH(qlonglong, bound);
  auto range = [](qs::QType t, int z) { return t == qs::QType::S8 ? std::pair{-128, 127} : std::pair{-z, 255 - z}; };
  const auto ra = range(ta, za), rb = range(tb, zb);
  QCOMPARE(qlonglong(qs::gemm_max_k(ra.first, ra.second, rb.first, rb.second)), bound);
  if (za == 0 && zb == 0) QCOMPARE(qlonglong(qs::gemm_max_k(ta, tb)), bound);
  for (const int K : {int(bound), int(bound) + 1}) {
    std::vector<uint8_t> a(std::size_t(K), 1), b(std::size_t(K), 1);
    const std::vector<int32_t> zav{za}, zbv{zb};
    qs::QMatrixA A{.data = a.data(), .type = ta, .M = 1, .K = K};
    if (ta == qs::QType::U8) A.zero_point = zav;
    const qs::PackedB packed = tb == qs::QType::U8 ? qs::pack_b_uint8(b.data(), K, 1, zbv)
                                                   : qs::pack_b_int8(reinterpret_cast<const int8_t*>(b.data()), K, 1);
    int32_t c = 0;
    if (K == bound) {
      qs::gemm_q8(A, packed, &c, 1);
      QCOMPARE(int64_t(c), int64_t(K) * (ta == qs::QType::U8 ? 1 - za : 1) * (tb == qs::QType::U8 ? 1 - zb : 1));
    } else {
      try {
        qs::gemm_q8(A, packed, &c, 1);
        QFAIL("K past the bound was accepted");
      } catch (const qs::GemmError& e) {
        QVERIFY2(QString(e.what()).contains(QString::number(bound)), e.what());
      }
      if (ta == qs::QType::S8 && tb == qs::QType::S8) {
        std::vector<int32_t> C(1);
        QVERIFY_THROWS_EXCEPTION(qs::GemmError, qs::gemm_int8_ref(reinterpret_cast<const int8_t*>(a.data()),
                                                                  reinterpret_cast<const int8_t*>(b.data()), C.data(), 1, K, 1));
      }
    }
  }
}

// Bad input gives a GemmError with a message, never a wrong number or a crash.
void tst_Gemm::badInput() {
  std::vector<int8_t> a(64, 1), b(64, 1);
  std::vector<int32_t> c(64);
  const qs::PackedB p = qs::pack_b_int8(b.data(), 8, 8);
  auto throws = [](const std::function<void()>& fn, const char* what) {
    try {
      fn();
    } catch (const qs::GemmError& e) {
      QVERIFY2(std::strlen(e.what()) > 10, e.what());
      return;
    }
    QFAIL(what);
  };
  throws([&] { qs::gemm_int8(a.data(), 8, 7, 7, p, c.data(), 8); }, "mismatched K accepted");
  throws([&] { qs::gemm_int8(a.data(), 0, 8, 8, p, c.data(), 8); }, "M = 0 accepted");
  throws([&] { qs::gemm_int8(nullptr, 8, 8, 8, p, c.data(), 8); }, "null A accepted");
  throws([&] { qs::gemm_int8(a.data(), 8, 8, 4, p, c.data(), 8); }, "lda < K accepted");
  throws([&] { qs::gemm_int8(a.data(), 8, 8, 8, p, c.data(), 4); }, "ldc < N accepted");
  throws([&] { qs::gemm_int8(a.data(), 8, 8, 8, qs::PackedB{}, c.data(), 8); }, "empty B accepted");
  throws([&] { qs::pack_b_int8(b.data(), 0, 8); }, "K = 0 packed");
  throws([&] { qs::pack_b_int8(nullptr, 8, 8); }, "null B packed");
  const std::vector<int32_t> bad_zp{256}, two_zp{1, 2};
  throws([&] { qs::pack_b_uint8(reinterpret_cast<const uint8_t*>(b.data()), 8, 8, bad_zp); }, "zero point 256 accepted");
  throws([&] { qs::pack_b_uint8(reinterpret_cast<const uint8_t*>(b.data()), 8, 8, two_zp); }, "2 zero points for N = 8 accepted");
  throws([&] { qs::gemm_q8(qs::QMatrixA{.data = a.data(), .type = qs::QType::S8, .M = 8, .K = 8, .zero_point = two_zp}, p, c.data(), 8); },
         "zero point on int8 A accepted");
  const std::vector<float> s3(3, 1.0f), s1(1, 1.0f);
  std::vector<float> y(64);
  throws([&] { qs::gemm_q8_dequant(qs::QMatrixA{.data = a.data(), .M = 8, .K = 8}, p, {.scale_a = s3, .scale_b = s1}, y.data(), 8); },
         "3 row scales for M = 8 accepted");
  throws([&] { qs::gemm_q8_dequant(qs::QMatrixA{.data = a.data(), .M = 8, .K = 8}, p, {.scale_a = s1, .scale_b = {}}, y.data(), 8); },
         "no column scale accepted");
  throws([&] { qs::gemm_q8_dequant(qs::QMatrixA{.data = a.data(), .M = 8, .K = 8}, p, {.scale_a = s1, .scale_b = s1, .bias = s3}, y.data(), 8); },
         "3 biases for N = 8 accepted");
  // A level this CPU cannot run is refused (only testable where one is missing).
  for (qs::SimdLevel l : {qs::SimdLevel::Avx2, qs::SimdLevel::Avx512}) {
    const auto& lv = qs::available_gemm_levels();
    if (std::find(lv.begin(), lv.end(), l) == lv.end()) throws([&] { qs::gemm_int8(a.data(), 8, 8, 8, p, c.data(), 8, 1, l); }, "missing level ran");
  }
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::gemm_f32_eigen(nullptr, nullptr, nullptr, 0, 1, 1));
}

// quantize_act_int8 at every SIMD level gives the int8 encoder's codes, scales and statistics: ties at
// +-0.5, +-1.5, +-126.5, +-127.5, NaN (-> 0, counted), +-inf (saturate, overflow), all-zero rows (s = 1).
void tst_Gemm::quantizeAct_data() {
  QTest::addColumn<bool>("perRow");
  QTest::addColumn<qs::SimdLevel>("level");
  for (bool pr : {true, false})
    for (qs::SimdLevel l : qs::available_simd_levels())
      QTest::addRow("%s/%s", pr ? "row" : "tensor", qs::to_string(l)) << pr << l;
}

void tst_Gemm::quantizeAct() {
  QFETCH(bool, perRow);
  QFETCH(qs::SimdLevel, level);
  const int M = 7, K = 531;
  Rng rng = Rng::from_tag("quantizeAct");
  std::vector<float> X(std::size_t(M) * K);
  for (auto& x : X) x = float((rng.unit() * 2 - 1) * 3);
  // Row 0: exact ties on the grid of scale 1 (amax = 127 exactly); row 1: all zeros; row 2: specials.
  const float ties[] = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, 126.5f, -126.5f, 127.0f, -127.0f, 0.25f, 1e-30f, -0.0f};
  for (int k = 0; k < K; ++k) X[std::size_t(k)] = ties[k % 12];
  for (int k = 0; k < K; ++k) X[std::size_t(K) + k] = 0.0f;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {nan, inf, -inf, 1e30f, -1e30f, 3.0f, -2.0f, 0.0f};
  for (int k = 0; k < K; ++k) X[std::size_t(2) * K + k] = specials[k % 8];
  std::vector<int8_t> q(X.size(), 0x55), qr(X.size(), 0x66);
  std::vector<float> s(perRow ? M : 1), sr(s.size());
  const qs::EncodeStats st = qs::quantize_act_int8(X.data(), M, K, K, perRow, q.data(), K, s.data(), 2, level);
  // Reference: amax over finite values, amax_scale's rule, then encode_ref one element at a time.
  const qs::Format f = qs::parse_format("int8");
  auto amax_of = [&](int r0, int r1) {
    double m = 0;
    for (int i = r0; i < r1; ++i)
      for (int k = 0; k < K; ++k) {
        const double v = std::fabs(double(X[std::size_t(i) * K + k]));
        if (std::isfinite(v)) m = std::max(m, v);
      }
    return m;
  };
  auto scale_of = [&](double amax) { return amax > 0 ? std::max(float(amax) / 127.0f, std::numeric_limits<float>::min()) : 1.0f; };
  qs::EncodeStats want;
  for (int i = 0; i < M; ++i) {
    const float si = perRow ? scale_of(amax_of(i, i + 1)) : scale_of(amax_of(0, M));
    if (perRow) sr[std::size_t(i)] = si;
    else sr[0] = si;
    for (int k = 0; k < K; ++k) {
      const float y = X[std::size_t(i) * K + k] / si;
      qr[std::size_t(i) * K + k] = int8_t(uint8_t(qs::encode_ref(f, double(y), qs::Rounding::Nearest, qs::Overflow::Saturate, 0, &want)));
    }
  }
  QVERIFY(same_bits(s.data(), sr.data(), s.size(), "scales"));
  QVERIFY(same(q.data(), qr.data(), M, K, K, "codes"));
  QCOMPARE(st.nan, want.nan);
  QCOMPARE(st.overflow, want.overflow);
  QCOMPARE(st.underflow, want.underflow);
  if (perRow) {
    QCOMPARE(s[1], 1.0f);  // all-zero row: scale 1, codes 0
    QCOMPARE(s[0], 1.0f);  // amax 127
  }
}

// The fp32 baseline at every level and thread count is a correct product (within (K + 2) u sum |a b|).
void tst_Gemm::eigenBaseline_data() {
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("K");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("threads");
  QTest::addColumn<qs::SimdLevel>("level");
  struct S { int M, K, N, threads; };
  for (S s : {S{1, 300, 257, 1}, S{37, 129, 201, 2}, S{64, 64, 700, 3}})
    for (qs::SimdLevel l : qs::available_simd_levels())
      QTest::addRow("%dx%dx%d/t%d/%s", s.M, s.K, s.N, s.threads, qs::to_string(l)) << s.M << s.K << s.N << s.threads << l;
}

void tst_Gemm::eigenBaseline() {
  QFETCH(int, M);
  QFETCH(int, K);
  QFETCH(int, N);
  QFETCH(int, threads);
  QFETCH(qs::SimdLevel, level);
  Rng rng = Rng::from_tag(tag());
  std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N), C(std::size_t(M) * N, -1.0f);
  for (auto& x : A) x = float(rng.unit() * 2 - 1);
  for (auto& x : B) x = float(rng.unit() * 2 - 1);
  qs::gemm_f32_eigen(A.data(), B.data(), C.data(), M, K, N, threads, level);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        const double p = double(A[std::size_t(i) * K + k]) * B[std::size_t(k) * N + j];
        s += p;
        mag += std::fabs(p);
      }
      const double err = std::fabs(C[std::size_t(i) * N + j] - s), tol = (K + kF32ExtraRoundings) * kUnitRoundoff * mag;
      if (!(err <= tol)) QFAIL(qPrintable(QString("(%1, %2): error %3 > %4").arg(i).arg(j).arg(err).arg(tol)));
    }
}

QTEST_APPLESS_MAIN(tst_Gemm)
#include "tst_gemm.moc"
