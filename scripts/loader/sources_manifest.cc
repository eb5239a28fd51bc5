#include "scripts/loader/sources_manifest.h"

#include <algorithm>

#include "scripts/loader/sha256.h"

namespace moonseed::scripts {

std::vector<ScriptSource> sources_of(const LuaState& lua) {
  std::vector<ScriptSource> sources;
  for (const LoadedLuaFile& f : lua.loaded_files()) {
    const bool seen = std::any_of(sources.begin(), sources.end(),
                                  [&](const ScriptSource& s) { return s.path == f.path; });
    if (!seen) sources.push_back(ScriptSource{f.path, sha256_hex(f.text), f.text, f.embedded});
  }
  return sources;
}

std::string sources_manifest(const std::vector<ScriptSource>& sources) {
  std::string out;
  for (const ScriptSource& s : sources) {
    std::string name;
    bool escaped = false;
    for (char c : s.path) {
      const char* escape = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : nullptr;
      escaped = escaped || escape != nullptr;
      if (escape != nullptr) {
        name += escape;
      } else {
        name += c;
      }
    }
    out += (escaped ? "\\" : "") + s.sha256 + "  " + name + "\n";
  }
  return out;
}

}  // namespace moonseed::scripts
