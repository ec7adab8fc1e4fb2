// `selftest --backend cuda`, encoder part: every format x rounding x overflow x {unscaled, scaled} through the
// CUDA fake-quant kernel against encode_ref on the probe inputs; int8 quantization per tensor and per row
// (float32, float16) against quantize_int8_ref; apply_scheme_cuda against apply_scheme. Bit for bit.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/fake_quant.cuh"
#include "cuda/quantize_int8.cuh"
#include "cuda/scheme_quant.cuh"
#include "cuda/selftest_cuda.h"
#include "format/float16.h"
#include "format/selftest.h"
#include "quant/int8_quant.h"
#include "quant/scheme.h"

namespace qs::cuda {

namespace {
// Every format x rounding x overflow x {unscaled, scaled}: the CUDA kernel against encode_ref on the
// probe inputs (every code's value, midpoints, neighbours, specials, seeded random inputs).
void encode_cases(const std::function<void(const SelftestCase&)>& report) {
  std::vector<Format> formats = named_formats();
  for (const std::string& s : sweep_8bit_specs()) formats.push_back(parse_format(s));
  uint64_t seed = 1;
  for (const Format& f : formats) {
    const std::vector<float> inputs = probe_inputs(f, seed++, f.bits > 8 ? 200000 : 500000);
    const std::size_t n = inputs.size();
    for (Rounding r : kAllRoundings)
      for (Overflow o : {Overflow::Saturate, Overflow::Ieee})
        for (float scale : {1.0f, 0.3f}) {
          EncodeOptions opt;
          opt.rounding = r;
          opt.overflow = o;
          opt.seed = 0x5eed0000u + seed;
          SelftestCase c;
          c.name = f.name + '/' + to_string(r) + '/' + to_string(o) + '/' + (scale == 1.0f ? "unscaled" : "scaled") + "/cuda";
          std::vector<uint16_t> c_ref(n), c_dev(n);
          std::vector<float> v_ref(n), v_dev(n);
          EncodeJob job;
          job.x = inputs.data();
          job.n = n;
          job.scale = scale;
          job.index0 = 12345;
          job.codes16 = c_ref.data();
          job.values = v_ref.data();
          const EncodeStats s_ref = encode_f32_ref(f, opt, job);
          job.codes16 = c_dev.data();
          job.values = v_dev.data();
          const EncodeStats s_dev = encode_f32_cuda(f, opt, job);
          c.passed = true;
          for (std::size_t i = 0; i < n && c.passed; ++i) {
            uint32_t a, b;
            std::memcpy(&a, &v_ref[i], 4);
            std::memcpy(&b, &v_dev[i], 4);
            const bool both_nan = std::isnan(v_ref[i]) && std::isnan(v_dev[i]);
            if (c_ref[i] != c_dev[i] || (!both_nan && a != b)) {
              c.passed = false;
              c.detail = "element " + std::to_string(i) + ": ref code " + std::to_string(c_ref[i]) + ", cuda code " +
                         std::to_string(c_dev[i]);
            }
          }
          if (c.passed && (s_ref.overflow != s_dev.overflow || s_ref.underflow != s_dev.underflow || s_ref.nan != s_dev.nan)) {
            c.passed = false;
            c.detail = "stats differ";
          }
          // Values only (the kernel's fast paths for plain formats) against reference values v_ref: the same call,
          // then for stochastic rounding one from a first index that is a multiple of 4 (the kernel folds the hash's
          // first step per group of four there), against the reference from that index.
          std::vector<float> v_fast(n);
          const auto values_only = [&](const EncodeStats& s_want, const std::string& what) {
            job.codes16 = nullptr;
            job.values = v_fast.data();
            const EncodeStats s_fast = encode_f32_cuda(f, opt, job);
            for (std::size_t i = 0; i < n && c.passed; ++i) {
              uint32_t a, b;
              std::memcpy(&a, &v_ref[i], 4);
              std::memcpy(&b, &v_fast[i], 4);
              if (!(std::isnan(v_ref[i]) && std::isnan(v_fast[i])) && a != b) {
                c.passed = false;
                c.detail = what + ", element " + std::to_string(i);
              }
            }
            if (c.passed && (s_want.overflow != s_fast.overflow || s_want.underflow != s_fast.underflow || s_want.nan != s_fast.nan)) {
              c.passed = false;
              c.detail = what + ": stats differ";
            }
          };
          if (c.passed) values_only(s_ref, "values-only kernel");
          if (c.passed && r == Rounding::Stochastic) {
            job.index0 = 4096;
            job.codes16 = nullptr;
            job.values = v_ref.data();
            values_only(encode_f32_ref(f, opt, job), "values-only kernel from index 4096");
          }
          report(c);
        }
  }
  // Int8 quantization per tensor and per row, float32 and float16 inputs, odd shapes and specials.
  const std::size_t shapes[][2] = {{1, 1}, {3, 5}, {17, 1000}, {64, 4096}, {2, 8191}};
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (const auto& sh : shapes)
    for (bool per_row : {false, true})
      for (bool f16 : {false, true}) {
        const std::size_t rows = sh[0], cols = sh[1], n = rows * cols, ns = per_row ? rows : 1;
        std::vector<float> x(n);
        std::vector<uint16_t> h(n);
        for (std::size_t i = 0; i < n; ++i) {
          x[i] = nd(gen) * float(1 + i % 7);
          if (i % 997 == 5) x[i] = NAN;
          if (i % 1999 == 7) x[i] = -INFINITY;
          h[i] = float_to_half(x[i]);
          if (f16) x[i] = half_to_float(h[i]);
        }
        std::vector<int8_t> q(n), qr(n);
        std::vector<float> s(ns), sr(ns);
        if (f16) {
          quantize_int8_ref_f16(h.data(), rows, cols, per_row, qr.data(), sr.data());
          quantize_int8_cuda(nullptr, h.data(), rows, cols, per_row, q.data(), s.data());
        } else {
          quantize_int8_ref(x.data(), rows, cols, per_row, qr.data(), sr.data());
          quantize_int8_cuda(x.data(), nullptr, rows, cols, per_row, q.data(), s.data());
        }
        SelftestCase c;
        c.name = "int8-quant/" + std::to_string(rows) + "x" + std::to_string(cols) + (per_row ? "/row" : "/tensor") +
                 (f16 ? "/fp16" : "/fp32") + "/cuda";
        c.passed = std::memcmp(q.data(), qr.data(), n) == 0 && std::memcmp(s.data(), sr.data(), ns * 4) == 0;
        if (!c.passed) c.detail = "codes or scales differ from quantize_int8_ref";
        report(c);
      }
  // Per-channel and per-block scales: the CUDA scheme kernels against apply_scheme on the CPU.
  const std::vector<int64_t> shape = {7, 9, 70};
  std::vector<float> xs(7 * 9 * 70);
  std::exponential_distribution<float> ex(2.0f);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = (gen() & 1 ? 1.0f : -1.0f) * ex(gen) * float(1 + i % 13);
    if (i % 211 == 3) xs[i] = 0.0f;
    if (i % 1009 == 17) xs[i] = NAN;
    if (i % 1499 == 29) xs[i] = INFINITY;
  }
  std::vector<std::string> schemes;
  for (const char* fmt : {"e4m3fn", "e5m2", "e2m1fn", "int8", "bf16"})
    for (const char* gran : {"tensor", "channel:0", "channel:1", "channel:-1", "block:32", "block:16", "block:32:e8m0fnu"})
      schemes.push_back(std::string(fmt) + "/" + gran);
  // Unsigned affine integers (scale and zero point per group), two-level NVFP4-style and 16-bit block scales.
  for (const char* fmt : {"uint8", "uint4"})
    for (const char* gran : {"tensor", "channel:0", "channel:-1", "block:32", "block:16"})
      schemes.push_back(std::string(fmt) + "/" + gran);
  for (const char* sch : {"e2m1fn/block:16:e4m3fn", "e2m1fn/block:32:e4m3fn", "int4/block:16:e4m3fn", "e4m3fn/block:16:e5m2",
                          // 16-bit block scales (GPTQ-style int4 with bf16 / fp16 scales)
                          "int4/block:128:bf16", "int4/block:32:fp16", "e4m3fn/block:16:bf16"})
    schemes.push_back(sch);
  // The E8M0 exponent roundings (MxRounding: one case in group_scale for host and device).
  for (const char* fmt : {"e2m1fn", "e4m3fn", "e3m2fn"})
    for (const char* mode : {"ceil", "even", "rceil"}) schemes.push_back(std::string(fmt) + "/block:32:e8m0fnu:" + mode);
  // NVFP4 block scales searched for the least squared error, and observer clips (host-side calibration).
  for (const char* sch : {"e2m1fn/block:16:e4m3fn:mse", "e2m1fn/block:32:e4m3fn:mse", "int4/block:16:e4m3fn:mse",
                          "int8/tensor:p99.9", "int8/channel:0:mse", "e4m3fn/tensor:mse", "e4m3fn/channel:-1:p99"})
    schemes.push_back(sch);
  for (const std::string& text : schemes)
    for (Rounding r : kAllRoundings) {
      EncodeOptions opt;
      opt.rounding = r;
      opt.seed = 77;
      const Scheme sch = parse_scheme(text, opt);
      std::vector<float> y_cpu(xs.size()), y_dev(xs.size());
      const SchemeOutput o_cpu = apply_scheme(sch, xs.data(), shape, y_cpu.data(), 2);
      const SchemeOutput o_dev = apply_scheme_cuda(sch, xs.data(), shape, y_dev.data());
      SelftestCase c;
      c.name = sch.text + "/" + to_string(r) + "/cuda";
      c.passed = true;
      for (std::size_t i = 0; i < xs.size() && c.passed; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &y_cpu[i], 4);
        std::memcpy(&b, &y_dev[i], 4);
        if (a != b && !(std::isnan(y_cpu[i]) && std::isnan(y_dev[i]))) {
          c.passed = false;
          c.detail = "element " + std::to_string(i) + " differs from apply_scheme";
        }
      }
      if (c.passed && (o_cpu.stats.overflow != o_dev.stats.overflow || o_cpu.stats.underflow != o_dev.stats.underflow ||
                       o_cpu.stats.nan != o_dev.stats.nan)) {
        c.passed = false;
        c.detail = "stats differ from apply_scheme";
      }
      if (c.passed && (o_cpu.amax != o_dev.amax || o_cpu.groups != o_dev.groups || o_cpu.tensor_scale != o_dev.tensor_scale)) {
        c.passed = false;
        c.detail = "amax, group count or tensor scale differs from apply_scheme";
      }
      report(c);
    }
}
}  // namespace

void run_cuda_encode_selftest(const std::function<void(const SelftestCase&)>& report) { encode_cases(report); }

}  // namespace qs::cuda

namespace qs::cuda {

void run_selftest_cuda(const std::function<void(const SelftestCase&)>& report) {
  run_cuda_encode_selftest(report);
  run_cuda_gemm_selftest(report);
  run_cuda_train_selftest(report);
}

}  // namespace qs::cuda
