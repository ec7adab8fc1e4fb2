// `selftest --backend cuda`, GEMM part: every int8 GEMM kernel request (dp4a, mma, wgmma, auto) on shapes
// with tails in M, N and K, K not a multiple of 16 (routed to the general path), a K at the int32 bound with
// extreme codes, against gemm_int8_ref (int32) and dequant_ref (float32 bit for bit, float16 through
// float_to_half); and the quantized linear layer's backward kernels against linear_backward_ref within
// linear_backward_tol. Case names reproduce their inputs (seeded by the shape).
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/selftest_cuda.h"
#include "format/selftest.h"

#include "cuda/gemm_int8.cuh"
#include "cuda/linear_backward.cuh"
#include "gemm/gemm.h"
#include "gemm/linear_backward_ref.h"
#include "format/float16.h"

namespace qs::cuda {

namespace {

struct GemmCase {
  int M, K, N;
  bool act_per_row, bias;
  bool extreme;             // every code -128: the largest sums int32 must hold
  bool w_tensor = false;    // one weight scale for all columns (scale_b of size 1) instead of one per column
};

std::string dims(int a, int b, int c) { return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c); }

void gemm_cases(const std::function<void(const SelftestCase&)>& report) {
  const GemmCase cases[] = {
      {1, 16, 8, true, true, false},         {7, 48, 13, false, true, false},
      {64, 64, 64, true, false, false},      {129, 80, 257, true, true, false},
      {200, 1000, 72, false, true, false},   {33, 17, 5, true, true, false},
      {64, 2064, 96, true, true, false},     {300, 272, 520, false, false, false},
      {1000, 1024, 1000, true, true, false}, {1543, 208, 2600, true, true, false},
      {3, 131056, 5, true, true, true},
      // Decode shapes that take split-K on H100 (M <= 32, few tiles): the workspace the fused epilogue
      // leaves zeroed is reused by the next call, of this shape and of the others.
      {16, 4096, 520, true, true, false},    {32, 8192, 200, false, true, false},
      {5, 2048, 136, true, false, false},    {16, 4096, 520, false, false, false},
      // Split-K in clusters (M <= 16 takes the skinny kernel unless QS_GEMM_SKINNY=0): 3 splits of 8-row bands,
      // and 8 splits of 3-row bands of the largest sums (the last band 2 rows, the last block none).
      {24, 1536, 700, true, true, false},    {20, 4096, 260, true, false, true},
      // Enough 128 x 256 tiles to fill an H100 (153 >= 132 SMs): the TMA kernel, with tails in M, N and K.
      {1100, 272, 4100, true, true, false},  {1000, 272, 4100, false, true, false},
      // More K slices than the ring holds, with a K tail (1040 = 8 x 128 + 16). With int32 output this runs the
      // ping-pong kernel with more slices than its ring and a second tile per consumer: before its consumers
      // took turns, one of them could pass a slot's barrier a phase early here (a launch failure on H100).
      {1030, 1040, 4100, true, true, false},
      // The persistent TMA kernel: an odd N (its stores go one by one), and about 4 tiles per block, so the
      // ring's phases carry across tiles (2 K slices each, a K tail).
      {1100, 272, 4099, false, true, false}, {2050, 136, 8190, true, true, false},
      // More tile counts for the TMA kernel's waves (132 SMs): 561 tiles (4 full waves, then 33 in quarters), 528
      // with one K slice each (4 full waves, no tail), 352 and 512 (last waves of 88 and 116: too large to split),
      // with M and N tails; these also ran session 12's persistent and cluster kernels (notes/issue18-gemm-tma.md).
      {2050, 136, 8196, true, true, false},  {2000, 48, 8200, false, true, false},
      {1400, 208, 8188, true, false, false}, {1960, 272, 8180, false, true, false},
      // The TMA kernel's last partial wave split into parts (132 SMs: 1100 x 4100 above leaves 21 tiles, split in
      // quarters; 8 x 21 = 168 tiles here leave 36, split in halves; N tails make parts past the last column).
      {1024, 400, 5371, true, true, false},
      // The skinny kernel (M <= 16): a K tail inside a 64-byte slice and an N tail (80 = 64 + 16, 4099 columns),
      // one row, and K = 4112 (65 slices: the last warp's part shorter than the others').
      {16, 80, 4099, true, true, false},     {1, 4096, 4096, false, true, false},
      {12, 4112, 1000, true, false, false},
      // One weight scale (per-tensor W, as the int8 layer's per_channel = false): the float32 epilogues read it
      // for every column; with and without bias, with and without tails, the ping-pong kernel's whole and half
      // last rounds included.
      {1000, 1024, 1000, true, true, false, true},  {1100, 272, 4100, false, false, false, true},
      {2050, 136, 8196, true, true, false, true},   {16, 4096, 520, false, true, false, true},
  };
  for (const GemmCase& c : cases) {
    const int M = c.M, K = c.K, N = c.N;
    std::mt19937 gen(uint32_t(M * 1000003u + K * 101u + N));
    std::uniform_int_distribution<int> code(-128, 127);
    std::uniform_real_distribution<float> scale(0.5f, 2.0f);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<int8_t> A(std::size_t(M) * K), B(std::size_t(N) * K), Bt(std::size_t(K) * N);
    for (auto& v : A) v = int8_t(c.extreme ? -128 : code(gen));
    for (auto& v : B) v = int8_t(c.extreme ? -128 : code(gen));
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) Bt[std::size_t(k) * N + j] = B[std::size_t(j) * K + k];
    std::vector<float> sa(c.act_per_row ? M : 1), sb(c.w_tensor ? 1 : N), bias(c.bias ? N : 0);
    for (auto& v : sa) v = scale(gen) * 0x1p-7f;
    for (auto& v : sb) v = scale(gen) * 0x1p-9f;
    for (std::size_t j = 0; j < bias.size(); ++j) bias[j] = j % 7 == 3 ? -0.0f : nd(gen);
    std::vector<int32_t> C_ref(std::size_t(M) * N);
    gemm_int8_ref(A.data(), Bt.data(), C_ref.data(), M, K, N);
    std::vector<float> Y_ref(std::size_t(M) * N);
    dequant_ref(C_ref.data(), M, N, 0, Dequant{.scale_a = sa, .scale_b = sb, .bias = bias}, Y_ref.data());
    cuda::GemmEpilogueHost ep{.scale_a = sa.data(), .scale_a_size = sa.size(), .scale_b = sb.data(),
                              .scale_b_size = sb.size(), .bias = bias.data(), .bias_size = bias.size()};
    for (cuda::GemmKernel want : {cuda::GemmKernel::Dp4a, cuda::GemmKernel::Mma, cuda::GemmKernel::Wgmma, cuda::GemmKernel::Auto})
      for (cuda::GemmOut out : {cuda::GemmOut::I32, cuda::GemmOut::F32, cuda::GemmOut::F16}) {
        SelftestCase t;
        const cuda::GemmKernel ran = cuda::gemm_int8_resolve(want, M, K, N);
        t.name = "gemm-int8/" + dims(M, K, N) + "/" + cuda::to_string(want) +
                 (ran != want ? std::string("->") + cuda::to_string(ran) : "") + "/" + cuda::to_string(out) +
                 (c.act_per_row ? "/act-row" : "/act-tensor") + (c.w_tensor ? "/w-tensor" : "") +
                 (c.bias ? "/bias" : "") + "/cuda";
        t.passed = true;
        try {
          const std::size_t n = std::size_t(M) * N;
          std::vector<uint32_t> Y(n, 0x5a5a5a5au);
          cuda::gemm_int8_cuda(A.data(), B.data(), M, K, N, ep, out, Y.data(), want);
          // Every call notes what it ran, once (bench gemm prints it).
          if (cuda::gemm_int8_take_plan().empty() || !cuda::gemm_int8_take_plan().empty()) {
            t.passed = false;
            t.detail = "the call noted no plan, or noted it twice";
          }
          for (std::size_t i = 0; i < n && t.passed; ++i) {
            uint32_t want_bits;
            if (out == cuda::GemmOut::I32) std::memcpy(&want_bits, &C_ref[i], 4);
            else if (out == cuda::GemmOut::F32) std::memcpy(&want_bits, &Y_ref[i], 4);
            else want_bits = float_to_half(Y_ref[i]);
            const uint32_t got = out == cuda::GemmOut::F16 ? reinterpret_cast<const uint16_t*>(Y.data())[i] : Y[i];
            if (got != want_bits) {
              t.passed = false;
              t.detail = "output (" + std::to_string(i / N) + ", " + std::to_string(i % N) + "): bits " +
                         std::to_string(got) + ", reference " + std::to_string(want_bits);
            }
          }
        } catch (const std::exception& e) {
          t.passed = false;
          t.detail = e.what();
        }
        report(t);
      }
  }
}

