// The GPU GEMM benchmark: host data and references (shared with the CPU benchmark) -> device copies ->
// for each kernel: clear the outputs, run once, copy the checked rows back and compare; then the checked kernels
// of the shape are timed with CUDA events in rounds, each round running a share of every kernel's runs in the
// order of a Williams design (balanced_order, bench/bench_order.h: n rounds for n kernels, 2 n for odd n; the
// whole design kDesignRepeats times over), so that every kernel is timed in every place of a round and directly
// after every other kernel equally often:
// what the kernel before leaves behind (the clock a power-capped GPU has come down to after a heavy kernel, or
// kept after a light one) and drift over the benchmark hit every row alike. The median of all of a kernel's
// runs. Rows come out baselines first, so every row can carry its ratios. Each round starts after the same rest
// (kRestMs idle), so the seams between rounds keep the balance. Until session 22 round r was the order rotated
// to start at kernel r, with no rest (QS_BENCH_ORDER=cyclic, for comparison): every place, but each kernel
// nearly always right after the same one, and int8-cublaslt after fp32-cublas, the light kernel that leaves the
// clock high. What the predecessor does (QS_BENCH_BLOCKS, H100, bursts of 20, 4096^3): cuBLASLt's blocks take
// 96.2 us after fp32-cublas and 106-108 us after our int8 GEMM; ours 94.5 us after fp32-cublas, 101.5 us after
// cuBLASLt (2048 x 4096 x 11008: 131 / 153-157 and 124 / 130 us). So the rotation put cuBLASLt after the
// light kernel and ours after a heavy one: in the same calls our 4096^3 bursts came out at 0.92-0.97x
// cuBLASLt in that order and 1.00-1.05x in this one (notes/issue18-gemm-tma.md, session 22).
// The design balances what the kernel right before leaves; what outlasts it is flushed instead. Before each timed
// block l2_flush_kernel reads twice the L2's size (QS_BENCH_FLUSH=none: not): on the H200 (session 30) the skinny
// kernel at 16 x 4096 x 4096 ran at 6.6-7.0 us while the L2 held B as cuBLASLt had left it, and at 8.0-8.3 us after
// fp32 cuBLAS, a rest or its own runs from a cold L2 (ncu: its own reads of B come from DRAM every launch). That
// state lasted over later kernels' blocks, so the 4 x 4 design gave int32 out two fast blocks and float32 out one,
// and float32 over int32 came out +2-4 % where like-for-like blocks give +1.5 %.
// Each timed run is one call between two events on an idle GPU, so it includes the host's time to submit the
// call (cublasLtMatmul 17-27 us, our launcher 8-11 us on the H100 host, session 13). Diagnostics:
// QS_BENCH_BATCH=n times n calls back to back per event pair (the kernels' steady rate, no host time), and
// QS_BENCH_HOST=1 notes each kernel's host submission time, QS_BENCH_CLOCK=1 the SM clock each kernel ran at
// (clock_witness_kernel, after every timed run, untimed), QS_BENCH_BLOCKS=1 the median of every timed block,
// when it ended, its own clock (with QS_BENCH_CLOCK) and the kernel timed before it (what the order carries
// over), QS_BENCH_WARM_MS=t about t ms of untimed calls of each kernel right before each of its timed blocks
// (each kernel then timed after itself, whatever the set of kernels; H200, session 23: every block then follows
// its own kernel, at 1,545-1,720 MHz where the balanced order alone gives 1,690-1,850), QS_BENCH_FLUSH=run the
// L2 flushed after every timed run too (=none: not even before each block), QS_BENCH_POWER=1 the board's power
// while each kernel runs and the energy per call (PowerSampler). A power-capped H100 sets its clock by the power the
// kernels draw, and the clock follows with a delay: that is what a kernel leaves to the next. Runs are capped
// at 1000 per kernel unless --reps asks for more.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "bench/bench_order.h"
#include "cuda/cuda_util.cuh"
#include "cuda/device.h"
#include "cuda/bench_gemm_cuda.cuh"
#include "cuda/gemm_cublas.cuh"
#include "cuda/gemm_int8.cuh"
#include "cuda/linear_backward.cuh"
#include "cuda/quantize_int8.cuh"
#include "gemm/linear_backward_ref.h"

