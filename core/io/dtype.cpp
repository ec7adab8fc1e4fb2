// DType names, sizes and exact widening conversions (float16, bfloat16, float8/6/4 and the packed
// integers included). Every low-bit float decodes through a per-type table of decode_ref over all of
// its codes, so a value read from a file is exactly the format engine's value of that code.
#include "io/dtype.h"

#include <cstring>
#include <string_view>

#include "format/format.h"
#include "io/npy.h"

namespace qs {

const char* to_string(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::F16: return "float16";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::I32: return "int32";
    case DType::U16: return "uint16";
    case DType::BF16: return "bfloat16";
    case DType::I16: return "int16";
    case DType::I64: return "int64";
    case DType::U32: return "uint32";
    case DType::U64: return "uint64";
    case DType::F8E4M3: return "float8_e4m3fn";
    case DType::F8E5M2: return "float8_e5m2";
    case DType::Bool: return "bool";
    case DType::F8E4M3FNUZ: return "float8_e4m3fnuz";
    case DType::F8E5M2FNUZ: return "float8_e5m2fnuz";
    case DType::F8E8M0: return "float8_e8m0fnu";
    case DType::F4E2M1: return "float4_e2m1fn";
    case DType::F6E2M3: return "float6_e2m3fn";
    case DType::F6E3M2: return "float6_e3m2fn";
    case DType::I4: return "int4";
    case DType::U4: return "uint4";
    case DType::I2: return "int2";
    case DType::U2: return "uint2";
  }
  return "?";
}

unsigned dtype_bits(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: case DType::U64: return 64;
    case DType::F32: case DType::I32: case DType::U32: return 32;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 16;
    case DType::I8: case DType::U8: case DType::F8E4M3: case DType::F8E5M2: case DType::Bool:
    case DType::F8E4M3FNUZ: case DType::F8E5M2FNUZ: case DType::F8E8M0: return 8;
    case DType::F6E2M3: case DType::F6E3M2: return 6;
    case DType::F4E2M1: case DType::I4: case DType::U4: return 4;
    case DType::I2: case DType::U2: return 2;
  }
  return 8;
}

bool dtype_is_packed(DType t) { return dtype_bits(t) < 8; }

std::size_t dtype_size(DType t) { return dtype_is_packed(t) ? 1 : dtype_bits(t) / 8; }

std::size_t dtype_nbytes(DType t, std::size_t numel) {
  const std::size_t bits = dtype_bits(t);
  if (bits % 8 == 0) return numel * (bits / 8);
  // Whole groups of 8 elements are whole bytes; the rest rounds up. Exact wherever the result fits.
  return numel / 8 * bits + (numel % 8 * bits + 7) / 8;
}

bool dtype_nbytes(DType t, uint64_t numel, uint64_t* nbytes) {
  const uint64_t bits = dtype_bits(t);
  uint64_t whole = 0;
  if (bits % 8 == 0) return !__builtin_mul_overflow(numel, bits / 8, nbytes);
  if (__builtin_mul_overflow(numel / 8, bits, &whole)) return false;
  return !__builtin_add_overflow(whole, (numel % 8 * bits + 7) / 8, nbytes);
}

bool dtype_is_float(DType t) {
  switch (t) {
    case DType::F32: case DType::F64: case DType::F16: case DType::BF16: case DType::F8E4M3:
    case DType::F8E5M2: case DType::F8E4M3FNUZ: case DType::F8E5M2FNUZ: case DType::F8E8M0:
    case DType::F4E2M1: case DType::F6E2M3: case DType::F6E3M2:
      return true;
    default: return false;
  }
}

