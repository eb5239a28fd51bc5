#include "cli/engine/version.h"

#include <torch/version.h>

#include <cstdio>
#include <exception>

#include "base/text.h"
#include "cli/common/build_info.h"
#include "models/device.h"

namespace moonseed::cli {

EngineInfo engine_info(const std::string& device_wanted) {
  EngineInfo info;
  info.version = build_version();
  info.commit = build_commit();
  info.dirty = build_dirty();
  info.libtorch = TORCH_VERSION;
  try {
    info.device = models::choose_device(device_wanted).is_cuda() ? "cuda" : "cpu";
  } catch (const std::exception& e) {
    info.device = std::string("unavailable (") + e.what() + ")";
  }
  return info;
}

std::string engine_json(const EngineInfo& info) {
  return "{\"version\": " + base::json_quote(info.version) + ", \"commit\": " + base::json_quote(info.commit) +
         ", \"dirty\": " + (info.dirty ? "true" : "false") + ", \"libtorch\": " + base::json_quote(info.libtorch) +
         ", \"device\": " + base::json_quote(info.device) + "}\n";
}

int version_command() {
  const EngineInfo info = engine_info();
  std::printf("moonseed %s\ncommit %s%s\nlibtorch %s\ndevice %s (inference.device = \"auto\")\n",
              info.version.c_str(), info.commit.c_str(),
              info.dirty ? " (modified: the tree had uncommitted changes when built)" : "", info.libtorch.c_str(),
              info.device.c_str());
  return 0;
}

}  // namespace moonseed::cli
