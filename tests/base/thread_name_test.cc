// A thread's name as the kernel shows it (/proc/self/task/TID/comm, what top -H and ps -L read).
#include "base/thread_name.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace moonseed::base {
namespace {

std::string own_comm() {
  std::ifstream in("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThreadName, NamesTheCallingThreadAndCutsALongNameToFifteenCharacters) {
  std::string named, cut;
  std::thread([&] {
    set_thread_name("ms-test");
    named = own_comm();
    set_thread_name("ms-a-name-longer-than-fifteen");
    cut = own_comm();
  }).join();
  EXPECT_EQ(named, "ms-test");
  EXPECT_EQ(cut, "ms-a-name-longe");
}

}  // namespace
}  // namespace moonseed::base
