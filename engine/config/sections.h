// The algorithm sections of an experiment (docs/algorithms-design.md): `vtrace`, `r2d2`, ...
// Each algorithm's folder declares its section as a struct with a static kName and registers
// its schema rows (engine/config/section_registry.h); ExperimentConfig holds one value of each,
// read as config.section<R2d2Config>(). Nothing here knows any algorithm.
//
// Thread-safety: as a plain value. Neither get changes the store when the section is there; the
// non-const get adds the section's default when it is missing, which only a config made before
// the sections were registered (during static initialisation) can be.
#pragma once

#include <any>
#include <functional>
#include <map>
#include <string>

namespace moonseed::engine {

class Sections {
 public:
  // Every registered section at its default (section_registry.h).
  Sections();

  template <class S>
  const S& get() const {
    const auto found = values_.find(S::kName);
    if (found == values_.end()) {
      static const S kDefault{};
      return kDefault;
    }
    return *std::any_cast<S>(&found->second);
  }

  // Looks the section up without changing the store when it is there (as every registered
  // section is, from construction), so two threads may read one config through this too.
  template <class S>
  S& get() {
    auto found = values_.find(S::kName);
    if (found == values_.end()) found = values_.emplace(S::kName, S{}).first;
    return *std::any_cast<S>(&found->second);
  }

 private:
  std::map<std::string, std::any, std::less<>> values_;
};

}  // namespace moonseed::engine
