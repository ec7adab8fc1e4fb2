// Pre-quantized checkpoints (io/prequant.h): recognising the groups of tensors that store one quantized
// weight, dequantizing them exactly, and re-quantizing them with QuantScope's matching scheme.
// Exercise: tests/core/tst_prequant.cpp, tests/fuzz/fuzz_prequant.cpp.
//
// Every group is described the same way, whatever its convention: the codes (a little-endian stream of a
// dtype, or compressed-tensors' int32 words per row), a table of each code's value, and a grid of scales
// (and zero points) where each axis of the tensor maps its index i to scale coordinate i / block (or, for
// activation-ordered groups, through weight_g_idx). Element e of the tensor is then
//   w[e] = (value[code[e]] - zp[k]) * eff[k],   k = the scale of e,
// where eff is the stored multiplier the convention defines (the scale itself, 2^(e8m0 - 127), NVFP4's
// scale / global_scale (compressed-tensors) or scale * weight_scale_2 (ModelOpt), in float32).
#include "io/prequant.h"
#include "io/prequant_impl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "format/format.h"

namespace qs {

using namespace prequant_detail;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::size_t product(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_float_scale(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }
bool is_int_dtype(DType t) {
  switch (t) {
    case DType::I8: case DType::U8: case DType::I16: case DType::U16: case DType::I32: case DType::U32:
    case DType::I64: case DType::U64: case DType::I4: case DType::U4: case DType::I2: case DType::U2:
      return true;
    default: return false;
  }
}

// QuantScope's name for a scale dtype ("fp32" for float32, which is no QuantScope format).
const char* scale_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
    case DType::F8E4M3: return "e4m3fn";
    case DType::F8E8M0: case DType::U8: return "e8m0fnu";
    default: return to_string(t);
  }
}

// QuantScope's format name for a code dtype (io/dtype.h lists the same correspondences).
std::string element_name(DType t) {
  switch (t) {
    case DType::F8E4M3: return "e4m3fn";
    case DType::F8E5M2: return "e5m2";
    case DType::F8E4M3FNUZ: return "e4m3fnuz";
    case DType::F8E5M2FNUZ: return "e5m2fnuz";
    case DType::F4E2M1: return "e2m1fn";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::I4: return "int4";
    case DType::U4: return "uint4";
    case DType::I16: return "int16";
    case DType::U16: return "uint16";
    case DType::I2: return "int2";
    case DType::U2: return "uint2";
    case DType::I32: return "int32";
    default: return to_string(t);
  }
}

// The value of every code of a dtype of at most 16 bits, through io/dtype.h's exact converters (a packed
// dtype's first element sits in the low bits of the first byte, so code c alone is the bytes of c).
std::vector<float> stream_code_values(DType t) {
  const unsigned bits = dtype_bits(t);
  std::vector<float> v(std::size_t(1) << bits);
  for (uint32_t c = 0; c < v.size(); ++c) {
    const uint8_t bytes[2] = {static_cast<uint8_t>(c & 0xFF), static_cast<uint8_t>(c >> 8)};
    convert_to_f32(t, bytes, 1, &v[c]);
  }
  return v;
}

// Elements per scale along an axis of D elements that has S scales: the whole axis for one scale; with
// `prefer128` (DeepSeek-V3's scale_inv tiles, whose last tile may be short) 128 when ceil(D / 128) = S;
// else D / S when exact (compressed-tensors' groups divide the axis). 0 = no fit.
std::size_t infer_block(int64_t D, int64_t S, bool prefer128) {
  if (S == 1) return static_cast<std::size_t>(std::max<int64_t>(D, 1));
  if (D <= 0 || S <= 0 || S > D) return 0;
  if (S == D) return 1;
  if (prefer128 && (D + 127) / 128 == S) return 128;
  if (D % S == 0) return static_cast<std::size_t>(D / S);
  if ((D + 127) / 128 == S) return 128;
  return 0;
}

// Little-endian signed integers of an int dtype (I32 / I64 / I8 / I16 / U8 / U16 / U32), for the small
// index tensors (weight_shape, weight_g_idx).
std::vector<int64_t> read_ints(const TensorFile& f, std::size_t j) {
  const TensorInfo& t = f.tensors()[j];
  const TensorBytes b = f.read(j);
  const std::size_t n = t.numel();
  std::vector<int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::I64: { int64_t x; std::memcpy(&x, b.data + 8 * i, 8); v[i] = x; break; }
      case DType::U64: { uint64_t x; std::memcpy(&x, b.data + 8 * i, 8); v[i] = int64_t(std::min<uint64_t>(x, INT64_MAX)); break; }
      case DType::I32: { int32_t x; std::memcpy(&x, b.data + 4 * i, 4); v[i] = x; break; }
      case DType::U32: { uint32_t x; std::memcpy(&x, b.data + 4 * i, 4); v[i] = x; break; }
      case DType::I16: { int16_t x; std::memcpy(&x, b.data + 2 * i, 2); v[i] = x; break; }
      case DType::U16: { uint16_t x; std::memcpy(&x, b.data + 2 * i, 2); v[i] = x; break; }
      case DType::I8: v[i] = static_cast<int8_t>(b.data[i]); break;
      case DType::U8: v[i] = b.data[i]; break;
      default: v[i] = 0; break;
    }
  }
  return v;
}

std::vector<float> read_floats(const TensorFile& f, std::size_t j) {
  std::vector<float> v(f.tensors()[j].numel());
  f.read_f32(j, v.data());
  return v;
}


// Sets the scale grid of g from its per-axis blocks; false (with `why`) when the scale tensor's element
// count is not the grid's.
bool set_grid(Group& g, std::size_t scale_numel, std::string& why) {
  const std::size_t r = g.shape.size();
  std::vector<std::size_t> sdim(r);
  for (std::size_t a = 0; a < r; ++a) {
    const std::size_t D = static_cast<std::size_t>(g.shape[a]);
    if (g.blk[a] == 0) {
      sdim[a] = g.gidx_groups;
    } else {
      sdim[a] = D == 0 ? 0 : (D + g.blk[a] - 1) / g.blk[a];
    }
  }
  g.sstride.assign(r, 1);
  std::size_t n = 1;
  for (std::size_t a = r; a-- > 0;) {
    g.sstride[a] = n;
    n *= sdim[a];
  }
  g.nscales = n;
  if (n != scale_numel) {
    why = "its scales hold " + std::to_string(scale_numel) + " values, but " + std::to_string(n) + " blocks cover the weight";
    return false;
  }
  return true;
}

