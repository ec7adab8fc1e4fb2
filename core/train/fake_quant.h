// Fake quantization for training: a scheme of core/quant/scheme.h applied to a rows x cols matrix (weights
// out x in, activations batch x features) with the element codes and a "clipped" mask kept for the
// straight-through estimator, and current or delayed (amax history) scaling. Values equal apply_scheme's
// for nearest rounding (tests/tst_fakequant.cpp checks every granularity); stochastic rounding draws
// stochastic_bits(seed, flat index) except for per-column scales (axis 1), which draw by column-major index.
//
//   qs::FakeQuant fq(qs::parse_scheme("e4m3fn/tensor"), qs::ScalingMode::Delayed);
//   qs::FakeQuantResult r = fq.apply(W, out, in, Wq, codes, clipped, step_seed);
//   qs::ste_backward(dWq, clipped, out * in, dW);   // gradient passes unchanged except where clipped
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "format/format.h"
#include "quant/observer.h"
#include "quant/scheme.h"

namespace qs {

class ShardPool;

enum class ScalingMode { Current, Delayed };
const char* to_string(ScalingMode m);          // "current", "delayed"
ScalingMode parse_scaling_mode(std::string_view s);  // throws FormatError

struct FakeQuantResult {
  EncodeStats stats;       // overflow / underflow / NaN of this call
  double amax = 0;         // max |x| over finite x (the whole matrix)
  float scale = 0;         // the scale used for /tensor schemes (current or delayed); 0 for per-group schemes
  uint64_t clipped = 0;    // elements whose |x / scale| reaches the format's overflow threshold (clipped,
                           // not just rounded down to the largest value)
};

class FakeQuant {
 public:
  // Delayed scaling needs a /tensor scheme of a signed format: s = history amax * 2^margin / max finite,
  // where the history holds the amax of the last `history` calls (the first call uses its own amax).
  // Throws FormatError otherwise.
  explicit FakeQuant(Scheme scheme, ScalingMode mode = ScalingMode::Current, int history = 16, int margin = 0);

  const Scheme& scheme() const { return scheme_; }
  ScalingMode mode() const { return mode_; }
  // Codes exist for every format except the unsigned integer (affine) ones, whose zero point is per call.
  bool has_codes() const { return !affine_; }

  // y = fake-quant(x); x and y are rows x cols row-major and may not alias. Optional outputs: codes (rows x
  // cols codes of the scheme's format), clipped (1 where |x / s| reached the overflow threshold of the format
  // with its group's scale s, else 0; zeros for affine formats). `seed` keys stochastic rounding together
  // with the scheme's own seed (vary it per step). `record` pushes this call's amax into the delayed-scaling
  // history (evaluation passes use false). `pool` splits the rows into 2 fixed shards.
  FakeQuantResult apply(const float* x, std::size_t rows, std::size_t cols, float* y, uint16_t* codes = nullptr,
                        uint8_t* clipped = nullptr, uint64_t seed = 0, bool record = true, ShardPool* pool = nullptr);

  // The scale a /tensor scheme would use now for data of this amax (current: amax_scale; delayed: the history's).
  float tensor_scale(double amax) const;
  const DelayedScaling& history() const { return delayed_; }

 private:
  Scheme scheme_;
  ScalingMode mode_;
  DelayedScaling delayed_;
  bool affine_ = false;
};

// Straight-through estimator: dx = dy, or 0 where clipped[i] != 0 (clipped may be null: all pass).
void ste_backward(const float* dy, const uint8_t* clipped, std::size_t n, float* dx);

}  // namespace qs
