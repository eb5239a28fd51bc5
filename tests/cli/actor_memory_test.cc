// What local actors hold in memory (cli/engine/actor_memory.cc), measured on real
// processes: a process group whose members allocate and touch known amounts,
// and a real OOM kill inside a memory cgroup the test makes (skipped without
// root).
#include "cli/engine/actor_memory.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/memory_cgroup.h"

namespace moonseed::cli {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Where touched blocks go, so that the compiler keeps the writes that make them resident.
char* volatile g_kept = nullptr;

// Touches `bytes` of fresh heap so that it is resident, then writes one byte
// to `ready` and sleeps until killed.
[[noreturn]] void hold_memory(int64_t bytes, int ready) {
  char* block = static_cast<char*>(std::malloc(static_cast<size_t>(bytes)));
  if (block == nullptr) ::_exit(2);
  std::memset(block, 1, static_cast<size_t>(bytes));
  g_kept = block;
  if (::write(ready, "x", 1) != 1) ::_exit(3);
  for (;;) ::pause();
}

// A process group of two: its leader holds `leader_bytes`, a child of it
// `child_bytes`. Returns the group's id once both hold their memory.
pid_t start_group(int64_t leader_bytes, int64_t child_bytes) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t leader = ::fork();
  if (leader == 0) {
    ::setpgid(0, 0);
    if (::fork() == 0) hold_memory(child_bytes, ready[1]);
    hold_memory(leader_bytes, ready[1]);
  }
  ::setpgid(leader, leader);  // either side may win the race; both ask for the same
  ::close(ready[1]);
  char got[2];
  size_t read_bytes = 0;
  while (read_bytes < 2) {
    const ssize_t n = ::read(ready[0], got + read_bytes, 2 - read_bytes);
    if (n <= 0) break;
    read_bytes += static_cast<size_t>(n);
  }
  ::close(ready[0]);
  return read_bytes == 2 ? leader : -1;
}

void end_group(pid_t group) {
  ::kill(-group, SIGKILL);
  while (::waitpid(group, nullptr, 0) < 0 && errno == EINTR) {
  }
}

TEST(ActorMemory, AGroupsMemoryIsWhatEachOfItsProcessesHolds) {
  const pid_t big = start_group(96 * kMiB, 64 * kMiB);
  ASSERT_GT(big, 0);
  const pid_t small = start_group(8 * kMiB, 8 * kMiB);
  ASSERT_GT(small, 0);
  const std::map<pid_t, int64_t> memory = resident_bytes_by_group({big, small, 999999999});
  end_group(big);
  end_group(small);
  ASSERT_EQ(memory.count(big), 1u);
  ASSERT_EQ(memory.count(small), 1u);
  EXPECT_EQ(memory.count(999999999), 0u) << "a group with no process is absent";
  // The touched blocks and little more (each process's own heap and stack).
  EXPECT_GE(memory.at(big), 160 * kMiB);
  EXPECT_LT(memory.at(big), 160 * kMiB + 32 * kMiB);
  EXPECT_GE(memory.at(small), 16 * kMiB);
  EXPECT_LT(memory.at(small), 16 * kMiB + 32 * kMiB);
  EXPECT_TRUE(resident_bytes_by_group({}).empty());
}

TEST(ActorMemory, TheKernelsOomKillCountRisesWhenACgroupRunsOutOfMemory) {
  const int64_t before = kernel_oom_kills();
  ASSERT_GE(before, 0) << "/proc/vmstat has an oom_kill line since Linux 4.13";
  testing::MemoryCgroup cgroup;
  if (!cgroup.make("moonseed-actor-memory-test", 64 * kMiB)) GTEST_SKIP() << cgroup.error();
  const pid_t child = ::fork();
  if (child == 0) {
    FILE* procs = std::fopen(cgroup.procs_file().c_str(), "w");
    if (procs == nullptr || std::fprintf(procs, "%d\n", static_cast<int>(::getpid())) < 0 || std::fclose(procs) != 0) {
      ::_exit(4);
    }
    char* block = static_cast<char*>(std::malloc(256 * kMiB));
    if (block == nullptr) ::_exit(2);
    std::memset(block, 1, 256 * kMiB);  // over the limit: the kernel kills this process
    g_kept = block;
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child was not killed: status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_GT(kernel_oom_kills(), before);
}

TEST(ActorMemory, MemoryIsWrittenAsAPersonReadsIt) {
  EXPECT_EQ(memory_text(300 * kMiB), "300 MiB");
  EXPECT_EQ(memory_text(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(memory_text(0), "0 MiB");
}

}  // namespace
}  // namespace moonseed::cli
