// The int8 GEMM (core/gemm/gemm.h) at every level against the scalar oracle, which is itself checked against
// int64 sums: exact int32 on tails, M = 1, K = 1, K not a multiple of 4, K at the int32 bound, strided and
// transposed operands, both thread splits and the K-blocked path; the fused dequant epilogue (bit-identical to
// dequant_ref, within a named tolerance of float64); uint8 affine zero points against the direct sum
// (qa - za)(qb - zb); the K bound and bad input refused; the fast activation quantizer code for code against
// the int8 encoder; the Eigen fp32 baseline against float64. Level-dependent tests run once per kernel
// (generic, avx2, avx-vnni, vnni; the avx2 kernel pinned with QS_GEMM_AVX2_KERNEL=avx2 where the CPU has
// AVX-VNNI) and per SIMD level (generic, avx2, avx512); one this CPU lacks shows as skipped with the reason.
// Operands: full-range, -128 in A, in B, in both, in neither, narrow, all -128 / 127 extremes (the
// vpmaddubsw pair bounds), K up to the int32 bound, uint8 with zero points.
// Run: ninja -C build tst_gemm && build/tests/core/tst_gemm --gtest_filter='*Exact/vnni'
//      (a failing row is named in the trace, e.g. "7x13x50/random/t1/vnni"; its name seeds its input)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "format/encode_simd.h"
#include "format/format.h"
#include "gemm/gemm.h"
#include "gemm/gemm_f32.h"
#include "gemm/gemm_quant.h"
#include "test_files.h"
#include "test_rng.h"

namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // float32
// The epilogue rounds four times: float(acc), * scale_a, * scale_b, + bias.
constexpr double kDequantTol = 4 * kUnitRoundoff;
// A float32 GEMM of depth K stays within (K + 2) u sum |a b| of the exact product in any summation order.
constexpr double kF32ExtraRoundings = 2;
constexpr int64_t kMaxKInt8 = 131071;  // (2^31 - 1) / (128 * 128)

constexpr qs::SimdLevel kAllLevels[] = {qs::SimdLevel::Generic, qs::SimdLevel::Avx2, qs::SimdLevel::Avx512};

bool has(const std::vector<qs::SimdLevel>& levels, qs::SimdLevel l) {
  return std::find(levels.begin(), levels.end(), l) != levels.end();
}

// Fills: "random" (uniform bytes), "extreme" (only -128, -127, 0, 127 for int8; 0 and 255 for uint8),
// "minmax" (every value the most negative: the largest positive products), "zeros", "nomin" (int8 in
// [-127, 127]: no -128), "narrow" (int8 in [-8, 7]), "max" (every value 127), "sparse-min" (mostly small,
// about 1 in 16 values -128).
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
    } else if (how == "nomin") {
      x = uint8_t(int8_t(int(rng.next() % 255) - 127));
    } else if (how == "narrow") {
      x = uint8_t(int8_t(int(rng.next() % 16) - 8));
    } else if (how == "max") {
      x = 0x7f;
    } else if (how == "sparse-min") {
      const uint64_t r = rng.next();
      x = (r & 15) == 0 ? 0x80 : uint8_t(int8_t(int((r >> 8) % 61) - 30));
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

// Equal element for element, or a failure naming the first mismatch.
template <class T, class U>
::testing::AssertionResult same(const T* got, const U* want, int M, int N, std::ptrdiff_t ldg, const char* what) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      if (!(int64_t(got[std::ptrdiff_t(i) * ldg + j]) == int64_t(want[std::ptrdiff_t(i) * N + j])))
        return ::testing::AssertionFailure() << what << " differs at (" << i << ", " << j
                                             << "): " << int64_t(got[std::ptrdiff_t(i) * ldg + j]) << " vs "
                                             << int64_t(want[std::ptrdiff_t(i) * N + j]);
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_bits(const float* got, const float* want, std::size_t n, const char* what) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(got + i, want + i, 4) != 0)
      return ::testing::AssertionFailure() << what << " differs at " << i << ": " << ::testing::PrintToString(got[i])
                                           << " vs " << ::testing::PrintToString(want[i]);
  return ::testing::AssertionSuccess();
}

