// The algorithm sections of an experiment (docs/algorithms-design.md): `vtrace`, `r2d2`, ...
// Each algorithm's folder declares its section as a struct with a static kName and registers
// its schema rows (engine/config/section_registry.h); ExperimentConfig holds one value of each,
// read as config.section<R2d2Config>(). Nothing here knows any algorithm.
//
// Thread-safety: as a plain value. The const get never changes the store; the non-const get
// adds the section's default when it is missing, which only a config made before the sections
// were registered (during static initialisation) can be.
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

  template <class S>
  S& get() {
    std::any& value = values_[S::kName];
    if (!value.has_value()) value = S{};
    return *std::any_cast<S>(&value);
  }

 private:
  std::map<std::string, std::any, std::less<>> values_;
};

}  // namespace moonseed::engine
