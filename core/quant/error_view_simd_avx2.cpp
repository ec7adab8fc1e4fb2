// The avx2 build of the Error tab's per-element codes (8 float lanes); see error_view_simd_impl.h.
#define QS_LANES 8
#define QS_SUFFIX avx2
#include "quant/error_view_simd_impl.h"
