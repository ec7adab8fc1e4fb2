// `train`: an MLP on Fashion-MNIST (or the synthetic set) in fp32, with fake-quantized weights/activations
// (STE), or with GridOptim on a format's grid; one progress line per epoch, int8 PTQ lines, and a final line
// with test_accuracy=. Exercise: `quantscope-cli train --dataset synthetic --epochs 2`, tests/cli/cli_train.cmake.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "cli/commands.h"
#include "cuda/device.h"
#include "cuda/train_cuda.cuh"
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
    std::string backend = "cpu", int8_x = "tensor", int8_w = "channel";
    bool int8 = false;
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
  c->add_option("--backend", o.backend, "cpu | cuda (the GPU: the CPU lab's run bit for bit, or int8 layers with --int8)")
      ->capture_default_str();
  c->add_flag("--int8", o.int8, "int8 linear layers (X and W quantized in every forward, int8 GEMM; --backend cuda)");
  c->add_option("--int8-x", o.int8_x, "int8 layers: activation scales per tensor | row")->capture_default_str();
  c->add_option("--int8-w", o.int8_w, "int8 layers: weight scales per channel | tensor")->capture_default_str();
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
    cfg.int8 = o.int8;
    if (o.int8_x != "tensor" && o.int8_x != "row") throw std::invalid_argument("--int8-x must be tensor or row");
    if (o.int8_w != "channel" && o.int8_w != "tensor") throw std::invalid_argument("--int8-w must be channel or tensor");
    cfg.int8_x_per_row = o.int8_x == "row";
    cfg.int8_w_per_tensor = o.int8_w == "tensor";
    if (o.backend != "cpu" && o.backend != "cuda") throw std::invalid_argument("--backend must be cpu or cuda");
    const bool gpu = o.backend == "cuda";
    if (wd_opt->count() && !(o.weight_decay >= 0 && std::isfinite(o.weight_decay)))
      throw std::invalid_argument("--weight-decay must be a number >= 0");
    validate(cfg);  // bad hyper-parameters and schemes fail before any data is read
    if (cfg.int8 && !gpu) throw std::invalid_argument("--int8 trains on the GPU: add --backend cuda");
    if (gpu)  // no device, or a scheme the GPU path lacks: one line before any data is read
      if (const std::string why = cuda::training_unsupported(cfg); !why.empty()) throw std::runtime_error(why);
    if (!o.csv.empty()) check_writable(o.csv);
    if (!o.save.empty()) check_writable(o.save);

    DataSplit data;
    if (o.dataset == "synthetic") {
      data = make_synthetic_dataset(6000, 1000, o.seed);
    } else if (o.dataset == "fashion-mnist") {
      const std::string dir = o.data_dir.empty() ? default_fashion_mnist_dir() : o.data_dir;
      std::string missing;
      if (!fashion_mnist_present(dir, &missing) && ds->count() == 0 && o.data_dir.empty()) {
        std::cerr << "train: Fashion-MNIST not found (" << missing << "); " << fashion_mnist_install_hint()
                  << ". Using the synthetic data set.\n";
        data = make_synthetic_dataset(6000, 1000, o.seed);
      } else {
        data = load_fashion_mnist(dir);  // missing or corrupt files: one-line IoError
      }
    } else {
      throw std::invalid_argument("--dataset '" + o.dataset + "' is not fashion-mnist or synthetic");
    }

    std::unique_ptr<Trainer> trainer;
    if (!gpu) trainer = std::make_unique<Trainer>(cfg, data.train, data.test);
    std::string sizes;
    for (int s : cfg.sizes) sizes += (sizes.empty() ? "" : "-") + std::to_string(s);
    const std::string where = gpu ? "gpu " + cuda::device_info().name : std::to_string(trainer->model().threads()) + " thread(s)";
    std::printf("train: %s (%zu train, %zu test images), mlp %s, optimizer=%s lr=%g, weights=%s acts=%s, %s\n",
                data.synthetic ? "synthetic" : "fashion-mnist", data.train->size(), data.test->size(), sizes.c_str(), to_string(cfg.optimizer), cfg.effective_lr(),
                cfg.int8 ? (cfg.int8_w_per_tensor ? "int8/tensor" : "int8/channel")
                         : cfg.weights.empty() ? (cfg.optimizer == OptimizerKind::Grid ? "grid:e4m3fn" : "fp32") : cfg.weights.c_str(),
                cfg.int8 ? (cfg.int8_x_per_row ? "int8/row" : "int8/tensor") : cfg.acts.empty() ? "fp32" : cfg.acts.c_str(),
                where.c_str());
    if (gpu)
      if (const std::string host = cuda::training_host_work(cfg); !host.empty()) std::printf("note: %s\n", host.c_str());
    std::fflush(stdout);

    std::string csv = train_steps_csv_header();
    // Per-epoch means: loss and accuracy weighted by batch rows, flips per step, stalls per update.
    uint64_t epoch_flips = 0, epoch_updates = 0, epoch_stalls = 0, epoch_rows = 0;
    double epoch_loss = 0, epoch_hits = 0;
    auto on_step = [&](StepMetrics m) {
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
    };
    std::vector<MlpLayer> gpu_layers;
    const TrainResult r = gpu ? cuda::train_cuda(cfg, data.train, data.test, on_step, nullptr, &gpu_layers)
                              : trainer->run(on_step);
    // The trained network on the host: the CPU trainer's, or the GPU's layers copied into an Mlp.
    std::unique_ptr<Mlp> gpu_model;
    if (gpu) {
      gpu_model = std::make_unique<Mlp>(cfg.sizes, cfg.seed, cfg.threads);
      for (int l = 0; l < gpu_model->layer_count(); ++l) {
        MlpLayer& L = gpu_model->layer(l);
        L.W = gpu_layers[std::size_t(l)].W;
        L.b = gpu_layers[std::size_t(l)].b;
        L.Wq = gpu_layers[std::size_t(l)].Wq;
      }
    }
    Mlp& model = gpu ? *gpu_model : trainer->model();
    if (!o.csv.empty()) write_file_atomic(o.csv, csv);
    if (r.status == TrainResult::Status::Diverged)
      throw std::runtime_error("train: " + r.message + (o.csv.empty() ? "" : " (steps so far in " + o.csv + ")"));
    // The mean training time per epoch (without the test evaluation).
    double train_s = 0;
    for (const EpochSummary& e : r.epochs) train_s += e.seconds;
    if (!r.epochs.empty()) std::printf("epoch_time_s=%.3f (mean training time per epoch)\n", train_s / double(r.epochs.size()));

    if (!o.save.empty()) {
      save_mlp_safetensors(o.save, model,
                           {{"optimizer", to_string(cfg.optimizer)}, {"weights", cfg.weights}, {"acts", cfg.acts},
                            {"seed", std::to_string(cfg.seed)}, {"backend", o.backend}, {"int8", cfg.int8 ? "1" : "0"}, {"test_accuracy", std::to_string(r.test_acc)}});
      std::printf("saved %s\n", o.save.c_str());
    }
    if (!o.no_ptq) {
      for (const PtqRow& p : evaluate_ptq(model, *data.train, *data.test))
        std::printf("ptq mode=%s test_acc=%.4f latency_ms=%.3f us_per_image=%.2f weight_bytes=%zu\n", p.mode.c_str(),
                    p.test_acc, p.latency_ms, p.us_per_image, p.weight_bytes);
    }
    std::printf("done status=%s steps=%llu epochs=%zu time_s=%.2f test_accuracy=%.4f\n", to_string(r.status),
                (unsigned long long)r.steps, r.epochs.size(), r.seconds, r.test_acc);
  });
}

}  // namespace qs::cli
