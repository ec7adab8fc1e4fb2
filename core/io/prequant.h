// Pre-quantized checkpoints understood, not just read: the tensors that together store one quantized
// weight (codes + scales [+ zero points, a global scale]) shown once, dequantized exactly, labelled with
// the stored scheme, and re-quantized with QuantScope's matching scheme to say whether the stored codes and
// scales come back (that check is quant/requant_check.h: it needs quant/, which sits above io/).
// Exercise: tests/core/tst_prequant.cpp, tests/fuzz/fuzz_prequant.cpp, `quantscope-cli info --in
// model.safetensors`, `quantscope-cli analyze --in model.safetensors --scheme ...`
// (a "stored:<scheme>" row and a re-quantization line per recognised weight).
//
//   auto file = qs::recognise_prequantized(qs::open_safetensors_file("deepseek.safetensors"));
//   const auto* pq = dynamic_cast<const qs::PrequantizedFile*>(file.get());
//   for (std::size_t i = 0; i < file->tensors().size(); ++i)
//     if (const qs::PrequantInfo* p = pq ? pq->prequant(i) : nullptr) {
//       qs::RequantCheck c = qs::requantize_check(*pq, i);      // quant/requant_check.h: reads and re-quantizes
//       std::puts(qs::requant_summary(file->tensors()[i].name, *p, c).c_str());
//     }
//
// Conventions recognised (each checked against its reference implementation; docs in README.md):
//  * FP8 / int8 weights with scales: `W` (F8_E4M3, F8_E5M2 or I8) + `W_scale_inv` (DeepSeek-V3) or
//    `W_scale` (compressed-tensors float-/int-quantized, FBGEMM) in F32/BF16/F16, optionally
//    `W_zero_point`: one scale per tensor, per output row, per group of the last axis or per 2-D tile
//    (DeepSeek-V3: [ceil(out/128), ceil(in/128)]; a block size is 128 when that fits, else the exact
//    quotient). w = (code - zp) * scale in float32.
//  * MXFP4 (gpt-oss, transformers' integrations/mxfp4.py): `X_blocks` / `X.blocks` U8 [..., G, 16] and
//    `X_scales` / `X.scales` U8 or F8_E8M0 [..., G]; element 2j of a block is the low nibble of byte j,
//    element 2j+1 the high one; w = ldexp(e2m1, scale - 127), scale 255 = NaN; shown as [..., G*32] ("X").
//  * compressed-tensors pack-quantized: `P.weight_packed` I32 [rows, ceil(cols/8)] (4-bit; 8-bit packs 4
//    per word), value k of a word at bits [4k, 4k+4) holding q + 8 (offset binary, q in [-8, 7]);
//    `P.weight_shape` [rows, cols]; `P.weight_scale` F32/BF16/F16 per tensor, row or group of the last axis;
//    `P.weight_zero_point` (asymmetric: packed the same way along rows, I32 [ceil(rows/8), groups]);
//    `P.weight_g_idx` (activation order: the group of each column). w = (q - zp) * scale ("P.weight").
//  * compressed-tensors NVFP4: `P.weight_packed` U8 [rows, cols/2] (two e2m1 per byte, low nibble first),
//    `P.weight_scale` F8_E4M3 per 16 columns, `P.weight_global_scale` F32 that DIVIDES:
//    w = e2m1 * (scale / global_scale), the quotient in float32 first (compressed-tensors' _dequantize).
//  * compressed-tensors MXFP4 (mxfp4-pack-quantized): `P.weight_packed` U8 [rows, cols/2] (low nibble first),
//    `P.weight_scale` U8 or F8_E8M0 [rows, cols/32], no global scale: w = e2m1 * 2^(scale - 127)
//    (decompress_mx_scale: 255 gives inf, not NaN) ("P.weight").
//  * TensorRT Model Optimizer NVFP4: `W` U8 [..., rows, cols/2] (low nibble first), `W_scale` F8_E4M3
//    [..., rows, cols/16], `W_scale_2` a float32 scalar that MULTIPLIES, optional `input_scale`:
//    w = e2m1 * fl(float(scale) * scale_2) (NVFP4QTensor.dequantize; its e2m1 table reads code 8 as +0).
//    A weight attribute X other than "weight" has `X_weight_scale` / `X_weight_scale_2`. Named "W".
//  * ONNX QDQ: a DequantizeLinear node whose x, x_scale (and x_zero_point) are initializers:
//    y = (x - zp) * scale per tensor, per axis or blocked (opset 21 block_size), named by the node's output.
// Values are the convention's float32 products. Where the reference decompressors then round to a 16-bit
// type (compressed-tensors and ONNX with an fp16/bf16 scale: the scale's type; compressed-tensors' NVFP4:
// bf16), QuantScope keeps the float32 value (exact there: an 8-bit code times a 16-bit scale), so every
// value lies on the stored grid. ModelOpt's dequantize() ends with .to(the original model's dtype), which the
// checkpoint does not record: QuantScope keeps its float32 product. The re-quantization check lives in
// quant/requant_check.cpp (it needs quant/, a layer above io/; the readers alone, as the fuzz build compiles
// them, link without it).
// A group whose shapes do not fit its convention (a scale tensor that does not match the weight's blocks,
// a packed tensor whose size does not match its shape) stays as the raw tensors it is, with one skipped()
// line saying why; anything that matches no convention passes through unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tensor_file.h"