namespace qs::cuda {

namespace {

using detail::check;
template <typename T>
using Buf = detail::DeviceBuffer<T>;

// The idle time before each round of the timed runs (flush, top of the file).
constexpr int kRestMs = 50;

// How many times the Williams design is run over (QS_BENCH_ROUNDS overrides the round count): a kernel's runs then
// fall into three times as many, shorter blocks. On the H200 (session 30, the four target shapes in bursts of 20)
// once over gave int32-out ratios to cuBLASLt of 0.99-1.07 (4096^3) and 0.98-1.20 (2048 x 4096 x 11008) over eight
// runs and float32 over int32 +0.2 to +6.5 % at 8192^3; three times over 1.04-1.05, 1.07-1.10 and +0.4 to +1.1 %
// in three runs. The median of a kernel's runs then no longer hangs on which clock state one long block caught.
constexpr int kDesignRepeats = 3;

// QS_BENCH_FLUSH: reads a buffer of twice the L2's size, so whatever another kernel left in L2 is gone (the
// lines it leaves are clean: no write-backs for the next kernel). The sum is written only if it comes out as a
// value the zeroed buffer cannot give, so the loads stay.
__global__ void l2_flush_kernel(const int4* __restrict__ p, std::size_t n, int* sink) {
  int acc = 0;
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;
}

// One block spins 20 us of %globaltimer and adds the SM cycles (clock64) and nanoseconds it took to sums[0]
// and sums[1]: launched right after a timed run, it reads the clock the power limit left the SMs at.
__global__ void clock_witness_kernel(unsigned long long* sums) {
  if (threadIdx.x != 0) return;
  unsigned long long g0, g1;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(g0));
  const long long c0 = clock64();
  do asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(g1));
  while (g1 - g0 < 20000);
  const long long c1 = clock64();
  sums[0] += static_cast<unsigned long long>(c1 - c0);
  sums[1] += g1 - g0;
}

// QS_BENCH_POWER=1: the board's power while each kernel is timed. A host thread polls NVML's instant power
// (field NVML_FI_DEV_POWER_INSTANT, milliwatts; libnvidia-ml.so.1 opened at run time, so nothing links against
// the driver) every millisecond, each sample tagged with the kernel whose timed runs are in flight; a kernel's
// figure is the mean of the samples in the second half of each of its stints, after the sensor has followed
// the change from the kernel before. Power x time per call is the energy per call, the quantity that decides
// the back-to-back rate on a power-capped GPU.
class PowerSampler {
 public:
  PowerSampler() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    init_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
    shutdown_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown"));
    by_bus_ = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    fields_ = reinterpret_cast<int (*)(void*, int, Field*)>(dlsym(lib_, "nvmlDeviceGetFieldValues"));
    char bus[32] = {};
    int dev = 0;
    if (!init_ || !shutdown_ || !by_bus_ || !fields_ || init_() != 0) return;
    inited_ = true;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess ||
        by_bus_(bus, &device_) != 0 || read_mw() < 0)
      return;
    ok_ = true;
    thread_ = std::thread([this] {
      while (!quit_.load()) {
        const long long tag = tag_.load();  // (stint << 32) | (kernel + 1); 0: no stint open
        if (tag != 0) {
          const double mw = read_mw();
          std::lock_guard<std::mutex> lock(mu_);
          if (mw >= 0) samples_.push_back({int(tag & 0xffffffff) - 1, int(tag >> 32), now(), mw});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  ~PowerSampler() {
    quit_.store(true);
    if (thread_.joinable()) thread_.join();
    if (inited_) shutdown_();
    if (lib_) dlclose(lib_);
  }
  PowerSampler(const PowerSampler&) = delete;
  PowerSampler& operator=(const PowerSampler&) = delete;
  bool ok() const { return ok_; }
  // Kernel k's timed runs start (begin) and end (end); stints must not overlap.
  void begin(int k) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stints_.push_back({now(), 0.0});
    }
    tag_.store((static_cast<long long>(stints_.size() - 1) << 32) | (k + 1));
  }
  void end() {
    tag_.store(0);
    std::lock_guard<std::mutex> lock(mu_);
    stints_.back().second = now();
  }
  // Kernel k's mean power in watts over the second halves of its closed stints (0 without samples), and how
  // many samples that is.
  double watts(int k, int* count) {
    std::lock_guard<std::mutex> lock(mu_);
    double sum = 0;
    int n = 0;
    for (const Sample& x : samples_) {
      const auto& st = stints_[std::size_t(x.stint)];
      if (st.second == 0.0) continue;  // still open
      if (x.kernel == k && x.t >= 0.5 * (st.first + st.second) && x.t <= st.second) {
        sum += x.mw;
        ++n;
      }
    }
    *count = n;
    return n ? sum / n / 1e3 : 0.0;
  }

 private:
  struct Field {  // nvmlFieldValue_t
    unsigned int field_id, scope_id;
    long long timestamp, latency_us;
    int value_type, ret;
    union {
      double d;
      unsigned int ui;
      unsigned long ul;
      unsigned long long ull;
      long long sll;
      int si;
    } value;
  };
  struct Sample {
    int kernel, stint;
    double t, mw;
  };
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  double read_mw() {
    Field f{};
    f.field_id = 186;  // NVML_FI_DEV_POWER_INSTANT
    if (fields_(device_, 1, &f) != 0 || f.ret != 0) return -1;
    switch (f.value_type) {
      case 0: return f.value.d;
      case 1: return double(f.value.ui);
      case 2: return double(f.value.ul);
      case 3: return double(f.value.ull);
      case 4: return double(f.value.sll);
      case 5: return double(f.value.si);
      default: return -1;
    }
  }
  void* lib_ = nullptr;
  void* device_ = nullptr;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*by_bus_)(const char*, void**) = nullptr;
  int (*fields_)(void*, int, Field*) = nullptr;
  bool inited_ = false, ok_ = false;
  std::atomic<bool> quit_{false};
  std::atomic<long long> tag_{0};
  std::mutex mu_;
  std::vector<Sample> samples_;
  std::vector<std::pair<double, double>> stints_;
  std::thread thread_;
};

