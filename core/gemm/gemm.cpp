// Int8 GEMM front end: level detection, the int32-safe K bound, packing of B (once) and of A (per
// call), validation, threading, and the scalar oracles. Exercise: tests/tst_gemm.cpp,
// `quantscope-cli bench gemm --backend cpu --sizes 256`.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "gemm/gemm.h"
#include "gemm/gemm_impl.h"
#include "util/parallel.h"

namespace qs {

const char* to_string(QType t) { return t == QType::S8 ? "int8" : "uint8"; }

const std::vector<SimdLevel>& available_gemm_levels() {
  static const std::vector<SimdLevel> levels = [] {
    std::vector<SimdLevel> v{SimdLevel::Generic};
#if defined(QS_HAVE_X86_SIMD)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) v.push_back(SimdLevel::Avx2);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni"))
      v.push_back(SimdLevel::Avx512);
#endif
    return v;
  }();
  return levels;
}

SimdLevel best_gemm_level() { return available_gemm_levels().back(); }

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::Generic: return "generic";
    case GemmKernel::Avx2: return "avx2";
    case GemmKernel::AvxVnni: return "avx-vnni";
    case GemmKernel::Avx512Vnni: return "avx512-vnni";
  }
  return "?";
}

bool gemm_has_avxvnni() {
  static const bool has = [] {
#if defined(QS_HAVE_X86_SIMD)
    __builtin_cpu_init();
    return detail::avxvnni_compiled() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
#else
    return false;
#endif
  }();
  return has;
}

namespace {
GemmKernel kernel_of(SimdLevel level) {
  if (level == SimdLevel::Generic) return GemmKernel::Generic;
  if (level == SimdLevel::Avx512) return GemmKernel::Avx512Vnni;
  const char* pin = std::getenv("QS_GEMM_AVX2_KERNEL");  // read per call: tests switch it
  if (gemm_has_avxvnni() && !(pin && std::string(pin) == "avx2")) return GemmKernel::AvxVnni;
  return GemmKernel::Avx2;
}
}  // namespace

const char* gemm_level_name(SimdLevel l) {
  switch (l) {
    case SimdLevel::Generic: return "generic";
    case SimdLevel::Avx2: return "avx2";
    case SimdLevel::Avx512: return "vnni";
  }
  return "?";
}

void PackedB::Free::operator()(int8_t* p) const { std::free(p); }

std::size_t PackedB::bytes() const {
  return std::size_t(panels()) * k_groups() * kGemmPanel * 4 + (u_.size() + beta_.size()) * sizeof(int32_t);
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw GemmError(what);
}

std::string str(long long v) { return std::to_string(v); }

// Range of q - z for an operand of type t with zero points zp (empty = 0).
std::pair<int32_t, int32_t> centered_range(QType t, std::span<const int32_t> zp) {
  if (t == QType::S8) return {-128, 127};
  int32_t zmin = 0, zmax = 0;
  if (!zp.empty()) {
    zmin = *std::min_element(zp.begin(), zp.end());
    zmax = *std::max_element(zp.begin(), zp.end());
  }
  return {-zmax, 255 - zmin};
}

void check_zero_points(std::span<const int32_t> zp, std::size_t n, const char* what, const char* count) {
  require(zp.empty() || zp.size() == 1 || zp.size() == n,
          std::string(what) + " zero points: expected 1 or " + count + " = " + str(n) + ", got " + str(zp.size()));
  for (int32_t z : zp)
    require(z >= 0 && z <= 255, std::string(what) + " zero point " + str(z) + " is outside [0, 255]");
}

void check_k_bound(int K, std::pair<int32_t, int32_t> a, std::pair<int32_t, int32_t> b, const char* what) {
  const int64_t kmax = gemm_max_k(a.first, a.second, b.first, b.second);
  if (K > kmax)
    throw GemmError(std::string(what) + ": K = " + str(K) + " exceeds the int32-safe bound " + str(kmax) +
                    " for operands with (q - z) in [" + str(a.first) + ", " + str(a.second) + "] x [" +
                    str(b.first) + ", " + str(b.second) + "]; split K and add the int32 parts in int64");
}

}  // namespace

