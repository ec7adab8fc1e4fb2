// The seeded generator shared by the Qt tests (SplitMix64): `Rng{seed}` or `Rng::from_tag("row name")`,
// so a failing row's name reproduces its input exactly.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

struct Rng {
  uint64_t s = 0;

  // FNV-1a of the tag (from `basis`) as the seed.
  static Rng from_tag(const char* tag, uint64_t basis = 0xcbf29ce484222325ULL) {
    Rng r{basis};
    for (const char* p = tag; *p; ++p) r.s = (r.s ^ uint8_t(*p)) * 0x100000001b3ULL;
    return r;
  }
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double unit() { return double(next() >> 11) * 0x1p-53; }                 // [0, 1)
  double open01() { return (double(next() >> 11) + 0.5) * 0x1p-53; }      // (0, 1)
  double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * open01(); }
  double normal() { return std::sqrt(-2 * std::log(open01())) * std::cos(2 * std::numbers::pi * open01()); }
  double laplace() {
    const double u = open01() - 0.5;
    return (u < 0 ? 1 : -1) * std::log(1 - 2 * std::fabs(u));
  }
  double sign() { return (next() & 1) ? -1.0 : 1.0; }
};
