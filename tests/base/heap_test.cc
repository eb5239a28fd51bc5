// base/heap.h: after keep_freed_memory(), a block of a few MiB comes from the heap instead of
// its own mapping, and freeing it keeps the memory in the process (glibc's mallinfo2).
#include "base/heap.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace moonseed::base {
namespace {

TEST(Heap, KeepFreedMemoryServesMiBBlocksFromTheHeapAndKeepsThemWhenFreed) {
  const size_t size = 8u << 20;
  // glibc's default: a block this large gets a mapping of its own (hblkhd counts those bytes).
  const size_t mapped_before = mallinfo2().hblkhd;
  void* first = std::malloc(size);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, size);
  EXPECT_GE(mallinfo2().hblkhd, mapped_before + size);
  std::free(first);

  ASSERT_TRUE(keep_freed_memory());
  const size_t mapped = mallinfo2().hblkhd;
  void* second = std::malloc(size);
  ASSERT_NE(second, nullptr);
  std::memset(second, 2, size);
  EXPECT_EQ(mallinfo2().hblkhd, mapped);  // from the heap, not a new mapping
  const size_t heap_before_free = mallinfo2().arena;
  std::free(second);
  EXPECT_GE(mallinfo2().arena, heap_before_free);  // the heap was not trimmed back
  EXPECT_GE(mallinfo2().fordblks, size);           // the block is free for reuse
}

}  // namespace
}  // namespace moonseed::base