namespace qs {

// What a recognised tensor stores.
struct PrequantInfo {
  std::string convention;          // "FP8 block scales", "MXFP4", "compressed-tensors int4", "NVFP4 (ModelOpt)", "ONNX QDQ", ...
  std::string scheme;              // the stored scheme in QuantScope's spelling ("e4m3fn/block:128x128"),
                                   // empty when QuantScope has no matching scheme (see scheme_note)
  std::string scheme_note;         // why there is none, or what the spelling leaves out (zero points, ...)
  std::string element_format;      // "e4m3fn", "e2m1fn", "int4", "uint8", ... (QuantScope's format names)
  std::vector<int64_t> block;      // elements that share one scale along each axis of the tensor
                                   // (per tensor: the shape itself; 0 on an axis whose groups follow g_idx)
  std::string scale_format;        // "fp32", "bf16", "e8m0fnu", "e4m3fn / fp32 global", ...
  bool zero_points = false;
  std::vector<std::string> members;  // the file's tensors it is read from, the codes first
  // The value of each stored code before scaling and zero point (codes() indexes it): e4m3fn's 256
  // values, e2m1fn's 16, int4 offset binary 0..15 -> -8..7. Empty for 32-bit codes (ONNX int32).
  std::vector<float> code_values;
};

class PrequantizedFile : public TensorFile {
 public:
  ~PrequantizedFile() override;
  TensorBytes read(std::size_t index) const override;       // recognised tensors: float32, dequantized
  void read_f32(std::size_t index, float* out) const override;
  std::vector<std::string> source_files() const override;
  std::vector<DequantizeLinearInfo> dequantize_nodes() const override;

  const TensorFile& raw() const { return *raw_; }
  // Null for a tensor passed through unchanged.
  const PrequantInfo* prequant(std::size_t index) const;
  // The stored element codes of a recognised tensor, one per element in C order (as stored: compressed-
  // tensors' int4 in offset binary), for the code-usage histogram; empty for a plain tensor. Throws IoError.
  std::vector<uint32_t> codes(std::size_t index) const;

  struct Group;  // one recognised tensor: its members and how to decode them (io/prequant_impl.h)
  // Null for a tensor passed through unchanged (or out of range): what the re-quantization check reads
  // (quant/requant_check.cpp, through io/prequant_impl.h).
  const Group* group(std::size_t index) const;

 private:
  friend std::unique_ptr<TensorFile> recognise_prequantized(std::unique_ptr<TensorFile> raw);
  PrequantizedFile() = default;
  std::unique_ptr<TensorFile> raw_;
  std::vector<std::size_t> raw_index_;        // per tensor: the raw tensor (plain) or the codes member
  std::vector<int> group_of_;                 // per tensor: index into groups_, or -1
  std::vector<std::unique_ptr<Group>> groups_;
};

// Wraps `raw` so that every recognised group of tensors appears once, as a float32 tensor at the place of
// its codes tensor (the other members are not listed); other tensors, skipped() and metadata() pass through.
// Returns `raw` itself when it holds nothing recognised and nothing malformed. Never throws for a group it
// cannot use: that group stays raw with a skipped() line.
std::unique_ptr<TensorFile> recognise_prequantized(std::unique_ptr<TensorFile> raw);

}  // namespace qs
