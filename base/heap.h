// Heap settings for the processes that train (docs/performance.md "Freed memory").
//
// A learning step allocates and frees LibTorch tensors of tens of kilobytes to megabytes.
// With glibc's defaults, blocks above the mmap threshold (128 KiB at first) go back to the
// kernel when freed, and the heap's top is trimmed past 128 KiB, so the next step's tensors
// fault their pages in again. Where page faults are slow (virtual machines), that made a
// learning step 2 to 4 times slower (bench/lstm_bench).
//
// keep_freed_memory(): blocks below 32 MiB come from the heap, and up to 1 GiB of freed
// memory stays in the process to be reused instead of being returned. The process's peak
// memory does not change; its resident size after a peak stays near the peak.
//
// Call once at start, before other threads. Returns false when glibc refuses a setting
// (then the defaults stay in force for it). Thread-safety: not with concurrent allocation.
#pragma once

namespace moonseed::base {

inline constexpr long kHeapMmapThreshold = 32L << 20;  // glibc's largest allowed on 64-bit
inline constexpr long kHeapTrimThreshold = 1L << 30;

bool keep_freed_memory();

}  // namespace moonseed::base
