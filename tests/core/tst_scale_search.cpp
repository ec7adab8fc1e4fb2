// NVFP4 block scales searched for the least squared error ("e2m1fn/block:16:e4m3fn:mse", quant/scheme.h
// search_block_scale): the pruned search equals a brute-force search over every positive e4m3fn candidate
// (fake-quantized here with the reference encoder, encode_f32_ref, not the SIMD one the search uses), never
// does worse than the amax rule on any block, and apply_scheme / the Error view use the scale it finds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "format/encode_simd.h"
#include "quant/error_view.h"
#include "quant/reduce_simd.h"
#include "quant/scheme.h"
#include "test_rng.h"

namespace {

double sqError(const qs::Format& f, const float* x, std::size_t n, float scale) {
  std::vector<float> y(n);
  qs::EncodeJob job;
  job.x = x;
  job.n = n;
  job.scale = scale;
  job.values = y.data();
  qs::encode_f32_ref(f, {}, job);
  double se = 0;
  for (std::size_t i = 0; i < n; ++i) se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return se;
}

float bruteForce(const qs::Scheme& s, const float* x, std::size_t n, float ts) {
  double best = INFINITY;
  float best_s = 0;
  for (double v : qs::distinct_values(*s.scale_format)) {
    if (!(v > 0) || !std::isfinite(v)) continue;  // distinct_values is ascending
    const float sc = float(v) * ts;
    if (!qs::scale_is_usable(sc)) continue;
    const double se = sqError(s.format, x, n, sc);
    if (se < best) best = se, best_s = sc;
  }
  return best_s;
}

}  // namespace

TEST(ScaleSearch, EqualsBruteForce) {
  const qs::Scheme s = qs::parse_scheme("e2m1fn/block:16:e4m3fn:mse");
  ASSERT_TRUE(s.mse);
  EXPECT_EQ(s.text, "e2m1fn/block:16:e4m3fn:mse");
  const auto cands = qs::search_candidates(s);
  EXPECT_EQ(cands.size(), 126u);  // e4m3fn's positive finite values
  Rng r = Rng::from_tag("search");
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<float> x(16);
    const double sigma = std::ldexp(1.0, int(r.unit() * 40) - 20);
    for (float& v : x) v = float((trial % 3 == 0 ? r.laplace() : trial % 3 == 1 ? r.normal() : r.unit() - 0.5) * sigma);
    if (trial % 7 == 0) x[3] = float(50 * sigma);  // an outlier: clipping it may beat resolving the rest
    if (trial % 11 == 0) for (int i = 1; i < 16; i += 2) x[std::size_t(i)] = 0;
    const float ts = trial % 5 == 0 ? 1.0f : float(std::ldexp(1.0, int(r.unit() * 20) - 16));
    SCOPED_TRACE(trial);
    const float got = qs::search_block_scale(s, cands, x.data(), 16, ts);
    const float want = bruteForce(s, x.data(), 16, ts);
    EXPECT_EQ(got, want);
  }
}

// Per block, the searched scale's squared error is at most the amax rule's (its scale is a candidate), so the
// tensor's SQNR is at least the amax rule's; and apply_scheme's values are the fake-quantization with the
// searched scale, block by block.
TEST(ScaleSearch, NeverWorseAndApplied) {
  Rng r = Rng::from_tag("tensor");
  const std::size_t rows = 64, cols = 256;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = float(r.laplace() * 0.02);
  for (std::size_t i = 0; i < x.size(); i += 997) x[i] *= 40;
  const qs::Scheme mse = qs::parse_scheme("e2m1fn/block:16:e4m3fn:mse");
  const qs::Scheme amax = qs::parse_scheme("e2m1fn/block:16:e4m3fn");
  std::vector<float> ym(x.size()), ya(x.size());
  qs::ErrorMetrics mm, ma;
  const qs::SchemeOutput om = qs::apply_scheme(mse, x.data(), {int64_t(rows), int64_t(cols)}, ym.data(), 2, {}, &mm);
  const qs::SchemeOutput oa = qs::apply_scheme(amax, x.data(), {int64_t(rows), int64_t(cols)}, ya.data(), 2, {}, &ma);
  EXPECT_EQ(om.tensor_scale, oa.tensor_scale);  // the same fp32 tensor scale; only the block scales differ
  const auto cands = qs::search_candidates(mse);
  std::size_t better = 0;
  for (std::size_t b = 0; b < x.size(); b += 16) {
    double sem = 0, sea = 0;
    for (std::size_t i = b; i < b + 16; ++i) sem += (x[i] - double(ym[i])) * (x[i] - double(ym[i])), sea += (x[i] - double(ya[i])) * (x[i] - double(ya[i]));
    ASSERT_LE(sem, sea) << "block " << b / 16;
    better += sem < sea ? 1 : 0;
    const float sc = qs::search_block_scale(mse, cands, x.data() + b, 16, om.tensor_scale);
    std::vector<float> want(16);
    qs::EncodeJob job;
    job.x = x.data() + b;
    job.n = 16;
    job.scale = sc;
    job.values = want.data();
    qs::encode_f32_ref(mse.format, {}, job);
    for (std::size_t i = 0; i < 16; ++i) ASSERT_EQ(ym[b + i], want[i]) << "block " << b / 16 << " element " << i;
  }
  EXPECT_GT(better, 0u);  // on this data the search does win somewhere
  EXPECT_GE(mm.sqnr_db(), ma.sqnr_db());
  const qs::ErrorView v = qs::compute_error_view(mse, x.data(), {int64_t(rows), int64_t(cols)});
  EXPECT_EQ(v.clipped, v.metrics.clipped);
  EXPECT_EQ(v.metrics.sum_e2, mm.sum_e2);
}

