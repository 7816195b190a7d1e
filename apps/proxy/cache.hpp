// The proxy's cache: a concurrent hash table of pages by URL, split into shards, each a mutex
// (held for a few instructions, never across a wait) around a hash map and the shard's keys in
// insertion order. Pages are shared immutable strings, so a reader keeps a page it found even
// if the page is evicted meanwhile. shrink_to() (the cache-resize task) evicts the oldest pages
// of each shard until the whole cache fits.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace proxy {

using page = std::shared_ptr<const std::string>;

class cache {
 public:
  page find(const std::string& url) const;
  void insert(const std::string& url, page p);
  // Evicts oldest-first until at most `bytes` are cached; returns how many pages went.
  std::size_t shrink_to(std::size_t bytes);
  std::size_t bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }  // a snapshot
  // Walks every shard (the statistics task): pages and bytes.
  std::pair<std::size_t, std::size_t> census() const;

 private:
  static constexpr std::size_t shards = 64;
  struct shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, page> pages;
    std::deque<std::string> order;  // insertion order, for eviction
  };
  shard& shard_of(const std::string& url) const { return shards_[std::hash<std::string>{}(url) % shards]; }
  mutable std::array<shard, shards> shards_;
  std::atomic<std::size_t> bytes_{0};  // relaxed: a size estimate for shrink_to, exact at rest
};

}  // namespace proxy
