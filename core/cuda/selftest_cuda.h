// The CUDA correctness suite: every kernel against the CPU reference, bit for bit (within a named tolerance
// for the float32 backward). Called by `quantscope-cli selftest --backend cuda` and by the ctest entry
// tst_cuda_selftest (tests/core), which skips without a GPU. Plain C++: built with and without CUDA (then
// every case fails with device_info()'s message, so callers check device_info().available first).
//
//   qs::cuda::run_selftest_cuda([](const qs::SelftestCase& c) { if (!c.passed) puts(c.name.c_str()); });
#pragma once

#include <functional>

#include "format/selftest.h"

namespace qs::cuda {

// All groups below, in this order. Case names end in "/cuda" and reproduce their inputs (seeded by shape).
void run_selftest_cuda(const std::function<void(const SelftestCase&)>& report);

// Encoders, int8 quantization, apply_scheme_cuda (selftest_cuda_encode.cpp).
void run_cuda_encode_selftest(const std::function<void(const SelftestCase&)>& report);
// The int8 GEMM kernels and the quantized linear layer's backward (selftest_cuda_gemm.cpp).
void run_cuda_gemm_selftest(const std::function<void(const SelftestCase&)>& report);
// The int8 layer, optimizers, training fake quantization, delayed scaling, training steps (selftest_cuda_train.cpp).
void run_cuda_train_selftest(const std::function<void(const SelftestCase&)>& report);

}  // namespace qs::cuda