TEST(ScaleSearch, SpellingRefusedElsewhere) {
  for (const char* bad : {"e2m1fn/block:32:e8m0fnu:mse", "int4/block:32:bf16:mse", "e2m1fn/block:16:mse", "uint4/block:16:e4m3fn:mse"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(qs::parse_scheme(bad), qs::FormatError);
  }
}

// The pruned search (candidates skipped by lower bounds on their error, scheme.cpp's argument) returns the
// exhaustive loop's scale on every block: random blocks of several lengths and element formats, tensor scales
// that make candidates underflow or overflow, and blocks built for ties (values on the grid of several
// candidates, so that more than one reaches the same error, often 0), one outlier, one nonzero value, zeros,
// subnormal and huge values, non-finite values, ieee overflow. Also checked: the error of the chosen scale
// equals the least error over all candidates (the brute force's), so the exhaustive loop itself is not lost.
TEST(ScaleSearch, PrunedEqualsExhaustive) {
  Rng r = Rng::from_tag("pruned");
  std::size_t diffs = 0, blocks = 0, parsed = 0;
  for (const char* spec : {"e2m1fn/block:16:e4m3fn:mse", "e2m1fn/block:32:e4m3fn:mse", "e2m3fn/block:16:e4m3fn:mse",
                           "e4m3fn/block:16:e5m2:mse", "e5m2/block:16:e4m3fn:mse", "int4/block:16:e4m3fn:mse",
                           "e3m2fn/block:16:e3m4:mse"}) {
    qs::Scheme s;
    try {
      s = qs::parse_scheme(spec);
    } catch (const qs::FormatError&) {
      continue;  // a spelling the parser refuses: nothing to compare
    }
    ++parsed;
    for (int ovf = 0; ovf < 2; ++ovf) {
      s.options.overflow = ovf ? qs::Overflow::Ieee : qs::Overflow::Saturate;
      const auto cands = qs::search_candidates(s);
      for (int trial = 0; trial < 700; ++trial) {
        const std::size_t n = trial % 9 == 0 ? std::size_t(1 + r.next() % 100) : std::size_t(s.block);
        std::vector<float> x(n);
        const double sigma = std::ldexp(1.0, int(r.unit() * 60) - 30);
        const int kind = trial % 12;
        for (float& v : x) v = float((trial % 3 == 0 ? r.laplace() : trial % 3 == 1 ? r.normal() : r.unit() - 0.5) * sigma);
        // A grid point of a random candidate: element values times that scale (ties between candidates whose
        // grids share points).
        const float grid_sc = float(cands[r.next() % cands.size()]);
        switch (kind) {
          case 1: for (float& v : x) v = float(int(r.unit() * 13) - 6) * 0.5f * grid_sc; break;
          case 2: for (float& v : x) v = (r.next() & 1 ? 1.0f : -1.0f) * grid_sc * (r.next() & 1 ? 4.0f : 6.0f); break;
          case 3: x[r.next() % n] = float(80 * sigma); break;  // one outlier
          case 4: for (float& v : x) v = 0.0f; x[r.next() % n] = float(sigma); break;
          case 5: for (float& v : x) v = 0.0f; break;
          case 6: for (float& v : x) v = float(r.normal() * 1e-41); break;  // subnormal
          case 7: for (float& v : x) v = float(r.normal() * 1e37); break;
          case 8: x[r.next() % n] = std::numeric_limits<float>::quiet_NaN(); break;
          case 9: x[r.next() % n] = std::numeric_limits<float>::infinity(); break;
          case 10: for (float& v : x) v = float(sigma); break;  // constant
          default: break;
        }
        const float ts = trial % 5 == 0 ? 1.0f
                         : trial % 5 == 1 ? float(std::ldexp(1.0, int(r.unit() * 240) - 120))
                                          : float(std::ldexp(r.uniform(1, 2), int(r.unit() * 24) - 12));
        const float want = qs::search_block_scale_exhaustive(s, cands, x.data(), n, ts);
        // The bounds' kernel runs at the encoder's level, and so does the search itself: generic takes the
        // baseline-compiled copy, avx2 and avx512 the AVX2-compiled one (scale_search_impl.h; a bound 1 %
        // too high in that copy alone fails here at those levels only).
        for (qs::SimdLevel level : qs::available_simd_levels()) {
          const qs::BlockEncoder enc(s.format, qs::search_options(s), level);
          const float got = qs::search_block_scale(s, cands, x.data(), n, ts, &enc);
          ++blocks;
          if (std::memcmp(&got, &want, 4) != 0) {
            ++diffs;
            ADD_FAILURE() << spec << " overflow " << ovf << " trial " << trial << " n " << n << " level "
                          << qs::to_string(level) << ": pruned " << got << " exhaustive " << want;
          }
        }
      }
    }
  }
  EXPECT_EQ(diffs, 0u);
  EXPECT_GE(parsed, 5u);
  EXPECT_EQ(blocks, parsed * 2 * 700 * qs::available_simd_levels().size());
}

// The two candidates of least error a hair apart: blocks whose error under one candidate is within a few ulps of
// the error under the next (a value moved until the two errors cross), so the bounds cannot separate them and
// the search must fall back to exact errors; and blocks of one candidate's grid points (error 0 ties).
TEST(ScaleSearch, NearTiesEqualExhaustive) {
  Rng r = Rng::from_tag("near-ties");
  const qs::Scheme s = qs::parse_scheme("e2m1fn/block:16:e4m3fn:mse");
  const auto cands = qs::search_candidates(s);
  std::size_t diffs = 0, blocks = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<float> x(16);
    for (float& v : x) v = float(r.normal());
    const float ts = float(std::ldexp(r.uniform(1, 2), int(r.unit() * 8) - 10));
    // Move x[0] by bisection until the exhaustive choice flips between two neighbouring winners.
    float lo = x[0], hi = x[0] * 3 + 1;
    const float w_lo = qs::search_block_scale_exhaustive(s, cands, x.data(), 16, ts);
    x[0] = hi;
    const float w_hi = qs::search_block_scale_exhaustive(s, cands, x.data(), 16, ts);
    for (int it = 0; it < 40 && w_lo != w_hi; ++it) {
      x[0] = lo + (hi - lo) / 2;
      if (x[0] == lo || x[0] == hi) break;
      (qs::search_block_scale_exhaustive(s, cands, x.data(), 16, ts) == w_lo ? lo : hi) = x[0];
    }
    for (float v0 : {lo, hi}) {
      x[0] = v0;
      const float want = qs::search_block_scale_exhaustive(s, cands, x.data(), 16, ts);
      for (qs::SimdLevel level : qs::available_simd_levels()) {
        const qs::BlockEncoder enc(s.format, qs::search_options(s), level);
        const float got = qs::search_block_scale(s, cands, x.data(), 16, ts, &enc);
        ++blocks;
        if (std::memcmp(&got, &want, 4) != 0) {
          ++diffs;
          ADD_FAILURE() << "trial " << trial << " level " << qs::to_string(level) << ": pruned " << got
                        << " exhaustive " << want;
        }
      }
    }
  }
  EXPECT_EQ(diffs, 0u);
  EXPECT_EQ(blocks, 800 * qs::available_simd_levels().size());
}