// QuantScope's spelling of a granularity, or "" when there is none: per tensor, per channel along one
// axis, 1-D blocks along one axis, 2-D tiles over the last two axes. `sf` = the scale format suffix ("" for
// fp32; 16-bit block scales only, tensor and channel scales being fp32 in QuantScope).
std::string spell(const std::string& elem, const std::vector<int64_t>& shape, const std::vector<std::size_t>& blk,
                  const std::string& sf) {
  const std::size_t r = shape.size();
  auto full = [&](std::size_t a) { return blk[a] >= static_cast<std::size_t>(std::max<int64_t>(shape[a], 1)); };
  if (std::find(blk.begin(), blk.end(), std::size_t(0)) != blk.end()) return "";
  bool all_full = true;
  for (std::size_t a = 0; a < r; ++a) all_full = all_full && full(a);
  if (all_full) return elem + "/tensor";
  for (std::size_t a = 0; a < r; ++a) {  // one axis per element, the others whole: a channel
    bool ok = blk[a] == 1;
    for (std::size_t b = 0; b < r && ok; ++b)
      if (b != a) ok = full(b);
    if (!ok) continue;
    // 16-bit per-row scales: the row is one block of the last axis (QuantScope's channel scales are fp32).
    if (!sf.empty() && r == 2 && a == 0) return elem + "/block:" + std::to_string(shape[1]) + ":" + sf;
    return elem + "/channel:" + std::to_string(a);
  }
  for (std::size_t a = 0; a < r; ++a) {  // 1-D blocks along one axis, every other axis per element
    bool ok = !full(a) && blk[a] > 1;
    for (std::size_t b = 0; b < r && ok; ++b)
      if (b != a) ok = blk[b] == 1;
    if (!ok) continue;
    return elem + "/block:" + std::to_string(blk[a]) + (sf.empty() ? "" : ":" + sf) +
           (a + 1 == r ? std::string() : "/axis:" + std::to_string(a));
  }
  if (r >= 2) {  // 2-D tiles over the last two axes
    bool ok = true;
    for (std::size_t b = 0; b + 2 < r; ++b) ok = ok && blk[b] == 1;
    if (ok)
      return elem + "/block:" + std::to_string(blk[r - 2]) + "x" + std::to_string(blk[r - 1]) + (sf.empty() ? "" : ":" + sf);
  }
  return "";
}

// The spelling when QuantScope has the scheme: its element format exists and, for unsigned integers (the
// affine rule), block scales are fp32; else "" with the reason in `note`. (requantize_check parses it.)
std::string known_scheme(const std::string& spelling, const std::string& elem, std::string& note) {
  if (spelling.empty()) return "";
  try {
    const Format f = parse_format(elem);
    if (f.is_int() && !f.is_signed && spelling.find("/block:") != std::string::npos &&
        (ends_with(spelling, ":bf16") || ends_with(spelling, ":fp16") || spelling.find(":bf16/") != std::string::npos ||
         spelling.find(":fp16/") != std::string::npos)) {
      note = "QuantScope's unsigned integer blocks take fp32 scales (their zero point is per block)";
      return "";
    }
  } catch (const FormatError&) {
    note = "QuantScope has no " + elem + " format";
    return "";
  }
  return spelling;
}

void finish_shape(Group& g) {
  g.numel = product(g.shape);
  g.cols = g.shape.empty() ? 1 : static_cast<std::size_t>(g.shape.back());
  g.rows = g.cols == 0 ? 0 : g.numel / g.cols;
}

}  // namespace

Loaded prequant_detail::load(const TensorFile& raw, const Group& g) {
  Loaded L;
  L.codes = raw.read(g.codes);
  switch (g.conv) {
    case Conv::Mx: {
      const TensorBytes s = raw.read(g.scale);
      L.eff.resize(g.nscales);
      for (std::size_t k = 0; k < g.nscales; ++k)
        L.eff[k] = s.data[k] == 0xFF && g.e8m0_255_nan ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, int(s.data[k]) - 127);
      L.cmp = L.eff;
      break;
    }
    case Conv::Nvfp4: {
      L.cmp = read_floats(raw, g.scale);
      const std::vector<float> gs = read_floats(raw, g.global);
      L.global = gs.at(0);
      L.eff.resize(g.nscales);
      if (g.global_divides) {
        // compressed-tensors' _dequantize: scale.to(global_scale.dtype) / global_scale, in float32.
        for (std::size_t k = 0; k < g.nscales; ++k) L.eff[k] = L.cmp[k] / L.global;
      } else {
        // ModelOpt's NVFP4QTensor.dequantize: per_block_scale = scale.to(float32) * double_scale (weight_scale_2),
        // a float32 product; each e2m1 value is then multiplied by it.
        for (std::size_t k = 0; k < g.nscales; ++k) L.eff[k] = L.cmp[k] * L.global;
      }
      break;
    }
    default:
      L.eff = read_floats(raw, g.scale);
      L.cmp = L.eff;
      break;
  }
  if (g.zero_point != kNone) {
    if (g.zp_packed) {
      // pack_to_int32(zero_point, bits, packed_dim=0): row r of group column j is value r % pf of word
      // [r / pf][j], offset binary like the weights.
      const TensorBytes z = raw.read(g.zero_point);
      const std::size_t pf = 32 / g.bits, ng = g.nscales / std::max<std::size_t>(g.rows, 1);
      const int offset = 1 << (g.bits - 1);
      L.zp.resize(g.nscales);
      for (std::size_t r = 0; r < g.rows; ++r)
        for (std::size_t j = 0; j < ng; ++j) {
          uint32_t w;
          std::memcpy(&w, z.data + 4 * ((r / pf) * ng + j), 4);
          L.zp[r * ng + j] = float(int((w >> ((r % pf) * g.bits)) & ((1u << g.bits) - 1)) - offset);
        }
    } else {
      L.zp = read_floats(raw, g.zero_point);
    }
  }
  return L;
}

