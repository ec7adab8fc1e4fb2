// `selftest --backend cuda`, training part (issue 18): the CUDA int8 linear layer against the CPU one
// (train/int8_linear.h: forward and its saved codes and scales bit for bit, backward within
// linear_backward_tol of the exact sums); the optimizer kernels against train/optim.h on the same inputs
// (SGD, Adam, GridOptim: every master and model value and every count, step by step, bit for bit);
// the device fake quantization against FakeQuant::apply (values, codes, clip mask, counts, amax, scale),
// delayed scaling's history included;
// short GPU training runs on the synthetic set (every mode learns: test accuracy above 0.7, chance 0.1);
// whole runs on the CPU and the GPU, step by step and weight by weight the same bits (train-equal/...).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/selftest_cuda.h"
#include "format/selftest.h"

#include "cuda/train_cuda.cuh"
#include "gemm/linear_backward_ref.h"
#include "train/dataset.h"
#include "train/fake_quant.h"
#include "train/int8_linear.h"
#include "train/optim.h"
#include "train/trainer.h"

namespace qs::cuda {

namespace {

uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// First index where two float arrays differ in their bits, or -1. `nan_equal`: any two NaNs count as equal
// (fake quantization: the codes, compared bit for bit, say which NaN; the CPU's SIMD encoder and the device
// may carry different payloads in the float value, as the encoder cases of this self-test allow).
long first_diff(const std::vector<float>& a, const std::vector<float>& b, bool nan_equal = false) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (fbits(a[i]) != fbits(b[i]) && !(nan_equal && std::isnan(a[i]) && std::isnan(b[i]))) return long(i);
  return -1;
}

void int8_linear_cases(const std::function<void(const SelftestCase&)>& report) {
  const int shapes[][3] = {{1, 16, 8}, {37, 100, 13}, {128, 784, 256}, {64, 256, 10}, {5, 33, 7}};
  for (int mode = 0; mode < 4; ++mode) {
    Int8LinearConfig cfg;
    cfg.x_per_row = mode & 1;
    cfg.w_per_channel = !(mode & 2);
    for (const auto& s : shapes) {
      const int R = s[0], I = s[1], O = s[2];
      SelftestCase c;
      c.name = std::string("int8-linear/") + (cfg.x_per_row ? "x-row" : "x-tensor") + "/" +
               (cfg.w_per_channel ? "w-channel" : "w-tensor") + "/" + std::to_string(R) + "x" + std::to_string(I) + "x" +
               std::to_string(O) + "/cuda";
      std::mt19937 gen(uint32_t(R * 7919 + I * 31 + O + mode));
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> x(std::size_t(R) * I), dy(std::size_t(R) * O);
      for (auto& v : x) v = nd(gen);
      for (auto& v : dy) v = 0.01f * nd(gen);
      Int8Linear cpu(I, O, uint64_t(mode + 1), cfg);
      cuda::Int8LinearCuda gpu(I, O, uint64_t(mode + 1), cfg);
      std::vector<float> y_cpu(std::size_t(R) * O), y_gpu(y_cpu.size()), dx_gpu(x.size()), dW(cpu.W.size()), db(static_cast<std::size_t>(O));
      cpu.forward(x.data(), R, y_cpu.data());
      gpu.forward(x.data(), R, y_gpu.data());
      gpu.backward(dy.data(), dx_gpu.data());
      gpu.gradients(dW.data(), db.data());
      std::vector<int8_t> xq, wq;
      std::vector<float> sx, sw, W_gpu(cpu.W.size()), b_gpu(cpu.b.size());
      gpu.context(xq, sx, wq, sw);
      gpu.parameters(W_gpu.data(), b_gpu.data());
      c.passed = true;
      if (first_diff(W_gpu, cpu.W) >= 0 || first_diff(b_gpu, cpu.b) >= 0) {
        c.passed = false;
        c.detail = "initial parameters differ from int8_linear_init";
      } else if (xq != cpu.x_codes() || wq != cpu.w_codes() || sx != cpu.x_scales() || sw != cpu.w_scales()) {
        c.passed = false;
        c.detail = "saved codes or scales differ from the CPU layer's";
      } else if (const long i = first_diff(y_gpu, y_cpu); i >= 0) {
        c.passed = false;
        c.detail = "forward element " + std::to_string(i) + ": " + std::to_string(y_gpu[std::size_t(i)]) + " vs CPU " +
                   std::to_string(y_cpu[std::size_t(i)]);
      } else {
        const LinearGradRef g = linear_backward_ref(dy.data(), R, O, xq.data(), sx.data(), cfg.x_per_row, wq.data(),
                                                    sw.data(), cfg.w_per_channel, I);
        auto within = [&](const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                          int n, const char* what) {
          for (std::size_t i = 0; i < got.size(); ++i)
            if (!(std::fabs(got[i] - ref[i]) <= linear_backward_tol(ref[i], mag[i], n, false))) {
              c.passed = false;
              c.detail = std::string(what) + " element " + std::to_string(i) + ": " + std::to_string(got[i]) +
                         " vs exact " + std::to_string(ref[i]);
              return false;
            }
          return true;
        };
        within(dx_gpu, g.dx, g.dx_mag, O, "dX") && within(dW, g.dw, g.dw_mag, R, "dW") && within(db, g.db, g.db_mag, R, "db");
      }
      report(c);
    }
  }
}

void optimizer_cases(const std::function<void(const SelftestCase&)>& report) {
  struct Opt {
    OptimizerKind kind;
    const char* grid;  // grid format (grid only)
    double lr, momentum, wd;
  };
  const Opt opts[] = {{OptimizerKind::Sgd, "", 0.05, 0.9, 0.0},     {OptimizerKind::Sgd, "", 0.01, 0.5, 1e-3},
                      {OptimizerKind::Adam, "", 1e-3, 0.9, 0.0},    {OptimizerKind::Adam, "", 3e-3, 0.9, 1e-2},
                      {OptimizerKind::Grid, "e4m3fn", 6, 0.9, 1e-4}, {OptimizerKind::Grid, "e5m2", 20, 0.8, 1e-3},
                      {OptimizerKind::Grid, "int8", 2, 0.9, 0.0},   {OptimizerKind::Grid, "e2m1fn", 6, 0.9, 1e-4}};
  const std::size_t n = 70001, slot = 3;
  const int steps = 6;
  for (const Opt& o : opts) {
    SelftestCase c;
    c.name = std::string("optim/") + to_string(o.kind) + (o.kind == OptimizerKind::Grid ? std::string(":") + o.grid : "") +
             "/lr" + std::to_string(o.lr) + "/cuda";
    std::mt19937 gen(uint32_t(n + std::size_t(o.kind) * 17 + uint32_t(o.lr * 1000)));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const double scale = o.kind == OptimizerKind::Grid && std::string(o.grid) == "int8" ? 60.0 : 0.2;
    std::vector<float> init(n);
    for (auto& v : init) v = float(scale * nd(gen));
    std::vector<std::vector<float>> grads(static_cast<std::size_t>(steps), std::vector<float>(n));
    for (int t = 0; t < steps; ++t)
      for (std::size_t i = 0; i < n; ++i) {
        float g = 0.05f * nd(gen);
        if (i % 97 == 5) g = 0.0f;
        if (i % 1009 == 7) g = t % 2 ? NAN : INFINITY;  // non-finite entries leave the element alone
        grads[std::size_t(t)][i] = g;
      }
    GridOptimConfig gc;
    std::unique_ptr<Optimizer> cpu;
    std::vector<float> master = init, model;
    switch (o.kind) {
      case OptimizerKind::Sgd: cpu = std::make_unique<SgdMomentum>(o.lr, o.momentum, o.wd); break;
      case OptimizerKind::Adam: cpu = std::make_unique<Adam>(o.lr, 0.9, 0.999, 1e-8, o.wd); break;
      case OptimizerKind::Grid: {
        gc.format = o.grid;
        gc.scale = o.lr;
        gc.momentum = o.momentum;
        gc.weight_decay = o.wd;
        gc.seed = 77;
        auto g = std::make_unique<GridOptim>(gc);
        model.resize(n);
        g->project(init.data(), n, model.data());
        cpu = std::move(g);
        break;
      }
    }
    const std::vector<float> model_init = model;
    c.passed = true;
    try {
      const cuda::OptimTrace tr = cuda::optimizer_trace_cuda(o.kind, o.lr, o.momentum, o.wd, gc, slot, init, model_init, grads);
      for (int t = 0; t < steps && c.passed; ++t) {
        cpu->begin_step();
        const StepCounts sc = cpu->step(slot, {master.data(), grads[std::size_t(t)].data(), model.empty() ? nullptr : model.data(), n});
        const StepCounts& gc2 = tr.counts[std::size_t(t)];
        if (const long i = first_diff(tr.master[std::size_t(t)], master); i >= 0) {
          c.passed = false;
          c.detail = "step " + std::to_string(t + 1) + ": master element " + std::to_string(i) + " " +
                     std::to_string(tr.master[std::size_t(t)][std::size_t(i)]) + " vs CPU " + std::to_string(master[std::size_t(i)]);
        } else if (!model.empty() && first_diff(tr.model[std::size_t(t)], model) >= 0) {
          c.passed = false;
          c.detail = "step " + std::to_string(t + 1) + ": model values differ";
        } else if (sc.updates != gc2.updates || sc.nonfinite != gc2.nonfinite ||
                   (o.kind == OptimizerKind::Grid &&
                    (sc.flips != gc2.flips || sc.stalls != gc2.stalls || sc.clamped != gc2.clamped))) {
          c.passed = false;
          c.detail = "step " + std::to_string(t + 1) + ": counts differ (flips " + std::to_string(gc2.flips) + " vs " +
                     std::to_string(sc.flips) + ", updates " + std::to_string(gc2.updates) + " vs " + std::to_string(sc.updates) + ")";
        }
      }
    } catch (const std::exception& e) {
      c.passed = false;
      c.detail = e.what();
    }
    report(c);
  }
}

void fake_quant_cases(const std::function<void(const SelftestCase&)>& report) {
  const char* schemes[] = {"e4m3fn/tensor", "e5m2/tensor", "e4m3fn/channel:0", "int8/tensor", "int8/channel:0",
                           "e2m1fn/block:32:e8m0fnu", "e4m3fn/block:32:e8m0fnu", "e3m2fn/block:16:e8m0fnu", "e4m3fn/none",
                           "int4/tensor", "e2m1fn/block:16:e4m3fn", "e3m2fn/block:32:e4m3fn",
                           // per-column scales (stochastic draws by column-major index) and unsigned affine integers
                           "e4m3fn/channel:1", "int8/channel:1", "uint8/tensor", "uint8/channel:0", "uint4/channel:1",
                           "uint8/block:32", "e4m3fn/block:32:bf16", "int4/block:16:fp16",
                           // no device path: the CPU's FakeQuant on a copy (the plumbing: copies, counts, no codes)
                           "int8/tensor:p99.9", "e2m1fn/block:16:e4m3fn:mse"};
  const std::size_t shapes[][2] = {{256, 784}, {37, 101}, {1, 5}};
  for (const char* text : schemes)
    for (Rounding r : {Rounding::Nearest, Rounding::Stochastic})
      for (const auto& sh : shapes) {
        const std::size_t rows = sh[0], cols = sh[1], n = rows * cols;
        SelftestCase c;
        c.name = std::string("fakequant/") + text + "/" + to_string(r) + "/" + std::to_string(rows) + "x" + std::to_string(cols) + "/cuda";
        EncodeOptions opt;
        opt.rounding = r;
        opt.seed = 1234;
        c.passed = true;
        try {
          const Scheme s = parse_scheme(text, opt);
          std::mt19937 gen(uint32_t(n * 31 + std::strlen(text)));
          std::normal_distribution<float> nd(0.0f, 1.0f);
          std::vector<float> x(n);
          for (std::size_t i = 0; i < n; ++i) x[i] = nd(gen) * (i % 113 == 0 ? 40.0f : 1.0f);
          if (n > 10) x[3] = NAN, x[7] = -INFINITY, x[9] = 0.0f;
          FakeQuant fq(s, ScalingMode::Current);
          std::vector<float> y_cpu(n), y_gpu(n);
          std::vector<uint16_t> c_cpu(n), c_gpu(n);
          std::vector<uint8_t> k_cpu(n), k_gpu(n);
          const uint64_t seed = 99;
          const FakeQuantResult a = fq.apply(x.data(), rows, cols, y_cpu.data(), c_cpu.data(), k_cpu.data(), seed, false);
          const FakeQuantResult b = cuda::fake_quant_cuda(s, x.data(), rows, cols, y_gpu.data(), c_gpu.data(), k_gpu.data(), seed);
          if (const long i = first_diff(y_gpu, y_cpu, true); i >= 0) {
            c.passed = false;
            c.detail = "value " + std::to_string(i) + ": " + std::to_string(y_gpu[std::size_t(i)]) + " vs CPU " +
                       std::to_string(y_cpu[std::size_t(i)]);
          } else if (c_gpu != c_cpu) {
            c.passed = false;
            c.detail = "codes differ";
          } else if (k_gpu != k_cpu || a.clipped != b.clipped) {
            c.passed = false;
            c.detail = "clip mask or clip count differs (" + std::to_string(b.clipped) + " vs " + std::to_string(a.clipped) + ")";
          } else if (a.stats.overflow != b.stats.overflow || a.stats.underflow != b.stats.underflow || a.stats.nan != b.stats.nan) {
            c.passed = false;
            c.detail = "overflow / underflow / NaN counts differ";
          } else if (a.amax != b.amax || fbits(a.scale) != fbits(b.scale)) {
            c.passed = false;
            c.detail = "amax or tensor scale differs (" + std::to_string(b.amax) + ", " + std::to_string(b.scale) + " vs " +
                       std::to_string(a.amax) + ", " + std::to_string(a.scale) + ")";
          }
        } catch (const std::exception& e) {
          c.passed = false;
          c.detail = e.what();
        }
        report(c);
      }
}

// Delayed scaling: a sequence of calls whose amax changes, some not recorded (evaluation passes), history 3;
// every call's values, codes, clip mask, counts and scale against one CPU FakeQuant run through the same calls.
void delayed_cases(const std::function<void(const SelftestCase&)>& report) {
  const std::size_t rows = 64, cols = 100, n = rows * cols;
  const float mags[] = {1.0f, 4.0f, 0.5f, 30.0f, 0.01f, 2.0f, 1.0f};
  const bool rec[] = {true, true, false, true, true, true, false};
  const int calls = int(std::size(mags));
  for (const char* text : {"e4m3fn/tensor", "e5m2/tensor", "int8/tensor", "e2m1fn/tensor"})
    for (Rounding r : {Rounding::Nearest, Rounding::Stochastic}) {
      SelftestCase c;
      c.name = std::string("fakequant-delayed/") + text + "/" + to_string(r) + "/cuda";
      c.passed = true;
      try {
        EncodeOptions opt;
        opt.rounding = r;
        const Scheme s = parse_scheme(text, opt);
        std::mt19937 gen(uint32_t(std::strlen(text) * 7 + int(r)));
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<std::vector<float>> xs(static_cast<std::size_t>(calls), std::vector<float>(n)), yg = xs, yc = xs;
        std::vector<std::vector<uint16_t>> cg(static_cast<std::size_t>(calls), std::vector<uint16_t>(n)), cc = cg;
        std::vector<std::vector<uint8_t>> kg(static_cast<std::size_t>(calls), std::vector<uint8_t>(n)), kc = kg;
        std::vector<cuda::FakeQuantCall> seq;
        for (int k = 0; k < calls; ++k) {
          for (auto& v : xs[std::size_t(k)]) v = mags[k] * nd(gen);
          seq.push_back({xs[std::size_t(k)].data(), yg[std::size_t(k)].data(), cg[std::size_t(k)].data(),
                         kg[std::size_t(k)].data(), uint64_t(k + 11), rec[k]});
        }
        const std::vector<FakeQuantResult> got = cuda::fake_quant_sequence_cuda(s, ScalingMode::Delayed, 3, rows, cols, seq);
        FakeQuant fq(s, ScalingMode::Delayed, 3);
        for (int k = 0; k < calls && c.passed; ++k) {
          const FakeQuantResult a = fq.apply(xs[std::size_t(k)].data(), rows, cols, yc[std::size_t(k)].data(),
                                             cc[std::size_t(k)].data(), kc[std::size_t(k)].data(), uint64_t(k + 11), rec[k]);
          const FakeQuantResult& b = got[std::size_t(k)];
          if (fbits(a.scale) != fbits(b.scale)) {
            c.passed = false;
            c.detail = "call " + std::to_string(k + 1) + ": scale " + std::to_string(b.scale) + " vs CPU " + std::to_string(a.scale);
          } else if (first_diff(yg[std::size_t(k)], yc[std::size_t(k)], true) >= 0 || cg[std::size_t(k)] != cc[std::size_t(k)] ||
                     kg[std::size_t(k)] != kc[std::size_t(k)]) {
            c.passed = false;
            c.detail = "call " + std::to_string(k + 1) + ": values, codes or clip mask differ";
          } else if (a.clipped != b.clipped || a.stats.overflow != b.stats.overflow || a.stats.underflow != b.stats.underflow) {
            c.passed = false;
            c.detail = "call " + std::to_string(k + 1) + ": counts differ";
          }
        }
      } catch (const std::exception& e) {
        c.passed = false;
        c.detail = e.what();
      }
      report(c);
    }
}

void training_cases(const std::function<void(const SelftestCase&)>& report) {
  const DataSplit d = make_synthetic_dataset(4000, 500, 5);
  struct Run {
    const char* name;
    std::function<void(TrainConfig&)> set;
  };
  const Run runs[] = {
      {"fp32-adam", [](TrainConfig&) {}},
      {"fp32-sgd", [](TrainConfig& c) { c.optimizer = OptimizerKind::Sgd; }},
      {"int8", [](TrainConfig& c) { c.int8 = true; }},
      {"int8-row-tensor", [](TrainConfig& c) { c.int8 = true, c.int8_x_per_row = true, c.int8_w_per_tensor = true; }},
      {"qat-e4m3fn", [](TrainConfig& c) { c.weights = c.acts = "e4m3fn/tensor"; }},
      {"qat-e4m3fn-delayed", [](TrainConfig& c) { c.weights = c.acts = "e4m3fn/tensor", c.scaling = ScalingMode::Delayed; }},
      {"qat-mxfp4-stochastic",
       [](TrainConfig& c) { c.weights = "e2m1fn/block:32:e8m0fnu", c.rounding = Rounding::Stochastic; }},
      {"grid-e4m3fn", [](TrainConfig& c) { c.optimizer = OptimizerKind::Grid; }},
      {"qat-nvfp4-uint8acts", [](TrainConfig& c) { c.weights = "e2m1fn/block:16:e4m3fn", c.acts = "uint8/tensor"; }},
      {"qat-int8-p99.9-on-host", [](TrainConfig& c) { c.weights = "int8/channel:0", c.acts = "int8/tensor:p99.9"; }},
  };
  for (const Run& run : runs) {
    SelftestCase c;
    c.name = std::string("train/synthetic/") + run.name + "/cuda";
    TrainConfig cfg;
    cfg.sizes = {784, 64, 10};
    cfg.epochs = 3;
    cfg.batch = 64;
    cfg.histogram_every = 10;
    run.set(cfg);
    try {
      uint64_t steps = 0, hist_steps = 0;
      bool finite = true;
      const TrainResult r = cuda::train_cuda(cfg, d.train, d.test, [&](StepMetrics m) {
        ++steps;
        finite = finite && std::isfinite(m.loss);
        if (!m.layers.empty() && !m.layers[0].code_histogram.empty()) {
          ++hist_steps;
          uint64_t total = 0;
          for (uint32_t v : m.layers[0].code_histogram) total += v;
          if (total != m.layers[0].weights) finite = false;  // a histogram counts every weight once
        }
        return true;
      });
      const bool quantized = cfg.int8 || !cfg.weights.empty() || cfg.optimizer == OptimizerKind::Grid;
      c.passed = r.status == TrainResult::Status::Completed && finite && r.test_acc > 0.7 && steps == r.steps &&
                 (!quantized || hist_steps > 0);
      c.detail = "test accuracy " + std::to_string(r.test_acc) + ", " + std::to_string(steps) + " steps, status " +
                 to_string(r.status) + (finite ? "" : ", a non-finite loss or a bad histogram");
    } catch (const std::exception& e) {
      c.passed = false;
      c.detail = e.what();
    }
    report(c);
  }
}

// One step's metrics as a comparable text: every counter of every layer, the loss and accuracies to their last
// bit (hexfloat), the code histograms.
std::string step_text(const StepMetrics& m) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %llu loss %a train %a test %a", static_cast<unsigned long long>(m.step), m.loss,
                m.train_acc, m.test_acc);
  std::string t = buf;
  for (const LayerMetrics& L : m.layers) {
    std::snprintf(buf, sizeof buf, " | %llu %llu %llu %llu %llu %llu %llu %llu %llu %a %a %a %a",
                  static_cast<unsigned long long>(L.flips), static_cast<unsigned long long>(L.updates),
                  static_cast<unsigned long long>(L.bit_stalls), static_cast<unsigned long long>(L.weight_overflow),
                  static_cast<unsigned long long>(L.weight_underflow), static_cast<unsigned long long>(L.act_overflow),
                  static_cast<unsigned long long>(L.act_underflow), static_cast<unsigned long long>(L.weight_clipped),
                  static_cast<unsigned long long>(L.act_clipped), double(L.weight_scale), double(L.act_scale),
                  L.weight_amax, L.act_amax);
    t += buf;
    for (uint32_t v : L.code_histogram) t += " " + std::to_string(v);
  }
  return t;
}

