// BlockScaleSearch's pruned search compiled for AVX2 (scale_search_impl.h says why it is the same search).
#define QS_SEARCH_RUN run_avx2
#define QS_SEARCH_BLOCKS run_blocks_avx2
#include "quant/scale_search_impl.h"
