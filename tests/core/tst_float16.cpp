// Bulk float16 / bfloat16 -> float32 (issue 17 item 5): every SIMD level this CPU runs (generic, F16C +
// AVX2, AVX-512) and the threaded path give exactly the scalar reference's bits for all 65536 codes of
// each type (NaN payloads and signalling NaNs included), for every length 0..200 and at odd addresses
// (the tails), without touching a float past the end; convert_to_f32 uses them.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "format/encode_simd.h"
#include "format/float16.h"
#include "io/dtype.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Reference bits of one code.
uint32_t ref_half(uint16_t h) { return bits(qs::half_to_float(h)); }
uint32_t ref_bf16(uint16_t b) { return uint32_t(b) << 16; }

using Fn = void (*)(qs::SimdLevel, const void*, std::size_t, float*);

std::vector<qs::SimdLevel> levels() {
  std::vector<qs::SimdLevel> out;
  for (qs::SimdLevel l : {qs::SimdLevel::Generic, qs::SimdLevel::Avx2, qs::SimdLevel::Avx512}) {
    float f;
    const uint16_t one = 0x3C00;
    try {
      qs::half_to_float_n_at(l, &one, 1, &f);
      out.push_back(l);
    } catch (const std::invalid_argument&) {
      std::printf("level %s not available here: not checked\n", qs::to_string(l));
    }
  }
  return out;
}

TEST(Float16, ScalarReferenceKeepsNaNPayloads) {
  // The contract the kernels match: payload kept as it is, a signalling NaN stays signalling.
  EXPECT_EQ(ref_half(0x7C01), 0x7F802000u);
  EXPECT_EQ(ref_half(0xFDFF), 0xFFBFE000u);
  EXPECT_EQ(ref_half(0x7E00), 0x7FC00000u);
  EXPECT_EQ(ref_half(0x7C00), 0x7F800000u);
  EXPECT_EQ(ref_half(0x0001), bits(5.9604644775390625e-8f));
  EXPECT_EQ(bits(qs::bf16_to_float(0x7F81)), 0x7F810000u);
}

TEST(Float16, AllCodesEveryLevel) {
  std::vector<uint16_t> codes(65536);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = uint16_t(i);
  const auto ls = levels();
  ASSERT_FALSE(ls.empty());
  for (qs::SimdLevel l : ls) {
    SCOPED_TRACE(qs::to_string(l));
    for (bool bf : {false, true}) {
      std::vector<float> out(codes.size(), -1.0f);
      (bf ? qs::bf16_to_float_n_at : qs::half_to_float_n_at)(l, codes.data(), codes.size(), out.data());
      int bad = 0;
      for (std::size_t i = 0; i < codes.size(); ++i) {
        const uint32_t want = bf ? ref_bf16(codes[i]) : ref_half(codes[i]);
        if (bits(out[i]) != want && ++bad <= 5)
          ADD_FAILURE() << (bf ? "bf16" : "fp16") << " code 0x" << std::hex << codes[i] << ": got 0x" << bits(out[i])
                        << ", want 0x" << want;
      }
      EXPECT_EQ(bad, 0);
    }
  }
  std::printf("best level for float16: %s\n", qs::to_string(qs::float16_simd_level()));
}

TEST(Float16, TailsAndOddAddresses) {
  std::mt19937 gen(17);
  std::vector<uint8_t> raw(2 * 300 + 3);
  for (auto& b : raw) b = uint8_t(gen());
  // Special codes spread in: signalling and quiet NaNs, infinities, subnormals.
  const uint16_t special[] = {0x7C01, 0xFC01, 0x7DFF, 0x7E00, 0xFE01, 0x7C00, 0x0001, 0x83FF, 0x7F80, 0xFF81};
  for (std::size_t k = 0; k < std::size(special); ++k) std::memcpy(raw.data() + 1 + 2 * (k * 13), &special[k], 2);
  for (qs::SimdLevel l : levels()) {
    SCOPED_TRACE(qs::to_string(l));
    for (bool bf : {false, true})
      for (std::size_t offset : {std::size_t(0), std::size_t(1)})
        for (std::size_t n = 0; n <= 200; ++n) {
          const uint8_t* src = raw.data() + offset;
          std::vector<float> buf(n + 3, 0.0f);
          const float guard = std::bit_cast<float>(0x7FA5A5A5u);
          for (auto& f : buf) f = guard;
          float* dst = buf.data() + 1;  // dst at 4 mod 32 bytes: unaligned for the vector stores
          (bf ? qs::bf16_to_float_n_at : qs::half_to_float_n_at)(l, src, n, dst);
          ASSERT_EQ(bits(buf[0]), bits(guard)) << "n " << n;
          for (std::size_t i = 0; i < n; ++i) {
            uint16_t c;
            std::memcpy(&c, src + 2 * i, 2);
            ASSERT_EQ(bits(dst[i]), bf ? ref_bf16(c) : ref_half(c)) << (bf ? "bf16" : "fp16") << " n " << n << " i " << i
                                                                     << " offset " << offset;
          }
          ASSERT_EQ(bits(buf[n + 1]), bits(guard)) << "n " << n;
          ASSERT_EQ(bits(buf[n + 2]), bits(guard)) << "n " << n;
        }
  }
}

TEST(Float16, ThreadedAndConvertToF32) {
  const std::size_t n = qs::kBulkThreadMin * 3 + 12345;  // several chunks and an odd tail
  std::mt19937 gen(5);
  std::vector<uint8_t> raw(2 * n + 1);
  for (auto& b : raw) b = uint8_t(gen());
  for (bool bf : {false, true})
    for (int threads : {1, 2, 3, 0}) {
      SCOPED_TRACE(testing::Message() << (bf ? "bf16" : "fp16") << " threads " << threads);
      std::vector<float> out(n);
      (bf ? qs::bf16_to_float_n : qs::half_to_float_n)(raw.data() + 1, n, out.data(), threads);
      std::vector<float> via(n);
      qs::convert_to_f32(bf ? qs::DType::BF16 : qs::DType::F16, raw.data() + 1, n, via.data(), threads);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        uint16_t c;
        std::memcpy(&c, raw.data() + 1 + 2 * i, 2);
        const uint32_t want = bf ? ref_bf16(c) : ref_half(c);
        bad += bits(out[i]) != want;
        bad += bits(via[i]) != want;
      }
      EXPECT_EQ(bad, 0u);
    }
  // The double path stays the scalar one and agrees.
  const uint16_t h[3] = {0x7C01, 0x3555, 0x0001};
  double d[3];
  qs::convert_to_f64(qs::DType::F16, h, 3, d);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::bit_cast<uint64_t>(d[i]), std::bit_cast<uint64_t>(double(qs::half_to_float(h[i]))));
}

}  // namespace