// One instance per GEMM micro-kernel: "generic", "avx2" (the Avx2 level with QS_GEMM_AVX2_KERNEL=avx2, so
// the vpmaddubsw kernel runs even where the CPU has AVX-VNNI), "avx-vnni" (the Avx2 level where the CPU has
// AVX-VNNI) and "vnni" (Avx512). One this CPU cannot run is skipped, saying so; SetUp checks that the
// level really runs the kernel named.
struct KernelCase {
  qs::SimdLevel level;
  qs::GemmKernel kernel;
  const char* name;
};
constexpr KernelCase kAllKernels[] = {{qs::SimdLevel::Generic, qs::GemmKernel::Generic, "generic"},
                                      {qs::SimdLevel::Avx2, qs::GemmKernel::Avx2, "avx2"},
                                      {qs::SimdLevel::Avx2, qs::GemmKernel::AvxVnni, "avxvnni"},
                                      {qs::SimdLevel::Avx512, qs::GemmKernel::Avx512Vnni, "vnni"}};

void PrintTo(const KernelCase& c, std::ostream* os) { *os << c.name; }

class GemmAtLevel : public ::testing::TestWithParam<KernelCase> {
 protected:
  void SetUp() override {
    const KernelCase& c = GetParam();
    if (!has(qs::available_gemm_levels(), c.level))
      GTEST_SKIP() << "gemm level " << qs::gemm_level_name(c.level) << " is not available on this CPU";
    if (c.kernel == qs::GemmKernel::AvxVnni && !qs::gemm_has_avxvnni())
      GTEST_SKIP() << "AVX-VNNI (256-bit vpdpbusd) is not available on this CPU or compiler";
    if (c.kernel == qs::GemmKernel::Avx2) {
      ::setenv("QS_GEMM_AVX2_KERNEL", "avx2", 1);
      pinned_ = true;
    }
    ASSERT_EQ(int(qs::gemm_kernel_for(c.level)), int(c.kernel))
        << "level " << qs::gemm_level_name(c.level) << " runs " << qs::gemm_kernel_name(qs::gemm_kernel_for(c.level))
        << ", not " << qs::gemm_kernel_name(c.kernel);
  }
  void TearDown() override {
    if (pinned_) ::unsetenv("QS_GEMM_AVX2_KERNEL");
  }
  qs::SimdLevel level() const { return GetParam().level; }
  std::string suffix() const { return std::string("/") + GetParam().name; }

 private:
  bool pinned_ = false;
};

// One instance per encoder SIMD level ("generic", "avx2", "avx512"), skipped the same way.
class SimdAtLevel : public ::testing::TestWithParam<qs::SimdLevel> {
 protected:
  void SetUp() override {
    if (!has(qs::available_simd_levels(), GetParam()))
      GTEST_SKIP() << "SIMD level " << qs::to_string(GetParam()) << " is not available on this CPU";
  }
  qs::SimdLevel level() const { return GetParam(); }
};

}  // namespace

TEST(Gemm, Levels) {
  const auto& l = qs::available_gemm_levels();
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(l.front(), qs::SimdLevel::Generic);
  EXPECT_EQ(qs::best_gemm_level(), l.back());
  EXPECT_STREQ(qs::gemm_level_name(qs::SimdLevel::Avx512), "vnni");
  std::string names;
  for (qs::SimdLevel x : l) names += std::string(names.empty() ? "" : ", ") + qs::gemm_level_name(x);
  std::cout << "gemm levels on this CPU: " << names << "\n";
}

