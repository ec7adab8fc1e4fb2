// The CUDA correctness suite (core/cuda/selftest_cuda.h) as a ctest entry: every kernel against the CPU
// reference, bit for bit. Without a GPU or a CUDA build it prints why and exits 77, which ctest reports as
// skipped (not passed). Run alone: `./build/tests/core/tst_cuda_selftest` (the same cases as
// `quantscope-cli selftest --backend cuda`).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cuda/device.h"
#include "cuda/selftest_cuda.h"

namespace {

TEST(CudaSelftest, EveryKernelMatchesTheCpu) {
  std::size_t passed = 0;
  std::vector<std::string> failed;
  qs::cuda::run_selftest_cuda([&](const qs::SelftestCase& c) {
    if (c.passed) ++passed;
    else failed.push_back(c.name + ": " + c.detail);
  });
  for (const std::string& f : failed) ADD_FAILURE() << f;
  std::printf("%zu passed, %zu failed\n", passed, failed.size());
  // A suite that ran nothing would pass vacuously.
  EXPECT_GT(passed + failed.size(), 100u);
}

}  // namespace

int main(int argc, char** argv) {
  const qs::cuda::DeviceInfo& d = qs::cuda::device_info();
  if (!d.available) {
    std::printf("SKIP: %s\n", d.message.c_str());
    return 77;
  }
  std::printf("device: %s\n", d.message.c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
