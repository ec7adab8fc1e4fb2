// Independent oracle: ggml's own ggml-quants.c (compiled from a ggml or llama.cpp checkout; never a QuantScope
// dependency) against QuantScope's quantizers and decoders (format/ggml_quantize.h, format/ggml_blocks.h),
// byte for byte and bit for bit, on 60 rows of 16384 values per type (normal at three scales, Student-t,
// zeros, constant sub-blocks, one-signed rows, all-zero blocks). Run: tests/oracle/ggml_quants_oracle.sh.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "format/ggml_quantize.h"
extern "C" {
void quantize_row_q4_0_ref(const float*, void*, int64_t); void quantize_row_q4_1_ref(const float*, void*, int64_t);
void quantize_row_q5_0_ref(const float*, void*, int64_t); void quantize_row_q5_1_ref(const float*, void*, int64_t);
void quantize_row_q8_0_ref(const float*, void*, int64_t); void quantize_row_q4_K_ref(const float*, void*, int64_t);
void quantize_row_q5_K_ref(const float*, void*, int64_t); void quantize_row_q6_K_ref(const float*, void*, int64_t);
void dequantize_row_q4_0(const void*, float*, int64_t); void dequantize_row_q4_1(const void*, float*, int64_t);
void dequantize_row_q5_0(const void*, float*, int64_t); void dequantize_row_q5_1(const void*, float*, int64_t);
void dequantize_row_q8_0(const void*, float*, int64_t); void dequantize_row_q4_K(const void*, float*, int64_t);
void dequantize_row_q5_K(const void*, float*, int64_t); void dequantize_row_q6_K(const void*, float*, int64_t);
void dequantize_row_q2_K(const void*, float*, int64_t); void dequantize_row_q3_K(const void*, float*, int64_t);
void dequantize_row_q8_K(const void*, float*, int64_t); void dequantize_row_mxfp4(const void*, float*, int64_t);
void ggml_abort(const char*, int, const char*, ...) { std::abort(); }
size_t ggml_row_size(int, int64_t) { std::abort(); } const char* ggml_type_name(int) { return "?"; } size_t ggml_type_size(int) { std::abort(); }
}
using namespace qs::ggml;
struct T { BlockType t; void (*q)(const float*, void*, int64_t); void (*d)(const void*, float*, int64_t); };
int main() {
  const T ts[] = {{BlockType::Q4_0, quantize_row_q4_0_ref, dequantize_row_q4_0}, {BlockType::Q4_1, quantize_row_q4_1_ref, dequantize_row_q4_1},
                  {BlockType::Q5_0, quantize_row_q5_0_ref, dequantize_row_q5_0}, {BlockType::Q5_1, quantize_row_q5_1_ref, dequantize_row_q5_1},
                  {BlockType::Q8_0, quantize_row_q8_0_ref, dequantize_row_q8_0}, {BlockType::Q4_K, quantize_row_q4_K_ref, dequantize_row_q4_K},
                  {BlockType::Q5_K, quantize_row_q5_K_ref, dequantize_row_q5_K}, {BlockType::Q6_K, quantize_row_q6_K_ref, dequantize_row_q6_K}};
  std::mt19937_64 g(42);
  const int n = 256 * 64;
  long long bad = 0, total = 0;
  for (const T& t : ts) {
    long long tb = 0, tbits = 0;
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<float> x(n);
      std::normal_distribution<float> nd(0.f, trial % 3 == 0 ? 1e-3f : trial % 3 == 1 ? 1.f : 300.f);
      std::student_t_distribution<float> st(3);
      for (int i = 0; i < n; ++i) {
        x[i] = trial % 4 == 0 ? st(g) : nd(g);
        if (trial % 5 == 0 && i % 97 == 0) x[i] = 0;
        if (trial % 7 == 0 && i % 256 < 32) x[i] = 1.5f;          // constant sub-blocks
        if (trial % 11 == 0) x[i] = std::fabs(x[i]);                 // one-signed rows
        if (trial % 13 == 0 && i % 512 < 256) x[i] = 0;            // all-zero blocks
      }
      std::vector<uint8_t> a(quantized_bytes(t.t, n)), b(a.size());
      quantize_ref(t.t, x.data(), n, a.data());
      t.q(x.data(), b.data(), n);
      for (size_t i = 0; i < a.size(); ++i) tb += a[i] != b[i];
      std::vector<float> ya(n), yb(n);
      dequantize(t.t, b.data(), n, ya.data());
      t.d(b.data(), yb.data(), n);
      for (int i = 0; i < n; ++i) tbits += std::memcmp(&ya[i], &yb[i], 4) != 0;
    }
    std::printf("%s: %lld bytes differ, %lld decoded values differ (60 rows of %d)\n", block_info(t.t).name, tb, tbits, n);
    bad += tb + tbits;
    total++;
  }
  // Types decoded but not quantized here: random blocks (fp16 fields included, so NaN and inf scales occur)
  // through both decoders.
  struct D { BlockType t; void (*d)(const void*, float*, int64_t); };
  const D ds[] = {{BlockType::Q2_K, dequantize_row_q2_K}, {BlockType::Q3_K, dequantize_row_q3_K},
                  {BlockType::Q8_K, dequantize_row_q8_K}, {BlockType::MXFP4, dequantize_row_mxfp4}};
  for (const D& t : ds) {
    const BlockInfo& b = block_info(t.t);
    const std::size_t blocks = 4096, vals = blocks * b.block_elems;
    std::vector<uint8_t> raw(blocks * b.block_bytes);
    for (auto& v : raw) v = uint8_t(g());
    std::vector<float> ya(vals), yb(vals);
    dequantize(t.t, raw.data(), vals, ya.data());
    t.d(raw.data(), yb.data(), int64_t(vals));
    long long diff = 0;
    for (std::size_t i = 0; i < vals; ++i) diff += std::memcmp(&ya[i], &yb[i], 4) != 0 && !(std::isnan(ya[i]) && std::isnan(yb[i]));
    std::printf("%s: %lld decoded values differ (%zu random blocks)\n", b.name, diff, blocks);
    bad += diff;
  }
  return bad ? 1 : 0;
}
