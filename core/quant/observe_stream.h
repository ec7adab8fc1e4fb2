// Observers watched over a stream of batches (issue "block-scale rules and observer dynamics"): each batch is
// fed to every observer, quantized symmetrically with the scale that observer would use for it, and its
// error and clipping recorded, so one sees how fast each observer follows drift and what a spike costs.
// Used by `quantscope-cli observe` and the GUI's Observers view. Exercise: tests/core/tst_observe_stream.cpp.
//
//   auto specs = qs::parse_observer_specs("minmax,movavg:0.01,p99.99,mse,delayed:16:max:0");
//   qs::ObserveStream st(qs::parse_format("e4m3fn"), specs);
//   for (auto& b : batches) for (const qs::ObserveRow& r : st.step(b.data(), b.size())) ...;
//
// The timing of each observer's scale follows the library that defines it:
//   minmax, movavg:<c>, p<pct>, mse   PyTorch's fake-quant modules: the batch is observed first, then quantized
//                                     with the updated range (s = amax / max_finite);
//   delayed:<len>:<max|recent>:<m>    Transformer Engine: the batch is quantized with the scale from the amax
//                                     history of the batches before it (s = amax_h * 2^m / max_finite; the first
//                                     batch, with an empty history, uses its own amax), then its amax is pushed.
//   current                           the batch's own amax (what current scaling does; the reference).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/format.h"
#include "quant/observer.h"
#include "quant/synthetic.h"

namespace qs {

struct ObserverSpec {
  enum class Kind { Current, MinMax, MovingAverage, Percentile, Mse, Delayed } kind = Kind::Current;
  std::string text;        // canonical spelling, the CSV's observer column
  double param = 0;        // averaging constant c; percentile
  int history = 16, margin = 0;
  bool most_recent = false;
};

// "minmax,movavg:0.01,p99.99,mse,delayed:16:max:0,current" (comma separated); throws FormatError naming the
// spec that is wrong.
std::vector<ObserverSpec> parse_observer_specs(std::string_view text);

struct ObserveRow {
  std::size_t batch = 0;
  const ObserverSpec* observer = nullptr;
  double batch_amax = 0;   // max |x| of the batch (finite x)
  double clip = 0;         // the observer's clipping magnitude used for this batch
  float scale = 1.0f;      // clip / max_finite (amax_scale)
  double sqnr_db = 0;      // of the batch quantized with `scale`
  uint64_t clipped = 0;    // elements beyond the clip bound
};

class ObserveStream {
 public:
  ObserveStream(Format format, std::vector<ObserverSpec> specs);
  // One batch through every observer: one row per observer, in spec order.
  std::vector<ObserveRow> step(const float* x, std::size_t n);
  const std::vector<ObserverSpec>& specs() const { return specs_; }

 private:
  Format f_;
  std::vector<ObserverSpec> specs_;
  std::vector<std::unique_ptr<Observer>> obs_;      // null for Current and Delayed
  std::vector<std::unique_ptr<DelayedScaling>> delayed_;
  std::size_t batch_ = 0;
};

// A synthetic stream of batches: batch b is `dist` with scale (1 + drift)^b (seed `seed` * 1000003 + b),
// multiplied by `spike_scale` when b is one of `spikes`. What `quantscope-cli observe` and the GUI's
// Observers tab stream when no file is given; both make the same batches.
struct SyntheticStream {
  Distribution dist = Distribution::Normal;
  std::size_t batch_size = 4096;
  double drift = 0;                 // 0.01: the scale grows by 1 % per batch
  std::vector<uint64_t> spikes;     // batch indices
  double spike_scale = 20;
  uint64_t seed = 1;
};
std::vector<float> synthetic_batch(const SyntheticStream& s, uint64_t b);
// "20,45" -> {20, 45}; "" -> {}; throws FormatError naming the item that is not a batch index.
std::vector<uint64_t> parse_batch_list(std::string_view text);

}  // namespace qs
