// What local actors hold in memory, and whether the kernel ran out of it
// (cli/engine/local_actors.h watches both).
//
// An actor's memory is the anonymous resident memory (RssAnon: its heap,
// stacks and the env's arrays; not the shared libraries it maps, which every
// actor shares) of every process in its process group: the actor and whatever
// its env started (a simulator, a Python helper). topology.actor_memory_mb
// bounds that sum; the run kills an actor over it.
//
// The kernel's OOM killer sends SIGKILL, which looks like any other kill; a
// local actor killed by SIGKILL the run did not send, at a time when the
// kernel's count of OOM kills (/proc/vmstat oom_kill, which counts both a
// whole machine and a memory cgroup running out) rose, was killed for memory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace moonseed::cli {

// Anonymous resident bytes of each process group in `groups`, summed over
// its processes; a group with no process left is absent. One pass over /proc.
std::map<pid_t, int64_t> resident_bytes_by_group(const std::vector<pid_t>& groups);

// The kernel's count of OOM kills since boot, or -1 when it does not say
// (/proc/vmstat has no oom_kill line before Linux 4.13).
int64_t kernel_oom_kills();

// "1.5 GiB", "300 MiB": bytes as a person reads them in a message.
std::string memory_text(int64_t bytes);

}  // namespace moonseed::cli
