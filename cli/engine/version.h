// `moonseed --version` and the engine a run directory records (RUN/engine.json):
// the build (cli/common/build_info.h), the LibTorch it was compiled against and the
// device the learner picks. Kept apart from main.cc so the dispatch there is one line.
//
// Thread-safety: pure functions (engine_info asks LibTorch whether CUDA is usable).
#pragma once

#include <string>

namespace moonseed::cli {

struct EngineInfo {
  std::string version;  // "0.1.0"
  std::string commit;   // full hash or "unknown"
  bool dirty = false;   // tracked files differed from the commit at build time
  std::string libtorch; // "1.13.0"
  std::string device;   // "cpu" or "cuda": what `inference.device` = `device_wanted` picks
};

// This binary's engine, with the device `device_wanted` ("auto", "cpu", "cuda")
// resolves to; a device that cannot be had reads "unavailable (why)".
EngineInfo engine_info(const std::string& device_wanted = "auto");

// One JSON object, as RUN/engine.json holds it.
std::string engine_json(const EngineInfo& info);

// Prints the version, commit, LibTorch and device to stdout; returns 0.
int version_command();

}  // namespace moonseed::cli
