// SplitMix64's finalizer: a 64-bit value to a well-mixed 64-bit value (a bijection), the seed deriver of the
// training lab (per-epoch permutations, per-step and per-layer seeds, optimizer draws). Changing it changes
// every seeded training run, so it lives once, here.
//   uint64_t step_seed = qs::mix64(seed ^ (step * 0x9e3779b97f4a7c15ULL));
#pragma once

#include <cstdint>

namespace qs {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace qs
