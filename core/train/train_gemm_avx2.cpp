// The AVX2 + FMA build of the training products (see train_gemm_impl.h); called only after a runtime CPU check.
#include "train/train_gemm.h"
#define QS_EIGEN_RENAME qs_train_eigen_avx2
#define QS_TRAIN_GEMM_ENTRY train_gemm_avx2
#include "train/train_gemm_impl.h"
