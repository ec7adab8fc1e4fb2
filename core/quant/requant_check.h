// The re-quantization check of a pre-quantized tensor (io/prequant.h): its dequantized values quantized again
// with QuantScope's matching scheme, the codes and scales compared with the stored ones, and the one-line
// summary `analyze` prints and the Model tab shows. It sits in quant/ because it needs parse_scheme,
// group_scale and the encoders; the readers (io/) stay below it. Exercise: tests/core/tst_prequant.cpp.
//
//   const auto* pq = dynamic_cast<const qs::PrequantizedFile*>(file.get());
//   if (const qs::PrequantInfo* p = pq ? pq->prequant(i) : nullptr)
//     std::puts(qs::requant_summary(name, *p, qs::requantize_check(*pq, i)).c_str());
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "io/prequant.h"

namespace qs {

// The re-quantization check of one recognised tensor: its dequantized values quantized again with the
// matching QuantScope scheme (the scheme's scale rule, group_scale, and the format's encoder), the codes and
// scales compared with the stored ones. Codes compare by value relative to the zero point (so int4 offset
// binary and two's complement agree); scales by their float32 value (NVFP4: the e4m3 block scales, the
// global scale in `note`). Differences are reported, never asserted away: a checkpoint made with another
// rule (compressed-tensors' int4 scale amax / 7.5, a ceil-rounded E8M0 exponent) shows them.
struct RequantCheck {
  bool supported = false;
  std::string why_not;             // when !supported
  std::string scheme;              // the QuantScope scheme used
  uint64_t codes_total = 0, codes_differ = 0;
  uint64_t scales_total = 0, scales_differ = 0;
  // Of scales_differ: scales one unit in the last place of their format away from the stored one. The
  // dequantized amax is a rounded product (fl(448 s) / 448 != s for about 1 float32 in 10), so a checkpoint
  // made by exactly the matching rule can show these; they say nothing about the rule.
  uint64_t scales_one_ulp = 0;
  // Of scales_differ: groups whose stored codes are all zero, whose scale the codes do not determine.
  uint64_t scales_zero_groups = 0;
  std::string note;                // e.g. NVFP4's tensor scale, stored and re-derived
};

// "0 of 16384 codes and 0 of 1 scales differ" (plus the one-ulp / all-zero breakdown when there is one).
std::string describe(const RequantCheck& c);
// "<tensor>: stored e4m3fn/block:128x128 (FP8 block scales); re-quantized: 0 of 16384 codes and 0 of 1
// scales differ", or "...; not re-quantized: <why>": the line `analyze` prints and the GUI shows.
std::string requant_summary(const std::string& tensor, const PrequantInfo& info, const RequantCheck& c);

// Reads tensor `index` of `file` and re-quantizes it (see RequantCheck); {supported = false} with why_not
// for a plain tensor, a tensor with no matching scheme or non-zero zero points under a symmetric format.
RequantCheck requantize_check(const PrequantizedFile& file, std::size_t index);

}  // namespace qs
