#include "scripts/api/lua_control_api.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rpc/control_socket.h"
#include "scripts/state/lua_state.h"

extern char** environ;

namespace moonseed::scripts {
namespace {

constexpr const char* kControlMetatable = "moonseed.Control";

rpc::ControlClient*& check_control(lua_State* L) {
  auto* slot = static_cast<rpc::ControlClient**>(luaL_checkudata(L, 1, kControlMetatable));
  if (*slot == nullptr) luaL_error(L, "the control connection is closed");
  return *slot;
}

int connect(lua_State* L) {
  const std::string path = luaL_checkstring(L, 1);
  auto** slot = static_cast<rpc::ControlClient**>(lua_newuserdata(L, sizeof(rpc::ControlClient*)));
  *slot = nullptr;
  luaL_getmetatable(L, kControlMetatable);
  lua_setmetatable(L, -2);
  *slot = new rpc::ControlClient(path);  // throws with the path and why
  return 1;
}

int request(lua_State* L) {
  rpc::ControlClient* client = check_control(L);
  const std::string line = luaL_checkstring(L, 2);
  const double timeout_s = luaL_optnumber(L, 3, 60.0);
  const std::string reply =
      client->request(line, std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  lua_pushlstring(L, reply.data(), reply.size());
  return 1;
}

int close_control(lua_State* L) {
  auto* slot = static_cast<rpc::ControlClient**>(luaL_checkudata(L, 1, kControlMetatable));
  delete *slot;
  *slot = nullptr;
  return 0;
}

int spawn(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const std::string log_path = luaL_checkstring(L, 2);
  std::vector<std::string> args;
  for (int i = 1; i <= static_cast<int>(lua_objlen(L, 1)); ++i) {
    lua_rawgeti(L, 1, i);
    if (!lua_isstring(L, -1)) luaL_error(L, "spawn: argv[%d] is not a string", i);
    args.emplace_back(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  if (args.empty()) luaL_error(L, "spawn: argv is empty");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own session: Ctrl-C in the console does not reach the run.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0], &files, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  if (err != 0) return luaL_error(L, "cannot start %s: %s", argv[0], std::strerror(err));
  lua_pushinteger(L, pid);
  return 1;
}

int status(lua_State* L) {
  const pid_t pid = static_cast<pid_t>(luaL_checkinteger(L, 1));
  int wstatus = 0;
  const pid_t got = ::waitpid(pid, &wstatus, WNOHANG);
  if (got == 0) {
    lua_pushliteral(L, "running");
    return 1;
  }
  if (got < 0) {
    // Not our child (or reaped already): alive while kill(0) finds it.
    if (::kill(pid, 0) == 0) {
      lua_pushliteral(L, "running");
      return 1;
    }
    lua_pushliteral(L, "exited");
    lua_pushnil(L);
    return 2;
  }
  lua_pushliteral(L, "exited");
  lua_pushinteger(L, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
  return 2;
}

int binary(lua_State* L) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return luaL_error(L, "cannot find the moonseed binary (/proc/self/exe)");
  lua_pushlstring(L, buf, static_cast<size_t>(n));
  return 1;
}

int sleep_for(lua_State* L) {
  const double seconds = luaL_checknumber(L, 1);
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return 0;
}

int private_dir(lua_State* L) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/" + luaL_checkstring(L, 1) + "-XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) {
    return luaL_error(L, "cannot create a directory like %s: %s", path.c_str(), std::strerror(errno));
  }
  lua_pushlstring(L, path.data(), path.size());
  return 1;
}

int open_control_core(lua_State* L) {
  if (luaL_newmetatable(L, kControlMetatable)) {
    lua_newtable(L);
    lua_pushcfunction(L, cpp_function<request>);
    lua_setfield(L, -2, "request");
    lua_pushcfunction(L, close_control);
    lua_setfield(L, -2, "close");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, close_control);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  const luaL_Reg functions[] = {
      {"connect", cpp_function<connect>}, {"spawn", cpp_function<spawn>},
      {"status", cpp_function<status>},   {"binary", cpp_function<binary>},
      {"sleep", cpp_function<sleep_for>}, {"private_dir", cpp_function<private_dir>},
      {nullptr, nullptr},
  };
  lua_newtable(L);
  luaL_register(L, nullptr, functions);
  return 1;
}

}  // namespace

void open_control_api(lua_State* L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, open_control_core);
  lua_setfield(L, -2, "moonseed.control_core");
  lua_pop(L, 2);
}

}  // namespace moonseed::scripts