namespace {

// ---- Recognition ---------------------------------------------------------------------------------------

struct Recogniser {
  const TensorFile& raw;
  std::unordered_map<std::string, std::size_t> by_name;
  std::vector<int> role;  // 0 free, 1 codes of a group, 2 another member
  std::vector<std::unique_ptr<Group>> groups;
  std::vector<std::string> skipped;
  std::set<std::string> names;  // listed names, for collisions

  explicit Recogniser(const TensorFile& f) : raw(f), role(f.tensors().size(), 0) {
    for (std::size_t i = 0; i < f.tensors().size(); ++i) {
      by_name.emplace(f.tensors()[i].name, i);
      names.insert(f.tensors()[i].name);
    }
  }
  const TensorInfo& T(std::size_t j) const { return raw.tensors()[j]; }
  std::size_t find(const std::string& name) const {
    const auto it = by_name.find(name);
    return it == by_name.end() ? kNone : it->second;
  }
  void refuse(const std::string& what, const std::string& convention, const std::string& why) {
    skipped.push_back(what + ": looks like " + convention + " but " + why + "; its tensors are listed as stored");
  }
  // Members must be free (a shared scale may serve several groups; a codes tensor only one).
  bool available(const std::vector<std::size_t>& members) const {
    if (members.empty() || role[members[0]] != 0) return false;
    for (std::size_t i = 1; i < members.size(); ++i)
      if (members[i] == members[0] || role[members[i]] == 1) return false;
    return true;
  }
  // Takes g into the listing: its PrequantInfo, its label "<convention>: <spelling> (<scales>)" and size.
  void add(std::unique_ptr<Group> g, const std::vector<std::size_t>& members, const std::string& spelling,
           const std::string& scale_desc) {
    role[members[0]] = 1;
    for (std::size_t i = 1; i < members.size(); ++i) role[members[i]] = 2;
    PrequantInfo& info = g->info;
    for (std::size_t m : members) {
      info.members.push_back(T(m).name);
      g->stored_bytes += T(m).nbytes();
    }
    for (std::size_t a = 0; a < g->shape.size(); ++a)
      info.block.push_back(std::min<int64_t>(static_cast<int64_t>(g->blk[a]), g->shape[a]));
    info.scale_format = scale_desc;
    info.code_values = g->values;
    info.scheme = g->scheme;
    g->stored = info.convention + ": " + (spelling.empty() ? info.element_format + " (no QuantScope spelling)" : spelling) +
                (info.zero_points ? " with zero points" : "") + " (" + scale_desc + ")";
    names.insert(g->name);
    groups.push_back(std::move(g));
  }

  // W (F8_E4M3 / F8_E5M2 / I8) + W_scale_inv or W_scale [+ W_zero_point].
  void scaled_weight(std::size_t j) {
    const TensorInfo& w = T(j);
    if (w.dtype != DType::F8E4M3 && w.dtype != DType::F8E5M2 && w.dtype != DType::I8) return;
    std::string suffix = "_scale_inv";
    std::size_t s = find(w.name + suffix);
    if (s == kNone) s = find(w.name + (suffix = "_scale"));
    if (s == kNone) return;
    const bool fp8 = w.dtype != DType::I8;
    const std::string conv = suffix == "_scale_inv" ? "FP8 block scales" : fp8 ? "FP8 scales" : "int8 scales";
    const TensorInfo& st = T(s);
    if (!is_float_scale(st.dtype)) return refuse(w.name, conv, st.name + " is " + to_string(st.dtype) + ", not a float scale");
    const std::size_t z = find(w.name + "_zero_point");
    auto g = std::make_unique<Group>();
    g->conv = Conv::ScaledWeight;
    g->name = w.name;
    g->shape = w.shape;
    g->codes = j;
    g->code_dtype = w.dtype;
    g->values = stream_code_values(w.dtype);
    g->scale = s;
    g->info.convention = conv;
    g->info.element_format = element_name(w.dtype);
    const std::size_t r = w.shape.size();
    // The scale's shape: one value; [rows] for a matrix (per row); else the weight's rank.
    std::vector<int64_t> sshape = st.shape;
    if (st.numel() == 1) sshape.assign(r, 1);
    else if (r == 2 && sshape.size() == 1) sshape = {sshape[0], 1};
    if (sshape.size() != r)
      return refuse(w.name, conv, st.name + " has shape " + shape_text(st.shape) + ", which does not tile a weight of shape " + shape_text(w.shape));
    g->blk.resize(r);
    for (std::size_t a = 0; a < r; ++a)
      if (!(g->blk[a] = infer_block(w.shape[a], sshape[a], suffix == "_scale_inv")))
        return refuse(w.name, conv, st.name + " has shape " + shape_text(st.shape) + ", which does not tile a weight of shape " + shape_text(w.shape));
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(w.name, conv, why);
    std::vector<std::size_t> members = {j, s};
    if (z != kNone) {
      if (!is_int_dtype(T(z).dtype) && !dtype_is_float(T(z).dtype)) return refuse(w.name, conv, T(z).name + " is not numeric");
      if (T(z).numel() != st.numel())
        return refuse(w.name, conv, T(z).name + " holds " + std::to_string(T(z).numel()) + " zero points for " + std::to_string(st.numel()) + " scales");
      g->zero_point = z;
      g->info.zero_points = true;
      members.push_back(z);
    }
    if (!available(members)) return;
    finish_shape(*g);
    const std::string sf = st.dtype == DType::F32 ? "" : scale_name(st.dtype);
    const std::string spelling = spell(g->info.element_format, g->shape, g->blk, sf);
    // DeepSeek-V3's 2-D tiles are "block scales"; one scale per tensor, row or group is just "scales".
    if (fp8 && (r < 2 || g->blk[r - 2] == 1 || g->blk[r - 2] >= std::size_t(std::max<int64_t>(w.shape[r - 2], 1))))
      g->info.convention = "FP8 scales";
    if (spelling.empty()) g->info.scheme_note = "no QuantScope granularity has these blocks";
    else if (g->info.zero_points) g->info.scheme_note = "zero points: QuantScope's " + g->info.element_format + " is symmetric";
    else g->scheme = known_scheme(spelling, g->info.element_format, g->info.scheme_note);
    g->fp32_scale = st.dtype == DType::F32;
    add(std::move(g), members, spelling, std::string(suffix == "_scale_inv" ? "scale_inv " : "scale ") + scale_name(st.dtype));
  }