PackedB pack_b_impl(const void* Bv, QType type, int K, int N, std::ptrdiff_t ld, BLayout layout,
                    std::span<const int32_t> zero_point) {
  require(Bv != nullptr, "pack_b: B is null");
  require(K > 0 && N > 0, "pack_b: K and N must be positive, got K = " + str(K) + ", N = " + str(N));
  const std::ptrdiff_t dense = layout == BLayout::KxN ? N : K;
  if (ld == 0) ld = dense;
  require(ld >= dense, "pack_b: leading dimension " + str(ld) + " is smaller than " + str(dense));
  if (type == QType::S8)
    require(zero_point.empty(), "pack_b: int8 B has no zero point (symmetric)");
  else
    check_zero_points(zero_point, std::size_t(N), "pack_b: uint8 B", "N");

  PackedB p;
  p.K_ = K;
  p.N_ = N;
  p.type_ = type;
  const int KG = p.k_groups(), P = p.panels(), NP = P * kGemmPanel;
  const std::size_t bytes = std::size_t(P) * KG * kGemmPanel * 4;
  auto* mem = static_cast<int8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (!mem) throw std::bad_alloc();
  p.data_.reset(mem);
  std::memset(mem, 0, bytes);
  const auto* B = static_cast<const uint8_t*>(Bv);
  const uint8_t flip = type == QType::U8 ? 0x80 : 0x00;  // uint8 b - 128 is b ^ 0x80 read as int8
  p.u_.assign(std::size_t(NP), 0);
  p.beta_.assign(std::size_t(NP), 0);
  std::vector<uint32_t> sum(std::size_t(NP), 0);
  auto put = [&](int k, int j, uint8_t raw) {
    const int8_t v = static_cast<int8_t>(raw ^ flip);
    const int pnl = j / kGemmPanel, c = j % kGemmPanel;
    mem[((std::ptrdiff_t(pnl) * KG + k / 4) * kGemmPanel + c) * 4 + k % 4] = v;
    sum[std::size_t(j)] += uint32_t(int32_t(v));
  };
  // Read B in its own row order (the writes stay within one panel's k groups).
  if (layout == BLayout::KxN) {
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) put(k, j, B[std::ptrdiff_t(k) * ld + j]);
  } else {
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) put(k, j, B[std::ptrdiff_t(j) * ld + k]);
  }
  for (int j = 0; j < N; ++j) {
    const int32_t zb = zero_point.empty() ? 0 : zero_point[zero_point.size() == 1 ? 0 : std::size_t(j)];
    const int32_t beta = type == QType::U8 ? zb - 128 : 0;
    p.beta_[std::size_t(j)] = beta;
    p.has_beta_ |= beta != 0;
    // u = colsum' - K * beta, kept modulo 2^32 like every raw sum.
    p.u_[std::size_t(j)] = int32_t(sum[std::size_t(j)] - uint32_t(K) * uint32_t(beta));
  }
  const auto r = centered_range(type, zero_point);
  p.lo_ = r.first;
  p.hi_ = r.second;
  return p;
}

PackedB pack_b_int8(const int8_t* B, int K, int N, std::ptrdiff_t ld, BLayout layout) {
  return pack_b_impl(B, QType::S8, K, N, ld, layout, {});
}

PackedB pack_b_uint8(const uint8_t* B, int K, int N, std::span<const int32_t> zero_point, std::ptrdiff_t ld,
                     BLayout layout) {
  return pack_b_impl(B, QType::U8, K, N, ld, layout, zero_point);
}

