// Which build of Moonseed this is: the project version (CMakeLists.txt's
// project()) and the git commit it was built from. The definitions of
// build_version/build_commit/build_dirty are generated at every build
// (cmake/build_info.cmake) into one small file, so a new commit recompiles
// that file only. Both binaries link it; nothing here needs LibTorch.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace moonseed::cli {

// "0.1.0".
const char* build_version();
// The commit's full hash, or "unknown" when built outside a git checkout.
const char* build_commit();
// True when tracked files differed from that commit at build time.
bool build_dirty();

// "0.1.0 (commit 0123abcd..., modified)": the version, the commit and, for a
// dirty tree, "modified".
std::string build_text();

}  // namespace moonseed::cli