  // X_blocks / X.blocks (U8 [..., G, 16]) + X_scales / X.scales (U8 or F8_E8M0 [..., G]).
  void mx(std::size_t j) {
    const TensorInfo& b = T(j);
    std::string base, scales_name;
    if (ends_with(b.name, "_blocks")) base = b.name.substr(0, b.name.size() - 7), scales_name = base + "_scales";
    else if (ends_with(b.name, ".blocks")) base = b.name.substr(0, b.name.size() - 7), scales_name = base + ".scales";
    else return;
    const std::size_t s = find(scales_name);
    if (s == kNone || b.dtype != DType::U8) return;
    const TensorInfo& st = T(s);
    const std::string conv = "MXFP4";
    if (st.dtype != DType::U8 && st.dtype != DType::F8E8M0) return refuse(b.name, conv, st.name + " is " + to_string(st.dtype) + ", not E8M0 exponents");
    if (b.shape.size() < 2 || b.shape.back() != 16)
      return refuse(b.name, conv, "its shape " + shape_text(b.shape) + " is not [..., blocks, 16] (16 bytes = 32 e2m1 per block)");
    const std::vector<int64_t> lead(b.shape.begin(), b.shape.end() - 1);
    if (st.shape != lead)
      return refuse(b.name, conv, st.name + " has shape " + shape_text(st.shape) + ", not the blocks' " + shape_text(lead));
    if (names.count(base)) return refuse(b.name, conv, "its dequantized name '" + base + "' is already a tensor of the file");
    auto g = std::make_unique<Group>();
    g->conv = Conv::Mx;
    g->name = base;
    g->shape.assign(b.shape.begin(), b.shape.end() - 2);
    g->shape.push_back(b.shape[b.shape.size() - 2] * 32);
    g->codes = j;
    g->code_dtype = DType::F4E2M1;  // element 2j: the low nibble of byte j
    g->values = stream_code_values(DType::F4E2M1);
    g->scale = s;
    g->info.convention = conv;
    g->info.element_format = "e2m1fn";
    g->blk.assign(g->shape.size(), 1);
    g->blk.back() = 32;
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(b.name, conv, why);
    const std::vector<std::size_t> members = {j, s};
    if (!available(members)) return;
    finish_shape(*g);
    g->scheme = "e2m1fn/block:32:e8m0fnu";
    add(std::move(g), members, "e2m1fn/block:32:e8m0fnu", "blocks + e8m0 scales");
  }

