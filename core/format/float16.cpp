// IEEE binary16 <-> binary32, exact (see float16.h), and the bulk widening's dispatch.
#include "format/float16.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "format/encode_simd.h"
#include "util/parallel.h"

#if defined(QS_HAVE_X86_SIMD)
#include <cpuid.h>
#endif

namespace qs {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf, or NaN with its payload kept (quiet bit included)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half m * 2^-24: normalise so the leading 1 becomes the implicit bit.
    int e = 113;  // exponent field of 2^-14, decremented per shift
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {
    if (ax == 0x7F800000u) return sign | 0x7C00u;
    // NaN: keep the top payload bits (like numpy), so every half NaN round-trips unchanged; a
    // payload that lives only in the low 13 bits must not truncate to inf.
    uint16_t m = static_cast<uint16_t>((ax >> 13) & 0x3FFu);
    if (m == 0) m = 0x200u;
    return sign | 0x7C00u | m;
  }
  if (ax >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 = max + half ulp: ties to even = inf
  if (ax >= 0x38800000u) {                       // >= 2^-14: normal half
    // Round to nearest even on the 13 dropped bits; a carry into the exponent is the right answer.
    ax += 0xFFFu + ((ax >> 13) & 1u);
    return sign | static_cast<uint16_t>((ax - (112u << 23)) >> 13);
  }
  if (ax <= 0x33000000u) return sign;  // <= 2^-25, half of the smallest subnormal: ties to 0 (even)
  // Subnormal half: value = mant * 2^(e - 150); in units of 2^-24 that is mant >> (126 - e).
  const uint32_t e = ax >> 23;
  const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24 here
  uint32_t m = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (m & 1u))) ++m;  // may carry into 0x400, the smallest normal
  return sign | static_cast<uint16_t>(m);
}

}  // namespace qs

// ---- Bulk widening: generic kernels and the dispatch (the SIMD kernels live in float16_f16c.cpp and
// float16_avx512.cpp, compiled with their own target flags).

namespace qs {

namespace detail {

void half_to_float_generic(const uint8_t* src, std::size_t n, float* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = half_to_float(h);
  }
}

void bf16_to_float_generic(const uint8_t* src, std::size_t n, float* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    const uint32_t u = uint32_t(b) << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

}  // namespace detail

namespace {

using Kernel = void (*)(const uint8_t*, std::size_t, float*);

bool level_ok(SimdLevel level) {
  if (level == SimdLevel::Generic) return true;
#if defined(QS_HAVE_X86_SIMD)
  const auto& av = available_simd_levels();
  if (std::find(av.begin(), av.end(), level) == av.end()) return false;
  if (level == SimdLevel::Avx2) {  // vcvtph2ps at 256 bits needs F16C: CPUID leaf 1, ECX bit 29 (clang 14's
    unsigned a, b, c, d;            // __builtin_cpu_supports has no "f16c", so the fuzz build failed here)
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }
  return true;
#else
  return false;
#endif
}

Kernel kernel_for(SimdLevel level, bool bf16) {
  if (!level_ok(level))
    throw std::invalid_argument(std::string("float16 conversion: SIMD level ") + to_string(level) +
                                " is not available on this CPU or in this build");
#if defined(QS_HAVE_X86_SIMD)
  if (level == SimdLevel::Avx512) return bf16 ? &detail::bf16_to_float_avx512 : &detail::half_to_float_avx512;
  if (level == SimdLevel::Avx2) return bf16 ? &detail::bf16_to_float_avx2 : &detail::half_to_float_f16c;
#endif
  return bf16 ? &detail::bf16_to_float_generic : &detail::half_to_float_generic;
}

SimdLevel best_level() {
  const auto& av = available_simd_levels();
  for (auto it = av.rbegin(); it != av.rend(); ++it)
    if (level_ok(*it)) return *it;
  return SimdLevel::Generic;
}

void bulk(bool bf16, const void* src, std::size_t n, float* dst, int threads) {
  static const Kernel k16 = kernel_for(float16_simd_level(), false), kbf = kernel_for(float16_simd_level(), true);
  const Kernel k = bf16 ? kbf : k16;
  const auto* s = static_cast<const uint8_t*>(src);
  threads = resolve_threads(threads);
  if (threads == 1 || n < kBulkThreadMin) return k(s, n, dst);
  // 64 Ki elements a chunk: 128 KiB in and 256 KiB out, and enough chunks to balance two to eight threads.
  constexpr std::size_t kChunk = std::size_t(1) << 16;
  parallel_chunks(n, kChunk, threads, [&](std::size_t b, std::size_t e) { k(s + 2 * b, e - b, dst + b); });
}

}  // namespace

SimdLevel float16_simd_level() {
  static const SimdLevel l = best_level();
  return l;
}

void half_to_float_n(const void* src, std::size_t n, float* dst, int threads) { bulk(false, src, n, dst, threads); }
void bf16_to_float_n(const void* src, std::size_t n, float* dst, int threads) { bulk(true, src, n, dst, threads); }

void half_to_float_n_at(SimdLevel level, const void* src, std::size_t n, float* dst) {
  kernel_for(level, false)(static_cast<const uint8_t*>(src), n, dst);
}
void bf16_to_float_n_at(SimdLevel level, const void* src, std::size_t n, float* dst) {
  kernel_for(level, true)(static_cast<const uint8_t*>(src), n, dst);
}

}  // namespace qs
