// Mlp: forward and backward as train_gemm products over 2 fixed shards (batch rows for activations and input
// gradients, output rows for weight gradients), fake quantization between layers, softmax cross-entropy
// (repro_math.h). Every step is the same bits whatever the SIMD level, the thread count and on the GPU.
#include "train/mlp.h"
#include "util/mix64.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "format/rng.h"
#include "train/dataset.h"
#include "train/repro_math.h"
#include "train/shard_pool.h"
#include "train/train_gemm.h"

namespace qs {

namespace {

constexpr int kShards = 2;

// Rows [begin, end) of shard s out of n.
inline std::size_t shard_begin(std::size_t n, int s) { return s == 0 ? 0 : n / 2; }
inline std::size_t shard_end(std::size_t n, int s) { return s == 0 ? n / 2 : n; }

}  // namespace

struct Mlp::Work {
  int capacity = 0;
  std::vector<std::vector<float>> act;    // act[l]: input of layer l before quantization (l >= 1)
  std::vector<std::vector<float>> actq;   // actq[l]: quantized input of layer l (act scheme only)
  std::vector<std::vector<uint8_t>> aclip;
  std::vector<const float*> in;           // in[l]: what layer l multiplies (x, act[l] or actq[l])
  std::vector<const float*> pre;          // pre[l]: layer l's input before quantization (for ReLU masks)
  std::vector<float> logits, dz, dprev;
  std::vector<double> row_loss;
  std::vector<int> row_correct;
};

Mlp::Mlp(std::vector<int> sizes, uint64_t seed, int threads) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2) throw std::invalid_argument("MLP: needs at least an input and an output size");
  for (int s : sizes_)
    if (s < 1 || s > 65536) throw std::invalid_argument("MLP: layer size " + std::to_string(s) + " is outside 1..65536");
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    MlpLayer L;
    L.in = sizes_[l];
    L.out = sizes_[l + 1];
    L.W.resize(std::size_t(L.in) * std::size_t(L.out));
    L.b.assign(std::size_t(L.out), 0.0f);
    const double bound = std::sqrt(6.0 / L.in);
    const uint64_t key = mix64(seed * 0x9e3779b97f4a7c15ULL + l + 1);
    for (std::size_t i = 0; i < L.W.size(); ++i) {
      const double u = (double(stochastic_bits(key, i) >> 8) + 0.5) * 0x1p-24;  // (0, 1)
      L.W[i] = float((2 * u - 1) * bound);
    }
    layers_.push_back(std::move(L));
  }
  pool_ = std::make_unique<ShardPool>(std::min(resolve_threads(threads), kShards));
  work_ = std::make_unique<Work>();
}

Mlp::~Mlp() = default;
Mlp::Mlp(Mlp&&) noexcept = default;
Mlp& Mlp::operator=(Mlp&&) noexcept = default;

std::size_t Mlp::parameter_count() const {
  std::size_t n = 0;
  for (const MlpLayer& L : layers_) n += L.W.size() + L.b.size();
  return n;
}

int Mlp::threads() const { return pool_->threads(); }

void Mlp::set_quant(const MlpQuant& q) {
  std::vector<FakeQuant> wq, aq;
  if (q.history < 1) throw FormatError("delayed scaling: the amax history needs at least 1 entry");
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    if (!q.weights.empty()) wq.emplace_back(parse_scheme(q.weights, q.options), q.scaling, q.history);
    if (!q.acts.empty()) aq.emplace_back(parse_scheme(q.acts, q.options), q.scaling, q.history);
  }
  quant_ = q;
  wq_ = std::move(wq);
  aq_ = std::move(aq);
  for (MlpLayer& L : layers_) {
    L.Wq.clear();
    L.codes.clear();
    L.clipped.clear();
  }
  work_ = std::make_unique<Work>();
}

std::vector<FakeQuantResult> Mlp::quantize_weights(uint64_t seed) {
  std::vector<FakeQuantResult> out;
  if (wq_.empty()) return out;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    MlpLayer& L = layers_[l];
    L.Wq.resize(L.W.size());
    FakeQuant& fq = wq_[l];
    L.codes.resize(fq.has_codes() ? L.W.size() : 0);
    L.clipped.resize(L.W.size());
    out.push_back(fq.apply(L.W.data(), std::size_t(L.out), std::size_t(L.in), L.Wq.data(),
                           L.codes.empty() ? nullptr : L.codes.data(), L.clipped.data(),
                           mix64(seed * 131 + l + 7), true, pool_.get()));
  }
  return out;
}

