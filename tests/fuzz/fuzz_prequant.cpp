// libFuzzer entry point for the pre-quantized reader (core/io/prequant.h) over .safetensors bytes: each input
// is opened with the safetensors reader, wrapped by recognise_prequantized, and every tensor is read (the
// recognised ones dequantized); each recognised tensor's codes are listed and its re-quantization check run.
// A qs::IoError is the expected answer to bad input; anything else (a crash, a sanitizer report, another
// exception, a huge allocation) is a finding. Build and run: tests/fuzz/README.md. Seeds:
// tests/fuzz/corpus/prequant/ (an FP8 tile, MXFP4 blocks, compressed-tensors int4 with zero points and g_idx,
// NVFP4 in both spellings (compressed-tensors' weight_global_scale, ModelOpt's weight_scale_2 and a 3-D experts
// weight), compressed-tensors MXFP4, and malformed groups); dictionary: tests/fuzz/prequant.dict.
// Beyond the readers' own answers, each recognised tensor must have one code per element, codes inside its
// value table, and a re-quantization check that counts no more differences than it compared; an NVFP4 group's
// tensor scale must be a single value (the reader refuses any other shape).
#include "fuzz_reader.h"
#include "io/prequant.h"
#include "quant/requant_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "input.safetensors", [](const std::string& p) {
    std::unique_ptr<qs::TensorFile> f = qs::recognise_prequantized(qs::open_safetensors_file(p));
    if (const auto* pq = dynamic_cast<const qs::PrequantizedFile*>(f.get())) {
      for (std::size_t i = 0; i < f->tensors().size(); ++i) {
        const qs::PrequantInfo* info = pq->prequant(i);
        if (!info) continue;
        if (pq->codes(i).size() != f->tensors()[i].numel()) std::abort();
        for (uint32_t c : pq->codes(i))
          if (!info->code_values.empty() && c >= info->code_values.size()) std::abort();
        if (info->convention.rfind("NVFP4", 0) == 0) {  // members: codes, block scales, the tensor scale
          if (info->members.size() < 3) std::abort();
          std::size_t found = 0;
          for (const qs::TensorInfo& t : pq->raw().tensors())
            if (t.name == info->members[2] && (++found, t.numel() != 1)) std::abort();
          if (found != 1) std::abort();
        }
        const qs::RequantCheck c = qs::requantize_check(*pq, i);
        if (c.supported && (c.codes_differ > c.codes_total || c.scales_differ > c.scales_total)) std::abort();
        (void)qs::requant_summary(f->tensors()[i].name, *info, c);
      }
    }
    return f;
  });
}
