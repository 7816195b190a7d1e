#include "cache.hpp"

namespace proxy {

page cache::find(const std::string& url) const {
  auto& s = shard_of(url);
  std::lock_guard lock(s.mutex);
  auto it = s.pages.find(url);
  return it == s.pages.end() ? nullptr : it->second;
}

void cache::insert(const std::string& url, page p) {
  auto& s = shard_of(url);
  const std::size_t n = p->size();
  std::lock_guard lock(s.mutex);
  auto [it, added] = s.pages.try_emplace(url, std::move(p));
  if (!added) return;  // two misses of one URL raced: the first page stays
  s.order.push_back(url);
  bytes_.fetch_add(n, std::memory_order_relaxed);
}

std::size_t cache::shrink_to(std::size_t limit) {
  std::size_t evicted = 0;
  // Round-robin over the shards, one page each; a full round without a page ends it (all empty).
  for (std::size_t k = 0, empty_in_a_row = 0; empty_in_a_row < shards && bytes_.load(std::memory_order_relaxed) > limit;
       k = (k + 1) % shards) {
    auto& s = shards_[k];
    std::lock_guard lock(s.mutex);
    if (s.order.empty()) {
      ++empty_in_a_row;
      continue;
    }
    empty_in_a_row = 0;
    auto it = s.pages.find(s.order.front());
    bytes_.fetch_sub(it->second->size(), std::memory_order_relaxed);
    s.pages.erase(it);
    s.order.pop_front();
    ++evicted;
  }
  return evicted;
}

std::pair<std::size_t, std::size_t> cache::census() const {
  std::size_t n = 0, b = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(s.mutex);
    n += s.pages.size();
    for (const auto& [url, p] : s.pages) b += p->size();
  }
  return {n, b};
}

}  // namespace proxy
