// IEEE binary16 <-> binary32, exact (see float16.h).
#include "format/float16.h"

#include <bit>

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
