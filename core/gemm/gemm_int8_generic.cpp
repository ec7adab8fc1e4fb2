// The portable int8 kernel: the same packed layouts, blocking and epilogue as the SIMD levels, in plain
// C++ with modulo-2^32 sums (unsigned arithmetic, no overflow UB). Exercise: tests/tst_gemm.cpp.
#include <cstring>

#include "gemm/gemm_impl.h"

namespace qs::detail {
namespace {

template <int R>
void micro(const Tile& t) {
  constexpr int NT = kGemmPanel;
  uint32_t acc[R][NT] = {};
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  for (int g = 0; g < t.kgs; ++g) {
    for (int r = 0; r < R; ++r) {
      const uint32_t a0 = a[4 * r], a1 = a[4 * r + 1], a2 = a[4 * r + 2], a3 = a[4 * r + 3];
      for (int c = 0; c < NT; ++c) {
        const int8_t* bc = b + 4 * c;
        acc[r][c] += a0 * uint32_t(int32_t(bc[0])) + a1 * uint32_t(int32_t(bc[1])) +
                     a2 * uint32_t(int32_t(bc[2])) + a3 * uint32_t(int32_t(bc[3]));
      }
    }
    a += 4 * R;
    b += 4 * kGemmPanel;
  }
  // The output memory is int32 or float; partial sums travel through it as bits (memcpy, no aliasing).
  for (int r = 0; r < R; ++r) {
    unsigned char* o = reinterpret_cast<unsigned char*>(t.out + r * t.ld);
    for (int c = 0; c < t.cols; ++c) {
      uint32_t x = acc[r][c];
      if (t.accumulate) {
        uint32_t p;
        std::memcpy(&p, o + 4 * c, 4);
        x += p;
      }
      if (t.final) {
        x -= uint32_t(t.alpha[r]) * uint32_t(t.u[c]);
        if (t.has_beta) x -= uint32_t(t.ra[r]) * uint32_t(t.beta[c]);
      }
      if (!t.final || !t.float_out) {
        std::memcpy(o + 4 * c, &x, 4);
      } else {
        float y = static_cast<float>(int32_t(x)) * t.sa[r];
        y = y * t.sb[c];
        y = y + t.bias[c];
        std::memcpy(o + 4 * c, &y, 4);
      }
    }
  }
}

struct Generic {
  static constexpr int MR = kMrGeneric, NT = kGemmPanel, ESZ = kEszGeneric;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 4: micro<4>(t); break;
      case 3: micro<3>(t); break;
      case 2: micro<2>(t); break;
      default: micro<1>(t); break;
    }
  }
};
static_assert(kMrGeneric == 4);

}  // namespace

void gemm_tiles_generic(const GemmJob& j, int pb, int pe, int mb, int me) {
  run_blocked<Generic>(j, pb, pe, mb, me);
}

}  // namespace qs::detail
