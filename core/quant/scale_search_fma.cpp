// BlockScaleSearch's batched search compiled for AVX2 with FMA (scale_search_impl.h): the same as
// scale_search_avx2.cpp's but for the grid distance sums of the bounds, whose squares are added by fused
// multiply-adds (one rounding a term instead of two: part 3's margins hold for any summation order and rounding
// of at most that size, so the bounds stay bounds). scales() takes it where the CPU has FMA; the single-block
// search (its fallback) stays the AVX2 copy's. Without contraction elsewhere (-ffp-contract=off).
#define QS_SEARCH_RUN run_avx2
#define QS_SEARCH_BLOCKS run_blocks_fma
#define QS_SEARCH_BATCH_ONLY 1
#include "quant/scale_search_impl.h"
