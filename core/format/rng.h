// Counter-based random bits for stochastic rounding: a pure function of (seed, element index), so
// any thread split, the SIMD paths and the CUDA kernels draw the same number for the same element.
// Exercise: tests/tst_rng.cpp; used by encode_ref and the vectorized encoders.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define QS_HD __host__ __device__ __forceinline__
#else
#define QS_HD inline
#endif

namespace qs {

// Chris Wellons' "lowbias32" integer hash: a bijection on 32 bits with low avalanche bias.
QS_HD uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Per-2^32-block key: depends on the whole seed and on the high half of the index.
QS_HD uint32_t stochastic_key(uint64_t seed, uint32_t index_hi) {
  uint32_t k = hash32(static_cast<uint32_t>(seed) ^ 0x9e3779b9u);
  k = hash32(k ^ static_cast<uint32_t>(seed >> 32));
  return hash32(k ^ index_hi ^ 0x632be5abu);
}

// Mixes the low half of the index with the key: two rounds so that neighbouring indices and
// neighbouring seeds give unrelated numbers.
QS_HD uint32_t stochastic_mix(uint32_t key, uint32_t index_lo) {
  return hash32(hash32(index_lo ^ key) + key);
}

// The uniform 32-bit number for element `index` under `seed`.
QS_HD uint32_t stochastic_bits(uint64_t seed, uint64_t index) {
  return stochastic_mix(stochastic_key(seed, static_cast<uint32_t>(index >> 32)),
                        static_cast<uint32_t>(index));
}

}  // namespace qs
