// The AVX2 + FMA build of the training products (see train_gemm_impl.h); called only after a runtime CPU check.
#include "train/train_gemm.h"
#define QS_TRAIN_GEMM_AVX2 1
#define QS_TRAIN_GEMM_ENTRY train_gemm_avx2
#include "train/train_gemm_impl.h"