  // P.weight_packed: I32 (pack-quantized int4 / int8) or U8 with P.weight_global_scale (NVFP4).
  void compressed_tensors(std::size_t j) {
    const TensorInfo& p = T(j);
    if (!ends_with(p.name, "weight_packed")) return;
    const std::string stem = p.name.substr(0, p.name.size() - 7);  // "P.weight"
    const std::size_t s = find(stem + "_scale");
    if (s == kNone) return;
    const TensorInfo& st = T(s);
    if (p.dtype == DType::U8) {
      if (find(stem + "_global_scale") != kNone) return nvfp4(j, stem, s);
      if (st.dtype == DType::U8 || st.dtype == DType::F8E8M0) return ct_mxfp4(j, stem, s);
      return;  // another scale type without a global scale: no convention this reader knows
    }
    if (p.dtype != DType::I32) return;
    std::string conv = "compressed-tensors pack-quantized";
    if (!is_float_scale(st.dtype)) return refuse(p.name, conv, st.name + " is " + to_string(st.dtype) + ", not a float scale");
    if (p.shape.size() != 2) return refuse(p.name, conv, "its shape " + shape_text(p.shape) + " is not [rows, packed columns]");
    if (names.count(stem)) return refuse(p.name, conv, "its dequantized name '" + stem + "' is already a tensor of the file");
    const int64_t R = p.shape[0], Wp = p.shape[1];
    int64_t C = Wp * 8;
    std::vector<std::size_t> members = {j, s};
    const std::size_t ws = find(stem + "_shape");
    if (ws != kNone) {
      if (!is_int_dtype(T(ws).dtype) || T(ws).numel() != 2) return refuse(p.name, conv, T(ws).name + " is not 2 integers");
      const std::vector<int64_t> v = read_ints(raw, ws);
      if (v[0] != R || v[1] < 0)
        return refuse(p.name, conv, T(ws).name + " says [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "] for " + std::to_string(R) + " packed rows");
      C = v[1];
      members.push_back(ws);
    }
    unsigned bits = 0;
    if ((C + 7) / 8 == Wp) bits = 4;
    else if ((C + 3) / 4 == Wp) bits = 8;
    else
      return refuse(p.name, conv, "it holds " + std::to_string(Wp) + " int32 per row, but " + std::to_string(C) +
                                      " columns need " + std::to_string((C + 7) / 8) + " (4-bit) or " + std::to_string((C + 3) / 4) + " (8-bit)");
    conv = "compressed-tensors int" + std::to_string(bits);
    auto g = std::make_unique<Group>();
    g->conv = Conv::CtPacked;
    g->name = stem;
    g->shape = {R, C};
    g->codes = j;
    g->layout = Layout::CtWords;
    g->bits = bits;
    g->words_per_row = static_cast<std::size_t>(Wp);
    g->values.resize(std::size_t(1) << bits);
    for (std::size_t u = 0; u < g->values.size(); ++u) g->values[u] = float(int(u) - (1 << (bits - 1)));  // offset binary
    g->scale = s;
    g->info.convention = conv;
    g->info.element_format = "int" + std::to_string(bits);
    // Scales: one; per row ([R] or [R, 1]); per group ([R, groups]).
    int64_t ng = 0;
    if (st.numel() == 1) ng = -1;
    else if ((st.shape.size() == 1 && st.shape[0] == R) || (st.shape.size() == 2 && st.shape[0] == R)) ng = st.shape.size() == 1 ? 1 : st.shape[1];
    if (ng == 0) return refuse(p.name, conv, st.name + " has shape " + shape_text(st.shape) + ", not [" + std::to_string(R) + ", groups]");
    if (ng == -1) g->blk = {std::size_t(std::max<int64_t>(R, 1)), std::size_t(std::max<int64_t>(C, 1))};
    else {
      const std::size_t gs = infer_block(C, ng, false);
      if (!gs || (ng > 1 && C % ng != 0))
        return refuse(p.name, conv, st.name + " has " + std::to_string(ng) + " groups, which do not divide " + std::to_string(C) + " columns");
      g->blk = {1, gs};
    }
    const std::size_t gi = find(stem + "_g_idx");
    if (gi != kNone) {
      members.push_back(gi);
      if (!is_int_dtype(T(gi).dtype) || T(gi).numel() != static_cast<std::size_t>(C))
        return refuse(p.name, conv, T(gi).name + " is not " + std::to_string(C) + " integers");
      const std::vector<int64_t> v = read_ints(raw, gi);
      bool identity = true, unused = true;
      for (int64_t c = 0; c < C; ++c) {
        unused = unused && v[c] == -1;
        identity = identity && v[c] == c / int64_t(g->blk[1]);
      }
      if (!identity && !unused) {
        if (ng < 1) return refuse(p.name, conv, T(gi).name + " orders columns but the scales are not per group");
        g->gidx.resize(static_cast<std::size_t>(C));
        for (int64_t c = 0; c < C; ++c) {
          if (v[c] < 0 || v[c] >= ng)
            return refuse(p.name, conv, T(gi).name + " puts column " + std::to_string(c) + " in group " + std::to_string(v[c]) + " of " + std::to_string(ng));
          g->gidx[c] = static_cast<uint32_t>(v[c]);
        }
        g->blk[1] = 0;
        g->gidx_groups = static_cast<std::size_t>(ng);
      }
    }
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(p.name, conv, why);
    const std::size_t z = find(stem + "_zero_point");
    if (z != kNone) {
      const TensorInfo& zt = T(z);
      const std::size_t pf = 32 / bits;
      const std::size_t ngc = ng == -1 ? 1 : std::size_t(ng);
      if (zt.dtype == DType::I32 && ng != -1 && zt.shape == std::vector<int64_t>{int64_t((R + pf - 1) / pf), int64_t(ngc)}) {
        g->zp_packed = true;
      } else if (zt.numel() != st.numel() || !is_int_dtype(zt.dtype)) {
        return refuse(p.name, conv, zt.name + " has shape " + shape_text(zt.shape) + ", neither packed [" +
                                        std::to_string((R + pf - 1) / pf) + ", " + std::to_string(ngc) + "] nor one per scale");
      }
      g->zero_point = z;
      g->info.zero_points = true;
      members.push_back(z);
    }
    if (!available(members)) return;
    finish_shape(*g);
    const std::string sf = st.dtype == DType::F32 ? "" : scale_name(st.dtype);
    const std::string spelling = spell(g->info.element_format, g->shape, g->blk, sf);
    if (!g->gidx.empty()) g->info.scheme_note = "groups follow weight_g_idx (activation order), which QuantScope's contiguous blocks cannot express";
    else if (g->info.zero_points) g->info.scheme_note = "asymmetric (zero points): QuantScope's int" + std::to_string(bits) + " is symmetric and its affine uint" + std::to_string(bits) + " keeps fp32 scales with unsigned zero points";
    else g->scheme = known_scheme(spelling, g->info.element_format, g->info.scheme_note);
    g->fp32_scale = st.dtype == DType::F32;
    const bool ordered = !g->gidx.empty();
    add(std::move(g), members, ordered ? "int" + std::to_string(bits) + "/groups by weight_g_idx" : spelling,
        std::string("weight_scale ") + scale_name(st.dtype));
  }

  // NVFP4: weight_packed U8 [R, C/2] + weight_scale F8_E4M3 [R, C/g] + weight_global_scale (divides).
  void nvfp4(std::size_t j, const std::string& stem, std::size_t s) {
    const TensorInfo& p = T(j);
    const TensorInfo& st = T(s);
    const std::string conv = "NVFP4 (compressed-tensors)";
    const std::size_t gl = find(stem + "_global_scale");
    if (gl == kNone) return;  // not a convention this reader knows: the tensors stay as they are
    if (st.dtype != DType::F8E4M3) return refuse(p.name, conv, st.name + " is " + to_string(st.dtype) + ", not float8_e4m3fn");
    if (!is_float_scale(T(gl).dtype) || T(gl).numel() != 1) return refuse(p.name, conv, T(gl).name + " is not one float");
    if (p.shape.size() != 2) return refuse(p.name, conv, "its shape " + shape_text(p.shape) + " is not [rows, columns / 2]");
    if (names.count(stem)) return refuse(p.name, conv, "its dequantized name '" + stem + "' is already a tensor of the file");
    const int64_t R = p.shape[0], C = p.shape[1] * 2;
    if (st.shape.size() != 2 || st.shape[0] != R || st.shape[1] < 1 || C % st.shape[1] != 0)
      return refuse(p.name, conv, st.name + " has shape " + shape_text(st.shape) + ", not [" + std::to_string(R) + ", groups dividing " + std::to_string(C) + " columns]");
    auto g = std::make_unique<Group>();
    g->conv = Conv::Nvfp4;
    g->name = stem;
    g->shape = {R, C};
    g->codes = j;
    g->code_dtype = DType::F4E2M1;  // pack_fp4_to_uint8: element 2i in the low nibble
    g->values = stream_code_values(DType::F4E2M1);
    g->scale = s;
    g->global = gl;
    g->blk = {1, static_cast<std::size_t>(C / st.shape[1])};
    g->info.convention = conv;
    g->info.element_format = "e2m1fn";
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(p.name, conv, why);
    const std::vector<std::size_t> members = {j, s, gl};
    if (!available(members)) return;
    finish_shape(*g);
    const std::string spelling = "e2m1fn/block:" + std::to_string(g->blk[1]) + ":e4m3fn";
    g->scheme = known_scheme(spelling, g->info.element_format, g->info.scheme_note);
    g->compare_sb = true;
    add(std::move(g), members, spelling, "weight_scale e4m3fn / weight_global_scale " + std::string(scale_name(T(gl).dtype)));
  }

