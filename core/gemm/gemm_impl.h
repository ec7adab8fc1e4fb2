// Internal to core/gemm: the validated job every level's kernel runs, and the cache-blocked loop nest
// (a template each per-ISA translation unit instantiates with its own micro-kernel). No intrinsics here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm/gemm.h"

namespace qs::detail {

// One call, after validation and packing of A. Arithmetic on raw sums wraps modulo 2^32; the exact result
// fits in int32 (K is bounded), so the wrapped value is the exact one.
//   raw[i][j] = sum_k a'[i][k] * b'[k][j]   (a' in [0, 255], b' in [-128, 127], zero-padded in k)
//   acc[i][j] = raw - alpha[i] * u[j] - ra[i] * beta[j]
// with a = a' - ca (ca = 128 for int8 A, 0 for uint8), alpha = ca + za, ra = sum_k a', and
// u[j] = colsum'[j] - K * beta[j]: the expansion of sum (a' - alpha)(b' - beta).
struct GemmJob {
  int M = 0, N = 0, K = 0, KG = 0;  // KG = k groups of 4
  const uint8_t* apack = nullptr;   // packed A (level layout, below)
  // Packed A of a level with MR rows per panel and ESZ bytes per value: panel p (rows p*MR...) holds,
  // for each k group g, its rows r in [0, rows_p) with 4 values a'[g*4 + t] at element offset
  // p * MR * KG * 4 + (g * rows_p + r) * 4 + t.
  const int8_t* bpack = nullptr;    // PackedB::data()
  const int32_t* alpha = nullptr;   // M
  const int32_t* ra = nullptr;      // M
  const int32_t* rowc = nullptr;    // M, or null: a per-row term of the raw sum (the Avx2 kernel's c)
  const int32_t* u = nullptr;       // panels * kGemmPanel
  const int32_t* beta = nullptr;    // panels * kGemmPanel
  bool has_beta = false;
  // Output: int32 (c) or float32 (y, with sa per row, sb and bias per padded column). Partial sums of
  // earlier K blocks are kept in the output memory as int32 bits.
  int32_t* c = nullptr;
  float* y = nullptr;
  std::ptrdiff_t ld = 0;
  const float* sa = nullptr;    // M
  const float* sb = nullptr;    // padded N
  const float* bias = nullptr;  // padded N
  int kc_groups = 1024, mc_panels = 12, nc_panels = 16;  // cache blocking (set per call in gemm.cpp)
};

// One micro-tile: rows x cols outputs (rows = the A panel's row count, cols <= the kernel's tile width).
struct Tile {
  const uint8_t* a;  // packed A panel at the first k group of this block
  const int8_t* b;   // packed B panel at the first k group of this block (plus the tile's column offset)
  int kgs;           // k groups in this block
  int rows, cols;
  bool accumulate;   // add the partial sums already in the output
  bool final;        // last K block: apply the zero-point terms and the output conversion
  int32_t* out;      // int32 (bits of the partial sums, or the int32 result)
  std::ptrdiff_t ld;
  bool float_out;
  const int32_t* alpha;
  const int32_t* ra;
  const int32_t* rowc;  // or null
  const float* sa;
  const int32_t* u;
  const int32_t* beta;
  bool has_beta;
  const float* sb;
  const float* bias;
};

// Rows per packed A panel and bytes per packed A value, per level (gemm.cpp packs A for the kernel).
inline constexpr int kMrVnni = 8, kEszVnni = 1;
// Avx2: per (k group, row) 8 bytes, the sign masks (0xff where s < 0) of the 4 values s = a' - 128 (a for
// int8 A, a - 128 for uint8 A; 0 past K), then their magnitudes |s| (128 read unsigned). The raw sum is
// then sum s * b' = sum |s| (b' ^ mask) + rowc: gemm.cpp passes alpha - 128 for alpha, sum s for ra, and
// rowc = sum over s < 0 of |s| (gemm_int8_avx2.cpp).
inline constexpr int kMrAvx2 = 4, kEszAvx2 = 2;
inline constexpr int kMrAvxVnni = 4, kEszAvxVnni = 1;  // AvxVnni: a' bytes, the generic layout
inline constexpr int kMrGeneric = 4, kEszGeneric = 1;

namespace {  // each translation unit instantiates its own copy, compiled with its own flags

// The loop nest (BLIS order) over N panels [pb, pe) and row panels [mb, me): N blocks of nc panels,
// K blocks of kc groups, M blocks of mc panels, then panel x tile column x row panel, so one B
// micro-panel (48 x 4kc bytes, L1 or L2) serves every row panel of an M block (L2) in turn. Threads
// split the panel ranges in gemm.cpp. Kernel provides MR, NT (tile columns, divides kGemmPanel), ESZ (bytes per A
// value) and static void dispatch(int rows, const Tile&).
template <class Kernel>
void run_blocked(const GemmJob& j, int pb, int pe, int mb, int me) {
  constexpr int MR = Kernel::MR, NT = Kernel::NT, ESZ = Kernel::ESZ;
  static_assert(kGemmPanel % NT == 0);
  for (int jc = pb; jc < pe; jc += j.nc_panels) {
    const int jce = pe < jc + j.nc_panels ? pe : jc + j.nc_panels;
    for (int kb = 0; kb < j.KG; kb += j.kc_groups) {
      const int kgs = j.KG - kb < j.kc_groups ? j.KG - kb : j.kc_groups;
      const bool first = kb == 0, last = kb + kgs == j.KG;
      for (int ic = mb; ic < me; ic += j.mc_panels) {
        const int ice = me < ic + j.mc_panels ? me : ic + j.mc_panels;
        for (int jr = jc; jr < jce; ++jr) {
          const int col0 = jr * kGemmPanel;
          const int8_t* bpanel = j.bpack + (std::ptrdiff_t(jr) * j.KG + kb) * kGemmPanel * 4;
          for (int t0 = 0; t0 < kGemmPanel && col0 + t0 < j.N; t0 += NT) {
            const int c0 = col0 + t0;
            for (int ir = ic; ir < ice; ++ir) {
              const int r0 = ir * MR;
              const int rows = j.M - r0 < MR ? j.M - r0 : MR;
              Tile t;
              t.a = j.apack + (std::ptrdiff_t(r0) * j.KG + std::ptrdiff_t(kb) * rows) * 4 * ESZ;
              t.b = bpanel + t0 * 4;
              t.kgs = kgs;
              t.rows = rows;
              t.cols = j.N - c0 < NT ? j.N - c0 : NT;
              t.accumulate = !first;
              t.final = last;
              t.float_out = j.y != nullptr;
              t.out = (j.y ? reinterpret_cast<int32_t*>(j.y) : j.c) + std::ptrdiff_t(r0) * j.ld + c0;
              t.ld = j.ld;
              t.alpha = j.alpha + r0;
              t.ra = j.ra + r0;
              t.rowc = j.rowc ? j.rowc + r0 : nullptr;
              t.sa = j.sa ? j.sa + r0 : nullptr;
              t.u = j.u + c0;
              t.beta = j.beta + c0;
              t.has_beta = j.has_beta;
              t.sb = j.sb ? j.sb + c0 : nullptr;
              t.bias = j.bias ? j.bias + c0 : nullptr;
              Kernel::dispatch(rows, t);
            }
          }
        }
      }
    }
  }
}

}  // namespace

// Per-level entry points (each in its own translation unit, compiled with that level's flags): the
// tiles of N panels [pb, pe) x row panels [mb, me).
void gemm_tiles_generic(const GemmJob& j, int pb, int pe, int mb, int me);
void gemm_tiles_avx2(const GemmJob& j, int pb, int pe, int mb, int me);
void gemm_tiles_avxvnni(const GemmJob& j, int pb, int pe, int mb, int me);
bool avxvnni_compiled();  // false where the compiler lacks -mavxvnni (gemm_tiles_avxvnni is then a stub)
void gemm_tiles_vnni(const GemmJob& j, int pb, int pe, int mb, int me);
// Packs rows [row_begin, row_end) (whole panels) of A into the VNNI layout and fills ra.
void pack_a_vnni(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end);
// The same for the Avx2 layout (ra = sum s, and rowc) and the AvxVnni layout, in AVX2 (gemm_int8_avx2.cpp).
void pack_a_avx2(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int32_t* rowc, int row_begin, int row_end);
void pack_a_avxvnni(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end);

}  // namespace qs::detail
