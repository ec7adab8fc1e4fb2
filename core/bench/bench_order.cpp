#include "bench/bench_order.h"

#include <algorithm>

namespace qs {

int balanced_rounds(int n) { return n % 2 == 0 ? n : 2 * n; }

std::vector<int> balanced_order(int n, int r) {
  if (n <= 0) return {};
  std::vector<int> order(static_cast<std::size_t>(n));
  r %= balanced_rounds(n);
  // The first row 0, 1, n - 1, 2, n - 2, ...; row r adds r (mod n); for odd n rows n .. 2 n - 1 are rows
  // 0 .. n - 1 reversed.
  const int row = r % n;
  for (int i = 0; i < n; ++i) {
    const int first = i % 2 == 1 ? (i + 1) / 2 : (n - i / 2) % n;
    order[std::size_t(i)] = (first + row) % n;
  }
  if (r >= n) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace qs
