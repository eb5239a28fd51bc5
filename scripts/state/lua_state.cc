#include "scripts/state/lua_state.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/text.h"
#include "engine/config/values.h"
#include "scripts/state/embedded_lua.h"

#include <luajit.h>

namespace moonseed::scripts {
namespace {

// Registry key of the search path table (an array of directory strings).
constexpr const char* kSearchPathKey = "moonseed.search_path";
// Registry key of a light userdata: the state's std::vector<LoadedLuaFile>.
constexpr const char* kLoadedFilesKey = "moonseed.loaded_files";

enum class ReadResult { kRead, kCannotOpen, kCannotRead };

// The whole file as bytes: what is compiled is exactly what is recorded.
ReadResult read_file(const std::string& path, std::string* text) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return ReadResult::kCannotOpen;
  text->clear();
  char buffer[8192];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text->append(buffer, n);
  const bool failed = std::ferror(f) != 0;  // e.g. a directory
  std::fclose(f);
  return failed ? ReadResult::kCannotRead : ReadResult::kRead;
}

void record_loaded_file(lua_State* L, LoadedLuaFile file) {
  lua_getfield(L, LUA_REGISTRYINDEX, kLoadedFilesKey);
  auto* files = static_cast<std::vector<LoadedLuaFile>*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (files == nullptr) throw std::logic_error("LuaState: no loaded-files list in the registry");
  files->push_back(std::move(file));
}

// Sandboxed states load text chunks only; LuaJIT does not verify bytecode.
const char* chunk_mode(lua_State* L) {
  return lua_toboolean(L, lua_upvalueindex(1)) ? "t" : nullptr;
}

// package.loaders entry for the search path: "a.b" -> DIR/a/b.lua, DIR/a/b/init.lua.
// Returns the loaded chunk, or a string listing the files tried (Lua joins the
// messages of every loader into require's error).
int search_path_loader(lua_State* L) {
  std::string relative = luaL_checkstring(L, 1);
  for (char& c : relative) {
    if (c == '.') c = '/';
  }
  std::string tried;
  lua_getfield(L, LUA_REGISTRYINDEX, kSearchPathKey);
  const int dirs = lua_gettop(L);
  const int count = static_cast<int>(lua_objlen(L, dirs));
  for (int i = 1; i <= count; ++i) {
    lua_rawgeti(L, dirs, i);
    std::string dir = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!dir.empty() && dir.back() != '/') dir += '/';
    for (const char* suffix : {".lua", "/init.lua"}) {
      const std::string candidate = dir + relative + suffix;
      std::string text;
      const ReadResult read = read_file(candidate, &text);
      if (read == ReadResult::kCannotOpen) {
        tried += "\n\tno file '" + candidate + "'";
        continue;
      }
      const std::string chunk_name = "@" + candidate;
      if (read == ReadResult::kCannotRead) {
        lua_pushfstring(L, "cannot read %s", candidate.c_str());
      } else if (luaL_loadbufferx(L, text.data(), text.size(), chunk_name.c_str(), chunk_mode(L)) == 0) {
        record_loaded_file(L, LoadedLuaFile{lua_tostring(L, 1), candidate, std::move(text), false});
        return 1;
      }
      return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", lua_tostring(L, 1),
                        candidate.c_str(), lua_tostring(L, -1));
    }
  }
  lua_pushstring(L, tried.c_str());
  return 1;
}

// package.loaders entry for the library compiled into the binary.
int embedded_loader(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  const EmbeddedLuaModule* module = find_embedded_lua_module(name);
  if (module == nullptr) {
    lua_pushfstring(L, "\n\tno module '%s' in the engine's Lua library", name);
    return 1;
  }
  if (luaL_loadbuffer(L, module->source, module->size, module->chunk_name) != 0) {
    return luaL_error(L, "error loading embedded module '%s':\n\t%s", name, lua_tostring(L, -1));
  }
  // chunk_name is "@[moonseed]/..."; the path shown to users has no "@".
  record_loaded_file(L, LoadedLuaFile{name, module->chunk_name + 1,
                                      std::string(module->source, module->size), true});
  return 1;
}

}  // namespace

int traceback_handler(lua_State* L) {
  const char* message = lua_tostring(L, 1);
  if (message == nullptr) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      message = lua_tostring(L, -1);
    } else {
      message = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
  }
  luaL_traceback(L, L, message, 1);
  return 1;
}