constexpr double kTf32InputRel = 0x1p-10;  // TF32 keeps 10 mantissa bits (truncation or rounding)
constexpr double kBf16InputRel = 0x1p-9;   // bfloat16 keeps 7, rounded to nearest here

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even
  return uint16_t(u >> 16);
}

std::vector<GemmKernel> tensor_core_kernels() {
  std::vector<GemmKernel> k;
  if (!device_info().available) return k;
  if (gemm_int8_supported(GemmKernel::Mma, 16, 16, 16)) k.push_back(GemmKernel::Mma);
  if (gemm_int8_supported(GemmKernel::Wgmma, 16, 16, 16)) k.push_back(GemmKernel::Wgmma);
  return k;
}

}  // namespace

std::vector<std::string> bench_gemm_cuda_kernels() {
  std::vector<std::string> k{"fp32-cublas", "tf32-cublas", "bf16-cublas", "int8-cublaslt", "int8-dp4a", "int8-dp4a-dq"};
  for (GemmKernel g : tensor_core_kernels()) {
    const std::string base = std::string("int8-") + to_string(g);
    for (const char* suffix : {"", "-dq", "-dq-f16", "-e2e"}) k.push_back(base + suffix);
  }
  // The quantized linear layer's backward (dX and dW; db with int8) against cuBLAS doing the same two products.
  for (const char* b : {"bwd-fp32-cublas", "bwd-bf16-cublas", "bwd-int8"}) k.push_back(b);
  return k;
}

std::string bench_gemm_cuda_comparison() { return GemmLibrary::version(); }

