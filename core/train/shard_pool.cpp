// ShardPool over the engine's persistent pool: one chunk per shard.
#include "train/shard_pool.h"

#include <algorithm>

#include "util/parallel.h"

namespace qs {

ShardPool::ShardPool(int threads) : threads_(resolve_threads(threads)) {}

void ShardPool::run(int shards, const std::function<void(int)>& fn) {
  if (shards <= 0) return;
  if (threads_ == 1 || shards == 1) {
    for (int s = 0; s < shards; ++s) fn(s);
    return;
  }
  parallel_chunks(std::size_t(shards), 1, std::min(threads_, shards), [&](std::size_t b, std::size_t e) {
    for (std::size_t s = b; s < e; ++s) fn(int(s));
  });
}

}  // namespace qs
