// The counter-based generator of stochastic rounding (core/format/rng.h): a pure function of
// (seed, index) whose every input bit matters, and whose output passes uniformity, per-bit frequency,
// avalanche and serial-correlation checks with bounds taken from the null distributions.
// Run: ctest --test-dir build -R tst_rng (GoogleTest; the same rows as the former Qt Test suite).
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "format/rng.h"

namespace {

// Statistical checks accept |observed - expected| < kSigmas standard deviations of the statistic
// under the hypothesis of independent uniform bits (a false alarm once in ~3.5 million checks).
constexpr double kSigmas = 5.0;
// The chi-square check uses a wider band: its 255-dof distribution is skewed (right tail heavier
// than a normal's), so 6 sd keeps the false-alarm rate comparable.
constexpr double kChiSigmas = 6.0;
constexpr std::size_t kSamples = std::size_t(1) << 20;  // 1M draws per statistical row
constexpr std::size_t kAvalancheSamples = 4096;         // inputs per flipped bit

constexpr uint64_t kTwo32 = uint64_t(1) << 32;

// Inputs of the statistical rows: seeds with and without high bits, ranges at 0 and across 2^32.
struct Stream {
  const char* name;
  uint64_t seed;
  uint64_t index0;
};
constexpr Stream kStreams[] = {
    {"seed=0/index0=0", 0, 0},
    {"seed=1/index0=0", 1, 0},
    {"seed=0xdeadbeefcafebabe/index0=0", 0xdeadbeefcafebabeULL, 0},
    {"seed=2^32/index0=2^32-2^19", kTwo32, kTwo32 - (uint64_t(1) << 19)},
    {"seed=12345/index0=2^63", 12345, uint64_t(1) << 63},
};

double unit(uint32_t r) { return (double(r) + 0.5) * 0x1p-32; }  // uniform in (0, 1)

// Pearson correlation of the pairs (a[i], b[i]).
double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = double(a.size());
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

// Mean Hamming distance between f(i) and g(i) over kAvalancheSamples inputs i, compared with the
// 16 of unrelated 32-bit numbers: the per-pair distance is Binomial(32, 1/2) (variance 8).
template <typename F, typename G>
void expectAvalanche(F f, G g, const std::string& what) {
  double sum = 0;
  for (std::size_t i = 0; i < kAvalancheSamples; ++i) sum += std::popcount(f(i) ^ g(i));
  const double mean = sum / kAvalancheSamples;
  const double tol = kSigmas * std::sqrt(8.0 / kAvalancheSamples);
  EXPECT_LT(std::fabs(mean - 16.0), tol) << what << ": mean Hamming distance " << mean << ", expected 16 +- " << tol;
}

}  // namespace

// Same (seed, index), same number, in whatever order and however often it is asked for.
TEST(Rng, Pure) {
  for (const Stream& s : kStreams) {
    SCOPED_TRACE(s.name);
    constexpr std::size_t n = 4096;
    std::vector<uint32_t> forward(n), backward(n);
    for (std::size_t i = 0; i < n; ++i) forward[i] = qs::stochastic_bits(s.seed, s.index0 + i);
    // Interleave calls for other inputs so that no hidden state could line up by accident.
    for (std::size_t k = n; k-- > 0;) {
      (void)qs::stochastic_bits(s.seed + k, ~s.index0 - k);
      backward[k] = qs::stochastic_bits(s.seed, s.index0 + k);
    }
    EXPECT_TRUE(forward == backward);
    for (std::size_t i = 0; i < n; i += 97) EXPECT_EQ(qs::stochastic_bits(s.seed, s.index0 + i), forward[i]);
  }
}

// Adjacent elements of a tensor get different numbers (two equal neighbours would occur by chance
// with probability 2^-32 per pair: about 1e-6 over these 4096 pairs).
TEST(Rng, NeighbouringIndicesDiffer) {
  for (const Stream& s : kStreams) {
    SCOPED_TRACE(s.name);
    for (uint64_t i = s.index0; i < s.index0 + 4096; ++i)
      ASSERT_NE(qs::stochastic_bits(s.seed, i), qs::stochastic_bits(s.seed, i + 1)) << "index " << i << " and " << i + 1;
    // Unrelated, not merely different: the bits that change between neighbours look random.
    expectAvalanche([&](std::size_t i) { return qs::stochastic_bits(s.seed, s.index0 + i); },
                    [&](std::size_t i) { return qs::stochastic_bits(s.seed, s.index0 + i + 1); }, "index i vs i + 1");
  }
}

TEST(Rng, NeighbouringSeedsDiffer) {
  for (const Stream& s : kStreams) {
    SCOPED_TRACE(s.name);
    for (uint64_t i = s.index0; i < s.index0 + 4096; ++i)
      ASSERT_NE(qs::stochastic_bits(s.seed, i), qs::stochastic_bits(s.seed + 1, i)) << "index " << i;
    expectAvalanche([&](std::size_t i) { return qs::stochastic_bits(s.seed, s.index0 + i); },
                    [&](std::size_t i) { return qs::stochastic_bits(s.seed + 1, s.index0 + i); }, "seed s vs s + 1");
  }
}

