#include "cuda/cluster_places.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <unordered_map>

namespace qs::cuda {

std::vector<int> places_by_gpc(const std::vector<int>& gpc_of_cluster, int group) {
  const int n = int(gpc_of_cluster.size());
  std::vector<int> place(gpc_of_cluster.size());
  std::iota(place.begin(), place.end(), 0);
  if (group < 1) return place;
  std::vector<std::vector<int>> gpcs;  // the clusters of each GPC, in order of the GPCs' first cluster
  std::unordered_map<int, std::size_t> index_of;
  for (int c = 0; c < n; ++c) {
    const auto [it, added] = index_of.try_emplace(gpc_of_cluster[std::size_t(c)], gpcs.size());
    if (added) gpcs.emplace_back();
    gpcs[it->second].push_back(c);
  }
  std::stable_sort(gpcs.begin(), gpcs.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<std::vector<int>> free_places(static_cast<std::size_t>(group));  // row r: the places p % group == r
  for (int p = n - 1; p >= 0; --p) free_places[std::size_t(p % group)].push_back(p);  // the smallest at the back
  for (const auto& clusters : gpcs)
    for (std::size_t i = 0; i < clusters.size();) {
      auto row = std::max_element(free_places.begin(), free_places.end(),
                                  [](const auto& a, const auto& b) { return a.size() < b.size(); });
      for (; i < clusters.size() && !row->empty(); ++i) {
        place[std::size_t(clusters[i])] = row->back();
        row->pop_back();
      }
    }
  return place;
}

}  // namespace qs::cuda
