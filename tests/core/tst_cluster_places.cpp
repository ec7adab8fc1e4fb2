// places_by_gpc (core/cuda/cluster_places.h): the ping-pong GEMM kernel's clusters numbered so that the
// clusters of one GPC start in one row of the tile order. Always a permutation (the kernel's correctness
// rests on it: every unit is computed by exactly one cluster); on the H100's layout, as the probe launches
// measured it (session 17), every GPC gets a row of its own. split_cluster_blocks: the blocks per tile of split-K
// in clusters.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "cuda/cluster_places.h"

namespace {

// A permutation of 0 .. n - 1.
bool is_permutation(const std::vector<int>& place) {
  std::vector<int> identity(place.size());
  std::iota(identity.begin(), identity.end(), 0);
  return std::is_permutation(place.begin(), place.end(), identity.begin());
}

// The rows (place % group) that each GPC's clusters start in.
std::map<int, std::set<int>> rows_of_gpcs(const std::vector<int>& gpc, const std::vector<int>& place, int group) {
  std::map<int, std::set<int>> rows;
  for (std::size_t c = 0; c < gpc.size(); ++c) rows[gpc[c]].insert(place[c] % group);
  return rows;
}

// The H100 SXM of the GPU host (132 SMs, 66 clusters of two), as pp_probe_kernel saw it: cluster c of the grid
// runs on TPC c + 62 (c < 4) or c - 4; TPC t lies in GPC t % 8 for t < 32 and in GPC (t - 32) % 7 + 1 for
// 32 <= t < 60 (GPC 0 has TPCs 0, 8, 16, 24); clusters of 16 and 8 never reached TPCs 60-65, so each of
// those is a group of its own.
std::vector<int> h100_gpcs() {
  std::vector<int> gpc(66);
  for (int c = 0; c < 66; ++c) {
    const int t = c < 4 ? c + 62 : c - 4;
    gpc[std::size_t(c)] = t < 32 ? t % 8 : t < 60 ? (t - 32) % 7 + 1 : 100 + t;
  }
  return gpc;
}

TEST(ClusterPlaces, H100LayoutGivesEachGpcARow) {
  const std::vector<int> gpc = h100_gpcs();
  const std::vector<int> place = qs::cuda::places_by_gpc(gpc, 8);
  ASSERT_TRUE(is_permutation(place));
  const auto rows = rows_of_gpcs(gpc, place, 8);
  std::set<int> rows_of_full_gpcs;
  for (int g = 0; g < 8; ++g) {  // GPCs 1-7: 8 clusters each; GPC 0: 4
    ASSERT_EQ(rows.at(g).size(), 1u) << "GPC " << g << " spans several rows";
    rows_of_full_gpcs.insert(*rows.at(g).begin());
  }
  EXPECT_EQ(rows_of_full_gpcs.size(), 8u) << "two GPCs share a row";
  // Order 4: rows of 17, 17, 16 and 16 places; two GPCs of 8 fill a row of 16, the others split at most once.
  const std::vector<int> place4 = qs::cuda::places_by_gpc(gpc, 4);
  ASSERT_TRUE(is_permutation(place4));
  for (const auto& [g, r] : rows_of_gpcs(gpc, place4, 4)) EXPECT_LE(r.size(), 2u) << "GPC " << g;
}

TEST(ClusterPlaces, AlwaysAPermutation) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 500; ++trial) {
    const int n = int(rng() % 257), group = 1 + int(rng() % 20), gpcs = 1 + int(rng() % 12);
    std::vector<int> gpc(std::size_t(n), 0);
    for (int& g : gpc) g = int(rng() % unsigned(gpcs)) * 37 - 100;  // any integers name the GPCs
    const std::vector<int> place = qs::cuda::places_by_gpc(gpc, group);
    ASSERT_EQ(place.size(), gpc.size());
    ASSERT_TRUE(is_permutation(place)) << "n " << n << " group " << group;
    // The largest GPC (when there is one) goes first, to the fullest row: one row whenever it fits in one.
    std::map<int, int> size;
    for (int g : gpc) ++size[g];
    int largest = 0, largest_size = 0, ties = 0;
    for (const auto& [g, s] : size) {
      if (s == largest_size) ++ties;
      if (s > largest_size) {
        largest = g;
        largest_size = s;
        ties = 1;
      }
    }
    if (n > 0 && ties == 1 && largest_size <= (n + group - 1) / group) {
      EXPECT_EQ(rows_of_gpcs(gpc, place, group).at(largest).size(), 1u) << "n " << n << " group " << group;
    }
  }
}

