// The generic build of the reductions (4 float lanes); see reduce_simd_impl.h.
#define QS_LANES 4
#define QS_SUFFIX generic
#include "quant/reduce_simd_impl.h"
