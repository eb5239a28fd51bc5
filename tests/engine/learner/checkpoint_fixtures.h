// What the checkpoint tests share: a temporary directory, a small env spec
// (a 4-float box, 3 actions) and a small policy net for it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "envs/spec.h"
#include "models/policy_net.h"

namespace moonseed::engine::testing {

// A fresh directory under the system's temp dir, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "moonseed-ckpt") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

inline envs::EnvSpec spec() {
  envs::EnvSpec s;
  s.id = "Test-v0";
  s.observation.kind = envs::SpaceKind::kBox;
  s.observation.shape = {4};
  s.action.kind = envs::SpaceKind::kDiscrete;
  s.action.n = 3;
  return s;
}

inline models::PolicyNet small_net() {
  models::ModelSpec c;
  c.hidden = {8};
  return models::PolicyNet(c, spec());
}

}  // namespace moonseed::engine::testing
