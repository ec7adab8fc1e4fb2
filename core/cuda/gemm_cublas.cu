// cuBLASLt int8 and cuBLAS float GEMMs for the benchmark: error checks -> handles and workspace (RAII) ->
// per-shape int8 plans (layouts, heuristic candidates, the fastest kept) -> the calls.
// Row-major Y (M x N) = X (M x K) * W^T (W: N x K) is column-major Y^T (N x M) = op_T(W) * X, with W seen as
// a column-major K x N matrix (ld K) and X as a column-major K x M matrix (ld K): transa = T, transb = N.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "cuda/cuda_util.cuh"
#include "cuda/gemm_cublas.cuh"

namespace qs::cuda {

namespace {

using detail::check;

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS ") + what + ": " + cublasGetStatusName(s) + " (" +
                             cublasGetStatusString(s) + ")");
}

constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

struct Int8Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string name;
  ~Int8Plan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

struct GemmLibrary::Impl {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Int8Plan>> plans;
  ~Impl() {
    plans.clear();
    if (workspace) cudaFree(workspace);
    if (lt) cublasLtDestroy(lt);
    if (blas) cublasDestroy(blas);
  }

  void run(const Int8Plan& p, const cublasLtMatmulAlgo_t& algo, const int8_t* A, const int8_t* B, int32_t* Y,
           cudaStream_t s) {
    const int32_t alpha = 1, beta = 0;
    check_blas(cublasLtMatmul(lt, p.op, &alpha, B, p.a, A, p.b, &beta, Y, p.c, Y, p.c, &algo, workspace,
                              kWorkspaceBytes, s),
               "cublasLtMatmul (int8)");
  }

  Int8Plan& plan(const int8_t* A, const int8_t* B, int M, int K, int N, int32_t* Y, cudaStream_t s) {
    auto& slot = plans[{M, K, N}];
    if (slot) return *slot;
    auto p = std::make_unique<Int8Plan>();
    check_blas(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32I, CUDA_R_32I), "matmul desc");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_blas(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
    check_blas(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
    check_blas(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8I, K, N, K), "layout W");
    check_blas(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8I, K, M, K), "layout X");
    check_blas(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32I, N, M, N), "layout Y");
    cublasLtMatmulPreference_t pref = nullptr;
    check_blas(cublasLtMatmulPreferenceCreate(&pref), "preference");
    std::size_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t cand[8] = {};
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, pref, 8, cand, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
      throw std::runtime_error("cuBLASLt has no int8 algorithm for " + std::to_string(M) + "x" + std::to_string(K) +
                               "x" + std::to_string(N) + " (K and the leading dimensions may need to be multiples of 4)");
    // Time every candidate a few times; keep the fastest (the heuristic's first is not always it).
    float best = 1e30f;
    int best_i = -1;
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "event");
    check(cudaEventCreate(&e1), "event");
    for (int i = 0; i < found; ++i) {
      if (cand[i].state != CUBLAS_STATUS_SUCCESS) continue;
      try {
        run(*p, cand[i].algo, A, B, Y, s);
      } catch (const std::runtime_error&) {
        continue;
      }
      check(cudaEventRecord(e0, s), "event");
      for (int r = 0; r < 3; ++r) run(*p, cand[i].algo, A, B, Y, s);
      check(cudaEventRecord(e1, s), "event");
      check(cudaEventSynchronize(e1), "event");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e0, e1), "event");
      if (ms < best) {
        best = ms;
        best_i = i;
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (best_i < 0) throw std::runtime_error("cuBLASLt: no int8 candidate ran");
    p->algo = cand[best_i].algo;
    int id = -1, tile = -1, stages = -1;
    cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
    cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr);
    cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr);
    p->name = "algo " + std::to_string(id) + " tile " + std::to_string(tile) + " stages " + std::to_string(stages) +
              " (fastest of " + std::to_string(found) + " heuristic candidates, #" + std::to_string(best_i + 1) + ")";
    slot = std::move(p);
    return *slot;
  }
};

GemmLibrary::GemmLibrary() : p_(std::make_unique<Impl>()) {
  check_blas(cublasCreate(&p_->blas), "create");
  check_blas(cublasLtCreate(&p_->lt), "Lt create");
  check(cudaMalloc(&p_->workspace, kWorkspaceBytes), "cudaMalloc (cuBLAS workspace)");
  check_blas(cublasSetWorkspace(p_->blas, p_->workspace, kWorkspaceBytes), "workspace");
  check_blas(cublasSetMathMode(p_->blas, CUBLAS_DEFAULT_MATH), "math mode");
}

GemmLibrary::~GemmLibrary() = default;

std::string GemmLibrary::int8(const int8_t* A, const int8_t* B, int M, int K, int N, int32_t* Y, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const Int8Plan& p = p_->plan(A, B, M, K, N, Y, s);
  p_->run(p, p.algo, A, B, Y, s);
  return p.name;
}

void GemmLibrary::f32(const float* X, const float* W, int M, int K, int N, float* Y, bool tf32, void* stream) {
  check_blas(cublasSetStream(p_->blas, static_cast<cudaStream_t>(stream)), "stream");
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(cublasGemmEx(p_->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, CUDA_R_32F, K, X, CUDA_R_32F, K,
                          &beta, Y, CUDA_R_32F, N, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT),
             tf32 ? "GemmEx (tf32)" : "GemmEx (fp32)");
}

void GemmLibrary::bf16(const uint16_t* X, const uint16_t* W, int M, int K, int N, float* Y, void* stream) {
  check_blas(cublasSetStream(p_->blas, static_cast<cudaStream_t>(stream)), "stream");
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(cublasGemmEx(p_->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, CUDA_R_16BF, K, X, CUDA_R_16BF, K,
                          &beta, Y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "GemmEx (bf16)");
}

std::string GemmLibrary::version() {
  const std::size_t v = cublasLtGetVersion();
  return "cuBLASLt " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace qs::cuda
