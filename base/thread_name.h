// Names the calling thread, as `top -H`, `ps -L`, gdb, perf and /proc/PID/task/TID/comm show it:
// the learner's threads are "ms-infer", "ms-train", "ms-prefetch", "ms-io", ... (docs/performance.md
// "Where the time goes" reads their CPU time by name). Linux keeps at most 15 characters: a longer
// name is cut. Never fails: a name the kernel refuses leaves the old one.
#pragma once

namespace moonseed::base {

void set_thread_name(const char* name);

}  // namespace moonseed::base