namespace {

// Packed A of a level with MR rows per panel and value type T: see GemmJob. Also fills ra.
template <class T, int MR>
void pack_a_rows(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end) {
  const uint8_t flip = A.type == QType::S8 ? 0x80 : 0x00;  // int8 a + 128 is a ^ 0x80 read as uint8
  const auto* src = static_cast<const uint8_t*>(A.data);
  const int K = A.K, Kfull = K / 4 * 4;
  for (int p0 = row_begin; p0 < row_end; p0 += MR) {
    const int rows = std::min(MR, A.M - p0);
    T* dst = reinterpret_cast<T*>(apack) + std::ptrdiff_t(p0) * KG * 4;
    for (int r = 0; r < rows; ++r) {
      const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld;
      uint32_t sum = 0;
      T* d = dst + std::ptrdiff_t(r) * 4;
      const std::ptrdiff_t step = std::ptrdiff_t(rows) * 4;
      int k = 0;
      for (; k < Kfull; k += 4, d += step)
        for (int t = 0; t < 4; ++t) {
          const uint8_t v = uint8_t(row[k + t] ^ flip);
          d[t] = T(v);
          sum += v;
        }
      if (k < K)
        for (int t = 0; t < 4; ++t) {
          const uint8_t v = k + t < K ? uint8_t(row[k + t] ^ flip) : 0;
          d[t] = T(v);
          sum += v;
        }
      ra[p0 + r] = int32_t(sum);
    }
  }
}

struct Aligned {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
std::unique_ptr<T[], Aligned> aligned_array(std::size_t n) {
  void* p = std::aligned_alloc(64, std::max<std::size_t>(64, (n * sizeof(T) + 63) / 64 * 64));
  if (!p) throw std::bad_alloc();
  return std::unique_ptr<T[], Aligned>(static_cast<T*>(p));
}

// Blocking, overridable for tuning (QS_GEMM_KC = k groups, QS_GEMM_MC = row panels, QS_GEMM_NC = panels).
int env_int(const char* name, int fallback) {
  const char* s = std::getenv(name);
  return s && *s ? std::max(1, std::atoi(s)) : fallback;
}

void run(const QMatrixA& Ain, const PackedB& B, int32_t* C, float* Y, std::ptrdiff_t ld, const Dequant* dq,
         int threads, SimdLevel level, const char* what) {
  QMatrixA A = Ain;
  require(A.data != nullptr, std::string(what) + ": A is null");
  require(A.M > 0 && A.K > 0, std::string(what) + ": M and K must be positive, got M = " + str(A.M) + ", K = " + str(A.K));
  require(!B.empty(), std::string(what) + ": B is empty (pack it with pack_b_int8 / pack_b_uint8)");
  require(A.K == B.K(), std::string(what) + ": A is " + str(A.M) + " x " + str(A.K) + " but B has K = " + str(B.K()));
  if (A.ld == 0) A.ld = A.K;
  require(A.ld >= A.K, std::string(what) + ": lda = " + str(A.ld) + " is smaller than K = " + str(A.K));
  const int M = A.M, N = B.N(), K = A.K;
  if (ld == 0) ld = N;
  require(ld >= N, std::string(what) + ": ldc = " + str(ld) + " is smaller than N = " + str(N));
  require(C != nullptr || Y != nullptr, std::string(what) + ": output is null");
  if (A.type == QType::S8)
    require(A.zero_point.empty(), std::string(what) + ": int8 A has no zero point (symmetric)");
  else
    check_zero_points(A.zero_point, std::size_t(M), (std::string(what) + ": uint8 A").c_str(), "M");
  check_k_bound(K, centered_range(A.type, A.zero_point), B.value_range(), what);
  const auto& levels = available_gemm_levels();
  require(std::find(levels.begin(), levels.end(), level) != levels.end(),
          std::string(what) + ": level " + gemm_level_name(level) + " is not available on this CPU/build");
  const int NP = B.panels() * kGemmPanel;
  if (dq) {
    require(dq->scale_a.size() == 1 || dq->scale_a.size() == std::size_t(M),
            std::string(what) + ": scale_a needs 1 or M = " + str(M) + " values, got " + str(dq->scale_a.size()));
    require(dq->scale_b.size() == 1 || dq->scale_b.size() == std::size_t(N),
            std::string(what) + ": scale_b needs 1 or N = " + str(N) + " values, got " + str(dq->scale_b.size()));
    require(dq->bias.empty() || dq->bias.size() == std::size_t(N),
            std::string(what) + ": bias needs 0 or N = " + str(N) + " values, got " + str(dq->bias.size()));
  }
  // threads <= 0 (all cores): a thread per ~4M multiply-adds at most, so tiny products stay on one.
  // An explicit count is honoured.
  if (threads <= 0) threads = int(std::clamp<int64_t>((int64_t(M) * N * K) >> 22, 1, resolve_threads(0)));

  detail::GemmJob j;
  j.M = M;
  j.N = N;
  j.K = K;
  j.KG = B.k_groups();
  const GemmKernel kernel = kernel_of(level);
  int mr = detail::kMrGeneric, esz = detail::kEszGeneric;
  if (kernel == GemmKernel::Avx2) mr = detail::kMrAvx2, esz = detail::kEszAvx2;
  if (kernel == GemmKernel::AvxVnni) mr = detail::kMrAvxVnni, esz = detail::kEszAvxVnni;
  if (kernel == GemmKernel::Avx512Vnni) mr = detail::kMrVnni, esz = detail::kEszVnni;
  const int mpanels = (M + mr - 1) / mr;
  auto apack = aligned_array<uint8_t>(std::size_t(M) * j.KG * 4 * esz);
  auto rowv = aligned_array<int32_t>(std::size_t(M) * 3);
  int32_t* ra = rowv.get();
  int32_t* alpha = rowv.get() + M;
  int32_t* rowc = rowv.get() + 2 * std::size_t(M);
  for (int i = 0; i < M; ++i) {
    const auto& zp = A.zero_point;
    alpha[i] = (A.type == QType::S8 ? 128 : 0) + (zp.empty() ? 0 : zp[zp.size() == 1 ? 0 : std::size_t(i)]);
    // The Avx2 kernel sums s = a' - 128 instead of a' (its packer gives ra = sum s): a - za = s - (alpha - 128).
    if (kernel == GemmKernel::Avx2) alpha[i] -= 128;
  }
  auto pack = [&](int b, int e) {
    switch (kernel) {
      case GemmKernel::Avx512Vnni: detail::pack_a_vnni(A, j.KG, apack.get(), ra, b, e); break;
      case GemmKernel::AvxVnni: detail::pack_a_avxvnni(A, j.KG, apack.get(), ra, b, e); break;
      case GemmKernel::Avx2: detail::pack_a_avx2(A, j.KG, apack.get(), ra, rowc, b, e); break;
      case GemmKernel::Generic: pack_a_rows<uint8_t, detail::kMrGeneric>(A, j.KG, apack.get(), ra, b, e); break;
    }
  };
  const std::size_t work = std::size_t(M) * std::size_t(K);
  if (threads == 1 || work < (std::size_t(1) << 18)) {
    pack(0, M);
  } else {
    const int chunk = std::max(1, (mpanels + threads - 1) / threads);
    parallel_chunks(std::size_t(mpanels), std::size_t(chunk), threads, [&](std::size_t b, std::size_t e) {
      pack(int(b) * mr, std::min(M, int(e) * mr));
    });
  }
  j.apack = apack.get();
  j.bpack = B.data();
  j.alpha = alpha;
  j.ra = ra;
  j.rowc = kernel == GemmKernel::Avx2 ? rowc : nullptr;
  j.u = B.u();
  j.beta = B.beta();
  j.has_beta = B.has_beta();
  j.c = C;
  j.y = Y;
  j.ld = ld;
  std::unique_ptr<float[], Aligned> fv;
  if (dq) {
    fv = aligned_array<float>(std::size_t(M) + 2 * std::size_t(NP));
    float* sa = fv.get();
    float* sb = sa + M;
    float* bias = sb + NP;
    for (int i = 0; i < M; ++i) sa[i] = dq->scale_a[dq->scale_a.size() == 1 ? 0 : std::size_t(i)];
    for (int c = 0; c < NP; ++c) {
      sb[c] = c < N ? dq->scale_b[dq->scale_b.size() == 1 ? 0 : std::size_t(c)] : 0.0f;
      bias[c] = c < N && !dq->bias.empty() ? dq->bias[std::size_t(c)] : 0.0f;
    }
    j.sa = sa;
    j.sb = sb;
    j.bias = bias;
  }
  // K blocks only past 4096: partial sums then round-trip through the output, which costs more than
  // streaming a deep B micro-panel (48 x K bytes) from L2. An M block of A panels fills about 384 KiB.
  const int kblocks = (j.KG + 1023) / 1024;
  j.kc_groups = env_int("QS_GEMM_KC", (j.KG + kblocks - 1) / kblocks);
  j.mc_panels = env_int("QS_GEMM_MC", std::clamp((384 << 10) / (mr * 4 * esz * j.kc_groups), 2, 64));
  j.nc_panels = env_int("QS_GEMM_NC", 16);

  auto tiles = kernel == GemmKernel::Avx512Vnni ? &detail::gemm_tiles_vnni
               : kernel == GemmKernel::AvxVnni  ? &detail::gemm_tiles_avxvnni
               : kernel == GemmKernel::Avx2     ? &detail::gemm_tiles_avx2
                                                : &detail::gemm_tiles_generic;
  const int panels = B.panels();
  if (threads == 1) {
    tiles(j, 0, panels, 0, mpanels);
    return;
  }
  // Threads take equal contiguous runs of micro-tiles in panel-major order (panel p, row panel r), so
  // the split is even whatever the shape: whole panels, plus at most a partial panel at each end.
  const int64_t items = int64_t(panels) * mpanels;
  parallel_chunks(std::size_t(threads), 1, threads, [&](std::size_t tb, std::size_t) {
    const int64_t i0 = items * int64_t(tb) / threads, i1 = items * int64_t(tb + 1) / threads;
    if (i0 >= i1) return;
    const int p0 = int(i0 / mpanels), r0 = int(i0 % mpanels);
    const int p1 = int(i1 / mpanels), r1 = int(i1 % mpanels);
    if (p0 == p1) {
      tiles(j, p0, p0 + 1, r0, r1);
      return;
    }
    int pb = p0;
    if (r0 > 0) tiles(j, pb++, p0 + 1, r0, mpanels);
    if (pb < p1) tiles(j, pb, p1, 0, mpanels);
    if (r1 > 0) tiles(j, p1, p1 + 1, 0, r1);
  });
}

}  // namespace

void gemm_int8(const int8_t* A, int M, int K, std::ptrdiff_t lda, const PackedB& B, int32_t* C,
               std::ptrdiff_t ldc, int threads, SimdLevel level) {
  run(QMatrixA{.data = A, .type = QType::S8, .M = M, .K = K, .ld = lda}, B, C, nullptr, ldc, nullptr, threads, level,
      "gemm_int8");
}

void gemm_q8(const QMatrixA& A, const PackedB& B, int32_t* C, std::ptrdiff_t ldc, int threads, SimdLevel level) {
  run(A, B, C, nullptr, ldc, nullptr, threads, level, "gemm_q8");
}

void gemm_q8_dequant(const QMatrixA& A, const PackedB& B, const Dequant& dq, float* Y, std::ptrdiff_t ldy,
                     int threads, SimdLevel level) {
  run(A, B, nullptr, Y, ldy, &dq, threads, level, "gemm_q8_dequant");
}

GemmKernel gemm_kernel_for(SimdLevel level) {
  const auto& levels = available_gemm_levels();
  require(std::find(levels.begin(), levels.end(), level) != levels.end(),
          std::string("gemm_kernel_for: level ") + gemm_level_name(level) + " is not available on this CPU/build");
  return kernel_of(level);
}

void gemm_int8_ref(const int8_t* A, const int8_t* B, int32_t* C, int M, int K, int N) {
  require(A && B && C, "gemm_int8_ref: null pointer");
  require(M > 0 && K > 0 && N > 0, "gemm_int8_ref: M, K and N must be positive");
  check_k_bound(K, {-128, 127}, {-128, 127}, "gemm_int8_ref");
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < K; ++k) acc += int32_t(A[std::ptrdiff_t(i) * K + k]) * int32_t(B[std::ptrdiff_t(k) * N + j]);
      C[std::ptrdiff_t(i) * N + j] = acc;
    }
}

