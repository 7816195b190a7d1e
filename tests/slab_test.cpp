// Per-worker slab allocator: local reuse, remote frees, orphaned slabs.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "promptly/detail/slab_allocator.hpp"

using promptly::detail::slab_allocator;

TEST(Slab, ReusesFreedBlocksLocally) {
  auto slab = std::make_unique<slab_allocator>();
  void* a = slab_allocator::allocate(slab.get(), 40);
  slab_allocator::deallocate(a, slab.get());
  void* b = slab_allocator::allocate(slab.get(), 40);
  EXPECT_EQ(a, b);
  slab_allocator::deallocate(b, slab.get());
  slab_allocator::retire(std::move(slab));
}

TEST(Slab, LargeAndSlablessRequestsUseTheHeap) {
  auto slab = std::make_unique<slab_allocator>();
  void* big = slab_allocator::allocate(slab.get(), 4096);
  void* none = slab_allocator::allocate(nullptr, 32);
  slab_allocator::deallocate(big, slab.get());
  slab_allocator::deallocate(none, nullptr);
  slab_allocator::retire(std::move(slab));
}

TEST(Slab, RemoteFreesComeBackToTheOwner) {
  auto slab = std::make_unique<slab_allocator>();
  // A whole number of chunks, so that the local free list ends up empty.
  const int n = 8 * static_cast<int>(slab_allocator::chunk_bytes / 128);
  std::vector<void*> blocks;
  for (int i = 0; i < n; ++i) blocks.push_back(slab_allocator::allocate(slab.get(), 100));
  std::set<void*> distinct(blocks.begin(), blocks.end());
  EXPECT_EQ(distinct.size(), blocks.size());
  std::thread other([&] {
    for (void* p : blocks) slab_allocator::deallocate(p, nullptr);
  });
  other.join();
  // The owner drains the remote list before carving new chunks.
  std::set<void*> again;
  for (int i = 0; i < n; ++i) again.insert(slab_allocator::allocate(slab.get(), 100));
  std::size_t reused = 0;
  for (void* p : again) reused += distinct.count(p);
  EXPECT_EQ(reused, static_cast<std::size_t>(n));
  for (void* p : again) slab_allocator::deallocate(p, slab.get());
  slab_allocator::retire(std::move(slab));
}

TEST(Slab, OrphanedSlabIsFreedByTheLastBlock) {
  const long before = slab_allocator::live_slabs();
  auto slab = std::make_unique<slab_allocator>();
  void* kept = slab_allocator::allocate(slab.get(), 50);
  void* gone = slab_allocator::allocate(slab.get(), 50);
  slab_allocator::deallocate(gone, slab.get());
  slab_allocator::retire(std::move(slab));  // one block still outstanding
  EXPECT_EQ(slab_allocator::live_slabs(), before + 1);
  // Freed after the owner retired, as a future handle outliving its runtime.
  slab_allocator::deallocate(kept, nullptr);
  EXPECT_EQ(slab_allocator::live_slabs(), before);
}

TEST(Slab, RetiredWithoutOutstandingBlocksIsFreedAtOnce) {
  const long before = slab_allocator::live_slabs();
  auto slab = std::make_unique<slab_allocator>();
  void* a = slab_allocator::allocate(slab.get(), 50);
  std::thread([a] { slab_allocator::deallocate(a, nullptr); }).join();
  slab_allocator::retire(std::move(slab));
  EXPECT_EQ(slab_allocator::live_slabs(), before);
}
