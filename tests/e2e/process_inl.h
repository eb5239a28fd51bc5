#pragma once

#include <chrono>
#include <thread>

namespace moonseed::testing {

template <typename Predicate>
bool eventually(double timeout_s, Predicate predicate) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return predicate();
}

}  // namespace moonseed::testing
