// The avx512 build of the reductions (16 float lanes); see reduce_simd_impl.h.
#define QS_LANES 16
#define QS_SUFFIX avx512
#include "quant/reduce_simd_impl.h"