namespace {

// The value of every code of a low-bit type (2^bits entries used), as float32: exact, since every
// code of these formats (E8M0's 2^-127 included, as a float32 subnormal) is a float32 value.
struct CodeTable {
  float v[256];
};

CodeTable float_table(std::string_view format, unsigned bits) {
  const Format f = parse_format(format);
  if (f.bits != int(bits)) throw std::logic_error("dtype table: format width mismatch");
  CodeTable tab{};
  for (uint32_t c = 0; c < f.code_count(); ++c) tab.v[c] = static_cast<float>(decode_ref(f, c));
  return tab;
}

CodeTable int_table(unsigned bits, bool is_signed) {
  CodeTable tab{};
  const int count = 1 << bits;
  for (int c = 0; c < count; ++c) tab.v[c] = static_cast<float>(is_signed && c >= count / 2 ? c - count : c);
  return tab;
}

// Built once per type on first use (thread-safe static initialisation).
const CodeTable& code_table(DType t) {
  switch (t) {
    case DType::F8E4M3: { static const CodeTable tab = float_table("e4m3fn", 8); return tab; }
    case DType::F8E5M2: { static const CodeTable tab = float_table("e5m2", 8); return tab; }
    case DType::F8E4M3FNUZ: { static const CodeTable tab = float_table("e4m3fnuz", 8); return tab; }
    case DType::F8E5M2FNUZ: { static const CodeTable tab = float_table("e5m2fnuz", 8); return tab; }
    case DType::F8E8M0: { static const CodeTable tab = float_table("e8m0fnu", 8); return tab; }
    case DType::F6E2M3: { static const CodeTable tab = float_table("e2m3fn", 6); return tab; }
    case DType::F6E3M2: { static const CodeTable tab = float_table("e3m2fn", 6); return tab; }
    case DType::F4E2M1: { static const CodeTable tab = float_table("e2m1fn", 4); return tab; }
    case DType::I4: { static const CodeTable tab = int_table(4, true); return tab; }
    case DType::U4: { static const CodeTable tab = int_table(4, false); return tab; }
    case DType::I2: { static const CodeTable tab = int_table(2, true); return tab; }
    case DType::U2: { static const CodeTable tab = int_table(2, false); return tab; }
    default: throw std::logic_error("dtype has no code table");
  }
}

// Element i of a packed stream: bits [i*bits, i*bits + bits) of the little-endian bit stream.
template <typename Out>
void unpack(const uint8_t* b, std::size_t n, unsigned bits, const float* v, Out* dst) {
  std::size_t i = 0;
  if (bits == 4) {
    for (; i + 2 <= n; i += 2) {
      const uint8_t x = b[i / 2];
      dst[i] = static_cast<Out>(v[x & 15]);
      dst[i + 1] = static_cast<Out>(v[x >> 4]);
    }
  } else if (bits == 6) {
    for (; i + 4 <= n; i += 4) {  // four elements in three bytes
      const uint8_t* p = b + i / 4 * 3;
      const uint32_t w = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16;
      dst[i] = static_cast<Out>(v[w & 63]);
      dst[i + 1] = static_cast<Out>(v[(w >> 6) & 63]);
      dst[i + 2] = static_cast<Out>(v[(w >> 12) & 63]);
      dst[i + 3] = static_cast<Out>(v[(w >> 18) & 63]);
    }
  }
  const unsigned mask = (1u << bits) - 1;
  for (; i < n; ++i) {  // the tail (and all of 2-bit): reads only bytes that hold part of element i
    const std::size_t at = i * bits;
    const unsigned shift = unsigned(at % 8);
    unsigned w = b[at / 8];
    if (shift + bits > 8) w |= unsigned(b[at / 8 + 1]) << 8;
    dst[i] = static_cast<Out>(v[(w >> shift) & mask]);
  }
}

template <typename Out>
void convert(DType t, const void* src, std::size_t n, Out* dst) {
  const auto* b = static_cast<const uint8_t*>(src);
  auto load = [&](auto tag, std::size_t i) {
    decltype(tag) v;
    std::memcpy(&v, b + i * sizeof v, sizeof v);
    return v;
  };
  switch (t) {
    case DType::F32: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(float{}, i)); break;
    case DType::F64: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(double{}, i)); break;
    case DType::F16: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(half_to_float(load(uint16_t{}, i))); break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        const uint32_t u = uint32_t(load(uint16_t{}, i)) << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        dst[i] = static_cast<Out>(f);
      }
      break;
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2FNUZ:
    case DType::F8E8M0: {
      const float* v = code_table(t).v;
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(v[b[i]]);
      break;
    }
    case DType::F4E2M1:
    case DType::F6E2M3:
    case DType::F6E3M2:
    case DType::I4:
    case DType::U4:
    case DType::I2:
    case DType::U2: unpack(b, n, dtype_bits(t), code_table(t).v, dst); break;
    case DType::I8: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(int8_t{}, i)); break;
    case DType::U8: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(b[i]); break;
    case DType::Bool: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(b[i] != 0); break;
    case DType::I16: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(int16_t{}, i)); break;
    case DType::U16: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(uint16_t{}, i)); break;
    case DType::I32: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(int32_t{}, i)); break;
    case DType::U32: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(uint32_t{}, i)); break;
    case DType::I64: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(int64_t{}, i)); break;
    case DType::U64: for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load(uint64_t{}, i)); break;
  }
}
}  // namespace

void convert_to_f32(DType t, const void* src, std::size_t n, float* dst, int threads) {
  // float16 / bfloat16: the vectorized (and, when asked, threaded) widening of format/float16.h, the
  // same bits as the scalar loop in convert().
  if (t == DType::F16) return half_to_float_n(src, n, dst, threads);
  if (t == DType::BF16) return bf16_to_float_n(src, n, dst, threads);
  convert(t, src, n, dst);
}
void convert_to_f64(DType t, const void* src, std::size_t n, double* dst) { convert(t, src, n, dst); }

}  // namespace qs
