// Exact 8-bit integer matrix multiply on the CPU: a scalar oracle (`_ref`), a generic blocked kernel, an
// AVX2 kernel and an AVX-512 VNNI kernel chosen at run time, all bit-identical, with a fused dequantizing
// epilogue. Exercise: `quantscope-cli bench gemm --backend cpu`, tests/tst_gemm.cpp.
//
//   qs::PackedB w = qs::pack_b_int8(W.data(), K, N);             // once per weight matrix
//   qs::gemm_int8(A.data(), M, K, K, w, C.data(), N, threads);   // C (int32) = A · W, exact
//   qs::gemm_q8_dequant(qs::QMatrixA{.data = A.data(), .M = M, .K = K}, w,
//                       {.scale_a = sa, .scale_b = sw, .bias = b}, Y.data(), N, threads);
//
// Layouts: A is M x K row-major (row i starts at A + i * lda), B is K x N row-major (BLayout::KxN) or
// N x K row-major (BLayout::NxK, the out x in weight of a linear layer), C and Y are M x N row-major.
// What is computed: C[i][j] = sum_k (qa[i][k] - za[i]) * (qb[k][j] - zb[j]) in exact integer arithmetic,
// where za = 0 for int8 A and zb = 0 for int8 B; uint8 operands carry zero points (per tensor, per row
// of A, per column of B). The sum must fit in int32: gemm_max_k() gives the largest K for which it
// always does, and longer K is refused with a GemmError.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "format/encode_simd.h"

namespace qs {

// Bad shapes, null pointers, K beyond the int32-safe bound, a level this CPU cannot run.
struct GemmError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

enum class QType : uint8_t { S8, U8 };
const char* to_string(QType t);  // "int8", "uint8"
enum class BLayout : uint8_t { KxN, NxK };

// GEMM kernels by SimdLevel: Generic (portable C++), Avx2 (256-bit: AVX-VNNI vpdpbusd where the CPU has
// it, else vpmaddubsw with a one's-complement sign trick; see GemmKernel), Avx512 (AVX-512 VNNI vpdpbusd;
// a CPU with AVX-512 but without VNNI gets Avx2). Compiled and supported here, best last.
const std::vector<SimdLevel>& available_gemm_levels();
SimdLevel best_gemm_level();
const char* gemm_level_name(SimdLevel l);  // "generic", "avx2", "vnni"

// The micro-kernel a level runs, each exact for any data:
//   Generic    portable C++.
//   Avx2       vpmaddubsw(|s|, b ^ sign mask of s) + vpmaddwd(1) (gemm_int8_avx2.cpp): the Avx2 level on
//              a CPU without AVX-VNNI.
//   AvxVnni    256-bit vpdpbusd, the Avx2 level where __builtin_cpu_supports("avxvnni") (Alder Lake, Zen 5).
//   Avx512Vnni 512-bit vpdpbusd, the Avx512 level.
// The environment variable QS_GEMM_AVX2_KERNEL=avx2 makes the Avx2 level run the Avx2 kernel even where
// the CPU has AVX-VNNI (tests and benchmarks of that kernel).
enum class GemmKernel : uint8_t { Generic, Avx2, AvxVnni, Avx512Vnni };
const char* gemm_kernel_name(GemmKernel k);  // "generic", "avx2", "avx-vnni", "avx512-vnni"
// The kernel gemm_int8 / gemm_q8 / gemm_q8_dequant run at this level (which must be available).
GemmKernel gemm_kernel_for(SimdLevel level);
// This CPU has AVX-VNNI (the VEX 256-bit vpdpbusd) and this build compiled its kernel.
bool gemm_has_avxvnni();

// Largest K for which sum_k x_k * y_k always fits in int32 when every x_k is in [x_lo, x_hi] and every
// y_k in [y_lo, y_hi] (the ranges of qa - za and qb - zb). int8 x int8: 131071 (2^31 - 1 over 128 * 128).
// constexpr, so the CUDA kernels' bound (cuda/gemm_int8.cuh) is this one, not a restated number.
constexpr int64_t gemm_max_k(int32_t x_lo, int32_t x_hi, int32_t y_lo, int32_t y_hi) {
  const int64_t p[4] = {int64_t(x_lo) * y_lo, int64_t(x_lo) * y_hi, int64_t(x_hi) * y_lo, int64_t(x_hi) * y_hi};
  const int64_t pmax = std::max(int64_t(0), *std::max_element(p, p + 4));
  const int64_t pmin = std::min(int64_t(0), *std::min_element(p, p + 4));
  int64_t k = std::numeric_limits<int32_t>::max();  // no bound from the values: K itself is an int
  if (pmax > 0) k = std::min(k, int64_t(std::numeric_limits<int32_t>::max()) / pmax);
  if (pmin < 0) k = std::min(k, (int64_t(1) << 31) / -pmin);
  return k;
}
constexpr int64_t gemm_max_k(QType a, QType b) {  // zero points 0
  const int32_t alo = a == QType::S8 ? -128 : 0, ahi = a == QType::S8 ? 127 : 255;
  const int32_t blo = b == QType::S8 ? -128 : 0, bhi = b == QType::S8 ? 127 : 255;
  return gemm_max_k(alo, ahi, blo, bhi);
}
static_assert(gemm_max_k(QType::S8, QType::S8) == 131071);

// B packed once into the kernels' layout (shared by every level): panels of kGemmPanel columns, K in
// groups of 4 (padded with zeros), stored as b' = b (int8) or b - 128 (uint8) so the kernels multiply
// unsigned by signed bytes; with it the column sums and zero-point terms the epilogue needs.
inline constexpr int kGemmPanel = 48;

class PackedB {
 public:
  PackedB() = default;
  int K() const { return K_; }
  int N() const { return N_; }
  QType type() const { return type_; }
  bool empty() const { return N_ == 0; }
  std::size_t bytes() const;  // memory held, packed data and per-column terms
  int panels() const { return (N_ + kGemmPanel - 1) / kGemmPanel; }
  int k_groups() const { return (K_ + 3) / 4; }
  // Internal layout, read by the kernels: panel p, k group g, column c, byte t at
  // data()[((p * k_groups() + g) * kGemmPanel + c) * 4 + t]; per-column arrays padded to panels() * kGemmPanel.
  const int8_t* data() const { return data_.get(); }
  const int32_t* u() const { return u_.data(); }  // sum_k b'[k][j] - K * beta[j] (modulo 2^32)
  const int32_t* beta() const { return beta_.data(); }      // zb[j] - (uint8 ? 128 : 0): b - zb = b' - beta
  bool has_beta() const { return has_beta_; }
  std::pair<int32_t, int32_t> value_range() const { return {lo_, hi_}; }  // range of qb - zb over all columns

