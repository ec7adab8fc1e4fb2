// Where each cluster of a persistent GEMM kernel starts in its tile order, from the GPC each cluster runs on
// (gemm_int8_sm90.cu, PpPlaces). Plain C++, compiled with and without CUDA, so that CI tests it.
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

}  // namespace qs::cuda