namespace {

// package.loaders becomes: preload, search path, embedded library, and (sandbox
// off) Lua's own path and C loaders.
void install_loaders(lua_State* L, bool sandboxed) {
  lua_getglobal(L, "package");
  const int package = lua_gettop(L);
  lua_getfield(L, package, "loaders");
  const int old_loaders = lua_gettop(L);
  lua_newtable(L);
  const int loaders = lua_gettop(L);
  int n = 0;
  lua_rawgeti(L, old_loaders, 1);  // preload
  lua_rawseti(L, loaders, ++n);
  lua_pushboolean(L, sandboxed);
  lua_pushcclosure(L, cpp_function<search_path_loader>, 1);
  lua_rawseti(L, loaders, ++n);
  lua_pushcfunction(L, cpp_function<embedded_loader>);
  lua_rawseti(L, loaders, ++n);
  if (!sandboxed) {
    const int old_count = static_cast<int>(lua_objlen(L, old_loaders));
    for (int i = 2; i <= old_count; ++i) {
      lua_rawgeti(L, old_loaders, i);
      lua_rawseti(L, loaders, ++n);
    }
  }
  lua_setfield(L, package, "loaders");
  lua_pop(L, 2);
}

}  // namespace

void apply_sandbox(lua_State* L) {
  const EmbeddedLuaModule* sandbox = find_embedded_lua_module("moonseed.sandbox");
  if (sandbox == nullptr) throw std::logic_error("the embedded Lua library has no moonseed.sandbox");
  if (luaL_loadbuffer(L, sandbox->source, sandbox->size, sandbox->chunk_name) != 0 ||
      pcall_with_traceback(L, 0, 0) != 0) {
    const std::string message = lua_tostring(L, -1);
    lua_pop(L, 1);
    throw std::logic_error("applying the sandbox failed: " + message);
  }
}

struct LuaState::Budget {
  LuaLimits limits;
  size_t used = 0;
  bool refused = false;
  std::chrono::steady_clock::time_point deadline;
};

namespace {

// Lua's allocator with a cap: growing past it fails (Lua raises "not enough
// memory"); shrinking and freeing always succeed, as Lua requires.
void* capped_alloc(void* ud, void* ptr, size_t old_size, size_t new_size) {
  auto* budget = static_cast<LuaState::Budget*>(ud);
  if (new_size == 0) {
    std::free(ptr);
    budget->used -= old_size;
    return nullptr;
  }
  const size_t cap = budget->limits.memory_bytes;
  if (cap > 0 && new_size > old_size && budget->used - old_size + new_size > cap) {
    budget->refused = true;
    return nullptr;
  }
  void* grown = std::realloc(ptr, new_size);
  if (grown != nullptr) budget->used = budget->used - old_size + new_size;
  return grown;
}

// Count hook of a state with a time limit: an error at the running line once
// the deadline has passed. No C++ object is alive when lua_error unwinds.
void deadline_hook(lua_State* L, lua_Debug*) {
  void* ud = nullptr;
  lua_getallocf(L, &ud);
  const auto* budget = static_cast<const LuaState::Budget*>(ud);
  if (std::chrono::steady_clock::now() < budget->deadline) return;
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) != 0 && lua_getinfo(L, "Sl", &ar) != 0 && ar.currentline > 0) {
    lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
  } else {
    lua_pushliteral(L, "");
  }
  lua_pushfstring(L, "the script ran for more than %s s, its time limit (a loop that never ends?)",
                  engine::format_number(budget->limits.time_s).c_str());
  lua_concat(L, 2);
  lua_error(L);
}

// Instructions between two looks at the clock.
constexpr int kHookCount = 10000;

}  // namespace

LuaLimits script_limits() {
  LuaLimits limits;
  limits.memory_bytes = size_t{512} << 20;
  limits.time_s = 5;
  return limits;
}

LuaState::LuaState(Sandbox sandbox, LuaLimits limits) : budget_(std::make_unique<Budget>()), sandbox_(sandbox) {
  budget_->limits = limits;
  budget_->deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(limits.time_s > 0 ? limits.time_s : 1e9));
  L_ = lua_newstate(capped_alloc, budget_.get());
  if (L_ == nullptr) throw std::runtime_error("LuaJIT could not create a state (out of memory)");
  luaL_openlibs(L_);  // opening `jit` turns the JIT on: the limits come after
  if (limits.time_s > 0) {
    luaJIT_setmode(L_, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);  // hooks never run in compiled code
    // ... and Lua code cannot turn it back on with jit.on().
    lua_pushnil(L_);
    lua_setglobal(L_, "jit");
    lua_getglobal(L_, "package");
    lua_getfield(L_, -1, "loaded");
    lua_pushnil(L_);
    lua_setfield(L_, -2, "jit");
    lua_pop(L_, 2);
    lua_sethook(L_, deadline_hook, LUA_MASKCOUNT, kHookCount);
  }
  lua_pushlightuserdata(L_, &loaded_files_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kLoadedFilesKey);
  install_loaders(L_, sandbox == Sandbox::kOn);
  set_search_path({});
  if (sandbox == Sandbox::kOn) {
    try {
      apply_sandbox(L_);
    } catch (...) {
      lua_close(L_);
      throw;
    }
  }
}

