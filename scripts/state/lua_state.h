// One LuaJIT state, owned for its whole life by a LuaState (RAII), with the
// module search path every Moonseed script sees and an optional sandbox.
//
// Module resolution (`require "a.b"`), in this order:
//   1. package.preload (native modules such as `moonseed.core`);
//   2. the search path: a/b.lua, then a/b/init.lua, in each directory of
//      default_search_path(): the script's own directory, ./recipes, then
//      every entry of $MOONSEED_PATH (colon-separated);
//   3. the engine's own Lua library (scripts/lua/moonseed/*.lua), embedded in
//      the binary at build time, so it is found from the build tree and from
//      an install alike;
//   4. sandbox off only: Lua's standard package.path / package.cpath loaders.
//
// Provenance: the state keeps the exact bytes of every Lua file it compiles
// through run_file() and steps 2 and 3 (loaded_files()), so a run can record
// what its config came from (experiment_loader.h). Files read by dofile,
// loadfile or io.open are not recorded.
//
// Sandbox (experiment scripts and recipes): a recipe must not change the
// machine by accident. os.execute/exit/remove/rename/tmpname, io.popen,
// io.tmpfile, package.loadlib, the C module loaders and the `ffi` module are
// gone; io.open and io.output accept read modes only; load/loadstring/
// loadfile/dofile accept text chunks only (no bytecode); `debug` keeps only
// getinfo and traceback. Reading files stays allowed. This guards against
// mistakes, it is not a boundary against hostile code.
//
// Limits (LuaLimits, docs/security.md "Scripts"): a state may get a memory
// cap, enforced by its allocator (an allocation past it fails, which Lua
// raises as "not enough memory"; run_file names the script and the cap), and
// a time limit: the JIT is then off for the state (LuaJIT calls no hook from
// compiled code) and a count hook raises "file:line: ... ran for more than N
// s" once N s have passed since the state was made. One C call (a long
// string.find) is not interrupted; the memory cap bounds string.rep.
//
// Failures: run_file() throws ScriptError whose message starts with
// "file:line:" (Lua's own position) and ends with a Lua traceback.
// Thread-safety: a LuaState is used by one thread at a time (Lua states are
// never shared between threads, ARCHITECTURE.md).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <lua.hpp>

namespace moonseed::scripts {

// A Lua script failed to load or run. what() carries Lua's "file:line: message"
// followed by a traceback.
class ScriptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Sandbox { kOff, kOn };

// What a state may use; 0 means no limit.
struct LuaLimits {
  size_t memory_bytes = 0;
  double time_s = 0;  // wall-clock from the state's creation; turns the JIT off
};

// The limits of Lua code that loads an experiment (scripts, recipes, modules):
// 512 MiB and 5 s.
LuaLimits script_limits();

// A Lua file a state compiled.
struct LoadedLuaFile {
  std::string module;  // the name `require` was given; "" for a file run by run_file
  std::string path;    // as opened; embedded library files as "[moonseed]/moonseed/x.lua"
  std::string text;    // the exact bytes compiled
  bool embedded = false;
};

class LuaState {
 public:
  // Throws std::runtime_error when LuaJIT cannot allocate a state.
  explicit LuaState(Sandbox sandbox, LuaLimits limits = {});
  ~LuaState();
  LuaState(const LuaState&) = delete;
  LuaState& operator=(const LuaState&) = delete;

  lua_State* get() const { return L_; }
  Sandbox sandbox() const { return sandbox_; }

  // Replaces the directories searched by `require` (step 2 above).
  void set_search_path(const std::vector<std::string>& dirs);
  const std::vector<std::string>& search_path() const { return search_path_; }

  // Loads `path` (chunk name "@path", so errors read "path:line:") and calls
  // it with `args` as `...` under a traceback handler. Leaves the chunk's
  // results on the stack and returns how many there are. Throws ScriptError.
  int run_file(const std::string& path, const std::vector<std::string>& args = {});

  // Every file compiled so far, in load order. `require` compiles a module
  // once; a file run twice, or found under two module names, appears twice.
  const std::vector<LoadedLuaFile>& loaded_files() const { return loaded_files_; }
  // The file `require` compiled for `module`; nullptr when it came from no
  // file (package.preload) or was never required.
  const LoadedLuaFile* module_file(const std::string& module) const;

  const LuaLimits& limits() const;
  // The allocator refused an allocation past the memory cap since the state
  // was made (Lua raised "not enough memory", which a script may have caught).
  bool memory_refused() const;
  // Bytes Lua holds now (counted by the state's allocator).
  size_t memory_used() const;
  // " (...)" explaining a Lua error message that is a memory or time limit's,
  // or "" for any other: for callers with their own pcall.
  std::string limit_note(const std::string& message) const;

  struct Budget;

 private:
  std::unique_ptr<Budget> budget_;  // the allocator's user data: declared before L_
  lua_State* L_ = nullptr;
  Sandbox sandbox_;
  std::vector<std::string> search_path_;
  // Appended to by run_file and by the loaders, which find it through the
  // registry (so the object never moves: LuaState is not copyable or movable).
  std::vector<LoadedLuaFile> loaded_files_;
};

// The script's directory, "recipes", then $MOONSEED_PATH entries (empty
// entries skipped).
std::vector<std::string> default_search_path(const std::string& script_path);

// lua_pcall with a message handler that appends a traceback to the error
// message. Returns lua_pcall's status; on error the message is on the stack.
int pcall_with_traceback(lua_State* L, int nargs, int nresults);

// That message handler, for callers with their own pcall: the error (or its
// __tostring) followed by a traceback.
int traceback_handler(lua_State* L);

// Applies the sandbox described above (scripts/lua/moonseed/sandbox.lua) to
// `L` now: for a state made with Sandbox::kOff whose setup needs what the
// sandbox removes (reward_shaper.h takes `ffi` first). Throws
// std::logic_error when the embedded library cannot apply it.
void apply_sandbox(lua_State* L);

// `index` as a positive stack index, which stays valid while values are
// pushed; pseudo-indices (LUA_REGISTRYINDEX, upvalues) are returned as given.
// LuaJIT has no lua_absindex.
int absolute_index(lua_State* L, int index);

// The value at `index` for an error message: "string \"fast\"", "number 2.5",
// "boolean true", "table". Strings longer than 60 bytes are cut ("...").
std::string describe_value(lua_State* L, int index);

// Wraps a lua_CFunction written in C++: a std::exception escaping `F` becomes
// a Lua error carrying what(), raised after every C++ local of F is destroyed.
// Lua's own errors (luaL_check*, luaL_error) are not std::exceptions and pass
// through untouched (LuaJIT on x64 unwinds them as foreign exceptions).
template <lua_CFunction F>
int cpp_function(lua_State* L) {
  try {
    return F(L);
  } catch (const std::exception& e) {
    lua_pushstring(L, e.what());
  }
  return lua_error(L);
}

}  // namespace moonseed::scripts
