// `info FILE...`: what a tensor file holds, before any analysis: its kind, its metadata (GGUF key/values,
// a safetensors __metadata__, ONNX producer and opsets), one line per tensor (name, stored dtype or
// quantization, shape, bytes in the file) and what is not read, with the reason.
#include <sstream>

#include "cli/commands.h"
#include "io/tensor_file.h"
#include "quant/analyze.h"
#include "util/printable.h"

namespace qs::cli {

void add_info(CLI::App& app) {
  auto* c = app.add_subcommand("info", "What tensor files hold: kind, metadata, one line per tensor (name, stored type, shape, bytes), skipped entries");
  static std::vector<std::string> in;
  c->add_option("files", in, ".npy, .npz, .safetensors (or a sharded model's index or folder), .onnx, .gguf")->required();
  c->callback([] {
    std::vector<std::unique_ptr<TensorFile>> files;
    for (const std::string& p : in) files.push_back(open_tensor_file(p));  // every file opens before any output
    std::ostringstream out;
    for (const auto& f : files) {
      uint64_t total = 0;
      for (const TensorInfo& t : f->tensors()) total += t.stored.empty() ? t.nbytes() : t.stored_bytes;
      out << "# " << printable(f->path()) << ": " << f->kind() << ", " << f->tensors().size() << " tensors ("
          << total << " bytes), " << f->metadata().size() << " metadata entries, " << f->skipped().size()
          << " not read\n";
      for (const auto& [k, v] : f->metadata()) out << "meta\t" << printable(k) << "\t" << printable(v, false, 300) << "\n";
      for (const TensorInfo& t : f->tensors())
        out << "tensor\t" << printable(t.name) << "\t" << (t.stored.empty() ? std::string(to_string(t.dtype)) : t.stored)
            << "\t" << (t.shape.empty() ? std::string("scalar") : shape_string(t.shape)) << "\t"
            << (t.stored.empty() ? t.nbytes() : t.stored_bytes) << "\n";
      for (const std::string& s : f->skipped()) out << "skipped\t" << printable(s, false, 300) << "\n";
    }
    emit(out.str(), "");
  });
}

}  // namespace qs::cli