  // compressed-tensors mxfp4-pack-quantized (MXFP4PackedCompressor, compressors/mxfp4/base.py, a subclass of
  // the NVFP4 packed compressor; dequantize_mxfp4_weight in compressors/mxfp4/linear.py): P.weight_packed U8
  // [rows, cols / 2] (pack_fp4_to_uint8: element 2i in the low nibble), P.weight_scale U8 (or F8_E8M0)
  // [rows, cols / 32] of biased exponents, no global scale. w = e2m1 * decompress_mx_scale(scale) =
  // e2m1 * 2^(scale - 127), computed in bfloat16 there: exact, and 255 gives 2^128 = inf (not OCP's NaN).
  void ct_mxfp4(std::size_t j, const std::string& stem, std::size_t s) {
    const TensorInfo& p = T(j);
    const TensorInfo& st = T(s);
    const std::string conv = "MXFP4 (compressed-tensors)";
    if (p.shape.size() != 2) return refuse(p.name, conv, "its shape " + shape_text(p.shape) + " is not [rows, columns / 2]");
    if (names.count(stem)) return refuse(p.name, conv, "its dequantized name '" + stem + "' is already a tensor of the file");
    const int64_t R = p.shape[0], C = p.shape[1] * 2;
    if (st.shape.size() != 2 || st.shape[0] != R)
      return refuse(p.name, conv, st.name + " has shape " + shape_text(st.shape) + ", not [" + std::to_string(R) + ", columns / 32]");
    if (C % 32 != 0 || st.shape[1] != C / 32)
      return refuse(p.name, conv, "its " + std::to_string(p.shape[1]) + " bytes per row hold " + std::to_string(C) + " e2m1 values, but " +
                                      st.name + " holds " + std::to_string(st.shape[1]) + " scales per row (one per 32 values)");
    auto g = std::make_unique<Group>();
    g->conv = Conv::Mx;
    g->e8m0_255_nan = false;
    g->name = stem;
    g->shape = {R, C};
    g->codes = j;
    g->code_dtype = DType::F4E2M1;
    g->values = stream_code_values(DType::F4E2M1);
    g->scale = s;
    g->blk = {1, 32};
    g->info.convention = conv;
    g->info.element_format = "e2m1fn";
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(p.name, conv, why);
    const std::vector<std::size_t> members = {j, s};
    if (!available(members)) return;
    finish_shape(*g);
    g->scheme = "e2m1fn/block:32:e8m0fnu";
    add(std::move(g), members, "e2m1fn/block:32:e8m0fnu", "weight_scale e8m0fnu");
  }

  // TensorRT Model Optimizer's NVFP4 export. NVFP4QTensor (modelopt/torch/quantization/qtensor/nvfp4_tensor.py):
  //   weight_scale_2 = amax / (6 * 448) in float32 (get_weights_scaling_factor_2);
  //   weight_scale = (block amax / (6 * weight_scale_2)), 0 -> 1, clamped at 2^-9, to float8_e4m3fn
  //     (get_weights_scaling_factor);
  //   quantize(): packed = q[..., 1::2] << 4 | q[..., 0::2] (element 2i in the low nibble), U8 [..., cols / 2];
  //   dequantize(): per_block_scale = weight_scale.to(float32) * weight_scale_2, a float32 product, then
  //     e2m1_values[code] * per_block_scale, where its table e2m1_values maps code 8 to +0 (not -0).
  // Names (quantizer_attr_names, modelopt/torch/quantization/utils.py): a module's "weight" has
  // "<module>.weight_scale", "<module>.weight_scale_2", "<module>.input_scale"; another weight attribute X has
  // "X_weight_scale", "X_weight_scale_2", "X_input_scale". The dequantized tensor keeps the weight's name;
  // input_scale (an activation scale, unused here) is taken as a member when it is one float.
  void modelopt_nvfp4(std::size_t j) {
    const TensorInfo& w = T(j);
    if (w.dtype != DType::U8) return;
    std::string sname = w.name + "_scale";
    std::size_t s = find(sname);
    if (s == kNone) s = find(sname = w.name + "_weight_scale");
    if (s == kNone) return;
    const TensorInfo& st = T(s);
    const std::string conv = "NVFP4 (ModelOpt)";
    const std::size_t s2 = find(sname + "_2");
    if (s2 == kNone) {
      if (st.dtype == DType::F8E4M3) return refuse(w.name, conv, sname + "_2 (the tensor scale) is missing");
      return;  // a U8 weight with another scale: not this convention
    }
    const TensorInfo& t2 = T(s2);
    if (st.dtype != DType::F8E4M3) return refuse(w.name, conv, st.name + " is " + to_string(st.dtype) + ", not float8_e4m3fn");
    if (!is_float_scale(t2.dtype)) return refuse(w.name, conv, t2.name + " is " + to_string(t2.dtype) + ", not a float scale");
    if (t2.numel() != 1) return refuse(w.name, conv, t2.name + " has shape " + shape_text(t2.shape) + ", not a scalar (one tensor scale)");
    const std::size_t r = w.shape.size();
    if (r < 2) return refuse(w.name, conv, "its shape " + shape_text(w.shape) + " is not [rows, columns / 2]");
    const int64_t Cp = w.shape[r - 1], C = Cp * 2;
    bool lead = st.shape.size() == r;
    for (std::size_t a = 0; lead && a + 1 < r; ++a) lead = st.shape[a] == w.shape[a];
    if (!lead) {
      std::vector<int64_t> want(w.shape.begin(), w.shape.end() - 1);
      std::string wt = shape_text(want);
      wt.pop_back();
      return refuse(w.name, conv, st.name + " has shape " + shape_text(st.shape) + ", not " + wt + ", blocks] for a weight of shape " + shape_text(w.shape));
    }
    const int64_t S = st.shape[r - 1];
    if (S < 1 || C % S != 0 || C / S < 1)
      return refuse(w.name, conv, "its " + std::to_string(Cp) + " bytes per row hold " + std::to_string(C) + " e2m1 values, which " + st.name + "'s " +
                                      std::to_string(S) + " scales per row do not divide into equal blocks (NVFP4: one per 16 values)");
    auto g = std::make_unique<Group>();
    g->conv = Conv::Nvfp4;
    g->global_divides = false;
    g->name = w.name;
    g->shape = w.shape;
    g->shape.back() = C;
    g->codes = j;
    g->code_dtype = DType::F4E2M1;
    g->values = stream_code_values(DType::F4E2M1);
    g->values[8] = 0.0f;  // ModelOpt's e2m1_values: code 8 is +0
    g->scale = s;
    g->global = s2;
    g->blk.assign(r, 1);
    g->blk.back() = static_cast<std::size_t>(C / S);
    g->info.convention = conv;
    g->info.element_format = "e2m1fn";
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(w.name, conv, why);
    std::vector<std::size_t> members = {j, s, s2};
    const std::string base = w.name == "weight" ? std::string() : ends_with(w.name, ".weight") ? w.name.substr(0, w.name.size() - 6) : w.name + "_";
    const std::size_t in = find(base + "input_scale");
    const bool with_input = in != kNone && in != j && is_float_scale(T(in).dtype) && T(in).numel() == 1 && role[in] == 0;
    if (with_input) members.push_back(in);
    if (!available(members)) return;
    finish_shape(*g);
    const std::string spelling = "e2m1fn/block:" + std::to_string(g->blk.back()) + ":e4m3fn";
    g->scheme = known_scheme(spelling, g->info.element_format, g->info.scheme_note);
    g->compare_sb = true;
    add(std::move(g), members, spelling,
        "weight_scale e4m3fn * weight_scale_2 " + std::string(scale_name(t2.dtype)) + (with_input ? ", input_scale" : ""));
  }

