// What a call throws, as text, for tests that assert error messages.
#pragma once

#include <exception>
#include <string>

namespace moonseed::test {

// The what() of the exception `f` throws; "(no exception)" when it throws none.
template <typename F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace moonseed::test
