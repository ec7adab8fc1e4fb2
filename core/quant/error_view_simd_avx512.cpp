// The avx512 build of the Error tab's per-element codes (16 float lanes); see error_view_simd_impl.h.
#define QS_LANES 16
#define QS_SUFFIX avx512
#include "quant/error_view_simd_impl.h"
