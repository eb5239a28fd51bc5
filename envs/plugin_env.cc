#include "envs/plugin_env.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "moonseed_env.h"

namespace moonseed::envs {

class PluginLibrary {
 public:
  PluginLibrary(std::string path, void* handle, const moonseed_env_api* api)
      : path_(std::move(path)), handle_(handle), api_(api) {}
  ~PluginLibrary() { ::dlclose(handle_); }
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }
  const moonseed_env_api& api() const { return *api_; }
  std::string where() const { return "plugin " + path_ + ": "; }

 private:
  std::string path_;
  void* handle_;
  const moonseed_env_api* api_;
};

namespace {

// --- which plugin call crashed ------------------------------------------------
// A plugin that crashes takes its process down; the handler below first says
// in which call of which plugin, on stderr (the actor's log, or the message
// describe_env quotes). Set around every call into a plugin; read by the
// handler, which may only make async-signal-safe calls.
std::atomic<const char*> g_crash_plugin{nullptr};  // the plugin's path
std::atomic<const char*> g_crash_call{nullptr};    // "create", "step", ...

void write_text(const char* text) {
  const size_t n = std::strlen(text);
  if (::write(STDERR_FILENO, text, n) < 0) {
    // Nothing else can be said from a crashing process.
  }
}

void on_crash(int sig) {
  const char* plugin = g_crash_plugin.load(std::memory_order_relaxed);
  const char* call = g_crash_call.load(std::memory_order_relaxed);
  if (plugin != nullptr && call != nullptr) {
    const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                     : sig == SIGILL  ? "SIGILL"  : "SIGABRT";
    write_text("moonseed: crashed (");
    write_text(name);
    write_text(") in the call to ");
    write_text(call);
    write_text(" of plugin ");
    write_text(plugin);
    write_text("\n");
  }
  // SA_RESETHAND made the action the default again: the fault repeats on return, or the signal is raised.
  ::raise(sig);
}

// Installs on_crash for the signals a crashing plugin raises, where nothing else handles them.
void install_crash_note() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      struct sigaction current {};
      if (::sigaction(sig, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = on_crash;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND | SA_NODEFER;
      ::sigaction(sig, &action, nullptr);
    }
  });
}

// Marks the plugin call in progress for on_crash while it lives.
class CrashNote {
 public:
  CrashNote(const std::string& plugin, const char* call) {
    g_crash_plugin.store(plugin.c_str(), std::memory_order_relaxed);
    g_crash_call.store(call, std::memory_order_relaxed);
  }
  ~CrashNote() { g_crash_call.store(nullptr, std::memory_order_relaxed); }
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
};

// Bytes after an observation buffer that a plugin must leave alone, and their pattern.
constexpr size_t kGuardBytes = 64;
constexpr uint8_t kGuardByte = 0xA5;

constexpr size_t kMaxErrorChars = 2000;
// No box of a sane env comes near this many elements; beyond it byte sizes could overflow.
constexpr int64_t kMaxNumel = int64_t{1} << 30;

// A plugin's message, never null and never endless.
std::string plugin_text(const char* text) {
  if (text == nullptr || *text == '\0') return "(the plugin gave no message)";
  const size_t n = ::strnlen(text, kMaxErrorChars + 1);
  return n > kMaxErrorChars ? std::string(text, kMaxErrorChars) + "..." : std::string(text, n);
}

std::string dl_error() {
  const char* e = ::dlerror();
  return e ? e : "unknown dlopen error";
}

// dlopen() searches the library path for a name without a slash; a plugin is always a file.
std::string as_file_path(const std::string& path) {
  return path.find('/') == std::string::npos ? "./" + path : path;
}