// Whole runs, CPU lab against GPU lab, same configuration and seed: every step's metrics (loss to the last bit,
// flips, bit-stalls, overflow counts, amaxes, scales, histograms), the test accuracies and the final weights
// (W, b, the quantized or grid weights) are the same bits (issue 18: "GridOptim's codes and flip counts on
// CUDA equal the CPU's, step by step"). Possible because both run the same canonical products
// (train/train_gemm.h), softmax (train/repro_math.h) and sums in the same order.
void train_equal_cases(const std::function<void(const SelftestCase&)>& report) {
  const DataSplit d = make_synthetic_dataset(2000, 400, 11);
  struct Run {
    const char* name;
    std::function<void(TrainConfig&)> set;
  };
  const Run runs[] = {
      {"fp32-adam", [](TrainConfig&) {}},
      {"fp32-sgd-wd", [](TrainConfig& c) { c.optimizer = OptimizerKind::Sgd, c.weight_decay = 1e-3; }},
      {"qat-e4m3fn", [](TrainConfig& c) { c.weights = c.acts = "e4m3fn/tensor"; }},
      {"qat-e4m3fn-delayed-ste-clip",
       [](TrainConfig& c) { c.weights = c.acts = "e4m3fn/tensor", c.scaling = ScalingMode::Delayed, c.ste_zero_clipped = true; }},
      {"qat-mxfp4-stochastic", [](TrainConfig& c) { c.weights = "e2m1fn/block:32:e8m0fnu", c.rounding = Rounding::Stochastic; }},
      {"qat-nvfp4-uint8acts", [](TrainConfig& c) { c.weights = "e2m1fn/block:16:e4m3fn", c.acts = "uint8/tensor"; }},
      {"qat-uint8w-uint4acts-stochastic",
       [](TrainConfig& c) { c.weights = "uint8/channel:0", c.acts = "uint4/tensor", c.rounding = Rounding::Stochastic; }},
      {"qat-bf16-block-scales", [](TrainConfig& c) { c.weights = "int4/block:32:bf16", c.acts = "e4m3fn/block:32:fp16"; }},
      {"qat-columns-stochastic",
       [](TrainConfig& c) { c.weights = c.acts = "e4m3fn/channel:1", c.rounding = Rounding::Stochastic; }},
      {"qat-int8-p99.9-on-host", [](TrainConfig& c) { c.weights = "int8/channel:0", c.acts = "int8/tensor:p99.9"; }},
      {"grid-e4m3fn", [](TrainConfig& c) { c.optimizer = OptimizerKind::Grid; }},
      {"grid-e2m1fn", [](TrainConfig& c) { c.optimizer = OptimizerKind::Grid, c.weights = "e2m1fn"; }},
  };
  for (const Run& run : runs) {
    SelftestCase c;
    c.name = std::string("train-equal/") + run.name + "/cuda";
    TrainConfig cfg;
    cfg.sizes = {784, 48, 32, 10};
    cfg.epochs = 2;
    cfg.batch = 50;
    cfg.histogram_every = 7;
    cfg.threads = 2;
    run.set(cfg);
    try {
      std::vector<std::string> cpu, gpu;
      Trainer trainer(cfg, d.train, d.test);
      const TrainResult rc = trainer.run([&](StepMetrics m) {
        cpu.push_back(step_text(m));
        return true;
      });
      std::vector<MlpLayer> dev;
      const TrainResult rg = cuda::train_cuda(cfg, d.train, d.test, [&](StepMetrics m) {
        gpu.push_back(step_text(m));
        return true;
      }, nullptr, &dev);
      std::size_t same = 0;
      while (same < cpu.size() && same < gpu.size() && cpu[same] == gpu[same]) ++same;
      std::string weights = "final weights equal";
      for (std::size_t l = 0; l < dev.size() && l < std::size_t(trainer.model().layer_count()); ++l) {
        const MlpLayer& H = trainer.model().layer(int(l));
        const MlpLayer& D = dev[l];
        const long w = first_diff(H.W, D.W), b = first_diff(H.b, D.b), q = first_diff(H.Wq, D.Wq, true);
        if (w >= 0 || b >= 0 || q >= 0) {
          weights = "layer " + std::to_string(l) + (w >= 0 ? " W[" + std::to_string(w) + "]" : "") +
                    (b >= 0 ? " b[" + std::to_string(b) + "]" : "") + (q >= 0 ? " Wq[" + std::to_string(q) + "]" : "") +
                    " differ";
          break;
        }
      }
      c.passed = rc.status == TrainResult::Status::Completed && rg.status == rc.status && cpu.size() == gpu.size() &&
                 same == cpu.size() && dev.size() == std::size_t(trainer.model().layer_count()) &&
                 weights == "final weights equal" && std::memcmp(&rc.test_acc, &rg.test_acc, sizeof(double)) == 0;
      c.detail = std::to_string(same) + " of " + std::to_string(cpu.size()) + " CPU steps (" + std::to_string(gpu.size()) +
                 " GPU steps) equal; " + weights + "; test accuracy CPU " + std::to_string(rc.test_acc) + ", GPU " +
                 std::to_string(rg.test_acc);
      if (same < cpu.size() && same < gpu.size()) c.detail += "; first difference: CPU " + cpu[same] + " / GPU " + gpu[same];
    } catch (const std::exception& e) {
      c.passed = false;
      c.detail = e.what();
    }
    report(c);
  }
}

}  // namespace

void run_cuda_train_selftest(const std::function<void(const SelftestCase&)>& report) {
  int8_linear_cases(report);
  optimizer_cases(report);
  fake_quant_cases(report);
  delayed_cases(report);
  training_cases(report);
  train_equal_cases(report);
}

}  // namespace qs::cuda
