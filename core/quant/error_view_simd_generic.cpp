// The generic build of the Error tab's per-element codes (4 float lanes); see error_view_simd_impl.h.
#define QS_LANES 4
#define QS_SUFFIX generic
#include "quant/error_view_simd_impl.h"