  void onnx(const DequantizeLinearInfo& d) {
    const std::size_t x = find(d.x), s = find(d.scale);
    if (x == kNone || s == kNone) return;  // inputs computed by the graph: nothing stored to show
    const std::size_t z = d.zero_point.empty() ? kNone : find(d.zero_point);
    const TensorInfo& xt = T(x);
    const TensorInfo& st = T(s);
    const std::string conv = "ONNX QDQ";
    if (!d.zero_point.empty() && z == kNone) return;
    switch (xt.dtype) {
      case DType::I8: case DType::U8: case DType::I16: case DType::U16: case DType::I32: case DType::I4:
      case DType::U4: case DType::I2: case DType::U2: case DType::F8E4M3: case DType::F8E5M2:
      case DType::F8E4M3FNUZ: case DType::F8E5M2FNUZ: case DType::F4E2M1: break;
      default: return refuse(xt.name, conv, "DequantizeLinear's x is " + std::string(to_string(xt.dtype)) + ", not a quantized type");
    }
    if (!is_float_scale(st.dtype)) return refuse(xt.name, conv, st.name + " is " + to_string(st.dtype) + ", not a float scale");
    if (z != kNone && (T(z).dtype != xt.dtype || T(z).shape != st.shape))
      return refuse(xt.name, conv, T(z).name + " (" + to_string(T(z).dtype) + " " + shape_text(T(z).shape) + ") is not the scale's shape in x's type");
    const int64_t r = static_cast<int64_t>(xt.shape.size());
    auto g = std::make_unique<Group>();
    g->conv = Conv::OnnxQdq;
    g->shape = xt.shape;
    g->codes = x;
    g->code_dtype = xt.dtype;
    if (dtype_bits(xt.dtype) > 16) g->code32 = true;
    else g->values = stream_code_values(xt.dtype);
    g->scale = s;
    g->info.convention = conv;
    g->info.element_format = element_name(xt.dtype);
    g->blk.resize(xt.shape.size());
    for (std::size_t a = 0; a < xt.shape.size(); ++a) g->blk[a] = std::size_t(std::max<int64_t>(xt.shape[a], 1));
    const int64_t axis = d.axis < 0 ? d.axis + r : d.axis;
    const std::string bad_shape = st.name + " has shape " + shape_text(st.shape) + ", which fits neither per tensor, per axis " +
                                  std::to_string(d.axis) + (d.block_size > 0 ? " nor blocks of " + std::to_string(d.block_size) : "") +
                                  " of x " + shape_text(xt.shape);
    if (d.block_size < 0) return refuse(xt.name, conv, "block_size " + std::to_string(d.block_size) + " is negative");
    if (d.block_size > 0) {
      if (axis < 0 || axis >= r || st.shape.size() != xt.shape.size()) return refuse(xt.name, conv, bad_shape);
      for (int64_t a = 0; a < r; ++a) {
        const int64_t D = xt.shape[a];
        const int64_t want = a == axis ? (D + d.block_size - 1) / d.block_size : D;
        if (st.shape[a] != want) return refuse(xt.name, conv, bad_shape);
        g->blk[a] = a == axis ? static_cast<std::size_t>(d.block_size) : 1;
      }
    } else if (st.numel() == 1 && st.shape.size() <= 1) {
      // per tensor
    } else if (st.shape.size() == 1 && axis >= 0 && axis < r && st.shape[0] == xt.shape[axis]) {
      g->blk[axis] = 1;
    } else {
      return refuse(xt.name, conv, bad_shape);
    }
    std::string why;
    if (!set_grid(*g, st.numel(), why)) return refuse(xt.name, conv, why);
    std::vector<std::size_t> members = {x, s};
    if (z != kNone) {
      g->zero_point = z;
      g->info.zero_points = true;
      members.push_back(z);
    }
    if (!available(members)) return;
    // Named by the node's output (QDQ exporters give it the original weight's name), else by x.
    g->name = !d.output.empty() && !names.count(d.output) ? d.output : xt.name;
    finish_shape(*g);
    const bool is_unsigned = xt.dtype == DType::U8 || xt.dtype == DType::U4 || xt.dtype == DType::U16 || xt.dtype == DType::U2;
    const std::string sf = st.dtype == DType::F32 ? "" : scale_name(st.dtype);
    const std::string spelling = spell(g->info.element_format, g->shape, g->blk, sf);
    // Signed codes with zero points are checked against the symmetric scheme only when every zero point is 0
    // (requantize_check looks); unsigned ones are QuantScope's affine rule, zero point and all.
    g->scheme = known_scheme(spelling, g->info.element_format, g->info.scheme_note);
    if (is_unsigned && !g->scheme.empty()) g->info.scheme_note = "affine: scale and zero point from the group's min and max";
    g->fp32_scale = st.dtype == DType::F32;
    add(std::move(g), members, spelling, std::string("scale ") + scale_name(st.dtype));
  }

};

}  // namespace

