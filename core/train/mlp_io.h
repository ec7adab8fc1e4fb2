// Saving and loading an Mlp's float32 master weights as .safetensors (tensors fc<k>.weight [out, in] and
// fc<k>.bias [out], k = 1..layers, the PyTorch nn.Linear layout), so the analysis tools open the file.
// Exercise: tests/tst_trainer.cpp, `quantscope-cli train --save w.safetensors` then
// `quantscope-cli analyze --in w.safetensors --scheme e4m3fn/tensor`.
//
//   qs::save_mlp_safetensors("w.safetensors", net, {{"optimizer", "adam"}});   // atomic; throws IoError
//   qs::Mlp back = qs::load_mlp_safetensors("w.safetensors");                 // throws IoError
#pragma once

#include <map>
#include <string>

#include "train/mlp.h"

namespace qs {

// Writes the master weights (W, b) atomically; `metadata` goes into the header's "__metadata__" (string
// values), together with "sizes" (e.g. "784,256,128,10").
void save_mlp_safetensors(const std::string& path, const Mlp& net,
                          const std::map<std::string, std::string>& metadata = {});

// Reads fc1.weight, fc1.bias, fc2.weight, ... (any float dtype; shapes must chain) into a float32 Mlp.
// threads as for Mlp. Throws IoError naming the file and what is missing or inconsistent.
Mlp load_mlp_safetensors(const std::string& path, int threads = 0);

}  // namespace qs
