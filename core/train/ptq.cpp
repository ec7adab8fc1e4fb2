// PTQ: the float32 forward pass (train_gemm, one thread per config), the int8 one (QuantizedLinear per layer,
// ReLU in float between), accuracy over the test set, median latency and weight memory.
#include "train/ptq.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "gemm/quantized_linear.h"
#include "train/train_gemm.h"

namespace qs {

namespace {

using Forward = std::function<void(const float* x, std::size_t rows, float* logits)>;

void relu(std::vector<float>& v) {
  for (float& x : v) x = x > 0.0f ? x : 0.0f;
}

double accuracy(const Forward& fwd, const Dataset& test, std::size_t chunk, int classes) {
  std::vector<float> x(chunk * std::size_t(test.features())), z(chunk * std::size_t(classes));
  std::vector<int> y(chunk);
  std::size_t hits = 0;
  for (std::size_t first = 0; first < test.size(); first += chunk) {
    const std::size_t n = std::min(chunk, test.size() - first);
    test.gather_range(first, n, x.data(), y.data());
    fwd(x.data(), n, z.data());
    for (std::size_t r = 0; r < n; ++r) {
      const float* row = z.data() + r * std::size_t(classes);
      hits += std::size_t(std::max_element(row, row + classes) - row) == std::size_t(y[r]);
    }
  }
  return double(hits) / double(test.size());
}

double median_ms(const Forward& fwd, const Dataset& test, std::size_t batch, int classes, int repeats) {
  const std::size_t n = std::min(batch, test.size());
  std::vector<float> x(n * std::size_t(test.features())), z(n * std::size_t(classes));
  test.gather_range(0, n, x.data(), nullptr);
  fwd(x.data(), n, z.data());  // warm-up: packing buffers, caches
  std::vector<double> t;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fwd(x.data(), n, z.data());
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

std::vector<PtqRow> evaluate_ptq(const Mlp& net, const Dataset& train, const Dataset& test, const PtqConfig& cfg) {
  if (train.features() != net.inputs() || test.features() != net.inputs())
    throw std::invalid_argument("ptq: the data has " + std::to_string(test.features()) + " features, the network takes " +
                                std::to_string(net.inputs()));
  if (test.size() == 0 || train.size() == 0) throw std::invalid_argument("ptq: empty data set");
  if (cfg.latency_batch < 1) throw std::invalid_argument("ptq: latency batch must be >= 1");
  const int L = net.layer_count(), C = net.classes();
  const std::size_t chunk = std::size_t(cfg.latency_batch);

  // float32: the master weights, layer by layer; `tap` sees each layer's input (calibration).
  auto fp32 = [&](const float* x, std::size_t rows, float* logits,
                  const std::function<void(int, const float*, std::size_t)>& tap) {
    std::vector<float> cur(x, x + rows * std::size_t(net.inputs())), next;
    for (int l = 0; l < L; ++l) {
      const MlpLayer& lay = net.layer(l);
      if (tap) tap(l, cur.data(), rows);
      next.assign(rows * std::size_t(lay.out), 0.0f);
      train_gemm(false, true, int(rows), lay.out, lay.in, cur.data(), lay.in, lay.W.data(), lay.in, next.data(), lay.out, false);
      for (std::size_t r = 0; r < rows; ++r)
        for (int j = 0; j < lay.out; ++j) next[r * std::size_t(lay.out) + std::size_t(j)] += lay.b[std::size_t(j)];
      if (l + 1 < L) relu(next);
      cur.swap(next);
    }
    std::copy(cur.begin(), cur.end(), logits);
  };

  std::vector<PtqRow> rows;
  {
    PtqRow r;
    r.mode = "fp32";
    const Forward f = [&](const float* x, std::size_t n, float* z) { fp32(x, n, z, {}); };
    r.test_acc = accuracy(f, test, chunk, C);
    r.latency_ms = median_ms(f, test, chunk, C, cfg.repeats);
    for (int l = 0; l < L; ++l) r.weight_bytes += net.layer(l).W.size() * sizeof(float);
    rows.push_back(r);
  }
  for (ActQuant mode : {ActQuant::DynamicPerRow, ActQuant::Static}) {
    std::vector<QuantizedLinear> lin;
    for (int l = 0; l < L; ++l) {
      const MlpLayer& lay = net.layer(l);
      lin.emplace_back(lay.W.data(), lay.out, lay.in, lay.b.data(), WeightGranularity::PerChannel, mode, cfg.threads);
    }
    if (mode == ActQuant::Static) {
      const std::size_t n = std::min(cfg.calib_images, train.size());
      std::vector<float> x(n * std::size_t(train.features())), z(n * std::size_t(C));
      train.gather_range(0, n, x.data(), nullptr);
      fp32(x.data(), n, z.data(), [&](int l, const float* in, std::size_t rows_in) { lin[std::size_t(l)].calibrate(in, rows_in); });
      for (QuantizedLinear& q : lin) q.freeze();
    }
    const Forward f = [&](const float* x, std::size_t n, float* z) {
      std::vector<float> cur(x, x + n * std::size_t(net.inputs())), next;
      for (int l = 0; l < L; ++l) {
        next.resize(n * std::size_t(lin[std::size_t(l)].out_features()));
        lin[std::size_t(l)].forward(cur.data(), n, next.data(), cfg.threads);
        if (l + 1 < L) relu(next);
        cur.swap(next);
      }
      std::copy(cur.begin(), cur.end(), z);
    };
    PtqRow r;
    r.mode = mode == ActQuant::Static ? "int8-static" : "int8-dynamic";
    r.test_acc = accuracy(f, test, chunk, C);
    r.latency_ms = median_ms(f, test, chunk, C, cfg.repeats);
    for (const QuantizedLinear& q : lin) r.weight_bytes += q.weight_bytes();
    rows.push_back(r);
  }
  for (PtqRow& r : rows) r.us_per_image = r.latency_ms * 1000.0 / double(std::min(chunk, test.size()));
  return rows;
}

}  // namespace qs