// Flipping any one of the 64 index bits (the high 32 included: tensors beyond 2^32 elements) changes
// about half of the output bits. Inputs: seed 0x0123456789abcdef, indices i * 0x9e3779b97f4a7c15.
TEST(Rng, EveryIndexBitMatters) {
  const uint64_t seed = 0x0123456789abcdefULL;
  auto index = [](std::size_t i) { return uint64_t(i) * 0x9e3779b97f4a7c15ULL; };
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t flip = uint64_t(1) << bit;
    expectAvalanche([&](std::size_t i) { return qs::stochastic_bits(seed, index(i)); },
                    [&](std::size_t i) { return qs::stochastic_bits(seed, index(i) ^ flip); },
                    "index bit " + std::to_string(bit) + " flipped");
  }
}

// Flipping any one of the 64 seed bits changes about half of the output bits. Inputs: seeds
// i * 0xd1b54a32d192ed03, index 1000 + i.
TEST(Rng, EverySeedBitMatters) {
  auto seed = [](std::size_t i) { return uint64_t(i) * 0xd1b54a32d192ed03ULL; };
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t flip = uint64_t(1) << bit;
    expectAvalanche([&](std::size_t i) { return qs::stochastic_bits(seed(i), 1000 + i); },
                    [&](std::size_t i) { return qs::stochastic_bits(seed(i) ^ flip, 1000 + i); },
                    "seed bit " + std::to_string(bit) + " flipped");
  }
}

// Pearson's chi-square over the 256 values of one byte (the top and the low byte) of kSamples
// consecutive draws: under uniformity it follows chi2(255), mean 255 and standard deviation sqrt(2 * 255).
TEST(Rng, ChiSquareByte) {
  for (const Stream& s : kStreams)
    for (int shift : {24, 0}) {
      SCOPED_TRACE(std::string(s.name) + (shift == 24 ? "/top-byte" : "/low-byte"));
      std::array<uint64_t, 256> bins{};
      for (std::size_t i = 0; i < kSamples; ++i) ++bins[(qs::stochastic_bits(s.seed, s.index0 + i) >> shift) & 0xffu];
      const double expected = double(kSamples) / 256;
      double chi2 = 0;
      for (uint64_t b : bins) chi2 += (double(b) - expected) * (double(b) - expected) / expected;
      const double dof = 255, sd = std::sqrt(2 * dof);
      EXPECT_LT(std::fabs(chi2 - dof), kChiSigmas * sd) << "chi2 = " << chi2;
    }
}

// Each of the 32 bits is set in half of the draws: the count is Binomial(N, 1/2), sd sqrt(N) / 2.
TEST(Rng, BitFrequencies) {
  for (const Stream& s : kStreams) {
    SCOPED_TRACE(s.name);
    std::array<uint64_t, 32> ones{};
    for (std::size_t i = 0; i < kSamples; ++i) {
      const uint32_t r = qs::stochastic_bits(s.seed, s.index0 + i);
      for (int b = 0; b < 32; ++b) ones[std::size_t(b)] += (r >> b) & 1u;
    }
    const double tol = kSigmas * 0.5 / std::sqrt(double(kSamples));
    for (int b = 0; b < 32; ++b) {
      const double freq = double(ones[std::size_t(b)]) / double(kSamples);
      EXPECT_LT(std::fabs(freq - 0.5), tol) << "bit " << b << " set in " << freq << " of draws";
    }
  }
}

// Correlation of the draws of consecutive indices (lag 1, and lag 16: one AVX-512 vector apart):
// for independent draws the sample correlation has sd ~ 1 / sqrt(N).
TEST(Rng, SerialCorrelation) {
  for (const Stream& s : kStreams) {
    SCOPED_TRACE(s.name);
    std::vector<double> u(kSamples + 16);
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = unit(qs::stochastic_bits(s.seed, s.index0 + i));
    const double tol = kSigmas / std::sqrt(double(kSamples));
    for (std::size_t lag : {std::size_t(1), std::size_t(16)}) {
      const std::vector<double> a(u.begin(), u.begin() + std::ptrdiff_t(kSamples));
      const std::vector<double> b(u.begin() + std::ptrdiff_t(lag), u.begin() + std::ptrdiff_t(lag + kSamples));
      const double r = correlation(a, b);
      EXPECT_LT(std::fabs(r), tol) << "lag " << lag << ": correlation " << r;
    }
  }
}

// Elements 2^32 apart share the low index half and differ only in the high one (the per-block key):
// their draws are uncorrelated, and so are those of seeds s and s + 1.
TEST(Rng, CorrelationAcrossIndexHalves) {
  const uint64_t seed = 7;
  std::vector<double> a(kSamples), b(kSamples), c(kSamples);
  for (std::size_t i = 0; i < kSamples; ++i) {
    a[i] = unit(qs::stochastic_bits(seed, i));
    b[i] = unit(qs::stochastic_bits(seed, i + kTwo32));
    c[i] = unit(qs::stochastic_bits(seed + 1, i));
  }
  const double tol = kSigmas / std::sqrt(double(kSamples));
  EXPECT_LT(std::fabs(correlation(a, b)), tol) << "index i vs i + 2^32";
  EXPECT_LT(std::fabs(correlation(a, c)), tol) << "seed 7 vs 8";
}
