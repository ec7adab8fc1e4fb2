// cuBLASLt int8 and cuBLAS float GEMMs for the benchmark: error checks -> handles and workspace (RAII) ->
// per-shape int8 plans (layouts, heuristic candidates, the fastest kept) -> the calls.
// Row-major Y (M x N) = X (M x K) * W^T (W: N x K) is column-major Y^T (N x M) = op_T(W) * X, with W seen as
// a column-major K x N matrix (ld K) and X as a column-major K x M matrix (ld K): transa = T, transb = N.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <tuple>

#include "cuda/cuda_util.cuh"
#include "cuda/gemm_cublas.cuh"

namespace qs::cuda {

namespace {

// cuBLAS and cuBLASLt are opened on first use (dlopen), not linked: loading them costs ~200 MB of
// resident memory at process start, which every CLI command and the GUI would pay on a CUDA build even
// when no GPU GEMM runs (bench analyze's peak RSS went from 23 MB to 175 MB with them linked).
#define QS_STR2(x) #x
#define QS_STR(x) QS_STR2(x)  // expands first: cublasCreate -> "cublasCreate_v2"
#define QS_CUBLAS_FUNCS(X) X(cublasSetStream) X(cublasSetWorkspace) X(cublasSetMathMode) X(cublasGetStatusString) X(cublasGetStatusName) X(cublasDestroy) X(cublasCreate)
#define QS_CUBLASLT_FUNCS(X) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutCreate) X(cublasLtMatmulAlgoConfigGetAttribute) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul) X(cublasLtGetVersion) X(cublasLtDestroy) X(cublasLtCreate)

struct CublasLib {
#define QS_DECLARE(name) decltype(&name) p_##name = nullptr;
  QS_CUBLAS_FUNCS(QS_DECLARE)
  QS_CUBLASLT_FUNCS(QS_DECLARE)
#undef QS_DECLARE
  // C++ also sees an int64_t overload of cublasGemmEx: name the 32-bit C entry point's type.
  using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                      const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                      cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmExFn p_cublasGemmEx = nullptr;
  std::string error;  // why the libraries could not be used; empty when loaded
};

const CublasLib& load_cublas() {
  static CublasLib lib;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string major = QS_STR(CUBLAS_VER_MAJOR);
    auto open = [&](const char* base) -> void* {
      void* h = dlopen((std::string(base) + ".so." + major).c_str(), RTLD_NOW | RTLD_LOCAL);
      return h ? h : dlopen((std::string(base) + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    };
    void* blas = open("libcublas");
    void* lt = open("libcublasLt");
    if (!blas || !lt) {
      lib.error = std::string("cuBLAS libraries not found (libcublas.so.") + major + ", libcublasLt.so." + major +
                  "; install the CUDA toolkit's cuBLAS or add its lib folder to LD_LIBRARY_PATH)";
      return;
    }
#define QS_RESOLVE(handle)                                                                     \
  [&](auto& fn, const char* symbol) {                                                          \
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));       \
    if (!fn && lib.error.empty()) lib.error = std::string("cuBLAS library lacks ") + symbol;   \
  }
    auto from_blas = QS_RESOLVE(blas);
    auto from_lt = QS_RESOLVE(lt);
#undef QS_RESOLVE
#define QS_LOAD_BLAS(name) from_blas(lib.p_##name, QS_STR(name));
#define QS_LOAD_LT(name) from_lt(lib.p_##name, QS_STR(name));
    QS_CUBLAS_FUNCS(QS_LOAD_BLAS)
    QS_CUBLASLT_FUNCS(QS_LOAD_LT)
    from_blas(lib.p_cublasGemmEx, "cublasGemmEx");
#undef QS_LOAD_BLAS
#undef QS_LOAD_LT
  });
  return lib;
}

// The loaded entry points; throws (a clear one-line message) when cuBLAS is not installed.
const CublasLib& lib() {
  const CublasLib& l = load_cublas();
  if (!l.error.empty()) throw std::runtime_error(l.error);
  return l;
}

using detail::check;

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS ") + what + ": " + lib().p_cublasGetStatusName(s) + " (" +
                             lib().p_cublasGetStatusString(s) + ")");
}

constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