void gemm_q8_ref(const QMatrixA& A, const void* B, QType b_type, std::span<const int32_t> b_zero_point, int N,
                 int32_t* C, std::ptrdiff_t ldc) {
  require(A.data && B && C, "gemm_q8_ref: null pointer");
  require(A.M > 0 && A.K > 0 && N > 0, "gemm_q8_ref: M, K and N must be positive");
  const std::ptrdiff_t lda = A.ld ? A.ld : A.K;
  if (ldc == 0) ldc = N;
  if (A.type == QType::U8) check_zero_points(A.zero_point, std::size_t(A.M), "gemm_q8_ref: uint8 A", "M");
  if (b_type == QType::U8) check_zero_points(b_zero_point, std::size_t(N), "gemm_q8_ref: uint8 B", "N");
  check_k_bound(A.K, centered_range(A.type, A.zero_point), centered_range(b_type, b_zero_point), "gemm_q8_ref");
  auto val = [](const void* p, QType t, std::ptrdiff_t i) -> int32_t {
    return t == QType::S8 ? int32_t(static_cast<const int8_t*>(p)[i]) : int32_t(static_cast<const uint8_t*>(p)[i]);
  };
  auto zp = [](std::span<const int32_t> z, int i) { return z.empty() ? 0 : z[z.size() == 1 ? 0 : std::size_t(i)]; };
  for (int i = 0; i < A.M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = 0;
      const int32_t za = A.type == QType::U8 ? zp(A.zero_point, i) : 0;
      const int32_t zb = b_type == QType::U8 ? zp(b_zero_point, j) : 0;
      for (int k = 0; k < A.K; ++k)
        acc += (val(A.data, A.type, i * lda + k) - za) * (val(B, b_type, std::ptrdiff_t(k) * N + j) - zb);
      C[std::ptrdiff_t(i) * ldc + j] = acc;
    }
}

