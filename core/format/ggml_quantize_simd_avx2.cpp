// The AVX2 build of the Q4_K / Q5_K sub-block search (8 lanes, two super-blocks a call); see
// ggml_quantize_simd_impl.h.
#define QS_LANES 8
#define QS_SUFFIX avx2
#include "format/ggml_quantize_simd_impl.h"
