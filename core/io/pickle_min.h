// A restricted unpickler for torch.save state dicts (Python's pickle protocols 2 to 5, the opcodes a state dict
// uses): it builds plain values (None, bool, int, float, str, bytes, tuple, list, dict) and, for an allow-list
// of names only, interprets them itself — collections.OrderedDict, torch._utils._rebuild_tensor_v2 / v3,
// _rebuild_parameter(_with_state), the torch.<Type>Storage classes, torch.UntypedStorage and the torch dtypes —
// so a tensor comes out as {storage key, dtype, offset, size, stride}. It never imports or calls anything:
// any other global is refused by name ("data.pkl refers to os.system, which a state dict does not need").
// The VM is iterative; containers nest at most 256 deep, and a container may not change once it is inside
// another (so no cycle can be built); every length is checked against the bytes that remain.
// Exercise: tests/core/tst_torch.cpp, tests/fuzz/fuzz_pickle.cpp.
//
//   qs::pickle::Ref root = qs::pickle::load(bytes.data(), bytes.size(), "model.pt: data.pkl");
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/dtype.h"

namespace qs::pickle {

struct Object;
using Ref = std::shared_ptr<Object>;

enum class Kind { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, Storage, Tensor };
const char* to_string(Kind k);

struct Object {
  Kind kind = Kind::None;
  int64_t i = 0;                               // Bool, Int
  double f = 0;                                // Float
  std::string s;                               // Str, Bytes; Global: "module.name"; Storage: its key
  std::vector<Ref> items;                      // Tuple, List
  std::vector<std::pair<Ref, Ref>> dict;       // Dict (OrderedDict too), in insertion order
  // Global: what the allowed name stands for. Storage: its element type and count as pickled (typed storages
  // count elements of `dtype`; an UntypedStorage counts bytes, `untyped` set). A dtype QuantScope cannot
  // analyse (complex, quantized) keeps its name in `unsupported`.
  DType dtype = DType::U8;
  bool untyped = false, is_storage_class = false, is_dtype = false;
  std::string unsupported;
  uint64_t numel = 0;
  // Tensor: its storage (a Storage object), the element type, and the view.
  Ref storage;
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
  int depth = 0;        // nesting of containers below this one
  bool frozen = false;  // inside another container: may not change any more
};

// Runs the pickle; `label` starts every error ("<file>: data.pkl"). Throws IoError.
Ref load(const uint8_t* data, std::size_t n, const std::string& label);

}  // namespace qs::pickle
