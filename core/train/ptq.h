// Int8 post-training quantization of a trained Mlp with the CPU int8 GEMM (qs::QuantizedLinear): weights
// int8 per output channel, activations quantized per row at run time (dynamic) or with scales from
// MinMax observers calibrated on training images (static). Reports test accuracy, latency and weight memory
// against the float32 network measured in the same run. Exercise: tests/tst_trainer.cpp,
// `quantscope-cli train` (the ptq lines).
//
//   std::vector<qs::PtqRow> rows = qs::evaluate_ptq(net, *data.train, *data.test, {});
//   // rows[0]: fp32, rows[1]: int8-dynamic, rows[2]: int8-static
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "train/dataset.h"
#include "train/mlp.h"

namespace qs {

struct PtqConfig {
  std::size_t calib_images = 1000;  // the first images of the training set feed the static observers
  int threads = 1;                  // for fp32 and int8 alike (the ratio is what matters)
  int latency_batch = 1000;         // images per timed forward pass
  int repeats = 7;                  // timed passes; the median is reported
};

struct PtqRow {
  std::string mode;                 // "fp32", "int8-dynamic", "int8-static"
  double test_acc = 0;
  double latency_ms = 0;            // median time of one forward pass of latency_batch test images
  double us_per_image = 0;
  std::size_t weight_bytes = 0;     // weight matrices (int8 packed + scales, or float32); biases not counted
};

// Evaluates the network's master weights (float32, no fake quantization) and their int8 versions on the
// whole test set. Throws std::invalid_argument when the data does not fit the network.
std::vector<PtqRow> evaluate_ptq(const Mlp& net, const Dataset& train, const Dataset& test, const PtqConfig& cfg = {});

}  // namespace qs
