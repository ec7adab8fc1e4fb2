// The AVX-VNNI int8 kernel (256-bit vpdpbusd, VEX-encoded: Alder Lake and later, Zen 5), the Avx2 level's
// choice where the CPU has it (gemm.cpp asks __builtin_cpu_supports("avxvnni")). vpdpbusd multiplies
// unsigned by signed bytes and adds each group of 4 products into an int32 lane without intermediate
// saturation, so the operands are those of the AVX-512 VNNI kernel: a' = a + 128 (int8 A) or a (uint8 A)
// in [0, 255], b' as packed; exact for any data, no sign trick needed. A tile is 4 rows x 16 columns
// (8 ymm accumulators; A packed by pack_a_avxvnni in gemm_int8_avx2.cpp). Compiled with -mavx2 -mfma
// -mavxvnni where the compiler supports it (QS_HAVE_AVXVNNI), else only a stub that is never called.
// Exercise: tests/tst_gemm.cpp (the avxvnni instances), `quantscope-cli bench gemm --kernels int8-avx2`.
#include "gemm/gemm_impl.h"

#if defined(QS_HAVE_AVXVNNI)
#include <immintrin.h>

#include <cstring>

#include "gemm/gemm_store_avx2.h"

namespace qs::detail {
namespace {

inline __m256i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <int R, int V>
void micro(const Tile& t) {
  __m256i acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_si256();
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  for (int g = 0; g < t.kgs; ++g) {
    __m256i bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 * v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i av = bcast32(a + 4 * r);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_dpbusd_avx_epi32(acc[r][v], av, bv[v]);
    }
    a += 4 * R;
    b += 4 * kGemmPanel;
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      if (8 * v < t.cols) store8(acc[r][v], t, r, 8 * v, t.cols - 8 * v);
}

constexpr int kV = 2;

template <int R>
void micro_cols(const Tile& t) {
  if (t.cols > 8)
    micro<R, kV>(t);
  else
    micro<R, 1>(t);
}

struct AvxVnni {
  static constexpr int MR = kMrAvxVnni, NT = 8 * kV, ESZ = kEszAvxVnni;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 4: micro_cols<4>(t); break;
      case 3: micro_cols<3>(t); break;
      case 2: micro_cols<2>(t); break;
      default: micro_cols<1>(t); break;
    }
  }
};
static_assert(kMrAvxVnni == 4 && kEszAvxVnni == 1);

}  // namespace

void gemm_tiles_avxvnni(const GemmJob& j, int pb, int pe, int mb, int me) { run_blocked<AvxVnni>(j, pb, pe, mb, me); }
bool avxvnni_compiled() { return true; }

}  // namespace qs::detail

#else

namespace qs::detail {
void gemm_tiles_avxvnni(const GemmJob&, int, int, int, int) {}
bool avxvnni_compiled() { return false; }
}  // namespace qs::detail

#endif
