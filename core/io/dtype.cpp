// DType names, sizes and exact widening conversions (float16, bfloat16 and float8 included).
#include "io/dtype.h"

#include <cstring>

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
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: case DType::U64: return 8;
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::I8: case DType::U8: case DType::F8E4M3: case DType::F8E5M2: case DType::Bool: return 1;
  }
  return 0;
}

bool dtype_is_float(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 ||
         t == DType::F8E5M2;
}

namespace {
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
    case DType::F8E5M2: {
      static const Format e4 = parse_format("e4m3fn"), e5 = parse_format("e5m2");
      const Format& f = t == DType::F8E4M3 ? e4 : e5;
      float table[256];
      for (int c = 0; c < 256; ++c) table[c] = static_cast<float>(decode_ref(f, uint32_t(c)));
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(table[b[i]]);
      break;
    }
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

void convert_to_f32(DType t, const void* src, std::size_t n, float* dst) { convert(t, src, n, dst); }
void convert_to_f64(DType t, const void* src, std::size_t n, double* dst) { convert(t, src, n, dst); }

}  // namespace qs
