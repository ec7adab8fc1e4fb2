// Trainer (core/train/trainer.h) with its save/load (mlp_io.h) and int8 PTQ (ptq.h): a short seeded run is
// reproducible step for step and independent of the thread count; the per-step metrics are consistent
// (histograms sum to the weights, stalls <= updates, CSV columns); GridOptim keeps every weight on the grid;
// stop, step limit and divergence end the run cleanly; bad configurations fail with one line; the saved
// .safetensors opens in the project's reader and loads back bit for bit; PTQ stays close to fp32.
// Run: ninja -C build tst_trainer && build/tests/core/tst_trainer
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/dtype.h"
#include "io/tensor_file.h"
#include "test_files.h"
#include "train/dataset.h"
#include "train/mlp_io.h"
#include "train/ptq.h"
#include "train/trainer.h"

namespace {

const qs::DataSplit& small_data() {
  static const qs::DataSplit d = qs::make_synthetic_dataset(640, 200, 3);
  return d;
}

qs::TrainConfig small_config() {
  qs::TrainConfig c;
  c.sizes = {784, 48, 24, 10};
  c.epochs = 2;
  c.batch = 64;
  c.seed = 11;
  return c;
}

struct TrainRun {
  std::vector<qs::StepMetrics> steps;
  qs::TrainResult result;
  std::vector<std::vector<float>> W, Wq;
};

TrainRun run(const qs::TrainConfig& c, int stop_after = 0) {
  qs::Trainer t(c, small_data().train, small_data().test);
  TrainRun r;
  r.result = t.run([&](qs::StepMetrics m) {
    r.steps.push_back(std::move(m));
    return stop_after == 0 || int(r.steps.size()) < stop_after;
  });
  for (int l = 0; l < t.model().layer_count(); ++l) {
    r.W.push_back(t.model().layer(l).W);
    r.Wq.push_back(t.model().layer(l).Wq);
  }
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

}  // namespace

// The same seed twice gives the same steps bit for bit, with 1 or 2 threads.
TEST(Trainer, Reproducible) {
  struct Case {
    const char* name;
    const char* optimizer;
    const char* weights;
    const char* acts;
    bool stochastic, delayed;
  };
  const Case cases[] = {{"adam/fp32", "adam", "", "", false, false},
                        {"adam/e4m3fn+e4m3fn", "adam", "e4m3fn", "e4m3fn", false, false},
                        {"sgd/e5m2/stochastic/delayed", "sgd", "e5m2/tensor", "e5m2/tensor", true, true},
                        {"adam/mxfp4-weights", "adam", "e2m1fn/block:32:e8m0fnu", "", false, false},
                        {"grid/e4m3fn", "grid", "", "", false, false},
                        {"grid/e3m4+int8-acts", "grid", "e3m4", "int8/tensor", false, false}};
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    qs::TrainConfig c = small_config();
    c.optimizer = qs::parse_optimizer(cs.optimizer);
    c.weights = cs.weights;
    c.acts = cs.acts;
    if (cs.stochastic) c.rounding = qs::Rounding::Stochastic;
    if (cs.delayed) c.scaling = qs::ScalingMode::Delayed;
    c.threads = 2;
    const TrainRun a = run(c);
    const TrainRun b = run(c);
    c.threads = 1;
    const TrainRun one = run(c);
    for (const TrainRun* o : {&b, &one}) {
      SCOPED_TRACE(o == &b ? "again, 2 threads" : "1 thread");
      ASSERT_EQ(o->steps.size(), a.steps.size());
      for (std::size_t i = 0; i < a.steps.size(); ++i) {
        SCOPED_TRACE("step " + std::to_string(i + 1));
        EXPECT_EQ(o->steps[i].loss, a.steps[i].loss);  // bit for bit
        EXPECT_EQ(o->steps[i].flips(), a.steps[i].flips());
        EXPECT_EQ(o->steps[i].bit_stalls(), a.steps[i].bit_stalls());
        EXPECT_EQ(o->steps[i].overflow(), a.steps[i].overflow());
      }
      for (std::size_t l = 0; l < a.W.size(); ++l) EXPECT_TRUE(same_bits(o->W[l], a.W[l])) << "layer " << l;
      EXPECT_EQ(o->result.test_acc, a.result.test_acc);
    }
    // Another seed is another run.
    c.seed = 12;
    const TrainRun other = run(c);
    ASSERT_GT(other.steps.size(), 3u);
    EXPECT_NE(other.steps[3].loss, a.steps[3].loss);
  }
}