void dequant_ref(const int32_t* C, int M, int N, std::ptrdiff_t ldc, const Dequant& dq, float* Y, std::ptrdiff_t ldy) {
  require(C && Y, "dequant_ref: null pointer");
  require(dq.scale_a.size() == 1 || dq.scale_a.size() == std::size_t(M), "dequant_ref: scale_a needs 1 or M values");
  require(dq.scale_b.size() == 1 || dq.scale_b.size() == std::size_t(N), "dequant_ref: scale_b needs 1 or N values");
  require(dq.bias.empty() || dq.bias.size() == std::size_t(N), "dequant_ref: bias needs 0 or N values");
  if (ldc == 0) ldc = N;
  if (ldy == 0) ldy = N;
  for (int i = 0; i < M; ++i) {
    const float sa = dq.scale_a[dq.scale_a.size() == 1 ? 0 : std::size_t(i)];
    for (int j = 0; j < N; ++j) {
      const float sb = dq.scale_b[dq.scale_b.size() == 1 ? 0 : std::size_t(j)];
      const float b = dq.bias.empty() ? 0.0f : dq.bias[std::size_t(j)];
      float y = static_cast<float>(C[std::ptrdiff_t(i) * ldc + j]) * sa;
      y = y * sb;
      Y[std::ptrdiff_t(i) * ldy + j] = y + b;
    }
  }
}

}  // namespace qs