LuaState::~LuaState() { lua_close(L_); }

void LuaState::set_search_path(const std::vector<std::string>& dirs) {
  search_path_ = dirs;
  lua_createtable(L_, static_cast<int>(dirs.size()), 0);
  for (size_t i = 0; i < dirs.size(); ++i) {
    lua_pushlstring(L_, dirs[i].data(), dirs[i].size());
    lua_rawseti(L_, -2, static_cast<int>(i + 1));
  }
  lua_setfield(L_, LUA_REGISTRYINDEX, kSearchPathKey);
}

int LuaState::run_file(const std::string& path, const std::vector<std::string>& args) {
  const int base = lua_gettop(L_);
  const char* mode = sandbox_ == Sandbox::kOn ? "t" : nullptr;
  std::string text;
  const ReadResult read = read_file(path, &text);
  if (read == ReadResult::kCannotOpen) {
    const int error = errno;
    // A relative path is looked for in the current directory: say which, for a command typed elsewhere.
    std::string where;
    if (!path.empty() && path[0] != '/') {
      std::error_code ec;
      const std::string cwd = std::filesystem::current_path(ec).string();
      if (!ec) where = " (looked for in the current directory, " + cwd + ")";
    }
    throw ScriptError("cannot open " + path + where + ": " + std::strerror(error));
  }
  if (read == ReadResult::kCannotRead) throw ScriptError("cannot read " + path);
  const std::string chunk_name = "@" + path;
  if (luaL_loadbufferx(L_, text.data(), text.size(), chunk_name.c_str(), mode) != 0) {
    std::string message = lua_tostring(L_, -1);
    lua_settop(L_, base);
    throw ScriptError(message);
  }
  loaded_files_.push_back(LoadedLuaFile{"", path, std::move(text), false});
  for (const std::string& a : args) lua_pushlstring(L_, a.data(), a.size());
  if (pcall_with_traceback(L_, static_cast<int>(args.size()), LUA_MULTRET) != 0) {
    const char* text = lua_tostring(L_, -1);
    std::string message = text != nullptr ? text : "(error object is not a string)";
    lua_settop(L_, base);
    const std::string note = limit_note(message);
    throw ScriptError(note.empty() ? message : path + ": " + message + note);
  }
  return lua_gettop(L_) - base;
}

const LuaLimits& LuaState::limits() const { return budget_->limits; }
bool LuaState::memory_refused() const { return budget_->refused; }
size_t LuaState::memory_used() const { return budget_->used; }

std::string LuaState::limit_note(const std::string& message) const {
  if (!budget_->refused || message.find("not enough memory") == std::string::npos) return "";
  return " (the Lua code asked for more than " + std::to_string(budget_->limits.memory_bytes >> 20) +
         " MiB, its memory limit)";
}

const LoadedLuaFile* LuaState::module_file(const std::string& module) const {
  for (const LoadedLuaFile& f : loaded_files_) {
    if (f.module == module) return &f;
  }
  return nullptr;
}

std::vector<std::string> default_search_path(const std::string& script_path) {
  std::vector<std::string> dirs;
  const size_t slash = script_path.find_last_of('/');
  if (slash == std::string::npos) {
    dirs.push_back(".");
  } else {
    dirs.push_back(slash == 0 ? "/" : script_path.substr(0, slash));
  }
  dirs.push_back("recipes");
  if (const char* env = std::getenv("MOONSEED_PATH")) {
    std::string entries = env;
    size_t start = 0;
    while (start <= entries.size()) {
      size_t end = entries.find(':', start);
      if (end == std::string::npos) end = entries.size();
      if (end > start) dirs.push_back(entries.substr(start, end - start));
      start = end + 1;
    }
  }
  return dirs;
}

int pcall_with_traceback(lua_State* L, int nargs, int nresults) {
  const int handler = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback_handler);
  lua_insert(L, handler);
  const int status = lua_pcall(L, nargs, nresults, handler);
  lua_remove(L, handler);
  return status;
}

int absolute_index(lua_State* L, int index) {
  return index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
}

std::string describe_value(lua_State* L, int index) {
  constexpr size_t kShown = 60;  // a long string would drown the message it is quoted in
  const int type = lua_type(L, index);
  std::string text = lua_typename(L, type);
  if (type == LUA_TNUMBER) {
    text += " " + engine::format_number(lua_tonumber(L, index));
  } else if (type == LUA_TBOOLEAN) {
    text += lua_toboolean(L, index) ? " true" : " false";
  } else if (type == LUA_TSTRING) {
    size_t size = 0;
    const char* s = lua_tolstring(L, index, &size);
    text += " " + base::lua_quote(std::string_view(s, std::min(size, kShown))) + (size > kShown ? "..." : "");
  }
  return text;
}

}  // namespace moonseed::scripts