// Shapes x fills x threads x levels: gemm_int8 == gemm_int8_ref == int64 sums, exactly.
namespace {
struct ExactCase {
  int M, K, N;
  const char* how;
  int threads;
};

void check_exact(const ExactCase& t, const std::string& base, qs::SimdLevel level) {
  // Every level sees the same data: seed from the row name without its level suffix.
  Rng rng = Rng::from_tag(base.c_str());
  const int M = t.M, K = t.K, N = t.N;
  const auto a = fill(std::size_t(M) * K, t.how, false, rng);
  auto b = fill(std::size_t(K) * N, t.how, false, rng);
  if (std::string(t.how) == "minmax") std::fill(b.begin(), b.end(), 0x80);  // (-128) * (-128) = the largest product
  const auto* A = reinterpret_cast<const int8_t*>(a.data());
  const auto* B = reinterpret_cast<const int8_t*>(b.data());
  const std::vector<int64_t> want = matmul64(A, B, M, K, N);
  ASSERT_TRUE(std::all_of(want.begin(), want.end(), [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }))
      << "the int32 bound does not hold";
  std::vector<int32_t> ref(std::size_t(M) * N);
  if (int64_t(M) * K * N <= (int64_t(1) << 26)) {
    qs::gemm_int8_ref(A, B, ref.data(), M, K, N);
    ASSERT_TRUE(same(ref.data(), want.data(), M, N, N, "gemm_int8_ref vs int64"));
  }
  const qs::PackedB packed = qs::pack_b_int8(B, K, N);
  EXPECT_EQ(packed.K(), K);
  EXPECT_EQ(packed.N(), N);
  std::vector<int32_t> C(std::size_t(M) * N, 0x5a5a5a5a);
  qs::gemm_int8(A, M, K, K, packed, C.data(), N, t.threads, level);
  EXPECT_TRUE(same(C.data(), want.data(), M, N, N, "gemm_int8"));
}
}  // namespace

TEST_P(GemmAtLevel, Exact) {
  const ExactCase shapes[] = {
      {1, 1, 1, "random", 1},         {1, 1, 1, "minmax", 1},        {1, 100, 77, "random", 1},
      {3, 1, 200, "random", 1},       {2, 2, 2, "extreme", 1},       {7, 13, 50, "random", 1},
      {9, 5, 49, "extreme", 1},       {8, 64, 48, "random", 1},      {17, 3, 97, "random", 2},
      {33, 130, 145, "extreme", 2},   {64, 257, 96, "random", 3},    {100, 1000, 100, "random", 2},
      {1, 4096, 1000, "random", 2},   {16, 4095, 130, "extreme", 1}, {200, 67, 20, "random", 2},
      {23, 9000, 50, "random", 1},    {5, 8193, 97, "minmax", 2},    {40, 300, 1, "random", 3},
      {2, int(kMaxKInt8), 3, "minmax", 1}, {3, int(kMaxKInt8), 2, "extreme", 2}, {12, 34, 56, "zeros", 1},
      {96, 500, 300, "random", 0},  // threads 0: all cores, as many as the work is worth
  };
  for (const ExactCase& t : shapes) {
    const std::string base = std::to_string(t.M) + "x" + std::to_string(t.K) + "x" + std::to_string(t.N) + "/" + t.how +
                             "/t" + std::to_string(t.threads);
    SCOPED_TRACE(base + suffix());
    check_exact(t, base, level());
  }
}

// A and C with leading dimensions larger than their widths, B packed from N x K (a linear layer's weight).
TEST_P(GemmAtLevel, StridedAndTransposed) {
  SCOPED_TRACE("lda+5/ldc+3/NxK" + suffix());
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
  qs::gemm_int8(reinterpret_cast<const int8_t*>(a.data()), M, K, lda, packed, C.data(), ldc, 1, level());
  EXPECT_TRUE(same(C.data(), want.data(), M, N, ldc, "strided gemm_int8"));
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j)
      EXPECT_EQ(C[std::size_t(i) * ldc + j], int32_t(0x5a5a5a5a)) << "padding written at (" << i << ", " << j << ")";
}

