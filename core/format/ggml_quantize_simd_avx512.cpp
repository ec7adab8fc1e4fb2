// The AVX-512 build of the Q4_K / Q5_K sub-block search (16 lanes, four super-blocks a call); see
// ggml_quantize_simd_impl.h.
#define QS_LANES 16
#define QS_SUFFIX avx512
#include "format/ggml_quantize_simd_impl.h"
