// The avx2 build of the reductions (8 float lanes); see reduce_simd_impl.h.
#define QS_LANES 8
#define QS_SUFFIX avx2
#include "quant/reduce_simd_impl.h"
