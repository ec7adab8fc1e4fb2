// The AVX2 + FMA build of the Eigen float32 baseline (see gemm_f32_eigen_impl.h); called only after a
// runtime CPU check.
#define QS_EIGEN_RENAME qs_eigen_avx2
#define QS_F32_ENTRY gemm_f32_eigen_avx2
#include "gemm/gemm_f32_eigen_impl.h"
