// `train`: an MLP on Fashion-MNIST (or the synthetic set) in fp32, with fake-quantized weights/activations
// (STE), or with GridOptim on a format's grid; one progress line per epoch, int8 PTQ lines, and a final line
// with test_accuracy=. Exercise: `quantscope-cli train --dataset synthetic --epochs 2`, tests/cli/cli_train.cmake.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli/commands.h"
#include "io/atomic_file.h"
#include "train/dataset.h"
#include "train/mlp_io.h"
#include "train/ptq.h"
#include "train/trainer.h"

namespace qs::cli {

void add_train(CLI::App& app) {
  auto* c = app.add_subcommand("train", "Train an MLP (784-256-128-10) in fp32, with QAT (STE) or GridOptim; steps CSV, int8 PTQ");
  struct Opts {
    std::string dataset = "fashion-mnist", data_dir, optimizer = "adam", weights, acts, csv, save;
    std::string scaling = "current", rounding = "nearest", overflow = "saturate";
    int epochs = 15, batch = 128, threads = 0, history = 16;
    double lr = 0, momentum = 0.9, weight_decay = -1, rung_clip = 10;
    uint64_t seed = 1;
    bool ste_zero_clipped = false, no_ptq = false;
  };
  static Opts o;
  auto* ds = c->add_option("--dataset", o.dataset, "fashion-mnist | synthetic")->capture_default_str();
  c->add_option("--data-dir", o.data_dir, std::string("Folder with the Fashion-MNIST IDX files (default ") +
                                              default_fashion_mnist_dir() + ")");
  c->add_option("--epochs", o.epochs, "Epochs (1..10000)")->capture_default_str();
  c->add_option("--batch", o.batch, "Batch size (1..65536)")->capture_default_str();
  auto* lr_opt = c->add_option("--lr", o.lr, "Learning rate (default: sgd 0.05, adam 0.001; grid: the GridOptim scale, 6)");
  c->add_option("--optimizer", o.optimizer, "sgd | adam | grid")->capture_default_str();
  c->add_option("--weights", o.weights, "Weight scheme, e.g. e4m3fn/tensor (grid: the grid format, default e4m3fn)");
  c->add_option("--acts", o.acts, "Activation scheme, e.g. e4m3fn/tensor");
  c->add_option("--seed", o.seed, "Seed of initialisation, shuffling and stochastic rounding")->capture_default_str()->check(seed_check());
  c->add_option("--csv", o.csv, "Write one row per step: step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow");
  c->add_option("--save", o.save, "Write the trained float32 weights as .safetensors");
  c->add_option("--threads", o.threads, "Threads (0 = all cores; at most 2 are used; results do not depend on it)")
      ->capture_default_str()->check(threads_check());
  c->add_option("--scaling", o.scaling, "current | delayed (amax history) scaling of the schemes")->capture_default_str();
  c->add_option("--history", o.history, "Delayed scaling: amax history length")->capture_default_str();
  c->add_option("--rounding", o.rounding, "nearest | stochastic rounding of the fake quantization")->capture_default_str();
  c->add_option("--overflow", o.overflow, "saturate | ieee")->capture_default_str();
  c->add_flag("--ste-zero-clipped", o.ste_zero_clipped, "STE: no gradient where the value was clipped");
  c->add_option("--momentum", o.momentum, "Momentum (sgd, grid)")->capture_default_str();
  auto* wd_opt = c->add_option("--weight-decay", o.weight_decay, "Weight decay (default: grid 1e-4, else 0)");
  c->add_option("--rung-clip", o.rung_clip, "Grid: most rungs one step may move")->capture_default_str();
  c->add_flag("--no-ptq", o.no_ptq, "Skip the int8 post-training quantization report");
  c->callback([ds, lr_opt, wd_opt] {
    TrainConfig cfg;
    cfg.epochs = o.epochs;
    cfg.batch = o.batch;
    cfg.lr = o.lr;
    if (lr_opt->count() && !(o.lr > 0 && std::isfinite(o.lr))) throw std::invalid_argument("--lr must be a positive number");
    cfg.optimizer = parse_optimizer(o.optimizer);
    cfg.momentum = o.momentum;
    cfg.weight_decay = o.weight_decay;
    cfg.rung_clip = o.rung_clip;
    cfg.weights = o.weights;
    cfg.acts = o.acts;
    cfg.rounding = parse_rounding(o.rounding);
    cfg.overflow = parse_overflow(o.overflow);
    cfg.scaling = parse_scaling_mode(o.scaling);
    cfg.history = o.history;
    cfg.ste_zero_clipped = o.ste_zero_clipped;
    cfg.seed = o.seed;
    cfg.threads = o.threads;
    if (wd_opt->count() && !(o.weight_decay >= 0 && std::isfinite(o.weight_decay)))
      throw std::invalid_argument("--weight-decay must be a number >= 0");
    validate(cfg);  // bad hyper-parameters and schemes fail before any data is read
    if (!o.csv.empty()) check_writable(o.csv);
    if (!o.save.empty()) check_writable(o.save);

    DataSplit data;
    if (o.dataset == "synthetic") {
      data = make_synthetic(6000, 1000, o.seed);
    } else if (o.dataset == "fashion-mnist") {
      const std::string dir = o.data_dir.empty() ? default_fashion_mnist_dir() : o.data_dir;
      std::string missing;
      if (!fashion_mnist_present(dir, &missing) && ds->count() == 0 && o.data_dir.empty()) {
        std::cerr << "train: Fashion-MNIST not found (" << missing << "); " << fashion_mnist_install_hint()
                  << ". Using the synthetic data set.\n";
        data = make_synthetic(6000, 1000, o.seed);
      } else {
        data = load_fashion_mnist(dir);  // missing or corrupt files: one-line IoError
      }
    } else {
      throw std::invalid_argument("--dataset '" + o.dataset + "' is not fashion-mnist or synthetic");
    }

    Trainer trainer(cfg, data.train, data.test);
    std::string sizes;
    for (int s : cfg.sizes) sizes += (sizes.empty() ? "" : "-") + std::to_string(s);
    std::printf("train: %s (%zu train, %zu test images), mlp %s, optimizer=%s lr=%g, weights=%s acts=%s, %d thread(s)\n",
                data.synthetic ? "synthetic" : "fashion-mnist", data.train->size(), data.test->size(), sizes.c_str(), to_string(cfg.optimizer), cfg.effective_lr(),
                cfg.weights.empty() ? (cfg.optimizer == OptimizerKind::Grid ? "grid:e4m3fn" : "fp32") : cfg.weights.c_str(),
                cfg.acts.empty() ? "fp32" : cfg.acts.c_str(), trainer.model().threads());
    std::fflush(stdout);

    std::string csv = train_steps_csv_header();
    // Per-epoch means: loss and accuracy weighted by batch rows, flips per step, stalls per update.
    uint64_t epoch_flips = 0, epoch_updates = 0, epoch_stalls = 0, epoch_rows = 0;
    double epoch_loss = 0, epoch_hits = 0;
    const TrainResult r = trainer.run([&](StepMetrics m) {
      if (!o.csv.empty()) csv += train_steps_csv_row(m);
      epoch_flips += m.flips();
      epoch_updates += m.updates();
      epoch_stalls += m.bit_stalls();
      epoch_rows += uint64_t(m.batch);
      epoch_loss += m.loss * m.batch;
      epoch_hits += m.train_acc * m.batch;
      if (m.epoch_end) {
        std::printf("epoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f flips_per_step=%.0f bit_stall_frac=%.4f time_s=%.2f\n",
                    m.epoch, cfg.epochs, epoch_loss / double(epoch_rows), epoch_hits / double(epoch_rows), m.test_acc,
                    double(epoch_flips) / m.steps_per_epoch,
                    epoch_updates ? double(epoch_stalls) / double(epoch_updates) : 0.0, m.seconds);
        std::fflush(stdout);
        epoch_flips = epoch_updates = epoch_stalls = epoch_rows = 0;
        epoch_loss = epoch_hits = 0;
      }
      return true;
    });
    if (!o.csv.empty()) write_file_atomic(o.csv, csv);
    if (r.status == TrainResult::Status::Diverged)
      throw std::runtime_error("train: " + r.message + (o.csv.empty() ? "" : " (steps so far in " + o.csv + ")"));
    // The mean training time per epoch (without the test evaluation).
    double train_s = 0;
    for (const EpochSummary& e : r.epochs) train_s += e.seconds;
    if (!r.epochs.empty()) std::printf("epoch_time_s=%.3f (mean training time per epoch)\n", train_s / double(r.epochs.size()));

    if (!o.save.empty()) {
      save_mlp_safetensors(o.save, trainer.model(),
                           {{"optimizer", to_string(cfg.optimizer)}, {"weights", cfg.weights}, {"acts", cfg.acts},
                            {"seed", std::to_string(cfg.seed)}, {"test_accuracy", std::to_string(r.test_acc)}});
      std::printf("saved %s\n", o.save.c_str());
    }
    if (!o.no_ptq) {
      for (const PtqRow& p : evaluate_ptq(trainer.model(), *data.train, *data.test))
        std::printf("ptq mode=%s test_acc=%.4f latency_ms=%.3f us_per_image=%.2f weight_bytes=%zu\n", p.mode.c_str(),
                    p.test_acc, p.latency_ms, p.us_per_image, p.weight_bytes);
    }
    std::printf("done status=%s steps=%llu epochs=%zu time_s=%.2f test_accuracy=%.4f\n", to_string(r.status),
                (unsigned long long)r.steps, r.epochs.size(), r.seconds, r.test_acc);
  });
}

}  // namespace qs::cli
