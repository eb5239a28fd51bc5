#include "base/heap.h"

#include <malloc.h>

namespace moonseed::base {

bool keep_freed_memory() {
  const bool mmap_ok = ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapMmapThreshold)) == 1;
  const bool trim_ok = ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapTrimThreshold)) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace moonseed::base