// Y = ((float(acc) * sa) * sb) + bias: bit-identical to dequant_ref at every level, and within kDequantTol
// of the float64 value acc * sa * sb + bias.
TEST_P(GemmAtLevel, Dequant) {
  struct S { int M, K, N; };
  for (S sh : {S{1, 64, 4096}, S{13, 70, 99}, S{9, 5000, 50}})
    for (int mode = 0; mode < 4; ++mode) {
      const bool rowScales = mode & 1, colScales = mode & 2, bias = mode != 0;
      const int M = sh.M, K = sh.K, N = sh.N;
      const std::string base = std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + "/" +
                               (rowScales ? "row" : "tensor") + "/" + (colScales ? "col" : "tensor") + "/" +
                               (bias ? "bias" : "nobias");
      SCOPED_TRACE(base + suffix());
      Rng rng = Rng::from_tag(base.c_str());  // the same data at every level
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
      qs::gemm_q8_dequant(qs::QMatrixA{.data = A, .M = M, .K = K}, packed, dq, Y.data(), N, 2, level());
      EXPECT_TRUE(same_bits(Y.data(), ref.data(), Y.size(), "gemm_q8_dequant vs dequant_ref"));
      std::size_t bad = 0;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          const double p = double(acc[std::size_t(i) * N + j]) * sa[rowScales ? i : 0] * sb[colScales ? j : 0];
          const double bj = bias ? bv[std::size_t(j)] : 0.0;
          const double tol = kDequantTol * (std::fabs(p) + std::fabs(bj)) + std::numeric_limits<float>::denorm_min();
          const double err = std::fabs(double(Y[std::size_t(i) * N + j]) - (p + bj));
          if (!(err <= tol) && bad++ == 0)
            ADD_FAILURE() << "(" << i << ", " << j << "): error " << err << " > tolerance " << tol;
        }
      EXPECT_EQ(bad, 0u) << "elements outside the tolerance";
    }
}

// uint8 A and/or B with zero points (tensor, per row / per column): the kernels' expansion
// sum qa qb - zb sum qa - za sum qb + K za zb equals the direct sum (qa - za)(qb - zb).
namespace {
struct AffineCase {
  qs::QType ta, tb;
  const char* za;  // none | tensor | row
  const char* zb;  // none | tensor | col
  const char* how;
  int K;
};

void check_affine(const AffineCase& c, const std::string& base, qs::SimdLevel level) {
  const qs::QType ta = c.ta, tb = c.tb;
  const std::string how = c.how;
  const int M = 10, N = 53, K = c.K;
  Rng rng = Rng::from_tag(base.c_str());  // the same data at every level
  const auto a = fill(std::size_t(M) * K, how, ta == qs::QType::U8, rng);
  const auto b = fill(std::size_t(K) * N, how, tb == qs::QType::U8, rng);
  // Zero points: the ends of [0, 255] and values between; "minmax" puts them where |q - z| is largest.
  auto zeros = [&](const std::string& kind, int n) {
    std::vector<int32_t> z(kind == "none" ? 0 : kind == "tensor" ? 1 : n);
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = how == "minmax" ? 0 : i % 3 == 0 ? 255 : i % 3 == 1 ? 0 : int(rng.next() % 256);
    return z;
  };
  const auto za = zeros(c.za, M), zb = zeros(c.zb, N);
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
  ASSERT_TRUE(same(ref.data(), want.data(), M, N, N, "gemm_q8_ref vs int64"));
  const qs::PackedB packed = tb == qs::QType::U8 ? qs::pack_b_uint8(b.data(), K, N, zb)
                                                 : qs::pack_b_int8(reinterpret_cast<const int8_t*>(b.data()), K, N);
  qs::gemm_q8(A, packed, C.data(), N, 2, level);
  EXPECT_TRUE(same(C.data(), want.data(), M, N, N, "gemm_q8 (expansion)"));
}
}  // namespace

