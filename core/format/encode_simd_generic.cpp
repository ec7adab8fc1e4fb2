// The generic build of the vectorized encoder (4 lanes); see encode_simd_impl.h. Compiled with the
// target flags of its level by core/CMakeLists.txt and only called when the CPU supports them.
#define QS_LANES 4
#define QS_ENTRY encode_f32_generic
#define QS_CAT_ENTRY_GROUPS encode_f32_groups_generic
#include "format/encode_simd_impl.h"
