// The avx2 build of the vectorized encoder (8 lanes); see encode_simd_impl.h. Compiled with the
// target flags of its level by core/CMakeLists.txt and only called when the CPU supports them.
#define QS_LANES 8
#define QS_ENTRY encode_f32_avx2
#define QS_CAT_ENTRY_GROUPS encode_f32_groups_avx2
#include "format/encode_simd_impl.h"