void backward_cases(const std::function<void(const SelftestCase&)>& report) {
  const int shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {64, 96, 80}, {130, 257, 65}, {300, 200, 1000}, {512, 384, 1024}};
  int idx = 0;
  for (const auto& sh : shapes)
    for (cuda::GradType type : {cuda::GradType::F32, cuda::GradType::F16}) {
      const int M = sh[0], N = sh[1], K = sh[2];
      const bool fp16 = type == cuda::GradType::F16, sx_row = (idx++ % 2) == 0;
      std::mt19937 gen(uint32_t(M * 7919u + N * 104729u + K + (fp16 ? 1 : 0)));
      std::uniform_int_distribution<int> code(-127, 127);
      std::uniform_real_distribution<float> scale(0.5f, 2.0f);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<int8_t> Xq(std::size_t(M) * K), Wq(std::size_t(N) * K);
      for (auto& v : Xq) v = int8_t(code(gen));
      for (auto& v : Wq) v = int8_t(code(gen));
      std::vector<float> sx(sx_row ? M : 1), sw(N), dy(std::size_t(M) * N);
      for (auto& v : sx) v = scale(gen) / 127.0f;
      for (auto& v : sw) v = scale(gen) * 0.01f;
      std::vector<uint16_t> dy16(dy.size());
      for (std::size_t i = 0; i < dy.size(); ++i) {
        dy[i] = nd(gen);
        dy16[i] = float_to_half(dy[i]);
        if (fp16) dy[i] = half_to_float(dy16[i]);
      }
      const LinearGradRef ref = linear_backward_ref(dy.data(), M, N, Xq.data(), sx.data(), sx_row, Wq.data(), sw.data(), true, K);
      const std::size_t es = fp16 ? 2 : 4;
      std::vector<uint8_t> dX(std::size_t(M) * K * es), dW(std::size_t(N) * K * es), db(std::size_t(N) * es);
      SelftestCase t;
      t.name = "linear-bwd/" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
               (fp16 ? "/f16" : "/f32") + (sx_row ? "/sx-row" : "/sx-tensor") + "/cuda";
      t.passed = true;
      try {
        cuda::LinearBackwardArgs a;
        a.dY = fp16 ? static_cast<const void*>(dy16.data()) : static_cast<const void*>(dy.data());
        a.type = type;
        a.Xq = Xq.data();
        a.s_x = sx.data();
        a.s_x_per_row = sx_row;
        a.Wq = Wq.data();
        a.s_w = sw.data();
        a.M = M;
        a.N = N;
        a.K = K;
        a.dX = dX.data();
        a.dW = dW.data();
        a.db = db.data();
        cuda::linear_backward_cuda(a);
        auto value = [&](const std::vector<uint8_t>& v, std::size_t i) {
          if (fp16) {
            uint16_t h;
            std::memcpy(&h, &v[i * 2], 2);
            return double(half_to_float(h));
          }
          float f;
          std::memcpy(&f, &v[i * 4], 4);
          return double(f);
        };
        auto compare = [&](const char* what, const std::vector<uint8_t>& got, const std::vector<double>& want,
                           const std::vector<double>& mag, int n_terms) {
          for (std::size_t i = 0; i < want.size() && t.passed; ++i) {
            const double g = value(got, i), tol = linear_backward_tol(want[i], mag[i], n_terms, fp16);
            if (!(std::fabs(g - want[i]) <= tol)) {
              t.passed = false;
              t.detail = std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(g) + ", reference " +
                         std::to_string(want[i]) + " (tolerance " + std::to_string(tol) + ")";
            }
          }
        };
        compare("dX", dX, ref.dx, ref.dx_mag, N);
        compare("dW", dW, ref.dw, ref.dw_mag, M);
        compare("db", db, ref.db, ref.db_mag, M);
      } catch (const std::exception& e) {
        t.passed = false;
        t.detail = e.what();
      }
      report(t);
    }
}

}  // namespace

void run_cuda_gemm_selftest(const std::function<void(const SelftestCase&)>& report) {
  gemm_cases(report);
  backward_cases(report);
}

}  // namespace qs::cuda