TEST(Trainer, MetricsAreConsistent) {
  struct Case {
    const char* name;
    const char* optimizer;
    const char* weights;
  };
  const Case cases[] = {{"adam/fp32", "adam", ""},
                        {"adam/e4m3fn", "adam", "e4m3fn"},
                        {"adam/int8/channel:0", "adam", "int8/channel:0"},
                        {"grid/e5m2", "grid", "e5m2"}};
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    const std::string optimizer = cs.optimizer, weights = cs.weights;
    qs::TrainConfig c = small_config();
    c.optimizer = qs::parse_optimizer(optimizer);
    c.weights = weights;
    c.acts = "e4m3fn";
    c.histogram_every = 3;
    qs::Trainer t(c, small_data().train, small_data().test);
    EXPECT_EQ(t.steps_per_epoch(), 10u);
    EXPECT_EQ(t.weight_format() != nullptr, !weights.empty() || optimizer == "grid");
    std::vector<qs::StepMetrics> steps;
    const qs::TrainResult r = t.run([&](qs::StepMetrics m) {
      steps.push_back(std::move(m));
      return true;
    });
    EXPECT_EQ(r.status, qs::TrainResult::Status::Completed);
    EXPECT_EQ(r.steps, 20u);
    EXPECT_EQ(r.epochs.size(), 2u);
    ASSERT_EQ(steps.size(), 20u);
    const uint64_t nweights = 784 * 48 + 48 * 24 + 24 * 10;
    for (const qs::StepMetrics& m : steps) {
      SCOPED_TRACE("step " + std::to_string(m.step));
      EXPECT_EQ(m.weights(), nweights);
      EXPECT_EQ(m.layers.size(), 3u);
      EXPECT_TRUE(m.loss > 0 && std::isfinite(m.loss)) << m.loss;
      EXPECT_TRUE(m.train_acc >= 0 && m.train_acc <= 1) << m.train_acc;
      EXPECT_EQ(m.epoch_end, m.step_in_epoch == 10);
      EXPECT_EQ(m.epoch_end, m.test_acc >= 0);
      EXPECT_LE(m.bit_stalls(), m.updates());
      EXPECT_LE(m.flips(), m.weights());
      EXPECT_GT(m.updates(), 0u);
      for (const qs::LayerMetrics& l : m.layers) {
        EXPECT_GT(l.act_scale, 0);  // acts e4m3fn/tensor: a tensor scale each step
        if (weights == "e4m3fn") {
          EXPECT_GT(l.weight_scale, 0);
        }
        const bool hist = t.weight_format() && (m.step == 1 || m.step % 3 == 0 || m.epoch_end);
        EXPECT_EQ(!l.code_histogram.empty(), hist);
        if (hist) {
          uint64_t sum = 0;
          for (uint32_t n : l.code_histogram) sum += n;
          EXPECT_EQ(sum, l.weights);
          EXPECT_EQ(l.code_histogram.size(), std::size_t(t.weight_format()->code_count()));
        }
      }
      // The CSV row: ten columns, test_acc only at epoch ends.
      const std::string row = qs::train_steps_csv_row(m);
      EXPECT_EQ(std::count(row.begin(), row.end(), ','), 9) << row;
      ASSERT_FALSE(row.empty());
      EXPECT_EQ(row.back(), '\n');
      EXPECT_EQ(row.find(",,") != std::string::npos, !m.epoch_end) << row;
    }
    EXPECT_EQ(std::string(qs::train_steps_csv_header()),
              "step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow\n");
    if (weights.empty() && optimizer == "adam") {
      EXPECT_GT(steps[5].flips(), nweights / 2);  // fp32 Adam changes (almost) every weight each step
    }
    if (optimizer == "grid") {
      EXPECT_LT(steps[5].flips(), nweights / 4);  // on a grid most updates stall
    }
  }
}