TEST(ClusterPlaces, OneRowOrNoOrderIsTheIdentityOrAPermutation) {
  const std::vector<int> gpc = h100_gpcs();
  std::vector<int> identity(gpc.size());
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(qs::cuda::places_by_gpc(gpc, 0), identity);
  EXPECT_EQ(qs::cuda::places_by_gpc(gpc, -3), identity);
  EXPECT_TRUE(qs::cuda::places_by_gpc({}, 8).empty());
  // One row: every place is in it; GPCs still get consecutive places, largest first.
  const std::vector<int> one = qs::cuda::places_by_gpc(gpc, 1);
  ASSERT_TRUE(is_permutation(one));
  std::map<int, std::vector<int>> by_gpc;
  for (std::size_t c = 0; c < gpc.size(); ++c) by_gpc[gpc[c]].push_back(one[c]);
  for (auto& [g, p] : by_gpc) {
    std::sort(p.begin(), p.end());
    EXPECT_EQ(p.back() - p.front() + 1, int(p.size())) << "GPC " << g << " not consecutive";
  }
}

// split_cluster_blocks: the split-K cluster size. fit(n) as cudaOccupancyMaxActiveClusters gave it on the H200 for
// the cp.async kernel (256 threads, 96.5 KiB; session 27): 264, 132, 79, 62, 47, 39, 32, 30 clusters of 1 .. 8.
int h200_fit(int n) {
  static const int fit[9] = {0, 264, 132, 79, 62, 47, 39, 32, 30};
  return n >= 1 && n <= 8 ? fit[n] : 0;
}

TEST(SplitClusterBlocks, TheMostSplitsWhoseClustersAllRunAtOnce) {
  using qs::cuda::split_cluster_blocks;
  // 32 x 8192 x 4096: 32 tiles, the rule asks 8; 30 clusters of 8 fit, 32 of 7.
  EXPECT_EQ(split_cluster_blocks(8, 32, false, h200_fit), 7);
  EXPECT_EQ(split_cluster_blocks(8, 30, false, h200_fit), 8);
  EXPECT_EQ(split_cluster_blocks(8, 3, false, h200_fit), 8);
  EXPECT_EQ(split_cluster_blocks(3, 79, false, h200_fit), 3);
  EXPECT_EQ(split_cluster_blocks(3, 80, false, h200_fit), 2);
  // Never more than asked, and no cluster where not even two blocks per tile fit: the atomic path.
  EXPECT_EQ(split_cluster_blocks(2, 132, false, h200_fit), 2);
  EXPECT_EQ(split_cluster_blocks(2, 133, false, h200_fit), 0);
  // Each answer's clusters all run at once, and one more split would not.
  for (int splits = 2; splits <= 8; ++splits)
    for (long tiles = 1; tiles <= 300; ++tiles) {
      const int n = split_cluster_blocks(splits, tiles, false, h200_fit);
      ASSERT_TRUE(n == 0 || (n >= 2 && n <= splits && h200_fit(n) >= tiles)) << splits << " " << tiles;
      if (n > 0 && n < splits) EXPECT_LT(h200_fit(n + 1), tiles) << splits << " " << tiles;
      if (n == 0) EXPECT_LT(h200_fit(2), tiles) << splits << " " << tiles;
    }
}

TEST(SplitClusterBlocks, ForcedCountsAndLimits) {
  using qs::cuda::split_cluster_blocks;
  // A forced count runs as it is, in waves, when its clusters fit at all.
  EXPECT_EQ(split_cluster_blocks(8, 32, true, h200_fit), 8);
  EXPECT_EQ(split_cluster_blocks(4, 1000, true, h200_fit), 4);
  EXPECT_EQ(split_cluster_blocks(7, 5, true, [](int) { return 0; }), 0);
  // Beyond the portable cluster size, below two splits, or a GPU that runs no cluster: the atomic path.
  EXPECT_EQ(split_cluster_blocks(9, 1, false, h200_fit), 0);
  EXPECT_EQ(split_cluster_blocks(16, 1, true, h200_fit), 0);
  EXPECT_EQ(split_cluster_blocks(1, 1, false, h200_fit), 0);
  EXPECT_EQ(split_cluster_blocks(0, 1, true, h200_fit), 0);
  EXPECT_EQ(split_cluster_blocks(8, 1, false, [](int) { return 0; }), 0);
}

}  // namespace