PrequantizedFile::~PrequantizedFile() = default;

std::unique_ptr<TensorFile> recognise_prequantized(std::unique_ptr<TensorFile> raw) {
  if (!raw) return raw;
  Recogniser rec(*raw);
  const std::size_t n = raw->tensors().size();
  // A group that cannot be read (an index tensor past the end of a truncated file) stays raw with its reason.
  auto guarded = [&](const std::string& what, auto&& f) {
    try {
      f();
    } catch (const IoError& e) {
      rec.skipped.push_back(what + ": its quantization tensors cannot be read (" + e.what() + "); listed as stored");
    }
  };
  for (const DequantizeLinearInfo& d : raw->dequantize_nodes()) guarded(d.x, [&] { rec.onnx(d); });
  for (std::size_t j = 0; j < n; ++j) {
    if (rec.role[j] != 0) continue;
    const std::string& name = raw->tensors()[j].name;
    guarded(name, [&] { rec.compressed_tensors(j); });
    if (rec.role[j] == 0) guarded(name, [&] { rec.modelopt_nvfp4(j); });
    if (rec.role[j] == 0) guarded(name, [&] { rec.mx(j); });
    if (rec.role[j] == 0) guarded(name, [&] { rec.scaled_weight(j); });
  }
  if (rec.groups.empty() && rec.skipped.empty()) return raw;

  std::unique_ptr<PrequantizedFile> f(new PrequantizedFile);
  f->path_ = raw->path();
  f->kind_ = raw->kind();
  f->skipped_ = raw->skipped();
  f->skipped_.insert(f->skipped_.end(), rec.skipped.begin(), rec.skipped.end());
  f->metadata_ = raw->metadata();
  std::vector<int> group_at(n, -1);
  for (std::size_t gi = 0; gi < rec.groups.size(); ++gi) group_at[rec.groups[gi]->codes] = static_cast<int>(gi);
  for (std::size_t j = 0; j < n; ++j) {
    if (group_at[j] >= 0) {
      const std::size_t gi = static_cast<std::size_t>(group_at[j]);
      const Group& g = *rec.groups[gi];
      TensorInfo t;
      t.name = g.name;
      t.dtype = DType::F32;
      t.shape = g.shape;
      t.stored = g.stored;
      t.stored_bytes = g.stored_bytes;
      f->tensors_.push_back(std::move(t));
      f->raw_index_.push_back(j);
      f->group_of_.push_back(static_cast<int>(gi));
    } else if (rec.role[j] == 0) {
      f->tensors_.push_back(raw->tensors()[j]);
      f->raw_index_.push_back(j);
      f->group_of_.push_back(-1);
    }
  }
  f->groups_ = std::move(rec.groups);
  f->raw_ = std::move(raw);
  return f;
}

const PrequantInfo* PrequantizedFile::prequant(std::size_t index) const {
  if (index >= group_of_.size() || group_of_[index] < 0) return nullptr;
  return &groups_[static_cast<std::size_t>(group_of_[index])]->info;
}

const PrequantizedFile::Group* PrequantizedFile::group(std::size_t index) const {
  if (index >= group_of_.size() || group_of_[index] < 0) return nullptr;
  return groups_[static_cast<std::size_t>(group_of_[index])].get();
}

std::vector<std::string> PrequantizedFile::source_files() const { return raw_->source_files(); }
std::vector<DequantizeLinearInfo> PrequantizedFile::dequantize_nodes() const { return raw_->dequantize_nodes(); }

TensorBytes PrequantizedFile::read(std::size_t index) const {
  if (index >= tensors_.size()) throw IoError(path_ + ": tensor index " + std::to_string(index) + " out of range");
  if (group_of_[index] < 0) return raw_->read(raw_index_[index]);
  auto buf = std::make_shared<std::vector<float>>(tensors_[index].numel());
  read_f32(index, buf->data());
  return {reinterpret_cast<const uint8_t*>(buf->data()), buf->size() * 4, buf};
}

void PrequantizedFile::read_f32(std::size_t index, float* out) const {
  if (index >= tensors_.size()) throw IoError(path_ + ": tensor index " + std::to_string(index) + " out of range");
  if (group_of_[index] < 0) return raw_->read_f32(raw_index_[index], out);
  const Group& g = *groups_[static_cast<std::size_t>(group_of_[index])];
  const Loaded L = load(*raw_, g);
  const CodeReader cr{g, L.codes.data};
  if (L.zp.empty()) {
    walk(g, [&](std::size_t e, std::size_t r, std::size_t c, std::size_t k) { out[e] = code_value(g, cr.at(e, r, c)) * L.eff[k]; });
  } else {
    walk(g, [&](std::size_t e, std::size_t r, std::size_t c, std::size_t k) {
      out[e] = (code_value(g, cr.at(e, r, c)) - L.zp[k]) * L.eff[k];
    });
  }
}

std::vector<uint32_t> PrequantizedFile::codes(std::size_t index) const {
  if (index >= tensors_.size() || group_of_[index] < 0) return {};
  const Group& g = *groups_[static_cast<std::size_t>(group_of_[index])];
  const TensorBytes b = raw_->read(g.codes);
  const CodeReader cr{g, b.data};
  std::vector<uint32_t> v(g.numel);
  walk(g, [&](std::size_t e, std::size_t r, std::size_t c, std::size_t) { v[e] = cr.at(e, r, c); });
  return v;
}

}  // namespace qs