TEST(Trainer, GridKeepsWeightsOnTheGrid) {
  qs::TrainConfig c = small_config();
  c.optimizer = qs::OptimizerKind::Grid;
  c.weights = "e4m3fn";
  qs::Trainer t(c, small_data().train, small_data().test);
  const qs::GridOptim* g = t.grid_optimizer();
  ASSERT_TRUE(g);
  t.run();
  for (int l = 0; l < t.model().layer_count(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const qs::MlpLayer& L = t.model().layer(l);
    EXPECT_TRUE(same_bits(L.W, L.Wq));  // master and model agree
    std::size_t off = 0;
    for (float w : L.W) off += !(g->grid()[g->index_of(w)] == w);
    for (float b : L.b) off += !(g->grid()[g->index_of(b)] == b);
    EXPECT_EQ(off, 0u) << "weights and biases off the grid";
  }
}

TEST(Trainer, Learns) {
  const qs::DataSplit d = qs::make_synthetic_dataset(4000, 500, 5);
  qs::TrainConfig c = small_config();
  c.epochs = 4;
  c.weights = c.acts = "e4m3fn";
  qs::Trainer t(c, d.train, d.test);
  std::vector<double> loss;
  const qs::TrainResult r = t.run([&](qs::StepMetrics m) {
    loss.push_back(m.loss);
    return true;
  });
  EXPECT_GT(r.test_acc, 0.7);  // chance is 0.1
  ASSERT_FALSE(loss.empty());
  EXPECT_LT(loss.back(), loss.front() / 2);
  ASSERT_FALSE(r.epochs.empty());
  EXPECT_LT(r.epochs.back().loss, r.epochs.front().loss);
}

TEST(Trainer, StopAndStepLimit) {
  const TrainRun r = run(small_config(), 5);
  EXPECT_EQ(r.result.status, qs::TrainResult::Status::Stopped);
  EXPECT_EQ(r.result.steps, 5u);
  EXPECT_EQ(r.steps.size(), 5u);
  EXPECT_TRUE(r.result.test_acc >= 0 && r.result.test_acc <= 1);  // the final weights are still evaluated
  EXPECT_TRUE(qs_test::contains(r.result.message, "step 5")) << r.result.message;
  qs::TrainConfig c = small_config();
  c.max_steps = 13;
  const TrainRun m = run(c);
  EXPECT_EQ(m.result.steps, 13u);
  EXPECT_EQ(m.result.epochs.size(), 1u);
  EXPECT_EQ(m.result.status, qs::TrainResult::Status::Stopped);
  // A trainer runs once.
  qs::Trainer t(small_config(), small_data().train, small_data().test);
  t.run();
  EXPECT_THROW(t.run(), std::logic_error);
}

// The cancel flag ends a run inside the step in progress (between layers), not after it: set during step 3's
// callback (which still says go on), step 4 is abandoned, and the weights are those after step 3, bit for
// bit the weights of a run that the callback stopped after step 3. Unscaled schemes (FORMAT/none) too.
TEST(Trainer, CancelFlagStopsWithinAStep) {
  for (const char* w : {"", "e4m3fn/none"}) {
    SCOPED_TRACE(*w ? w : "fp32");
    qs::TrainConfig c = small_config();
    c.weights = w;
    c.acts = *w ? "e5m2/none" : "";
    const TrainRun ref = run(c, 3);
    std::atomic<bool> cancel{false};
    qs::Trainer t(c, small_data().train, small_data().test);
    std::vector<qs::StepMetrics> steps;
    const qs::TrainResult r = t.run(
        [&](qs::StepMetrics m) {
          steps.push_back(std::move(m));
          if (steps.size() == 3) cancel = true;
          return true;
        },
        &cancel);
    EXPECT_EQ(r.status, qs::TrainResult::Status::Stopped);
    EXPECT_EQ(r.steps, 3u);
    EXPECT_EQ(steps.size(), 3u);
    EXPECT_TRUE(qs_test::contains(r.message, "during step 4")) << r.message;
    EXPECT_TRUE(r.test_acc >= 0 && r.test_acc <= 1);  // the final evaluation still runs
    ASSERT_EQ(std::size_t(t.model().layer_count()), ref.W.size());
    for (int l = 0; l < t.model().layer_count(); ++l)
      EXPECT_TRUE(same_bits(t.model().layer(l).W, ref.W[std::size_t(l)])) << "layer " << l;
  }
}

TEST(Trainer, DivergenceStops) {
  qs::TrainConfig c = small_config();
  c.optimizer = qs::OptimizerKind::Sgd;
  c.lr = 1e8;
  const TrainRun r = run(c);
  EXPECT_EQ(r.result.status, qs::TrainResult::Status::Diverged);
  ASSERT_FALSE(r.steps.empty());
  EXPECT_TRUE(std::isnan(r.steps.back().loss));  // the diverging step is delivered
  for (std::size_t i = 0; i + 1 < r.steps.size(); ++i) EXPECT_TRUE(std::isfinite(r.steps[i].loss)) << "step " << i + 1;
  EXPECT_TRUE(qs_test::contains(r.result.message, "not finite")) << r.result.message;
  EXPECT_EQ(r.result.message.find('\n'), std::string::npos);
  EXPECT_EQ(r.result.steps, uint64_t(r.steps.size()));
}

TEST(Trainer, BadConfig) {
  struct Case {
    const char* name;
    const char* needle;
    void (*spoil)(qs::TrainConfig&);
  };
  const Case cases[] = {
      {"epochs_0", "epochs", [](qs::TrainConfig& c) { c.epochs = 0; }},
      {"batch_0", "batch", [](qs::TrainConfig& c) { c.batch = 0; }},
      {"lr_negative", "learning rate", [](qs::TrainConfig& c) { c.lr = -1; }},
      {"lr_nan", "learning rate", [](qs::TrainConfig& c) { c.lr = std::nan(""); }},
      {"momentum_1", "momentum", [](qs::TrainConfig& c) { c.momentum = 1.0; }},
      {"bad_weight_scheme", "e9m9", [](qs::TrainConfig& c) { c.weights = "e9m9"; }},
      {"bad_granularity", "diagonal", [](qs::TrainConfig& c) { c.acts = "e4m3fn/diagonal"; }},
      {"grid_with_channel_scheme", "grid optimizer",
       [](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Grid, c.weights = "int8/channel:0"; }},
      {"grid_unsigned", "signed", [](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Grid, c.weights = "uint8"; }},
      {"delayed_block", "delayed scaling",
       [](qs::TrainConfig& c) { c.scaling = qs::ScalingMode::Delayed, c.acts = "e4m3fn/block:32"; }},
      {"sizes_vs_data", "inputs", [](qs::TrainConfig& c) { c.sizes = {100, 10}; }},
      {"rung_clip_0", "rung_clip", [](qs::TrainConfig& c) { c.rung_clip = 0; }},
      {"history_0", "history", [](qs::TrainConfig& c) { c.history = 0; }},
      {"one_layer_size", "network", [](qs::TrainConfig& c) { c.sizes = {784}; }},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    qs::TrainConfig c = small_config();
    cs.spoil(c);
    std::string err;
    try {
      qs::Trainer t(c, small_data().train, small_data().test);
    } catch (const std::exception& e) {
      err = e.what();
    }
    EXPECT_FALSE(err.empty()) << "a bad configuration was accepted";
    EXPECT_TRUE(qs_test::contains(err, cs.needle)) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(Trainer, SaveAndLoad) {
  if (!qs::tensor_reader_available("safetensors")) GTEST_SKIP() << "this build has no .safetensors reader";
  qs::TrainConfig c = small_config();
  c.epochs = 1;
  qs::Trainer t(c, small_data().train, small_data().test);
  t.run();
  qs_test::TempDir dir;
  const std::string path = dir.file("w.safetensors");
  qs::save_mlp_safetensors(path, t.model(), {{"note", "quote \" and backslash \\"}});
  // The analysis tools' reader opens it: names, dtypes, shapes.
  const auto file = qs::open_tensor_file(path);
  EXPECT_EQ(file->kind(), "safetensors");
  ASSERT_EQ(file->tensors().size(), 6u);
  const char* names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  const std::vector<int64_t> shapes[] = {{48, 784}, {48}, {24, 48}, {24}, {10, 24}, {10}};
  for (std::size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(file->tensors()[i].name, names[i]);
    EXPECT_EQ(file->tensors()[i].dtype, qs::DType::F32);
    EXPECT_EQ(file->tensors()[i].shape, shapes[i]);
  }
  qs::Mlp back = qs::load_mlp_safetensors(path, 1);
  ASSERT_EQ(back.sizes(), t.model().sizes());
  for (int l = 0; l < back.layer_count(); ++l) {
    EXPECT_TRUE(same_bits(back.layer(l).W, t.model().layer(l).W)) << "layer " << l;
    EXPECT_TRUE(same_bits(back.layer(l).b, t.model().layer(l).b)) << "layer " << l;
  }
  EXPECT_EQ(back.accuracy(*small_data().test, 64), t.model().accuracy(*small_data().test, 64));
  // Atomic: a failed save leaves nothing.
  EXPECT_THROW(qs::save_mlp_safetensors(dir.file("no/such/dir/w.safetensors"), back), qs::IoError);
  std::vector<std::string> left;
  for (const auto& e : qs_test::fs::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"w.safetensors"});
}

TEST(Trainer, LoadRejectsOtherFiles) {
  if (!qs::tensor_reader_available("safetensors")) GTEST_SKIP() << "this build has no .safetensors reader";
  qs_test::TempDir dir;
  // A safetensors file with a lone fc1.weight (no bias).
  const std::string header = R"({"fc1.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += header + std::string(24, '\0');
  const std::string path = dir.file("x.safetensors");
  qs_test::write_file(path, bytes);
  std::string err;
  try {
    qs::load_mlp_safetensors(path);
  } catch (const qs::IoError& e) {
    err = e.what();
  }
  EXPECT_TRUE(qs_test::contains(err, "fc1.bias")) << err;
  EXPECT_THROW(qs::load_mlp_safetensors(dir.file("missing.safetensors")), qs::IoError);
}

TEST(Trainer, Ptq) {
  qs::TrainConfig c = small_config();
  c.epochs = 3;
  qs::Trainer t(c, small_data().train, small_data().test);
  const qs::TrainResult r = t.run();
  const std::vector<qs::PtqRow> rows = qs::evaluate_ptq(t.model(), *small_data().train, *small_data().test,
                                                        {.calib_images = 300, .threads = 1, .latency_batch = 100, .repeats = 3});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].mode, "fp32");
  EXPECT_EQ(rows[1].mode, "int8-dynamic");
  EXPECT_EQ(rows[2].mode, "int8-static");
  EXPECT_EQ(rows[0].test_acc, r.test_acc);  // fp32 evaluation of an fp32-trained network: the same accuracy
  for (const qs::PtqRow& p : rows) {
    SCOPED_TRACE(p.mode);
    EXPECT_TRUE(p.latency_ms > 0 && p.us_per_image > 0) << p.latency_ms << " ms, " << p.us_per_image << " us/image";
    EXPECT_LT(std::fabs(p.test_acc - rows[0].test_acc), 0.03) << p.test_acc;
  }
  EXPECT_EQ(rows[0].weight_bytes, std::size_t(4 * (784 * 48 + 48 * 24 + 24 * 10)));
  EXPECT_LT(rows[1].weight_bytes, rows[0].weight_bytes / 2);
  EXPECT_THROW(qs::evaluate_ptq(qs::Mlp({100, 10}), *small_data().train, *small_data().test), std::invalid_argument);
}
