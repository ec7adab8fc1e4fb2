// ggml's reference quantizers (llama.cpp's quantize_row_*_ref in ggml-quants.c), written again from their
// definitions so that QuantScope can put Q4_K beside NVFP4 and MXFP4 on the same tensor: the bytes they
// write are ggml's block layouts (core/format/ggml_blocks.h decodes them), the scales are chosen exactly
// as ggml chooses them (float32 arithmetic in ggml's order, no FMA contraction, fp16 fields rounded to
// nearest even), so a block quantized here is the block llama.cpp's reference path writes.
// Exercise: tests/core/tst_ggml_schemes.cpp, `quantscope-cli analyze --scheme q4_k --scheme q6_k ...`.
//
//   std::vector<uint8_t> blocks(qs::ggml::quantized_bytes(qs::ggml::BlockType::Q4_K, 256));
//   qs::ggml::quantize_ref(qs::ggml::BlockType::Q4_K, x, 256, blocks.data());
//   qs::ggml::dequantize(qs::ggml::BlockType::Q4_K, blocks.data(), 256, y);   // ggml_blocks.h
//
// Types with a quantizer: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (blocks of 32, fp16 scale d, and min m for _1)
// and Q4_K, Q5_K, Q6_K (super-blocks of 256: 8 sub-blocks of 32 with 6-bit scales and mins under fp16 d
// and dmin, or 16 sub-blocks of 16 with int8 scales under fp16 d for Q6_K). The choices that matter:
//   Q4_0 / Q5_0   d = m / -8 (-16), m the element of largest |x| (its sign kept): that element takes code
//                 0 exactly and the opposite extreme clips to 7d (15d); codes = min(15, trunc(x/d + 8.5)).
//   Q4_1 / Q5_1   d = (max - min) / 15 (31), m = min; codes trunc((x - min)/d + 0.5).
//   Q8_0          d = amax / 127, codes roundf(x / d) (half away from zero), in [-127, 127].
//   Q4_K / Q5_K   per sub-block a weighted least-squares search over 21 (16) candidate scales
//                 (make_qkx2_quants, weights sqrt(mean x^2) + |x|), then the sub-block scales and mins
//                 quantized to 6 bits against d = max_scale / 63, dmin = max_min / 63, and the codes
//                 chosen again with the quantized scales.
//   Q6_K          per 16 elements make_qx_quants (19 candidate scales, weights x^2), the 16 scales
//                 quantized to int8 against d = max_scale / -128, codes chosen again.
// Non-finite inputs (which ggml's reference leaves undefined) are quantized as 0 here; the scheme layer
// puts NaN back where x was NaN and counts them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/encode_simd.h"  // SimdLevel
#include "format/ggml_blocks.h"

namespace qs::ggml {

bool has_quantizer(BlockType t);
// Bytes of n elements (a multiple of block_info(t).block_elems).
std::size_t quantized_bytes(BlockType t, std::size_t n);
// n elements (a multiple of the block size, finite) -> n / block_elems blocks at dst.
// Throws std::invalid_argument for a type without a quantizer or a bad n. Q4_K and Q5_K run their sub-block
// search vectorized at `level` (the same bytes at every level; Generic is the scalar reference).
void quantize_ref(BlockType t, const float* x, std::size_t n, uint8_t* dst, SimdLevel level = best_simd_level());

// The elements that share one scale (and min): 32, or 16 for Q6_K; the block size for the others.
unsigned sub_block_elems(BlockType t);
// Codes per element of a type with a quantizer: 16 (4-bit), 32 (5-bit), 64 (Q6_K), 256 (Q8_0).
unsigned sub_block_code_count(BlockType t);
// For each sub-block of n quantized elements at `blocks`: the interval round to nearest covers, [value of
// the lowest code - step/2, value of the highest code + step/2] with step the sub-block's scale |d|. An
// element outside it was clipped (its code clamped): the scheme's clipping statistics use it.
void clip_ranges(BlockType t, const uint8_t* blocks, std::size_t n, double* lo, double* hi);

}  // namespace qs::ggml