struct Int8Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string name;
  ~Int8Plan() {
    if (c) lib().p_cublasLtMatrixLayoutDestroy(c);
    if (b) lib().p_cublasLtMatrixLayoutDestroy(b);
    if (a) lib().p_cublasLtMatrixLayoutDestroy(a);
    if (op) lib().p_cublasLtMatmulDescDestroy(op);
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
    if (lt) lib().p_cublasLtDestroy(lt);
    if (blas) lib().p_cublasDestroy(blas);
  }

  void run(const Int8Plan& p, const cublasLtMatmulAlgo_t& algo, const int8_t* A, const int8_t* B, int32_t* Y,
           cudaStream_t s) {
    const int32_t alpha = 1, beta = 0;
    check_blas(lib().p_cublasLtMatmul(lt, p.op, &alpha, B, p.a, A, p.b, &beta, Y, p.c, Y, p.c, &algo, workspace,
                              kWorkspaceBytes, s),
               "cublasLtMatmul (int8)");
  }

  Int8Plan& plan(const int8_t* A, const int8_t* B, int M, int K, int N, int32_t* Y, cudaStream_t s) {
    auto& slot = plans[{M, K, N}];
    if (slot) return *slot;
    auto p = std::make_unique<Int8Plan>();
    check_blas(lib().p_cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32I, CUDA_R_32I), "matmul desc");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_blas(lib().p_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
    check_blas(lib().p_cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
    check_blas(lib().p_cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8I, K, N, K), "layout W");
    check_blas(lib().p_cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8I, K, M, K), "layout X");
    check_blas(lib().p_cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32I, N, M, N), "layout Y");
    cublasLtMatmulPreference_t pref = nullptr;
    check_blas(lib().p_cublasLtMatmulPreferenceCreate(&pref), "preference");
    std::size_t ws = kWorkspaceBytes;
    lib().p_cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t cand[8] = {};
    int found = 0;
    const cublasStatus_t hs = lib().p_cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, pref, 8, cand, &found);
    lib().p_cublasLtMatmulPreferenceDestroy(pref);
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
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr);
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr);
    int32_t splitk = -1;
    uint32_t swizzle = 0, custom = 0;
    uint16_t cluster = 0;
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, nullptr);
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, nullptr);
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, nullptr);
    lib().p_cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, nullptr);
    p->name = "algo " + std::to_string(id) + " tile " + std::to_string(tile) + " stages " + std::to_string(stages) +
              " split-k " + std::to_string(splitk) + " swizzle " + std::to_string(swizzle) + " custom " +
              std::to_string(custom) + " cluster " + std::to_string(cluster) + " (fastest of " + std::to_string(found) +
              " heuristic candidates, #" + std::to_string(best_i + 1) + ")";
    slot = std::move(p);
    return *slot;
  }
};

GemmLibrary::GemmLibrary() : p_(std::make_unique<Impl>()) {
  check_blas(lib().p_cublasCreate(&p_->blas), "create");
  check_blas(lib().p_cublasLtCreate(&p_->lt), "Lt create");
  check(cudaMalloc(&p_->workspace, kWorkspaceBytes), "cudaMalloc (cuBLAS workspace)");
  check_blas(lib().p_cublasSetWorkspace(p_->blas, p_->workspace, kWorkspaceBytes), "workspace");
  check_blas(lib().p_cublasSetMathMode(p_->blas, CUBLAS_DEFAULT_MATH), "math mode");
}

GemmLibrary::~GemmLibrary() = default;

std::string GemmLibrary::int8(const int8_t* A, const int8_t* B, int M, int K, int N, int32_t* Y, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const Int8Plan& p = p_->plan(A, B, M, K, N, Y, s);
  p_->run(p, p.algo, A, B, Y, s);
  return p.name;
}

void GemmLibrary::f32(const float* X, const float* W, int M, int K, int N, float* Y, bool tf32, void* stream) {
  check_blas(lib().p_cublasSetStream(p_->blas, static_cast<cudaStream_t>(stream)), "stream");
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(lib().p_cublasGemmEx(p_->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, CUDA_R_32F, K, X, CUDA_R_32F, K,
                          &beta, Y, CUDA_R_32F, N, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT),
             tf32 ? "GemmEx (tf32)" : "GemmEx (fp32)");
}

namespace {
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: a row-major matrix read column-major is
// its transpose, so B goes first with its own transpose flag, and m = N, n = M.
void gemm_rowmajor(cublasHandle_t h, cudaDataType in, bool trans_a, bool trans_b, int M, int N, int K, const void* A,
                   int lda, const void* B, int ldb, float* C, int ldc, void* stream, const char* what) {
  check_blas(lib().p_cublasSetStream(h, static_cast<cudaStream_t>(stream)), "stream");
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(lib().p_cublasGemmEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                                  &alpha, B, in, ldb, A, in, lda, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
             what);
}
}  // namespace

void GemmLibrary::sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B,
                        int ldb, float* C, int ldc, void* stream) {
  gemm_rowmajor(p_->blas, CUDA_R_32F, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, stream, "GemmEx (sgemm)");
}

void GemmLibrary::bf16gemm(bool trans_a, bool trans_b, int M, int N, int K, const uint16_t* A, int lda, const uint16_t* B,
                           int ldb, float* C, int ldc, void* stream) {
  gemm_rowmajor(p_->blas, CUDA_R_16BF, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, stream, "GemmEx (bf16)");
}

void GemmLibrary::bf16(const uint16_t* X, const uint16_t* W, int M, int K, int N, float* Y, void* stream) {
  check_blas(lib().p_cublasSetStream(p_->blas, static_cast<cudaStream_t>(stream)), "stream");
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(lib().p_cublasGemmEx(p_->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, CUDA_R_16BF, K, X, CUDA_R_16BF, K,
                          &beta, Y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "GemmEx (bf16)");
}

std::string GemmLibrary::version() {
  const std::size_t v = lib().p_cublasLtGetVersion();
  return "cuBLASLt " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace qs::cuda