TEST_P(GemmAtLevel, Affine) {
  using qs::QType;
  const AffineCase cases[] = {
      {QType::U8, QType::S8, "none", "none", "random", 77},      {QType::U8, QType::S8, "tensor", "none", "random", 130},
      {QType::U8, QType::S8, "row", "none", "extreme", 33},      {QType::S8, QType::U8, "none", "tensor", "random", 64},
      {QType::S8, QType::U8, "none", "col", "extreme", 201},     {QType::U8, QType::U8, "tensor", "tensor", "random", 99},
      {QType::U8, QType::U8, "row", "col", "random", 1},         {QType::U8, QType::U8, "row", "col", "extreme", 4097},
      {QType::U8, QType::U8, "tensor", "col", "minmax", 33025},
  };
  for (const AffineCase& c : cases) {
    const std::string base = std::string(qs::to_string(c.ta)) + "." + qs::to_string(c.tb) + "/za=" + c.za + "/zb=" + c.zb +
                             "/" + c.how + "/K" + std::to_string(c.K);
    SCOPED_TRACE(base + suffix());
    check_affine(c, base, level());
  }
}

// The operand patterns that decide whether a byte-product kernel is exact: vpmaddubsw adds two u8 x s8
// products in saturating int16, so the AVX2 kernel must stay exact with -128 in A, in B, in both or in
// neither, on narrow data, and at the pair extremes: every a = -128 with every b = 127 makes each pair
// exactly -32768 in the avx2 kernel (|a| = 128 times ~127 = -128, twice), a = b = -128 the largest
// positive sums, 127 x -128 the most negative; K at the int32 bound for those. A and B draw separate
// fills; shapes leave tails in M (4-row panels), N (16 / 48 columns) and K (4 and 32 bytes), run on
// 1 and 2 threads, through K blocks (K > 4096), and through the fused dequant epilogue.
namespace {
struct OperandCase {
  int M, K, N;
  const char* fa;  // fill of A
  const char* fb;  // fill of B
  int threads;
};

void check_operands(const OperandCase& t, const std::string& base, qs::SimdLevel level) {
  Rng rng = Rng::from_tag(base.c_str());  // the same data for every kernel
  const int M = t.M, K = t.K, N = t.N;
  const auto a = fill(std::size_t(M) * K, t.fa, false, rng);
  const auto b = fill(std::size_t(K) * N, t.fb, false, rng);
  const auto* A = reinterpret_cast<const int8_t*>(a.data());
  const auto* B = reinterpret_cast<const int8_t*>(b.data());
  const std::vector<int64_t> want = matmul64(A, B, M, K, N);
  ASSERT_TRUE(std::all_of(want.begin(), want.end(), [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }))
      << "the int32 bound does not hold";
  const qs::PackedB packed = qs::pack_b_int8(B, K, N);
  std::vector<int32_t> C(std::size_t(M) * N, 0x5a5a5a5a);
  qs::gemm_int8(A, M, K, K, packed, C.data(), N, t.threads, level);
  EXPECT_TRUE(same(C.data(), want.data(), M, N, N, "gemm_int8 vs int64"));
  // The fused epilogue sees the same sums: bit-identical to dequant_ref on the exact int32 result.
  if (int64_t(M) * N <= 200000) {
    std::vector<int32_t> exact(want.size());
    for (std::size_t i = 0; i < want.size(); ++i) exact[i] = int32_t(want[i]);
    std::vector<float> sa(static_cast<std::size_t>(M)), sb(static_cast<std::size_t>(N)), bias(static_cast<std::size_t>(N));
    for (auto& x : sa) x = float(std::ldexp(0.5 + rng.unit(), -int(rng.next() % 20)));
    for (auto& x : sb) x = float(std::ldexp(0.5 + rng.unit(), -int(rng.next() % 20)));
    for (auto& x : bias) x = float(rng.unit() * 2 - 1);
    const qs::Dequant dq{.scale_a = sa, .scale_b = sb, .bias = bias};
    std::vector<float> ref(want.size()), Y(want.size(), std::numeric_limits<float>::quiet_NaN());
    qs::dequant_ref(exact.data(), M, N, N, dq, ref.data());
    qs::gemm_q8_dequant(qs::QMatrixA{.data = A, .M = M, .K = K}, packed, dq, Y.data(), N, t.threads, level);
    EXPECT_TRUE(same_bits(Y.data(), ref.data(), Y.size(), "gemm_q8_dequant vs dequant_ref"));
  }
}
}  // namespace

