// The order in which a benchmark times its kernels, round by round, so that what one kernel leaves behind for
// the next (a power-capped GPU's clock, come down after a heavy kernel or kept up after a light one; caches)
// falls on every kernel alike. Plain C++: the GPU GEMM benchmark uses it, and CI tests it.
#pragma once

#include <vector>

namespace qs {

// The rounds of a Williams design for n kernels: n for even n, 2 n for odd n (n >= 1).
int balanced_rounds(int n);

// The kernel indices (a permutation of 0 .. n - 1) of round r (any r >= 0; rounds repeat after
// balanced_rounds(n)). Williams's Latin square, balanced for first-order carry-over: over the first
// balanced_rounds(n) rounds every kernel runs in every place of a round equally often, and every kernel
// directly follows every other kernel equally often within the rounds (once for even n, twice for odd n).
// Rotations of one order (round r starting at kernel r) put every kernel in every place too, but each kernel
// then nearly always follows the same neighbour.
std::vector<int> balanced_order(int n, int r);

}  // namespace qs