 private:
  friend PackedB pack_b_impl(const void*, QType, int, int, std::ptrdiff_t, BLayout, std::span<const int32_t>);
  struct Free {
    void operator()(int8_t* p) const;
  };
  int K_ = 0, N_ = 0;
  QType type_ = QType::S8;
  std::unique_ptr<int8_t[], Free> data_;
  std::vector<int32_t> u_, beta_;
  bool has_beta_ = false;
  int32_t lo_ = 0, hi_ = 0;
};

// B: K x N (KxN) or N x K (NxK) with leading dimension ld (0 = dense). Throws GemmError on bad shapes.
PackedB pack_b_int8(const int8_t* B, int K, int N, std::ptrdiff_t ld = 0, BLayout layout = BLayout::KxN);
// uint8 B with zero points: size 1 (tensor) or N (per column), each in [0, 255].
PackedB pack_b_uint8(const uint8_t* B, int K, int N, std::span<const int32_t> zero_point, std::ptrdiff_t ld = 0,
                     BLayout layout = BLayout::KxN);

// The A operand: M x K row-major, lda >= K (0 = K). uint8 A may carry zero points: empty (0), size 1
// (tensor) or size M (per row), each in [0, 255].
struct QMatrixA {
  const void* data = nullptr;
  QType type = QType::S8;
  int M = 0, K = 0;
  std::ptrdiff_t ld = 0;
  std::span<const int32_t> zero_point{};
};

// Fused dequantization: Y[i][j] = float(C[i][j]) * scale_a[i] * scale_b[j] + bias[j], evaluated as
// ((float(acc) * sa) * sb) + bias in float32 (no FMA contraction), identical at every level.
// scale_a: size 1 (tensor) or M (row); scale_b: size 1 (tensor) or N (column); bias: empty or N.
struct Dequant {
  std::span<const float> scale_a{};
  std::span<const float> scale_b{};
  std::span<const float> bias{};
};

// C = A · B, exact int32, ldc >= N (0 = N). threads <= 0 means all cores (fewer for small products:
// about one per 4M multiply-adds); a positive count is used as given. level must be in
// available_gemm_levels(). Throws GemmError for mismatched K, non-positive sizes, K > bound.
void gemm_int8(const int8_t* A, int M, int K, std::ptrdiff_t lda, const PackedB& B, int32_t* C,
               std::ptrdiff_t ldc, int threads = 1, SimdLevel level = best_gemm_level());
void gemm_q8(const QMatrixA& A, const PackedB& B, int32_t* C, std::ptrdiff_t ldc, int threads = 1,
             SimdLevel level = best_gemm_level());
// The same product, dequantized to float32 in the kernel's epilogue (no int32 matrix in memory).
void gemm_q8_dequant(const QMatrixA& A, const PackedB& B, const Dequant& dq, float* Y, std::ptrdiff_t ldy,
                     int threads = 1, SimdLevel level = best_gemm_level());

// The oracle: plain loops with int32 accumulation, B unpacked K x N row-major (ldb = N). K is checked
// against the same bound. gemm_q8_ref evaluates sum (qa - za)(qb - zb) directly (no expansion).
void gemm_int8_ref(const int8_t* A, const int8_t* B, int32_t* C, int M, int K, int N);
void gemm_q8_ref(const QMatrixA& A, const void* B, QType b_type, std::span<const int32_t> b_zero_point, int N,
                 int32_t* C, std::ptrdiff_t ldc = 0);
// The epilogue on an int32 matrix with the same float32 operation order as the kernels.
void dequant_ref(const int32_t* C, int M, int N, std::ptrdiff_t ldc, const Dequant& dq, float* Y,
                 std::ptrdiff_t ldy = 0);

}  // namespace qs