TEST_P(GemmAtLevel, Operands) {
  const char* fills[] = {"random", "nomin", "sparse-min", "narrow"};
  std::vector<OperandCase> cases;
  // Every pairing of the four fills on tails in M, K and N.
  const int shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {13, 33, 17}, {6, 129, 50}, {37, 260, 97}, {4, 1029, 16}, {9, 64, 200}};
  int n = 0;
  for (const char* fa : fills)
    for (const char* fb : fills)
      for (const auto& sh : shapes) cases.push_back({sh[0], sh[1], sh[2], fa, fb, 1 + (n++ % 2)});
  // Extremes, at depths up to the int32 bound (131071 = (2^31 - 1) / 128^2).
  for (const char* fa : {"minmax", "max"})
    for (const char* fb : {"minmax", "max"}) {
      cases.push_back({7, 67, 29, fa, fb, 1});
      cases.push_back({3, 4099, 19, fa, fb, 2});
      cases.push_back({2, int(kMaxKInt8), 17, fa, fb, 1});
    }
  cases.push_back({5, 9000, 33, "sparse-min", "random", 2});   // three K blocks
  cases.push_back({70, 700, 130, "random", "sparse-min", 2});  // many panels, both thread splits
  cases.push_back({3, int(kMaxKInt8), 5, "extreme", "extreme", 1});
  for (const OperandCase& t : cases) {
    const std::string base = std::to_string(t.M) + "x" + std::to_string(t.K) + "x" + std::to_string(t.N) + "/A=" + t.fa +
                             "/B=" + t.fb + "/t" + std::to_string(t.threads);
    SCOPED_TRACE(base + suffix());
    check_operands(t, base, level());
  }
}

// uint8 A with zero points (activations after ReLU hold many 0s: a - 128 = -128 inside the kernels) times
// int8 B with and without -128, and uint8 B: tails, K blocks, the direct sum (qa - za)(qb - zb) in int64.
TEST_P(GemmAtLevel, AffineOperands) {
  using qs::QType;
  const char* fills[] = {"random", "extreme", "minmax"};
  for (const char* how : fills)
    for (int K : {1, 31, 333, 5000})
      for (const char* za : {"none", "tensor", "row"})
        for (QType tb : {QType::S8, QType::U8}) {
          const AffineCase c{QType::U8, tb, za, tb == QType::U8 ? "col" : "none", how, K};
          const std::string base = std::string("u8.") + qs::to_string(tb) + "/za=" + za + "/" + how + "/K" + std::to_string(K);
          SCOPED_TRACE(base + suffix());
          check_affine(c, base, level());
        }
}

