// balanced_order (core/bench/bench_order.h): the GPU GEMM benchmark's round order, a Williams design. Checked
// against its definition for 1 to 12 kernels: every round a permutation, every kernel in every place equally
// often, every ordered pair of kernels adjacent equally often.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "bench/bench_order.h"

namespace {

TEST(BenchOrder, RoundsPerDesign) {
  EXPECT_EQ(qs::balanced_rounds(1), 2);
  EXPECT_EQ(qs::balanced_rounds(2), 2);
  EXPECT_EQ(qs::balanced_rounds(3), 6);
  EXPECT_EQ(qs::balanced_rounds(4), 4);
  EXPECT_TRUE(qs::balanced_order(0, 0).empty());
}

TEST(BenchOrder, EveryPlaceAndEveryPredecessorEquallyOften) {
  for (int n = 1; n <= 12; ++n) {
    const int rounds = qs::balanced_rounds(n);
    std::vector<int> place(std::size_t(n * n), 0), follows(std::size_t(n * n), 0);
    for (int r = 0; r < rounds; ++r) {
      const std::vector<int> order = qs::balanced_order(n, r);
      ASSERT_EQ(int(order.size()), n);
      std::vector<int> sorted = order;
      std::vector<int> identity(static_cast<std::size_t>(n));
      std::sort(sorted.begin(), sorted.end());
      std::iota(identity.begin(), identity.end(), 0);
      ASSERT_EQ(sorted, identity) << "n " << n << " round " << r << " is not a permutation";
      for (int i = 0; i < n; ++i) ++place[std::size_t(order[std::size_t(i)] * n + i)];
      for (int i = 1; i < n; ++i) ++follows[std::size_t(order[std::size_t(i)] * n + order[std::size_t(i - 1)])];
    }
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) {
        EXPECT_EQ(place[std::size_t(k * n + j)], rounds / n) << "n " << n << ": kernel " << k << " in place " << j;
        if (j != k)
          EXPECT_EQ(follows[std::size_t(k * n + j)], n % 2 == 0 ? 1 : 2)
              << "n " << n << ": kernel " << k << " after kernel " << j;
        else
          EXPECT_EQ(follows[std::size_t(k * n + j)], 0);
      }
  }
}

TEST(BenchOrder, RoundsRepeatAfterTheDesign) {
  for (int n = 1; n <= 7; ++n)
    for (int r = 0; r < qs::balanced_rounds(n); ++r)
      EXPECT_EQ(qs::balanced_order(n, r), qs::balanced_order(n, r + 3 * qs::balanced_rounds(n)));
}

}  // namespace