// grid_dist2_f32 (the bounds' kernel): the formats it accepts have exactly the grid it assumes (their distinct
// values), and at every level its sums are the squared distances to the nearest value of the format (found by
// search in distinct_values), within the float rounding the bounds allow for.
TEST(ScaleSearch, GridDistanceKernel) {
  Rng r = Rng::from_tag("grid-dist");
  std::size_t accepted = 0;
  for (const char* spec : {"e2m1fn", "e2m3fn", "e3m2fn", "e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz",
                           "e4m3", "e3m4", "fp16", "bf16", "e8m0fnu", "int4", "int8", "uint8"}) {
    const qs::Format f = qs::parse_format(spec);
    qs::GridDistParams g;
    if (!qs::grid_dist_params(f, g)) continue;
    ++accepted;
    std::vector<double> grid;  // nonnegative finite values, ascending
    for (double v : qs::distinct_values(f))
      if (v >= 0 && std::isfinite(v)) grid.push_back(v);
    // The assumed grid: 0, then steps of 2^(emin - M) below 2^emin and 2^(e - M) in binade e, up to max.
    std::vector<double> built{0.0};
    while (built.back() < f.max_finite) {
      const double v = built.back();
      built.push_back(v + (v < f.min_normal ? f.min_subnormal : std::ldexp(1.0, std::ilogb(v) - f.mbits)));
    }
    EXPECT_EQ(built, grid) << spec;
    auto dist = [&](double t) {
      const auto it = std::lower_bound(grid.begin(), grid.end(), t);
      double d = it == grid.end() ? t - grid.back() : *it - t;
      if (it != grid.begin()) d = std::min(d, t - *(it - 1));
      return d;
    };
    for (int trial = 0; trial < 60; ++trial) {
      const std::size_t n = 1 + r.next() % 40, m = 1 + r.next() % 16;
      std::vector<float> a(n), sc(16, 1.0f);
      for (float& v : a) v = float(std::fabs(r.normal()) * std::ldexp(1.0, int(r.unit() * 16) - 8));
      if (trial % 4 == 1) a[0] = 0;
      for (std::size_t j = 0; j < m; ++j) {
        sc[j] = float(std::ldexp(r.uniform(1, 2), int(r.unit() * 20) - 10) / f.max_finite);
        if (trial % 4 == 2 && j == 0) a[r.next() % n] = float(grid[r.next() % grid.size()] * sc[j]);  // on the grid
      }
      for (qs::SimdLevel level : qs::available_simd_levels()) {
        std::vector<float> out(16);
        qs::grid_dist2_f32(a.data(), n, sc.data(), m, g, out.data(), level);
        for (std::size_t j = 0; j < m; ++j) {
          double want = 0, tsum = 0;
          for (float v : a) {
            const double t = double(v) / double(sc[j]);
            want += dist(t) * dist(t);
            tsum += t * t;
          }
          // |d_i - dist(t_i)| <= 2^-21 t_i (the product's and the subtraction's roundings), sums within n 2^-23.
          const double tol = 0x1p-19 * std::sqrt(want * tsum) + 0x1p-38 * tsum + double(n) * 0x1p-22 * want;
          EXPECT_NEAR(double(out[j]), want, tol) << spec << " level " << qs::to_string(level) << " trial " << trial;
        }
      }
    }
  }
  EXPECT_GE(accepted, 9u);  // the 4-, 6- and 8-bit floats with subnormals, fp16
}

