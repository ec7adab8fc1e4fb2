// The expensive half of ggml's Q4_K / Q5_K quantizers (make_qkx2_quants on every 32-value sub-block, with
// its weights) vectorized across sub-blocks: each lane is one sub-block and performs exactly the float
// operations of the scalar code in ggml_quantize.cpp in the same order (no FMA: these files are compiled
// with -ffp-contract=off), so the scales, mins and codes are the same bits. Internal to ggml_quantize.cpp;
// exercised by tests/core/tst_ggml_schemes.cpp (every level against the scalar reference).
#pragma once

#include <cstdint>
#include <vector>

#include "format/encode_simd.h"  // SimdLevel

namespace qs::ggml::detail {

// nblocks (1 .. kKquantBlocks*) super-blocks at x, each 8 sub-blocks of 32 consecutive floats: sub-block j's
// scale, its min as make_qkx2_quants returns it (negated) and its 32 codes L[32 * j + i], for nmax 15 / rmin -1 / 20 steps
// (Q4_K) or 31 / -0.5 / 15 (Q5_K), rdelta 0.1, squared error.
// The scalar reference (ggml_quantize.cpp): one super-block, its 8 sub-blocks one after the other.
void kquant_subblocks_ref(const float* x, int nmax, float rmin, int nstep, float* scales, float* mins, uint8_t* L);

// The vectorized kernels give, instead of the codes, the winning step of each sub-block: its codes are
// kquant_codes' (the same operations on the same floats), which Q4_K / Q5_K need only for a sub-block whose
// quantized scale is 0 (kquant_finish keeps the search's codes there and chooses all others again).
struct KquantStep {
  float iscale = 0, min = 0;
  uint8_t flat = 0;  // max == min: the scalar code returns codes 0 at once
};
// clamp(nearest_int(s.iscale * (x[i] - s.min)), 0, nmax) for i < 32, or 0 where s.flat.
void kquant_codes(const float* x, const KquantStep& s, int nmax, uint8_t* L);
constexpr int kKquantBlocksAvx2 = 2, kKquantBlocksAvx512 = 4;
void kquant_subblocks_avx2(const float* x, int nblocks, int nmax, float rmin, int nstep, float* scales, float* mins,
                           KquantStep* steps);
void kquant_subblocks_avx512(const float* x, int nblocks, int nmax, float rmin, int nstep, float* scales, float* mins,
                             KquantStep* steps);

// The compiled kernels, for the tests: each with its level and width.
struct KquantKernel {
  SimdLevel level;
  int blocks;  // super-blocks per call, at most
  void (*run)(const float*, int, int, float, int, float*, float*, KquantStep*);
};
const std::vector<KquantKernel>& kquant_kernels();

}  // namespace qs::ggml::detail
