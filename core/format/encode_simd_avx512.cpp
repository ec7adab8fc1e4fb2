// The avx512 build of the vectorized encoder (16 lanes); see encode_simd_impl.h. Compiled with the
// target flags of its level by core/CMakeLists.txt and only called when the CPU supports them.
#define QS_LANES 16
#define QS_ENTRY encode_f32_avx512
#define QS_CAT_ENTRY_GROUPS encode_f32_groups_avx512
#include "format/encode_simd_impl.h"