// BlockScaleSearch::scales, the batched search apply_scheme calls (a lane per block, the blocks it cannot settle
// in one pass left to the single-block search): every block's scale equals the exhaustive loop's, at every level,
// on runs of blocks whose neighbours differ in kind (so a vector pass mixes settled, re-searched and empty blocks):
// random blocks, values on a candidate's grid (ties), one outlier, one nonzero value, zeros, constants, subnormal
// and 1e37 values, NaN, inf, a candidate's grid with one value past it, blocks at the top of the scale format's range (a tensor scale from the tensor's amax,
// as the two-level rule makes it: the window ends at the last candidate), tensor scales from 2^-120 to 2^120,
// block lengths 1-42 (the vector pass takes lengths of a multiple of its lane count up to 40) and counts that
// leave a remainder.
TEST(ScaleSearch, BatchedEqualsExhaustive) {
  Rng r = Rng::from_tag("batched");
  std::size_t diffs = 0, blocks = 0, parsed = 0;
  for (const char* spec : {"e2m1fn/block:16:e4m3fn:mse", "e2m1fn/block:32:e4m3fn:mse", "e2m3fn/block:16:e4m3fn:mse",
                           "e4m3fn/block:16:e5m2:mse", "e3m2fn/block:16:e3m4:mse", "int4/block:16:e4m3fn:mse"}) {
    qs::Scheme s;
    try {
      s = qs::parse_scheme(spec);
    } catch (const qs::FormatError&) {
      continue;
    }
    ++parsed;
    for (int ovf = 0; ovf < 2; ++ovf) {
      s.options.overflow = ovf ? qs::Overflow::Ieee : qs::Overflow::Saturate;
      const auto cands = qs::search_candidates(s);
      for (int trial = 0; trial < 120; ++trial) {
        static constexpr std::size_t kLengths[] = {16, 32, 8, 24, 40, 1, 5, 13, 42};
        const std::size_t n = trial % 3 == 0 ? kLengths[r.next() % 9] : std::size_t(s.block);
        const std::size_t count = 1 + r.next() % 41;
        std::vector<float> x(n * count);
        const double sigma = std::ldexp(1.0, int(r.unit() * 60) - 30);
        for (std::size_t b = 0; b < count; ++b) {
          float* xb = x.data() + b * n;
          for (std::size_t i = 0; i < n; ++i) xb[i] = float((trial % 2 ? r.normal() : r.laplace()) * sigma);
          const float grid_sc = float(cands[r.next() % cands.size()]);
          switch (r.next() % 16) {
            case 1: for (std::size_t i = 0; i < n; ++i) xb[i] = float(int(r.unit() * 13) - 6) * 0.5f * grid_sc; break;
            case 2: for (std::size_t i = 0; i < n; ++i) xb[i] = float(r.sign()) * grid_sc * (r.next() & 1 ? 4.0f : 6.0f); break;
            case 3: xb[r.next() % n] = float(80 * sigma); break;
            case 4: for (std::size_t i = 0; i < n; ++i) xb[i] = 0.0f; xb[r.next() % n] = float(sigma); break;
            case 5: for (std::size_t i = 0; i < n; ++i) xb[i] = 0.0f; break;
            case 6: for (std::size_t i = 0; i < n; ++i) xb[i] = float(r.normal() * 1e-41); break;
            case 7: for (std::size_t i = 0; i < n; ++i) xb[i] = float(r.normal() * 1e37); break;
            case 8: xb[r.next() % n] = std::numeric_limits<float>::quiet_NaN(); break;
            case 9: xb[r.next() % n] = float(r.sign()) * std::numeric_limits<float>::infinity(); break;
            case 10: for (std::size_t i = 0; i < n; ++i) xb[i] = float(sigma); break;
            case 11: for (std::size_t i = 0; i < n; ++i) xb[i] *= 1e-3f; break;  // a quiet block among loud ones
            case 12:  // on a candidate's grid but for one value past its largest: the least error may clip it (the
                      // winner below the start's window, found by the walk downwards)
              for (std::size_t i = 0; i < n; ++i) xb[i] = float(int(r.unit() * 13) - 6) * 0.5f * grid_sc;
              xb[r.next() % n] = float(r.sign() * r.uniform(6.5, 15)) * grid_sc;
              break;
            case 13:  // the same with the values at 4 and 6: clipping the one past them by 25-60 % may win
              for (std::size_t i = 0; i < n; ++i) xb[i] = float(r.sign()) * grid_sc * (r.next() & 1 ? 4.0f : 6.0f);
              xb[r.next() % n] = float(r.sign() * 6 * r.uniform(1.25, 1.6)) * grid_sc;
              break;
            default: break;
          }
        }
        float ts;
        if (trial % 4 == 0) {
          ts = 1.0f;
        } else if (trial % 4 == 1) {
          ts = float(std::ldexp(1.0, int(r.unit() * 240) - 120));
        } else if (trial % 4 == 2) {
          ts = float(std::ldexp(r.uniform(1, 2), int(r.unit() * 24) - 12));
        } else {  // the two-level rule's tensor scale: the loudest block's window ends at the last candidate
          double amax = 0;
          for (float v : x)
            if (std::isfinite(v)) amax = std::max(amax, double(std::fabs(v)));
          ts = qs::two_level_tensor_scale(qs::scale_rule_params(s), amax);
        }
        std::vector<float> want(count);
        for (std::size_t b = 0; b < count; ++b)
          want[b] = qs::search_block_scale_exhaustive(s, cands, x.data() + b * n, n, ts);
        for (qs::SimdLevel level : qs::available_simd_levels()) {
          const qs::BlockEncoder enc(s.format, qs::search_options(s), level);
          const qs::BlockScaleSearch search(s, cands, ts, &enc);
          for (bool fma : {true, false}) {  // the AVX2 copy with FMA (where the CPU has it) and without
            std::vector<float> got(count, -1.0f);
            search.scales(x.data(), n, count, got.data(), fma);
            for (std::size_t b = 0; b < count; ++b) {
              ++blocks;
              if (std::memcmp(&got[b], &want[b], 4) != 0) {
                ++diffs;
                ADD_FAILURE() << spec << " overflow " << ovf << " trial " << trial << " n " << n << " block " << b
                              << " of " << count << " level " << qs::to_string(level) << " fma " << fma
                              << ": batched " << got[b] << " exhaustive " << want[b];
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(diffs, 0u);
  EXPECT_GE(parsed, 5u);
  EXPECT_GT(blocks, 0u);
}
