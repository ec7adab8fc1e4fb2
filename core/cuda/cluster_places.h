// Where each cluster of a persistent GEMM kernel starts in its tile order, from the GPC each cluster runs on
// (gemm_int8_sm90.cu, PpPlaces), and how many blocks a split-K cluster takes. Plain C++, compiled with and
// without CUDA, so that CI tests it.
#pragma once

#include <vector>

namespace qs::cuda {

// The place of each cluster in a tile order that sweeps `group` unit rows together: the cluster at place p
// starts in row p % group, and the persistent stride (the number of clusters) keeps clusters that start in one
// row in one row. gpc_of_cluster[c] names cluster c's GPC (any integers; equal means the same GPC). The GPCs,
// largest first (ties: in order of their first cluster), each take the places of the row with the most free
// places, the next such row when that one is full, so that a GPC's clusters share a row wherever the rows'
// sizes allow. The result is a permutation of 0 .. n - 1 (the identity for group < 1).
std::vector<int> places_by_gpc(const std::vector<int>& gpc_of_cluster, int group);

// Split-K in clusters (gemm_int8_sm90.cu): how many blocks of each tile to launch as one cluster, given the split
// count the rule asks for, the number of tiles, and fit(n), how many clusters of n blocks the GPU runs at once
// (0: none). The most splits, at most `splits`, whose clusters all run at once; a `forced` count (QS_WGMMA_SPLITK)
// as it is, in waves, if its clusters fit at all. 0: no cluster (the atomic path), also for more than 8 splits
// (the portable cluster size) and for fewer than 2.
inline constexpr int kSplitClusterMax = 8;  // the portable cluster size: the kernel sums at most this many parts
template <typename Fit>
int split_cluster_blocks(int splits, long tiles, bool forced, Fit fit) {
  if (splits < 2 || splits > kSplitClusterMax) return 0;
  int n = splits;
  if (!forced)
    while (n > 1 && fit(n) < tiles) --n;
  return n > 1 && fit(n) > 0 ? n : 0;
}

}  // namespace qs::cuda