std::shared_ptr<PluginLibrary> open_library(const std::string& path) {
  check_plugin_file(path);
  const std::string where = "plugin " + path + ": ";
  ::dlerror();
  void* handle = ::dlopen(as_file_path(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::invalid_argument(where + "cannot load it: " + dl_error());
  auto fail = [&](const std::string& message) {
    ::dlclose(handle);
    throw std::invalid_argument(where + message);
  };
  ::dlerror();
  void* symbol = ::dlsym(handle, "moonseed_env_plugin");
  if (symbol == nullptr) {
    fail("exports no function moonseed_env_plugin (a plugin defines `const struct moonseed_env_api* "
         "moonseed_env_plugin(void)` from moonseed_env.h; `nm -D " + path + "` lists what it exports)");
  }
  moonseed_env_plugin_fn entry = nullptr;
  static_assert(sizeof entry == sizeof symbol);
  std::memcpy(&entry, &symbol, sizeof entry);
  const moonseed_env_api* api = entry();
  if (api == nullptr) fail("moonseed_env_plugin() returned NULL");
  if (api->abi_version != MOONSEED_ENV_ABI_VERSION) {
    fail("built for plugin ABI version " + std::to_string(api->abi_version) + ", but this engine speaks version " +
         std::to_string(MOONSEED_ENV_ABI_VERSION) + ": rebuild the plugin against this engine's moonseed_env.h");
  }
  if (api->struct_size < sizeof(moonseed_env_api)) {
    fail("its function table has " + std::to_string(api->struct_size) + " bytes, ABI version " +
         std::to_string(MOONSEED_ENV_ABI_VERSION) + " needs " + std::to_string(sizeof(moonseed_env_api)) +
         ": set struct_size = sizeof(struct moonseed_env_api)");
  }
  const std::pair<const char*, bool> required[] = {
      {"create", api->create != nullptr}, {"destroy", api->destroy != nullptr},
      {"last_error", api->last_error != nullptr}, {"spec", api->spec != nullptr},
      {"reset", api->reset != nullptr}, {"step", api->step != nullptr}};
  for (const auto& [name, present] : required) {
    if (!present) fail(std::string("its function table leaves ") + name + " NULL, which every plugin must provide");
  }
  if ((api->get_state == nullptr) != (api->set_state == nullptr)) {
    fail("its function table sets only one of get_state and set_state: provide both or neither");
  }
  return std::make_shared<PluginLibrary>(path, handle, api);
}

Space convert_space(const moonseed_env_space& in, const std::string& which, bool is_action,
                    const std::string& where) {
  auto bad = [&](const std::string& message) { throw std::invalid_argument(where + "spec: " + which + " " + message); };
  Space out;
  if (in.kind == MOONSEED_ENV_DISCRETE) {
    if (!is_action) bad("is discrete; an observation must be a box (e.g. a float32 box of shape {1})");
    if (in.n < 1 || in.n > INT32_MAX) bad("has n = " + std::to_string(in.n) + " choices; n must be in [1, 2^31)");
    return discrete_space(in.n);
  }
  if (in.kind != MOONSEED_ENV_BOX) {
    bad("has kind " + std::to_string(in.kind) + "; it must be MOONSEED_ENV_DISCRETE or MOONSEED_ENV_BOX");
  }
  out.kind = SpaceKind::kBox;
  if (in.dtype == MOONSEED_ENV_FLOAT32) {
    out.dtype = DType::kFloat32;
  } else if (in.dtype == MOONSEED_ENV_UINT8) {
    if (is_action) bad("is a uint8 box; a box action must be float32");
    out.dtype = DType::kUInt8;
  } else {
    bad("has dtype " + std::to_string(in.dtype) + "; it must be MOONSEED_ENV_FLOAT32 or MOONSEED_ENV_UINT8");
  }
  if (in.rank < 1 || in.rank > MOONSEED_ENV_MAX_RANK) {
    bad("has rank " + std::to_string(in.rank) + "; it must be in [1, " + std::to_string(MOONSEED_ENV_MAX_RANK) + "]");
  }
  int64_t numel = 1;
  for (int32_t d = 0; d < in.rank; ++d) {
    if (in.shape[d] < 1) bad("has shape[" + std::to_string(d) + "] = " + std::to_string(in.shape[d]) + "; sizes must be >= 1");
    if (in.shape[d] > kMaxNumel / numel) bad("has more than " + std::to_string(kMaxNumel) + " elements");
    numel *= in.shape[d];
    out.shape.push_back(in.shape[d]);
  }
  if ((in.low == nullptr) != (in.high == nullptr)) bad("gives only one of low and high: give both or neither");
  if (in.low != nullptr) {
    out.low.assign(in.low, in.low + numel);
    out.high.assign(in.high, in.high + numel);
    for (int64_t i = 0; i < numel; ++i) {
      if (std::isnan(out.low[i]) || std::isnan(out.high[i])) bad("has a NaN bound at element " + std::to_string(i));
    }
  }
  return out;
}

class PluginEnv final : public Env {
 public:
  PluginEnv(std::shared_ptr<PluginLibrary> library, const std::string& id, const EnvOptions& options)
      : library_(std::move(library)), api_(library_->api()) {
    std::vector<moonseed_env_option> c_options;
    for (const auto& [key, value] : options) c_options.push_back({key.c_str(), value});
    {
      CrashNote note(library_->path(), "create");
      env_ = api_.create(id.c_str(), c_options.data(), c_options.size());
    }
    if (env_ == nullptr) {
      throw std::invalid_argument(library_->where() + "refused to create \"" + id +
                                  "\": " + plugin_text(api_.last_error(nullptr)));
    }
    try {
      spec_ = read_spec(id);
    } catch (...) {
      api_.destroy(env_);
      throw;
    }
    obs_bytes_ = static_cast<size_t>(spec_.observation.byte_size());
    obs_.assign(obs_bytes_ + kGuardBytes, kGuardByte);
  }

  ~PluginEnv() override {
    CrashNote note(library_->path(), "destroy");
    api_.destroy(env_);
  }

  const EnvSpec& spec() const override { return spec_; }

  void reset(std::optional<uint64_t> seed, void* obs) override {
    int status = MOONSEED_ENV_OK;
    {
      CrashNote note(library_->path(), "reset");
      status = api_.reset(env_, seed ? 1 : 0, seed.value_or(0), obs_.data());
    }
    check_guard("reset");
    if (status != MOONSEED_ENV_OK) throw std::runtime_error(error_of("reset"));
    std::memcpy(obs, obs_.data(), obs_bytes_);
  }

  // Steps into a private buffer: a failing step leaves the caller's observation alone (env_set.h).
  StepResult step(const void* action, void* obs) override {
    float reward = 0.f;
    int terminated = 0;
    int truncated = 0;
    int status = MOONSEED_ENV_OK;
    {
      CrashNote note(library_->path(), "step");
      status = api_.step(env_, action, obs_.data(), &reward, &terminated, &truncated);
    }
    check_guard("step");
    if (status != MOONSEED_ENV_OK) throw std::runtime_error(error_of("step"));
    std::memcpy(obs, obs_.data(), obs_bytes_);
    return StepResult{reward, terminated != 0, truncated != 0};
  }

  std::vector<double> get_state() const override {
    require_state("get_state");
    size_t size = 0;
    if (api_.get_state(env_, nullptr, 0, &size) != MOONSEED_ENV_OK) throw std::runtime_error(error_of("get_state"));
    std::vector<double> state(size);
    size_t written = 0;
    if (api_.get_state(env_, state.data(), state.size(), &written) != MOONSEED_ENV_OK) {
      throw std::runtime_error(error_of("get_state"));
    }
    if (written != size) {
      throw std::runtime_error(library_->where() + "get_state gave " + std::to_string(size) + " values, then " +
                               std::to_string(written));
    }
    return state;
  }

  void set_state(const std::vector<double>& state) override {
    require_state("set_state");
    if (api_.set_state(env_, state.data(), state.size()) != MOONSEED_ENV_OK) {
      throw std::invalid_argument(error_of("set_state"));
    }
  }

 private:
  EnvSpec read_spec(const std::string& id) const {
    moonseed_env_spec c_spec;
    std::memset(&c_spec, 0, sizeof c_spec);
    int status = MOONSEED_ENV_OK;
    {
      CrashNote note(library_->path(), "spec");
      status = api_.spec(env_, &c_spec);
    }
    if (status != MOONSEED_ENV_OK) throw std::invalid_argument(error_of("spec"));
    return spec_from_c(c_spec, id, library_->where());
  }

  // A plugin that wrote past the observation it was given has broken memory
  // that is not its own (here, the guard bytes; in a caller without them,
  // whatever came next): the process cannot go on trusting it.
  void check_guard(const char* call) {
    static const std::array<uint8_t, kGuardBytes> intact = [] {
      std::array<uint8_t, kGuardBytes> bytes{};
      bytes.fill(kGuardByte);
      return bytes;
    }();
    const uint8_t* guard = obs_.data() + obs_bytes_;
    if (std::memcmp(guard, intact.data(), kGuardBytes) == 0) return;  // every step: one compare
    size_t first = 0;
    while (guard[first] == kGuardByte) ++first;
    size_t last = first;
    for (size_t i = first; i < kGuardBytes; ++i) {
      if (guard[i] != kGuardByte) last = i;
    }
    throw EnvCorrupted(library_->where() + call + " wrote past the end of its observation (" +
                       std::to_string(obs_bytes_) + " bytes; " + spec_.describe() + "): bytes " +
                       std::to_string(obs_bytes_ + first) + " to " + std::to_string(obs_bytes_ + last) +
                       " after its start were changed; fix the plugin's writes to obs");
  }

  std::string error_of(const char* call) const {
    return library_->where() + call + " failed: " + plugin_text(api_.last_error(env_));
  }

  void require_state(const char* call) const {
    if (api_.get_state == nullptr) {
      throw std::runtime_error(library_->where() + call + ": the plugin provides no state functions " +
                               "(get_state and set_state are NULL in its table)");
    }
  }

  std::shared_ptr<PluginLibrary> library_;
  const moonseed_env_api& api_;
  moonseed_env* env_ = nullptr;
  EnvSpec spec_;
  size_t obs_bytes_ = 0;
  std::vector<uint8_t> obs_;  // where the plugin writes (obs_bytes_, then guard bytes); copied out on success
};

// Loaded libraries by path: every env of a plugin shares one handle.
struct Loaded {
  base::Mutex mu;
  std::map<std::string, std::weak_ptr<PluginLibrary>> by_path GUARDED_BY(mu);
};

Loaded& loaded() {
  static Loaded* l = new Loaded;  // never destroyed: envs may outlive static destruction order
  return *l;
}

}  // namespace

EnvSpec spec_from_c(const moonseed_env_spec& c_spec, const std::string& id, const std::string& where) {
  EnvSpec spec;
  spec.id = id;
  spec.observation = convert_space(c_spec.observation, "observation", false, where);
  spec.action = convert_space(c_spec.action, "action", true, where);
  if (c_spec.max_episode_steps < 0) {
    throw std::invalid_argument(where + "spec: max_episode_steps is " + std::to_string(c_spec.max_episode_steps) +
                                "; it must be >= 0 (0 = none)");
  }
  spec.max_episode_steps = c_spec.max_episode_steps;
  return spec;
}

void check_plugin_file(const std::string& path) {
  const std::string where = "plugin " + path + ": ";
  if (path.empty()) throw std::invalid_argument("plugin: the path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw std::invalid_argument(where + (err == ENOENT ? std::string("no such file") : std::strerror(err)) +
                                " (a relative env.plugin is taken from the script's directory)");
  }
  if (!S_ISREG(st.st_mode)) throw std::invalid_argument(where + "not a regular file");
  if (::access(path.c_str(), R_OK) != 0) {
    throw std::invalid_argument(where + "cannot read it: " + std::strerror(errno));
  }
}

std::shared_ptr<PluginLibrary> load_plugin(const std::string& path) {
  install_crash_note();
  Loaded& l = loaded();
  base::MutexLock lock(l.mu);
  if (std::shared_ptr<PluginLibrary> library = l.by_path[path].lock()) return library;
  std::shared_ptr<PluginLibrary> library = open_library(path);
  l.by_path[path] = library;
  return library;
}

std::unique_ptr<Env> make_plugin_env(const std::string& path, const std::string& id, const EnvOptions& options) {
  return std::make_unique<PluginEnv>(load_plugin(path), id, options);
}

}  // namespace moonseed::envs