// The kernel choice: the Avx2 level runs AVX-VNNI exactly where the CPU has it, unless pinned.
TEST(Gemm, KernelChoice) {
  EXPECT_EQ(qs::gemm_kernel_for(qs::SimdLevel::Generic), qs::GemmKernel::Generic);
  EXPECT_STREQ(qs::gemm_kernel_name(qs::GemmKernel::Avx2), "avx2");
  EXPECT_STREQ(qs::gemm_kernel_name(qs::GemmKernel::AvxVnni), "avx-vnni");
  if (!has(qs::available_gemm_levels(), qs::SimdLevel::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  ::unsetenv("QS_GEMM_AVX2_KERNEL");
  EXPECT_EQ(qs::gemm_kernel_for(qs::SimdLevel::Avx2), qs::gemm_has_avxvnni() ? qs::GemmKernel::AvxVnni : qs::GemmKernel::Avx2);
  ::setenv("QS_GEMM_AVX2_KERNEL", "avx2", 1);
  EXPECT_EQ(qs::gemm_kernel_for(qs::SimdLevel::Avx2), qs::GemmKernel::Avx2);
  ::unsetenv("QS_GEMM_AVX2_KERNEL");
  std::cout << "avx2 level runs " << qs::gemm_kernel_name(qs::gemm_kernel_for(qs::SimdLevel::Avx2)) << " on this CPU\n";
}

// gemm_max_k from the operand ranges; one past it is refused with a message that names the bound.
TEST(Gemm, KBound) {
  using qs::QType;
  struct Case {
    const char* name;
    QType ta, tb;
    int za, zb;
    int64_t bound;
  };
  const Case cases[] = {
      {"int8.int8", QType::S8, QType::S8, 0, 0, 131071},                // 2^31-1 / 128^2
      {"uint8(z0).int8", QType::U8, QType::S8, 0, 0, 65793},            // 2^31 / (255*128)
      {"uint8(z128).int8", QType::U8, QType::S8, 128, 0, 131071},       // (q-z) in [-128,127]
      {"uint8(z0).uint8(z0)", QType::U8, QType::U8, 0, 0, 33025},       // 2^31-1 / 255^2
      {"uint8(z255).uint8(z0)", QType::U8, QType::U8, 255, 0, 33025},   // 2^31 / 255^2
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const QType ta = c.ta, tb = c.tb;
    const int za = c.za, zb = c.zb;
    auto range = [](QType t, int z) { return t == QType::S8 ? std::pair{-128, 127} : std::pair{-z, 255 - z}; };
    const auto ra = range(ta, za), rb = range(tb, zb);
    EXPECT_EQ(qs::gemm_max_k(ra.first, ra.second, rb.first, rb.second), c.bound);
    if (za == 0 && zb == 0) {
      EXPECT_EQ(qs::gemm_max_k(ta, tb), c.bound);
    }
    for (const int K : {int(c.bound), int(c.bound) + 1}) {
      SCOPED_TRACE("K = " + std::to_string(K));
      std::vector<uint8_t> a(std::size_t(K), 1), b(std::size_t(K), 1);
      const std::vector<int32_t> zav{za}, zbv{zb};
      qs::QMatrixA A{.data = a.data(), .type = ta, .M = 1, .K = K};
      if (ta == QType::U8) A.zero_point = zav;
      const qs::PackedB packed = tb == QType::U8 ? qs::pack_b_uint8(b.data(), K, 1, zbv)
                                                 : qs::pack_b_int8(reinterpret_cast<const int8_t*>(b.data()), K, 1);
      int32_t c32 = 0;
      if (K == c.bound) {
        qs::gemm_q8(A, packed, &c32, 1);
        EXPECT_EQ(int64_t(c32), int64_t(K) * (ta == QType::U8 ? 1 - za : 1) * (tb == QType::U8 ? 1 - zb : 1));
      } else {
        try {
          qs::gemm_q8(A, packed, &c32, 1);
          ADD_FAILURE() << "K past the bound was accepted";
        } catch (const qs::GemmError& e) {
          EXPECT_TRUE(qs_test::contains(e.what(), std::to_string(c.bound))) << e.what();
        }
        if (ta == QType::S8 && tb == QType::S8) {
          std::vector<int32_t> C(1);
          EXPECT_THROW(qs::gemm_int8_ref(reinterpret_cast<const int8_t*>(a.data()), reinterpret_cast<const int8_t*>(b.data()),
                                         C.data(), 1, K, 1),
                       qs::GemmError);
        }
      }
    }
  }
}

namespace {
// fn throws a GemmError with a message; `what` names the failure otherwise.
void expect_gemm_error(const std::function<void()>& fn, const char* what) {
  try {
    fn();
  } catch (const qs::GemmError& e) {
    EXPECT_GT(std::strlen(e.what()), 10u) << e.what();
    return;
  }
  ADD_FAILURE() << what;
}
}  // namespace

// Bad input gives a GemmError with a message, never a wrong number or a crash.
TEST(Gemm, BadInput) {
  std::vector<int8_t> a(64, 1), b(64, 1);
  std::vector<int32_t> c(64);
  const qs::PackedB p = qs::pack_b_int8(b.data(), 8, 8);
  const auto throws = expect_gemm_error;
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
  EXPECT_THROW(qs::gemm_f32_eigen(nullptr, nullptr, nullptr, 0, 1, 1), std::invalid_argument);
}

// A level this CPU cannot run is refused: testable only where one is missing, so it says when it is skipped.
TEST(Gemm, MissingLevelRefused) {
  std::vector<int8_t> a(64, 1), b(64, 1);
  std::vector<int32_t> c(64);
  const qs::PackedB p = qs::pack_b_int8(b.data(), 8, 8);
  int missing = 0;
  for (qs::SimdLevel l : {qs::SimdLevel::Avx2, qs::SimdLevel::Avx512}) {
    if (has(qs::available_gemm_levels(), l)) continue;
    ++missing;
    SCOPED_TRACE(qs::gemm_level_name(l));
    expect_gemm_error([&] { qs::gemm_int8(a.data(), 8, 8, 8, p, c.data(), 8, 1, l); }, "missing level ran");
  }
  if (missing == 0) GTEST_SKIP() << "every gemm level runs on this CPU: no missing level to refuse";
}

// quantize_act_int8 at every SIMD level gives the int8 encoder's codes, scales and statistics: ties at
// +-0.5, +-1.5, +-126.5, +-127.5, NaN (-> 0, counted), +-inf (saturate, overflow), all-zero rows (s = 1).
TEST_P(SimdAtLevel, QuantizeAct) {
  for (bool perRow : {true, false}) {
    SCOPED_TRACE(std::string(perRow ? "row" : "tensor") + "/" + qs::to_string(level()));
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
    const qs::EncodeStats st = qs::quantize_act_int8(X.data(), M, K, K, perRow, q.data(), K, s.data(), 2, level());
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
    EXPECT_TRUE(same_bits(s.data(), sr.data(), s.size(), "scales"));
    EXPECT_TRUE(same(q.data(), qr.data(), M, K, K, "codes"));
    EXPECT_EQ(st.nan, want.nan);
    EXPECT_EQ(st.overflow, want.overflow);
    EXPECT_EQ(st.underflow, want.underflow);
    if (perRow) {
      EXPECT_EQ(s[1], 1.0f);  // all-zero row: scale 1, codes 0
      EXPECT_EQ(s[0], 1.0f);  // amax 127
    }
  }
}

// The fp32 baseline at every level and thread count is a correct product (within (K + 2) u sum |a b|).
TEST_P(SimdAtLevel, EigenBaseline) {
  struct S { int M, K, N, threads; };
  for (S sh : {S{1, 300, 257, 1}, S{37, 129, 201, 2}, S{64, 64, 700, 3}}) {
    const int M = sh.M, K = sh.K, N = sh.N;
    const std::string name = std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + "/t" +
                             std::to_string(sh.threads) + "/" + qs::to_string(level());
    SCOPED_TRACE(name);
    Rng rng = Rng::from_tag(name.c_str());
    std::vector<float> A(std::size_t(M) * K), B(std::size_t(K) * N), C(std::size_t(M) * N, -1.0f);
    for (auto& x : A) x = float(rng.unit() * 2 - 1);
    for (auto& x : B) x = float(rng.unit() * 2 - 1);
    qs::gemm_f32_eigen(A.data(), B.data(), C.data(), M, K, N, sh.threads, level());
    std::size_t bad = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int k = 0; k < K; ++k) {
          const double p = double(A[std::size_t(i) * K + k]) * B[std::size_t(k) * N + j];
          s += p;
          mag += std::fabs(p);
        }
        const double err = std::fabs(C[std::size_t(i) * N + j] - s), tol = (K + kF32ExtraRoundings) * kUnitRoundoff * mag;
        if (!(err <= tol) && bad++ == 0) ADD_FAILURE() << "(" << i << ", " << j << "): error " << err << " > " << tol;
      }
    EXPECT_EQ(bad, 0u) << "elements outside the tolerance";
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, GemmAtLevel, ::testing::ValuesIn(kAllKernels),
                         [](const ::testing::TestParamInfo<KernelCase>& i) { return std::string(i.param.name); });
INSTANTIATE_TEST_SUITE_P(AllLevels, SimdAtLevel, ::testing::ValuesIn(kAllLevels),
                         [](const ::testing::TestParamInfo<qs::SimdLevel>& i) { return std::string(qs::to_string(i.param)); });