void Mlp::ensure_work(int batch) {
  Work& w = *work_;
  if (batch <= w.capacity) return;
  const std::size_t B = std::size_t(batch), L = layers_.size();
  w.act.assign(L, {});
  w.actq.assign(L, {});
  w.aclip.assign(L, {});
  int widest = 0;
  for (std::size_t l = 0; l < L; ++l) {
    const std::size_t in = std::size_t(layers_[l].in);
    if (l > 0) w.act[l].resize(B * in);
    if (!aq_.empty()) {
      w.actq[l].resize(B * in);
      w.aclip[l].resize(B * in);
    }
    widest = std::max({widest, layers_[l].in, layers_[l].out});
  }
  w.in.assign(L, nullptr);
  w.pre.assign(L, nullptr);
  w.logits.resize(B * std::size_t(classes()));
  w.dz.resize(B * std::size_t(widest));
  w.dprev.resize(B * std::size_t(widest));
  w.row_loss.resize(B);
  w.row_correct.resize(B);
  w.capacity = batch;
}

const float* Mlp::forward_impl(const float* x, int batch, bool record, uint64_t seed,
                               std::vector<FakeQuantResult>* act_stats) {
  ensure_work(batch);
  Work& w = *work_;
  const std::size_t B = std::size_t(batch), L = layers_.size();
  if (act_stats) act_stats->assign(aq_.empty() ? 0 : L, FakeQuantResult{});
  for (std::size_t l = 0; l < L; ++l) {
    check_cancel();
    const MlpLayer& lay = layers_[l];
    const float* pre = l == 0 ? x : w.act[l].data();
    w.pre[l] = pre;
    const float* in = pre;
    if (!aq_.empty()) {
      const FakeQuantResult r = aq_[l].apply(pre, B, std::size_t(lay.in), w.actq[l].data(), nullptr, w.aclip[l].data(),
                                             mix64(seed * 977 + l + 3), record, pool_.get());
      if (act_stats) (*act_stats)[l] = r;
      in = w.actq[l].data();
    }
    w.in[l] = in;
    const bool last = l + 1 == L;
    float* out = last ? w.logits.data() : w.act[l + 1].data();
    const float* Wf = lay.forward_weights();
    const std::size_t O = std::size_t(lay.out), I = std::size_t(lay.in);
    pool_->run(kShards, [&](int s) {
      const std::size_t r0 = shard_begin(B, s), r1 = shard_end(B, s);
      if (r1 == r0) return;
      train_gemm(false, true, int(r1 - r0), int(O), int(I), in + r0 * I, int(I), Wf, int(I), out + r0 * O, int(O), false);
      for (std::size_t r = r0; r < r1; ++r) {
        float* row = out + r * O;
        for (std::size_t j = 0; j < O; ++j) row[j] += lay.b[j];
        if (!last)
          for (std::size_t j = 0; j < O; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
      }
    });
  }
  return w.logits.data();
}

double Mlp::train_batch(const float* x, const int* labels, int batch, int* correct,
                        std::vector<FakeQuantResult>* act_stats, uint64_t seed) {
  if (batch < 1) throw std::invalid_argument("MLP: batch must be >= 1");
  const std::size_t B = std::size_t(batch), L = layers_.size(), C = std::size_t(classes());
  for (std::size_t i = 0; i < B; ++i)
    if (labels[i] < 0 || labels[i] >= int(C))
      throw std::invalid_argument("MLP: label " + std::to_string(labels[i]) + " is not a class 0.." + std::to_string(C - 1));
  forward_impl(x, batch, true, seed, act_stats);
  Work& w = *work_;

  // Softmax cross-entropy and dL/dlogits = (p - onehot) / B, row by row (the GPU's kernel runs the same row).
  const float invB = 1.0f / float(B);
  pool_->run(kShards, [&](int s) {
    for (std::size_t r = shard_begin(B, s); r < shard_end(B, s); ++r) {
      bool hit = false;
      w.row_loss[r] = softmax_ce_row(w.logits.data() + r * C, int(C), labels[r], invB, w.dz.data() + r * C, &hit);
      w.row_correct[r] = hit;
    }
  });
  double loss = 0;
  int hits = 0;
  for (std::size_t r = 0; r < B; ++r) {
    loss += w.row_loss[r];
    hits += w.row_correct[r];
  }
  loss /= double(B);
  if (correct) *correct = hits;

  const bool zero_clipped = quant_.ste_zero_clipped;
  for (std::size_t li = L; li-- > 0;) {
    check_cancel();
    MlpLayer& lay = layers_[li];
    const std::size_t O = std::size_t(lay.out), I = std::size_t(lay.in);
    lay.dW.resize(O * I);
    lay.db.resize(O);
    const float* in = w.in[li];
    const float* dz = w.dz.data();
    float* dprev = w.dprev.data();
    const float* Wf = lay.forward_weights();
    pool_->run(kShards, [&](int s) {
      // Weight and bias gradients for output rows [o0, o1).
      const std::size_t o0 = shard_begin(O, s), o1 = shard_end(O, s);
      if (o1 > o0) {
        train_gemm(true, false, int(o1 - o0), int(I), int(B), dz + o0, int(O), in, int(I), lay.dW.data() + o0 * I,
                   int(I), false);
        for (std::size_t j = o0; j < o1; ++j) {
          float acc = 0;
          for (std::size_t r = 0; r < B; ++r) acc += dz[r * O + j];
          lay.db[j] = acc;
        }
        if (!wq_.empty() && zero_clipped && !lay.clipped.empty())
          ste_backward(lay.dW.data() + o0 * I, lay.clipped.data() + o0 * I, (o1 - o0) * I, lay.dW.data() + o0 * I);
      }
      // Input gradient for batch rows [r0, r1), through the activation STE and the ReLU of the layer below.
      if (li == 0) return;
      const std::size_t r0 = shard_begin(B, s), r1 = shard_end(B, s);
      if (r1 == r0) return;
      train_gemm(false, false, int(r1 - r0), int(I), int(O), dz + r0 * O, int(O), Wf, int(I), dprev + r0 * I, int(I), false);
      const float* pre = w.pre[li];
      const uint8_t* clip = (!aq_.empty() && zero_clipped) ? w.aclip[li].data() : nullptr;
      for (std::size_t k = r0 * I; k < r1 * I; ++k)
        if (!(pre[k] > 0.0f) || (clip && clip[k])) dprev[k] = 0.0f;
    });
    std::swap(w.dz, w.dprev);
  }
  return std::isfinite(loss) ? loss : std::nan("");
}

void Mlp::forward(const float* x, int batch, float* logits, uint64_t seed) {
  if (batch < 1) throw std::invalid_argument("MLP: batch must be >= 1");
  const float* z = forward_impl(x, batch, false, seed, nullptr);
  std::memcpy(logits, z, std::size_t(batch) * std::size_t(classes()) * sizeof(float));
}

double Mlp::accuracy(const Dataset& data, int chunk) {
  if (data.features() != inputs()) throw std::invalid_argument("MLP: data set has " + std::to_string(data.features()) +
                                                               " features, the network takes " + std::to_string(inputs()));
  if (data.size() == 0) return std::nan("");
  chunk = std::max(chunk, 1);
  std::vector<float> x(std::size_t(chunk) * std::size_t(inputs()));
  std::vector<int> y(static_cast<std::size_t>(chunk));
  const std::size_t C = std::size_t(classes());
  std::size_t hits = 0;
  for (std::size_t first = 0; first < data.size(); first += std::size_t(chunk)) {
    const std::size_t n = std::min<std::size_t>(std::size_t(chunk), data.size() - first);
    data.gather_range(first, n, x.data(), y.data());
    const float* z = forward_impl(x.data(), int(n), false, first, nullptr);
    for (std::size_t r = 0; r < n; ++r) {
      const float* row = z + r * C;
      hits += std::size_t(std::max_element(row, row + C) - row) == std::size_t(y[r]);
    }
  }
  return double(hits) / double(data.size());
}

}  // namespace qs
