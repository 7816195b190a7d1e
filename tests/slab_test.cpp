// Per-worker slab allocator: local reuse, remote frees, orphaned slabs.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
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

// Requests above the largest class, and requests made without a slab, come
// from the global heap. Observable consequences: such a block is not counted
// as outstanding by the slab (retiring the slab while it is still allocated
// frees the slab at once, where a slab block orphans it), freeing it on a
// worker never puts it on that worker's free list, and it stays usable
// after the slab is gone. The largest class is the boundary: one byte less
// is a slab block, one byte more is a heap block.
TEST(Slab, LargeAndSlablessRequestsUseTheHeap) {
  constexpr std::size_t largest = slab_allocator::class_bytes.back() - slab_allocator::header_bytes;
  const long before = slab_allocator::live_slabs();

  // The boundary: `largest` bytes is counted as an outstanding slab block...
  {
    auto slab = std::make_unique<slab_allocator>();
    void* edge = slab_allocator::allocate(slab.get(), largest);
    slab_allocator::retire(std::move(slab));
    EXPECT_EQ(slab_allocator::live_slabs(), before + 1) << largest << " bytes should be a slab block";
    slab_allocator::deallocate(edge, nullptr);
    EXPECT_EQ(slab_allocator::live_slabs(), before);
  }

  auto slab = std::make_unique<slab_allocator>();
  // A slab block of the smallest class, freed so that it heads the local list.
  void* small = slab_allocator::allocate(slab.get(), 32);
  void* big = slab_allocator::allocate(slab.get(), largest + 1);
  void* huge = slab_allocator::allocate(slab.get(), 4096);
  void* none = slab_allocator::allocate(nullptr, 32);
  for (void* p : {big, huge, none}) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t), 0u);
  }
  std::memset(big, 0xab, largest + 1);
  std::memset(huge, 0xcd, 4096);
  std::memset(none, 0xef, 32);
  slab_allocator::deallocate(small, slab.get());

  // A heap block freed on the worker goes back to the heap, not to the
  // worker's free list: the next small allocation is the slab block again.
  slab_allocator::deallocate(none, slab.get());
  void* again = slab_allocator::allocate(slab.get(), 32);
  EXPECT_EQ(again, small) << "a heap block was put on the slab's free list";
  slab_allocator::deallocate(again, slab.get());

  // ...and `largest + 1` and 4096 bytes are not: with both still allocated,
  // the slab has nothing outstanding and retiring it frees it at once.
  slab_allocator::retire(std::move(slab));
  EXPECT_EQ(slab_allocator::live_slabs(), before) << "a heap block was counted as a slab block";

  // The heap blocks outlive the slab; freeing them (from a thread with no
  // slab, and from one with another slab) must not touch the deleted slab
  // (the ThreadSanitizer build would report a use after free).
  EXPECT_EQ(static_cast<unsigned char*>(big)[largest], 0xab);
  EXPECT_EQ(static_cast<unsigned char*>(huge)[4095], 0xcd);
  slab_allocator::deallocate(big, nullptr);
  auto other = std::make_unique<slab_allocator>();
  void* other_small = slab_allocator::allocate(other.get(), 32);
  slab_allocator::deallocate(other_small, other.get());  // heads other's free list
  slab_allocator::deallocate(huge, other.get());
  void* fresh = slab_allocator::allocate(other.get(), 32);
  EXPECT_EQ(fresh, other_small) << "a heap block was put on another slab's free list";
  slab_allocator::deallocate(fresh, other.get());
  slab_allocator::retire(std::move(other));
  EXPECT_EQ(slab_allocator::live_slabs(), before);
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
