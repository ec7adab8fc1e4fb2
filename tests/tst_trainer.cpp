// Trainer (core/train/trainer.h) with its save/load (mlp_io.h) and int8 PTQ (ptq.h): a short seeded run is
// reproducible step for step and independent of the thread count; the per-step metrics are consistent
// (histograms sum to the weights, stalls <= updates, CSV columns); GridOptim keeps every weight on the grid;
// stop, step limit and divergence end the run cleanly; bad configurations fail with one line; the saved
// .safetensors opens in the project's reader and loads back bit for bit; PTQ stays close to fp32.
// Run: build/tests/tst_trainer
#include "io/dtype.h"
#include "io/tensor_file.h"
#include "train/dataset.h"
#include "train/mlp_io.h"
#include "train/ptq.h"
#include "train/trainer.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <fstream>
#include <atomic>
#include <string>
#include <vector>

namespace {

const qs::DataSplit& small_data() {
  static const qs::DataSplit d = qs::make_synthetic(640, 200, 3);
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

struct Run {
  std::vector<qs::StepMetrics> steps;
  qs::TrainResult result;
  std::vector<std::vector<float>> W, Wq;
};

Run run(const qs::TrainConfig& c, int stop_after = 0) {
  qs::Trainer t(c, small_data().train, small_data().test);
  Run r;
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

class tst_Trainer : public QObject {
  Q_OBJECT

 private slots:
  void reproducible_data();
  void reproducible();
  void metricsAreConsistent_data();
  void metricsAreConsistent();
  void gridKeepsWeightsOnTheGrid();
  void learns();
  void stopAndStepLimit();
  void divergenceStops();
  void cancelFlagStopsWithinAStep();
  void badConfig_data();
  void badConfig();
  void saveAndLoad();
  void loadRejectsOtherFiles();
  void ptq();
};

void tst_Trainer::reproducible_data() {
  QTest::addColumn<QString>("optimizer");
  QTest::addColumn<QString>("weights");
  QTest::addColumn<QString>("acts");
  QTest::addColumn<bool>("stochastic");
  QTest::addColumn<bool>("delayed");
  QTest::newRow("adam/fp32") << "adam" << "" << "" << false << false;
  QTest::newRow("adam/e4m3fn+e4m3fn") << "adam" << "e4m3fn" << "e4m3fn" << false << false;
  QTest::newRow("sgd/e5m2/stochastic/delayed") << "sgd" << "e5m2/tensor" << "e5m2/tensor" << true << true;
  QTest::newRow("adam/mxfp4-weights") << "adam" << "e2m1fn/block:32:e8m0fnu" << "" << false << false;
  QTest::newRow("grid/e4m3fn") << "grid" << "" << "" << false << false;
  QTest::newRow("grid/e3m4+int8-acts") << "grid" << "e3m4" << "int8/tensor" << false << false;
}

// The same seed twice gives the same steps bit for bit, with 1 or 2 threads.
void tst_Trainer::reproducible() {
  QFETCH(QString, optimizer);
  QFETCH(QString, weights);
  QFETCH(QString, acts);
  QFETCH(bool, stochastic);
  QFETCH(bool, delayed);
  qs::TrainConfig c = small_config();
  c.optimizer = qs::parse_optimizer(optimizer.toStdString());
  c.weights = weights.toStdString();
  c.acts = acts.toStdString();
  if (stochastic) c.rounding = qs::Rounding::Stochastic;
  if (delayed) c.scaling = qs::ScalingMode::Delayed;
  c.threads = 2;
  const Run a = run(c);
  const Run b = run(c);
  c.threads = 1;
  const Run one = run(c);
  for (const Run* o : {&b, &one}) {
    QCOMPARE(o->steps.size(), a.steps.size());
    for (std::size_t i = 0; i < a.steps.size(); ++i) {
      QCOMPARE(o->steps[i].loss, a.steps[i].loss);
      QCOMPARE(o->steps[i].flips(), a.steps[i].flips());
      QCOMPARE(o->steps[i].bit_stalls(), a.steps[i].bit_stalls());
      QCOMPARE(o->steps[i].overflow(), a.steps[i].overflow());
    }
    for (std::size_t l = 0; l < a.W.size(); ++l) QVERIFY(same_bits(o->W[l], a.W[l]));
    QCOMPARE(o->result.test_acc, a.result.test_acc);
  }
  // Another seed is another run.
  c.seed = 12;
  const Run other = run(c);
  QVERIFY(other.steps[3].loss != a.steps[3].loss);
}

void tst_Trainer::metricsAreConsistent_data() {
  QTest::addColumn<QString>("optimizer");
  QTest::addColumn<QString>("weights");
  QTest::newRow("adam/fp32") << "adam" << "";
  QTest::newRow("adam/e4m3fn") << "adam" << "e4m3fn";
  QTest::newRow("adam/int8/channel:0") << "adam" << "int8/channel:0";
  QTest::newRow("grid/e5m2") << "grid" << "e5m2";
}

void tst_Trainer::metricsAreConsistent() {
  QFETCH(QString, optimizer);
  QFETCH(QString, weights);
  qs::TrainConfig c = small_config();
  c.optimizer = qs::parse_optimizer(optimizer.toStdString());
  c.weights = weights.toStdString();
  c.acts = "e4m3fn";
  c.histogram_every = 3;
  qs::Trainer t(c, small_data().train, small_data().test);
  QCOMPARE(t.steps_per_epoch(), std::size_t(10));
  QCOMPARE(t.weight_format() != nullptr, !weights.isEmpty() || optimizer == "grid");
  std::vector<qs::StepMetrics> steps;
  const qs::TrainResult r = t.run([&](qs::StepMetrics m) {
    steps.push_back(std::move(m));
    return true;
  });
  QCOMPARE(r.status, qs::TrainResult::Status::Completed);
  QCOMPARE(r.steps, uint64_t(20));
  QCOMPARE(r.epochs.size(), std::size_t(2));
  QCOMPARE(steps.size(), std::size_t(20));
  const uint64_t nweights = 784 * 48 + 48 * 24 + 24 * 10;
  for (const qs::StepMetrics& m : steps) {
    QCOMPARE(m.weights(), nweights);
    QCOMPARE(m.layers.size(), std::size_t(3));
    QVERIFY(m.loss > 0 && std::isfinite(m.loss));
    QVERIFY(m.train_acc >= 0 && m.train_acc <= 1);
    QCOMPARE(m.epoch_end, m.step_in_epoch == 10);
    QCOMPARE(m.epoch_end, m.test_acc >= 0);
    QVERIFY(m.bit_stalls() <= m.updates());
    QVERIFY(m.flips() <= m.weights());
    QVERIFY(m.updates() > 0);
    for (const qs::LayerMetrics& l : m.layers) {
      QVERIFY(l.act_scale > 0);  // acts e4m3fn/tensor: a tensor scale each step
      if (weights == "e4m3fn") QVERIFY(l.weight_scale > 0);
      const bool hist = t.weight_format() && (m.step == 1 || m.step % 3 == 0 || m.epoch_end);
      QCOMPARE(!l.code_histogram.empty(), hist);
      if (hist) {
        uint64_t sum = 0;
        for (uint32_t n : l.code_histogram) sum += n;
        QCOMPARE(sum, l.weights);
        QCOMPARE(l.code_histogram.size(), std::size_t(t.weight_format()->code_count()));
      }
    }
    // The CSV row: ten columns, test_acc only at epoch ends.
    const std::string row = qs::train_steps_csv_row(m);
    QCOMPARE(std::count(row.begin(), row.end(), ','), 9L);
    QCOMPARE(row.back(), '\n');
    QCOMPARE(row.find(",,") != std::string::npos, !m.epoch_end);
  }
  QCOMPARE(std::string(qs::train_steps_csv_header()),
           std::string("step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow\n"));
  if (weights.isEmpty() && optimizer == "adam")
    QVERIFY(steps[5].flips() > nweights / 2);  // fp32 Adam changes (almost) every weight each step
  if (optimizer == "grid") QVERIFY(steps[5].flips() < nweights / 4);  // on a grid most updates stall
}

void tst_Trainer::gridKeepsWeightsOnTheGrid() {
  qs::TrainConfig c = small_config();
  c.optimizer = qs::OptimizerKind::Grid;
  c.weights = "e4m3fn";
  qs::Trainer t(c, small_data().train, small_data().test);
  const qs::GridOptim* g = t.grid_optimizer();
  QVERIFY(g);
  t.run();
  for (int l = 0; l < t.model().layer_count(); ++l) {
    const qs::MlpLayer& L = t.model().layer(l);
    QVERIFY(same_bits(L.W, L.Wq));  // master and model agree
    for (float w : L.W) QVERIFY(g->grid()[g->index_of(w)] == w);
    for (float b : L.b) QVERIFY(g->grid()[g->index_of(b)] == b);
  }
}

void tst_Trainer::learns() {
  const qs::DataSplit d = qs::make_synthetic(4000, 500, 5);
  qs::TrainConfig c = small_config();
  c.epochs = 4;
  c.weights = c.acts = "e4m3fn";
  qs::Trainer t(c, d.train, d.test);
  std::vector<double> loss;
  const qs::TrainResult r = t.run([&](qs::StepMetrics m) {
    loss.push_back(m.loss);
    return true;
  });
  QVERIFY2(r.test_acc > 0.7, std::to_string(r.test_acc).c_str());  // chance is 0.1
  QVERIFY(loss.back() < loss.front() / 2);
  QVERIFY(r.epochs.back().loss < r.epochs.front().loss);
}

void tst_Trainer::stopAndStepLimit() {
  const Run r = run(small_config(), 5);
  QCOMPARE(r.result.status, qs::TrainResult::Status::Stopped);
  QCOMPARE(r.result.steps, uint64_t(5));
  QCOMPARE(r.steps.size(), std::size_t(5));
  QVERIFY(r.result.test_acc >= 0 && r.result.test_acc <= 1);  // the final weights are still evaluated
  QVERIFY(r.result.message.find("step 5") != std::string::npos);
  qs::TrainConfig c = small_config();
  c.max_steps = 13;
  const Run m = run(c);
  QCOMPARE(m.result.steps, uint64_t(13));
  QCOMPARE(m.result.epochs.size(), std::size_t(1));
  QCOMPARE(m.result.status, qs::TrainResult::Status::Stopped);
  // A trainer runs once.
  qs::Trainer t(small_config(), small_data().train, small_data().test);
  t.run();
  QVERIFY_THROWS_EXCEPTION(std::logic_error, t.run());
}

// The cancel flag ends a run inside the step in progress (between layers), not after it: set during step 3's
// callback (which still says go on), step 4 is abandoned, and the weights are those after step 3, bit for
// bit the weights of a run that the callback stopped after step 3. Unscaled schemes (FORMAT/none) too.
void tst_Trainer::cancelFlagStopsWithinAStep() {
  for (const char* w : {"", "e4m3fn/none"}) {
    qs::TrainConfig c = small_config();
    c.weights = w;
    c.acts = *w ? "e5m2/none" : "";
    const Run ref = run(c, 3);
    std::atomic<bool> cancel{false};
    qs::Trainer t(c, small_data().train, small_data().test);
    std::vector<qs::StepMetrics> steps;
    const qs::TrainResult r = t.run([&](qs::StepMetrics m) {
      steps.push_back(std::move(m));
      if (steps.size() == 3) cancel = true;
      return true;
    }, &cancel);
    QCOMPARE(r.status, qs::TrainResult::Status::Stopped);
    QCOMPARE(r.steps, uint64_t(3));
    QCOMPARE(steps.size(), std::size_t(3));
    QVERIFY2(r.message.find("during step 4") != std::string::npos, r.message.c_str());
    QVERIFY(r.test_acc >= 0 && r.test_acc <= 1);  // the final evaluation still runs
    for (int l = 0; l < t.model().layer_count(); ++l) QVERIFY(same_bits(t.model().layer(l).W, ref.W[std::size_t(l)]));
  }
}

void tst_Trainer::divergenceStops() {
  qs::TrainConfig c = small_config();
  c.optimizer = qs::OptimizerKind::Sgd;
  c.lr = 1e8;
  const Run r = run(c);
  QCOMPARE(r.result.status, qs::TrainResult::Status::Diverged);
  QVERIFY(!r.steps.empty());
  QVERIFY(std::isnan(r.steps.back().loss));  // the diverging step is delivered
  for (std::size_t i = 0; i + 1 < r.steps.size(); ++i) QVERIFY(std::isfinite(r.steps[i].loss));
  QVERIFY2(r.result.message.find("not finite") != std::string::npos, r.result.message.c_str());
  QVERIFY(r.result.message.find('\n') == std::string::npos);
  QCOMPARE(r.result.steps, uint64_t(r.steps.size()));
}

void tst_Trainer::badConfig_data() {
  QTest::addColumn<QString>("what");
  QTest::addColumn<QString>("needle");
  QTest::newRow("epochs_0") << "epochs" << "epochs";
  QTest::newRow("batch_0") << "batch" << "batch";
  QTest::newRow("lr_negative") << "lr" << "learning rate";
  QTest::newRow("lr_nan") << "lr_nan" << "learning rate";
  QTest::newRow("momentum_1") << "momentum" << "momentum";
  QTest::newRow("bad_weight_scheme") << "scheme" << "e9m9";
  QTest::newRow("bad_granularity") << "gran" << "diagonal";
  QTest::newRow("grid_with_channel_scheme") << "grid_channel" << "grid optimizer";
  QTest::newRow("grid_unsigned") << "grid_unsigned" << "signed";
  QTest::newRow("delayed_block") << "delayed_block" << "delayed scaling";
  QTest::newRow("sizes_vs_data") << "sizes" << "inputs";
  QTest::newRow("rung_clip_0") << "rung_clip" << "rung_clip";
  QTest::newRow("history_0") << "history" << "history";
  QTest::newRow("one_layer_size") << "one_size" << "network";
}

void tst_Trainer::badConfig() {
  QFETCH(QString, what);
  QFETCH(QString, needle);
  qs::TrainConfig c = small_config();
  if (what == "epochs") c.epochs = 0;
  if (what == "batch") c.batch = 0;
  if (what == "lr") c.lr = -1;
  if (what == "lr_nan") c.lr = std::nan("");
  if (what == "momentum") c.momentum = 1.0;
  if (what == "scheme") c.weights = "e9m9";
  if (what == "gran") c.acts = "e4m3fn/diagonal";
  if (what == "grid_channel") c.optimizer = qs::OptimizerKind::Grid, c.weights = "int8/channel:0";
  if (what == "grid_unsigned") c.optimizer = qs::OptimizerKind::Grid, c.weights = "uint8";
  if (what == "delayed_block") c.scaling = qs::ScalingMode::Delayed, c.acts = "e4m3fn/block:32";
  if (what == "sizes") c.sizes = {100, 10};
  if (what == "rung_clip") c.rung_clip = 0;
  if (what == "history") c.history = 0;
  if (what == "one_size") c.sizes = {784};
  std::string err;
  try {
    qs::Trainer t(c, small_data().train, small_data().test);
  } catch (const std::exception& e) {
    err = e.what();
  }
  QVERIFY2(!err.empty(), "a bad configuration was accepted");
  QVERIFY2(err.find(needle.toStdString()) != std::string::npos, err.c_str());
  QVERIFY(err.find('\n') == std::string::npos);
}

void tst_Trainer::saveAndLoad() {
  if (!qs::tensor_reader_available("safetensors")) QSKIP("this build has no .safetensors reader");
  qs::TrainConfig c = small_config();
  c.epochs = 1;
  qs::Trainer t(c, small_data().train, small_data().test);
  t.run();
  QTemporaryDir dir;
  const std::string path = dir.filePath("w.safetensors").toStdString();
  qs::save_mlp_safetensors(path, t.model(), {{"note", "quote \" and backslash \\"}});
  // The analysis tools' reader opens it: names, dtypes, shapes.
  const auto file = qs::open_tensor_file(path);
  QCOMPARE(file->kind(), std::string("safetensors"));
  QCOMPARE(file->tensors().size(), std::size_t(6));
  const char* names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  const std::vector<int64_t> shapes[] = {{48, 784}, {48}, {24, 48}, {24}, {10, 24}, {10}};
  for (std::size_t i = 0; i < 6; ++i) {
    QCOMPARE(file->tensors()[i].name, std::string(names[i]));
    QCOMPARE(file->tensors()[i].dtype, qs::DType::F32);
    QCOMPARE(file->tensors()[i].shape, shapes[i]);
  }
  qs::Mlp back = qs::load_mlp_safetensors(path, 1);
  QCOMPARE(back.sizes(), t.model().sizes());
  for (int l = 0; l < back.layer_count(); ++l) {
    QVERIFY(same_bits(back.layer(l).W, t.model().layer(l).W));
    QVERIFY(same_bits(back.layer(l).b, t.model().layer(l).b));
  }
  QCOMPARE(back.accuracy(*small_data().test, 64), t.model().accuracy(*small_data().test, 64));
  // Atomic: a failed save leaves nothing.
  QVERIFY_THROWS_EXCEPTION(qs::IoError, qs::save_mlp_safetensors(dir.filePath("no/such/dir/w.safetensors").toStdString(), back));
}

void tst_Trainer::loadRejectsOtherFiles() {
  if (!qs::tensor_reader_available("safetensors")) QSKIP("this build has no .safetensors reader");
  QTemporaryDir dir;
  // A safetensors file with a lone fc1.weight (no bias).
  const std::string header = R"({"fc1.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += header + std::string(24, '\0');
  const std::string path = dir.filePath("x.safetensors").toStdString();
  std::ofstream(path, std::ios::binary) << bytes;
  std::string err;
  try {
    qs::load_mlp_safetensors(path);
  } catch (const qs::IoError& e) {
    err = e.what();
  }
  QVERIFY2(err.find("fc1.bias") != std::string::npos, err.c_str());
  QVERIFY_THROWS_EXCEPTION(qs::IoError, qs::load_mlp_safetensors(dir.filePath("missing.safetensors").toStdString()));
}

void tst_Trainer::ptq() {
  qs::TrainConfig c = small_config();
  c.epochs = 3;
  qs::Trainer t(c, small_data().train, small_data().test);
  const qs::TrainResult r = t.run();
  const std::vector<qs::PtqRow> rows = qs::evaluate_ptq(t.model(), *small_data().train, *small_data().test,
                                                        {.calib_images = 300, .threads = 1, .latency_batch = 100, .repeats = 3});
  QCOMPARE(rows.size(), std::size_t(3));
  QCOMPARE(rows[0].mode, std::string("fp32"));
  QCOMPARE(rows[1].mode, std::string("int8-dynamic"));
  QCOMPARE(rows[2].mode, std::string("int8-static"));
  QCOMPARE(rows[0].test_acc, r.test_acc);  // fp32 evaluation of an fp32-trained network: the same accuracy
  for (const qs::PtqRow& p : rows) {
    QVERIFY(p.latency_ms > 0 && p.us_per_image > 0);
    QVERIFY2(std::fabs(p.test_acc - rows[0].test_acc) < 0.03, (p.mode + " " + std::to_string(p.test_acc)).c_str());
  }
  QCOMPARE(rows[0].weight_bytes, std::size_t(4 * (784 * 48 + 48 * 24 + 24 * 10)));
  QVERIFY(rows[1].weight_bytes < rows[0].weight_bytes / 2);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::evaluate_ptq(qs::Mlp({100, 10}), *small_data().train, *small_data().test));
}

QTEST_APPLESS_MAIN(tst_Trainer)
#include "tst_trainer.moc"
