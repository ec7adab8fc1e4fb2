// The AVX-512 build of the training products (see train_gemm_impl.h); called only after a runtime CPU check.
#include "train/train_gemm.h"
#define QS_TRAIN_GEMM_AVX512 1
#define QS_TRAIN_GEMM_ENTRY train_gemm_avx512
#include "train/train_gemm_impl.h"