std::vector<BenchGemmRow> bench_gemm_cuda(const BenchGemmConfig& cfg,
                                          const std::function<void(const BenchGemmRow&)>& on_row,
                                          const std::function<void(const std::string&)>& on_note,
                                          const ProgressFn& progress) {
  const DeviceInfo& dev = device_info();
  if (!dev.available) throw std::runtime_error(dev.message);
  const std::vector<std::string> all = bench_gemm_cuda_kernels();
  validate_bench_gemm_config(cfg, all);
  auto note = [&](const std::string& s) {
    if (on_note) on_note(s);
  };
  auto wanted = [&](const std::string& n) {
    if (n == "fp32-cublas" || n == "int8-cublaslt" || cfg.kernels.empty()) return true;
    return std::find(cfg.kernels.begin(), cfg.kernels.end(), n) != cfg.kernels.end();
  };
  std::size_t total = 0, done = 0;
  for (const auto& n : all) total += wanted(n);
  total *= cfg.shapes.size();
  const int setup = resolve_threads(0);
  GemmLibrary lib;
  std::vector<BenchGemmRow> rows;
  std::vector<std::string> failures;
  std::unique_ptr<PowerSampler> power;  // QS_BENCH_POWER (top of the file)
  int power_ids = 0;                    // the sampler's kernel ids used so far: unique over every shape
  if (std::getenv("QS_BENCH_POWER")) {
    power = std::make_unique<PowerSampler>();
    if (!power->ok()) {
      note("QS_BENCH_POWER: NVML's instant power is not available here; no power figures");
      power.reset();
    }
  }

  // The L2 is flushed before each timed block, ahead of its untimed calls, so each kernel is timed in the L2 state it
  // makes for itself (top of the file). QS_BENCH_FLUSH=run flushes after every timed run too (each run starts from a
  // cold L2; with QS_BENCH_BATCH only a burst's first call), =none never (before session 30). One buffer for every
  // shape.
  const char* flush_env = std::getenv("QS_BENCH_FLUSH");
  const bool flush_none = flush_env && std::strcmp(flush_env, "none") == 0;
  const bool flush_runs = flush_env && std::strcmp(flush_env, "run") == 0;
  int l2_bytes = 0, sms = 1;
  if (!flush_none) {
    check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0), "L2 size");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  }
  const std::size_t flush_n = flush_none ? 0 : 2 * std::size_t(std::max(l2_bytes, 1 << 20)) / sizeof(int4);
  Buf<int4> flush_buf(flush_n);
  Buf<int> flush_sink(flush_n ? 1 : 0);
  if (flush_n) check(cudaMemset(flush_buf.ptr, 0, flush_n * sizeof(int4)), "memset");
  auto flush_l2 = [&] {
    if (flush_n) l2_flush_kernel<<<4 * sms, 256>>>(flush_buf.ptr, flush_n, flush_sink.ptr);
  };

  for (const auto& shape : cfg.shapes) {
    const int M = shape.M, K = shape.K, N = shape.N;
    const std::string dims = std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
    const GemmBenchData d = make_gemm_bench_data(shape, cfg.act_per_row, cfg.seed, setup);
    const std::size_t MK = std::size_t(M) * K, NK = std::size_t(N) * K, MN = std::size_t(M) * N;
    const std::size_t R = d.rows.size();
    std::vector<uint16_t> Xb(MK), Wb(NK);
    for (std::size_t i = 0; i < MK; ++i) Xb[i] = to_bf16(d.X[i]);
    for (std::size_t i = 0; i < NK; ++i) Wb[i] = to_bf16(d.Wt[i]);

    Buf<float> dX(MK), dW(NK), dsa(d.sa.size()), dsw(d.sw.size()), dbias(d.bias.size()), dY(MN), ds_tmp(d.sa.size());
    Buf<uint16_t> dXb(MK), dWb(NK), dY16(MN);
    Buf<int8_t> dqa(MK), dqw(NK), dq_tmp(MK);
    Buf<int32_t> dC(MN);
    Buf<unsigned int> dscratch(1);
    auto up = [](void* dst, const void* src, std::size_t bytes) {
      check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to device");
    };
    up(dX.ptr, d.X.data(), MK * 4);
    up(dW.ptr, d.Wt.data(), NK * 4);
    up(dXb.ptr, Xb.data(), MK * 2);
    up(dWb.ptr, Wb.data(), NK * 2);
    up(dqa.ptr, d.qa.data(), MK);
    up(dqw.ptr, d.qw.data(), NK);
    up(dsa.ptr, d.sa.data(), d.sa.size() * 4);
    up(dsw.ptr, d.sw.data(), d.sw.size() * 4);
    up(dbias.ptr, d.bias.data(), d.bias.size() * 4);
    GemmEpilogueDev ep;
    ep.scale_a = dsa.ptr;
    ep.scale_a_per_row = cfg.act_per_row;
    ep.scale_b = dsw.ptr;
    ep.scale_b_per_col = true;
    ep.bias = dbias.ptr;
    GemmEpilogueDev ep_tmp = ep;  // end to end: the scales the device quantization wrote
    ep_tmp.scale_a = ds_tmp.ptr;

    // The checked rows of a device output, in the order of d.rows.
    auto rows_of = [&](const void* dev_ptr, std::size_t esize, void* host) {
      for (std::size_t r = 0; r < R; ++r)
        check(cudaMemcpy(static_cast<uint8_t*>(host) + r * N * esize,
                         static_cast<const uint8_t*>(dev_ptr) + std::size_t(d.rows[r]) * N * esize, N * esize,
                         cudaMemcpyDeviceToHost),
              "copy back");
    };
    auto check_i32 = [&](const std::string& n) {
      std::vector<int32_t> h(R * N);
      rows_of(dC.ptr, 4, h.data());
      return gemm_bench_check_int32(d, n, h.data());
    };
    auto check_dq = [&](const std::string& n) {
      std::vector<float> h(R * N);
      rows_of(dY.ptr, 4, h.data());
      return gemm_bench_check_dequant(d, n, h.data());
    };
    auto check_dq16 = [&](const std::string& n) {
      std::vector<uint16_t> h(R * N);
      rows_of(dY16.ptr, 2, h.data());
      return gemm_bench_check_dequant(d, n, nullptr, h.data());
    };
    auto check_f = [&](const std::string& n, double rel) {
      std::vector<float> h(R * N);
      rows_of(dY.ptr, 4, h.data());
      return gemm_bench_check_float(d, n, h.data(), rel);
    };

    double fp32_ms = 0, bwd_fp32_ms = 0;
    bool stop = false;
    struct Pending {
      BenchGemmRow row;
      std::function<void()> fn;
      std::vector<float> ms;
      double first_s = 0;  // one call's time, from the run that set row.reps
    };
    std::vector<Pending> pending;  // checked, not yet timed
    auto measure = [&](const std::string& name, const std::function<void()>& fn,
                       const std::function<double(const std::string&)>& chk) {
      if (stop || !wanted(name)) return;
      BenchGemmRow row;
      row.backend = "cuda";
      row.kernel = name;
      row.M = M;
      row.N = N;
      row.K = K;
      row.threads = 0;
      try {
        // Poisoned outputs: a kernel that writes nothing cannot pass on a previous kernel's result.
        check(cudaMemset(dC.ptr, 0x5a, MN * 4), "memset");
        check(cudaMemset(dY.ptr, 0xff, MN * 4), "memset");
        check(cudaMemset(dY16.ptr, 0xff, MN * 2), "memset");
        gemm_int8_take_plan();  // forget any earlier launch's: what this kernel's call runs is noted below
        fn();
        if (const std::string plan = gemm_int8_take_plan(); !plan.empty()) note(name + " " + dims + ": " + plan);
        check(cudaDeviceSynchronize(), name.c_str());
        row.max_abs_err_vs_ref = chk(name);
      } catch (const std::exception& e) {
        failures.push_back(name + " " + dims + ": " + e.what());
        note("FAILED " + name + " " + dims + ": " + e.what() + " (not timed)");
        cudaGetLastError();  // clear a launch error so the next kernel starts clean
        return;
      }
      row.checked = R * std::size_t(N);
      const double first = detail::median_seconds(fn, 1, nullptr);
      row.reps = bench_gemm_reps(cfg, first);
      if (std::getenv("QS_BENCH_HOST")) {  // diagnostics: how long the host takes to submit one call
        std::vector<float> us;
        for (int k = 0; k < 31; ++k) {
          check(cudaDeviceSynchronize(), "sync");
          const auto t0 = std::chrono::steady_clock::now();
          fn();
          us.push_back(std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        check(cudaDeviceSynchronize(), "sync");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f us", detail::median_of(us) * 1e3);
        note("host submit " + name + " " + dims + ": " + buf);
      }
      pending.push_back({row, fn, {}, first});
    };
    // Times the checked kernels in rounds (see the top of the file) and emits their rows in order.
    auto flush = [&] {
      const int n = int(pending.size());
      const char* order_env = std::getenv("QS_BENCH_ORDER");  // "cyclic": the rotations of before session 22
      const bool cyclic = order_env && std::strcmp(order_env, "cyclic") == 0;
      int rounds = cyclic ? std::max(n, 1) : kDesignRepeats * balanced_rounds(std::max(n, 1));
      if (const char* e = std::getenv("QS_BENCH_ROUNDS")) rounds = std::max(1, std::atoi(e));  // 1: one kernel after another
      int batch = 1;
      if (const char* e = std::getenv("QS_BENCH_BATCH")) batch = std::max(1, std::atoi(e));
      const bool clock = std::getenv("QS_BENCH_CLOCK") != nullptr;  // the clock witness (top of the file)
      Buf<unsigned long long> clock_sums(clock ? 2 * std::size_t(n) : 0);
      if (clock) check(cudaMemset(clock_sums.ptr, 0, 2 * std::size_t(n) * sizeof(unsigned long long)), "memset");
      const bool blocks = std::getenv("QS_BENCH_BLOCKS") != nullptr;  // a note per timed block (top of the file)
      double warm_ms = 0;  // QS_BENCH_WARM_MS (top of the file)
      if (const char* e = std::getenv("QS_BENCH_WARM_MS")) warm_ms = std::clamp(std::atof(e), 0.0, 10000.0);
      int prev = -1;                                                 // the kernel timed last; -1: none (a rest)
      const auto t_start = std::chrono::steady_clock::now();         // block notes say when each block ended
      unsigned long long block_clock[2] = {0, 0};                    // the witness's sums before a block
      for (int r = 0; r < rounds; ++r) {
        const std::vector<int> order = cyclic ? std::vector<int>{} : balanced_order(n, r);
        // Every round starts from the same rest (kRestMs idle), so the first kernel of a round follows no kernel
        // and the design's balance holds across the rounds' seams too (each kernel is first equally often).
        if (!cyclic && n > 1) {
          check(cudaDeviceSynchronize(), "rest before a round");
          std::this_thread::sleep_for(std::chrono::milliseconds(kRestMs));
          prev = -1;
        }
        for (int i = 0; i < n; ++i) {
          const int k = cyclic ? (r + i) % n : order[std::size_t(i)];
          Pending& p = pending[std::size_t(k)];
          if (progress && !progress(done, total)) {  // cancelled while timing: this shape's rows are dropped
            stop = true;
            pending.clear();
            return;
          }
          // `batch` calls back to back between the events (QS_BENCH_BATCH; 1 by default), each run's time divided.
          const int share = (p.row.reps + rounds - 1 - r) / rounds;
          const std::size_t from = p.ms.size();
          // Untimed calls of the kernel itself first, about warm_ms of them: the block then follows the kernel
          // itself, whatever ran before (queued ahead of the block's first event, so never timed).
          const long warm = share > 0 && warm_ms > 0
                                ? long(std::min(1e5, std::ceil(warm_ms * 1e-3 / std::max(p.first_s, 1e-6))))
                                : 0;
          if (share > 0) flush_l2();
          for (long c = 0; c < warm; ++c) p.fn();
          if (warm > 0) prev = k;
          unsigned long long* sums = clock ? clock_sums.ptr + 2 * k : nullptr;
          if (sums && blocks) check(cudaMemcpy(block_clock, sums, sizeof block_clock, cudaMemcpyDeviceToHost), "clock");
          if (power) power->begin(power_ids + k);
          detail::time_runs([&] { for (int b = 0; b < batch; ++b) p.fn(); }, share > 0 ? std::max(1, share / batch) : 0,
                            nullptr, p.ms, [&] {
                              if (sums) clock_witness_kernel<<<1, 32>>>(sums);
                              if (flush_runs) flush_l2();
                            });
          if (power) power->end();
          for (std::size_t j = from; j < p.ms.size(); ++j) p.ms[j] /= float(batch);
          if (blocks && p.ms.size() > from) {
            std::vector<float> block(p.ms.begin() + std::ptrdiff_t(from), p.ms.end());
            char buf[128];
            const double at_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
            int len = std::snprintf(buf, sizeof buf, ": median %.2f us (ended at %.0f ms",
                                    detail::median_of(block) * 1e6, at_ms);
            if (sums) {  // the block's own clock: the witness's sums after it less those before it
              unsigned long long after[2];
              check(cudaMemcpy(after, sums, sizeof after, cudaMemcpyDeviceToHost), "clock");
              const unsigned long long dc = after[0] - block_clock[0], dt = after[1] - block_clock[1];
              len += std::snprintf(buf + len, sizeof buf - std::size_t(len), ", SM clock %.0f MHz",
                                   dt ? 1e3 * double(dc) / double(dt) : 0.0);
            }
            std::snprintf(buf + len, sizeof buf - std::size_t(len), ")");
            note("round " + std::to_string(r) + " " + p.row.kernel + " " + dims + " after " +
                 (prev < 0 ? std::string("a rest") : pending[std::size_t(prev)].row.kernel) + buf);
          }
          if (p.ms.size() > from) prev = k;  // a kernel with no runs left for this round ran nothing
        }
      }
      std::vector<unsigned long long> clock_host(clock ? 2 * std::size_t(n) : 0);
      if (clock)
        check(cudaMemcpy(clock_host.data(), clock_sums.ptr, clock_host.size() * sizeof(unsigned long long),
                         cudaMemcpyDeviceToHost),
              "clock witness");
      for (Pending& p : pending) {
        BenchGemmRow& row = p.row;
        if (clock) {
          const std::size_t k = 2 * std::size_t(&p - pending.data());
          char buf[96];
          std::snprintf(buf, sizeof buf, ": SM clock %.0f MHz after its timed runs",
                        clock_host[k + 1] ? 1e3 * double(clock_host[k]) / double(clock_host[k + 1]) : 0.0);
          note(row.kernel + " " + dims + buf);
        }
        const double t = detail::median_of(p.ms);
        row.median_ms = t * 1e3;
        if (power) {
          int count = 0;
          const double w = power->watts(power_ids + int(&p - pending.data()), &count);
          char buf[128];
          std::snprintf(buf, sizeof buf, ": board power %.0f W (%d samples in its timed runs), %.3f mJ per call", w,
                        count, w * t * 1e3);
          note(row.kernel + " " + dims + buf);
        }
        const bool bwd = row.kernel.rfind("bwd-", 0) == 0;  // two products: dX and dW
        row.gops = (bwd ? 4.0 : 2.0) * double(M) * double(N) * double(K) / t / 1e9;
        if (row.kernel == "fp32-cublas") fp32_ms = row.median_ms;
        if (row.kernel == "bwd-fp32-cublas") bwd_fp32_ms = row.median_ms;
        const double base_ms = bwd ? bwd_fp32_ms : fp32_ms;  // backward rows: against cuBLAS fp32's backward
        row.speedup_vs_fp32 = base_ms > 0 ? base_ms / row.median_ms : 0;
        rows.push_back(row);
        if (on_row) on_row(row);
        ++done;
        if (progress && !progress(done, total)) stop = true;
      }
      power_ids += n;
      pending.clear();
    };

    measure("fp32-cublas", [&] { lib.f32(dX.ptr, dW.ptr, M, K, N, dY.ptr, false); },
            [&](const std::string& n) { return check_f(n, 0.0); });
    measure("tf32-cublas", [&] { lib.f32(dX.ptr, dW.ptr, M, K, N, dY.ptr, true); },
            [&](const std::string& n) { return check_f(n, kTf32InputRel); });
    measure("bf16-cublas", [&] { lib.bf16(dXb.ptr, dWb.ptr, M, K, N, dY.ptr); },
            [&](const std::string& n) { return check_f(n, kBf16InputRel); });
    std::string algo;
    measure("int8-cublaslt", [&] { algo = lib.int8(dqa.ptr, dqw.ptr, M, K, N, dC.ptr); }, check_i32);
    if (!algo.empty()) note("int8-cublaslt " + dims + ": " + algo);

    auto ours = [&](GemmKernel k) {
      const std::string base = std::string("int8-") + to_string(k);
      if (!gemm_int8_supported(k, M, K, N)) {
        std::string why;
        gemm_int8_resolve(k, M, K, N, &why);
        note(base + " skipped for " + dims + ": " + why + " (int8-dp4a rows cover this shape)");
        return;
      }
      measure(base, [&, k] { gemm_int8_device(dqa.ptr, dqw.ptr, M, K, N, ep, GemmOut::I32, dC.ptr, k); }, check_i32);
      measure(base + "-dq", [&, k] { gemm_int8_device(dqa.ptr, dqw.ptr, M, K, N, ep, GemmOut::F32, dY.ptr, k); },
              check_dq);
      if (k == GemmKernel::Dp4a) return;
      measure(base + "-dq-f16", [&, k] { gemm_int8_device(dqa.ptr, dqw.ptr, M, K, N, ep, GemmOut::F16, dY16.ptr, k); },
              check_dq16);
      // End to end: float32 activations in, float32 out (quantization on the device + GEMM + epilogue).
      measure(base + "-e2e",
              [&, k] {
                quantize_int8_device(dX.ptr, nullptr, M, K, cfg.act_per_row, dq_tmp.ptr, ds_tmp.ptr, dscratch.ptr);
                gemm_int8_device(dq_tmp.ptr, dqw.ptr, M, K, N, ep_tmp, GemmOut::F32, dY.ptr, k);
              },
              check_dq);
    };
    ours(GemmKernel::Dp4a);
    for (GemmKernel k : tensor_core_kernels()) ours(k);
    flush();

    // Backward of Y = X~ W~^T + b for a gradient dY (M x N): dX = dY W~ (M x K), dW = dY^T X~ (N x K), 4 M N K
    // operations; cuBLAS fp32 and bf16 run the same two products on float / bfloat16 operands, ours
    // (linear_backward_device) dequantizes the int8 codes and adds db. Checked before timing on
    // the sampled rows of dX (d.rows) and the first rows of dW against float64 sums of the operands each one
    // reads, within linear_backward_tol (float32 accumulation in any order).
    if (!stop && (wanted("bwd-fp32-cublas") || wanted("bwd-bf16-cublas") || wanted("bwd-int8"))) {
      std::vector<float> gy(MN);
      std::vector<uint16_t> gyb(MN);
      uint64_t z = 0x9e3779b97f4a7c15ULL ^ uint64_t(M * 31 + N);
      for (std::size_t i = 0; i < MN; ++i) {  // small centred values: xorshift, exact in float
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        gy[i] = float(int32_t(z % 2001) - 1000) * 0x1p-14f;
        gyb[i] = to_bf16(gy[i]);
      }
      Buf<float> dgy(MN), dgx(MK), dgw(NK), dgb(N);
      Buf<uint16_t> dgyb(MN);
      up(dgy.ptr, gy.data(), MN * 4);
      up(dgyb.ptr, gyb.data(), MN * 2);
      const int wrows = std::min(N, 4);
      auto bf = [](uint16_t b) {
        const uint32_t u = uint32_t(b) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return double(f);
      };
      // kind 0: fp32 operands, 1: bf16, 2: dequantized int8.
      auto xval = [&](int kind, std::size_t i, std::size_t k) {
        const std::size_t at = i * std::size_t(K) + k;
        if (kind == 0) return double(d.X[at]);
        if (kind == 1) return bf(Xb[at]);
        return double(float(d.qa[at]) * d.sa[cfg.act_per_row ? i : 0]);
      };
      auto wval = [&](int kind, std::size_t j, std::size_t k) {
        const std::size_t at = j * std::size_t(K) + k;
        if (kind == 0) return double(d.Wt[at]);
        if (kind == 1) return bf(Wb[at]);
        return double(float(d.qw[at]) * d.sw[j]);
      };
      auto gval = [&](int kind, std::size_t i, std::size_t j) {
        return kind == 1 ? bf(gyb[i * std::size_t(N) + j]) : double(gy[i * std::size_t(N) + j]);
      };
      auto check_bwd = [&](int kind, const std::string& n) {
        double worst = 0;
        std::vector<float> hx(static_cast<std::size_t>(K)), hw(static_cast<std::size_t>(K));
        auto cmp = [&](double got, double ref, double mag, int terms, const char* what, std::size_t r, std::size_t k) {
          const double err = std::fabs(got - ref);
          if (!(err <= linear_backward_tol(ref, mag, terms, false)))
            throw std::runtime_error(n + ": " + what + "[" + std::to_string(r) + "][" + std::to_string(k) + "] = " +
                                     std::to_string(got) + ", float64 sum " + std::to_string(ref));
          worst = std::max(worst, err);
        };
        for (std::size_t r = 0; r < R; ++r) {
          const std::size_t i = std::size_t(d.rows[r]);
          check(cudaMemcpy(hx.data(), dgx.ptr + i * std::size_t(K), std::size_t(K) * 4, cudaMemcpyDeviceToHost), "copy back");
          for (std::size_t k = 0; k < std::size_t(K); ++k) {
            double ref = 0, mag = 0;
            for (std::size_t j = 0; j < std::size_t(N); ++j) {
              const double t = gval(kind, i, j) * wval(kind, j, k);
              ref += t;
              mag += std::fabs(t);
            }
            cmp(hx[k], ref, mag, N, "dX", i, k);
          }
        }
        for (int j = 0; j < wrows; ++j) {
          check(cudaMemcpy(hw.data(), dgw.ptr + std::size_t(j) * K, std::size_t(K) * 4, cudaMemcpyDeviceToHost), "copy back");
          std::vector<double> ref(static_cast<std::size_t>(K), 0.0), mag(static_cast<std::size_t>(K), 0.0);
          for (std::size_t i = 0; i < std::size_t(M); ++i) {
            const double g = gval(kind, i, std::size_t(j));
            for (std::size_t k = 0; k < std::size_t(K); ++k) {
              const double t = g * xval(kind, i, k);
              ref[k] += t;
              mag[k] += std::fabs(t);
            }
          }
          for (std::size_t k = 0; k < std::size_t(K); ++k) cmp(hw[k], ref[k], mag[k], M, "dW", std::size_t(j), k);
        }
        return worst;
      };
      auto poison = [&] {
        check(cudaMemset(dgx.ptr, 0xff, MK * 4), "memset");
        check(cudaMemset(dgw.ptr, 0xff, NK * 4), "memset");
      };
      measure("bwd-fp32-cublas",
              [&] {
                lib.sgemm(false, false, M, K, N, dgy.ptr, N, dW.ptr, K, dgx.ptr, K);  // dX = dY W
                lib.sgemm(true, false, N, K, M, dgy.ptr, N, dX.ptr, K, dgw.ptr, K);   // dW = dY^T X
              },
              [&](const std::string& n) { return check_bwd(0, n); });
      poison();
      measure("bwd-bf16-cublas",
              [&] {
                lib.bf16gemm(false, false, M, K, N, dgyb.ptr, N, dWb.ptr, K, dgx.ptr, K);
                lib.bf16gemm(true, false, N, K, M, dgyb.ptr, N, dXb.ptr, K, dgw.ptr, K);
              },
              [&](const std::string& n) { return check_bwd(1, n); });
      poison();
      LinearBackwardArgs a;
      a.dY = dgy.ptr;
      a.type = GradType::F32;
      a.Xq = dqa.ptr;
      a.s_x = dsa.ptr;
      a.s_x_per_row = cfg.act_per_row;
      a.Wq = dqw.ptr;
      a.s_w = dsw.ptr;
      a.s_w_per_row = true;
      a.M = M;
      a.N = N;
      a.K = K;
      a.dX = dgx.ptr;
      a.dW = dgw.ptr;
      a.db = dgb.ptr;
      measure("bwd-int8", [&] { linear_backward_device(a); }, [&](const std::string& n) { return check_bwd(2, n); });
      flush();  // while this block's buffers live
    }
    if (stop) break;
  }
  if (!failures.empty()) {
    std::string msg = "bench gemm: " + std::to_string(failures.size()) + " kernel check(s) failed; first: " + failures[0];
    throw std::runtime_error(msg);
  }
  return rows;
}

}  // namespace qs::cuda
