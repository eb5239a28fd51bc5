#include "envs/describe.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/text.h"
#include "envs/plugin_env.h"

extern char** environ;

namespace moonseed::envs {
namespace {

constexpr const char* kMagic = "moonseed-env-description 1";
constexpr size_t kMaxErrorBytes = 64 << 10;

const char* dtype_word(DType d) { return d == DType::kUInt8 ? "u8" : "f32"; }

void write_space(std::ostringstream& out, const char* name, const Space& s) {
  out << name;
  if (s.kind == SpaceKind::kDiscrete) {
    out << " discrete " << s.n << "\n";
    return;
  }
  out << " box " << dtype_word(s.dtype) << " shape " << s.shape.size();
  for (int64_t d : s.shape) out << ' ' << d;
  if (s.low.empty()) {
    out << " unbounded\n";
    return;
  }
  out << " bounds";
  for (float v : s.low) out << ' ' << base::float_text(v);
  for (float v : s.high) out << ' ' << base::float_text(v);
  out << "\n";
}

// Reads words of one line, each check failing with the line's text.
class Words {
 public:
  Words(std::string line) : line_(std::move(line)), in_(line_) {}

  std::string word() {
    std::string w;
    if (!(in_ >> w)) fail("ends early");
    return w;
  }
  void expect(const std::string& w) {
    if (word() != w) fail("expected \"" + w + "\"");
  }
  int64_t integer(int64_t low, int64_t high) {
    const std::string w = word();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || v < low || v > high) fail("\"" + w + "\" is not an integer in range");
    return v;
  }
  float number() {
    const std::string w = word();
    char* end = nullptr;
    const float v = std::strtof(w.c_str(), &end);
    if (*end != '\0' || w.empty() || std::isnan(v)) fail("\"" + w + "\" is not a number");
    return v;
  }
  void done() {
    std::string rest;
    if (in_ >> rest) fail("has more than expected");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("env description line \"" + line_.substr(0, 200) + "\" " + why);
  }

 private:
  std::string line_;
  std::istringstream in_;
};

Space read_space(Words& w) {
  const std::string kind = w.word();
  if (kind == "discrete") return discrete_space(w.integer(1, INT32_MAX));
  if (kind != "box") w.fail("has space kind \"" + kind + "\"");
  Space s;
  s.kind = SpaceKind::kBox;
  const std::string dtype = w.word();
  if (dtype == "u8") {
    s.dtype = DType::kUInt8;
  } else if (dtype != "f32") {
    w.fail("has dtype \"" + dtype + "\"");
  }
  w.expect("shape");
  const int64_t rank = w.integer(1, 8);
  int64_t numel = 1;
  for (int64_t i = 0; i < rank; ++i) {
    s.shape.push_back(w.integer(1, int64_t{1} << 30));
    numel *= s.shape.back();
    if (numel > (int64_t{1} << 30)) w.fail("has too many elements");
  }
  const std::string bounds = w.word();
  if (bounds == "bounds") {
    for (int64_t i = 0; i < numel; ++i) s.low.push_back(w.number());
    for (int64_t i = 0; i < numel; ++i) s.high.push_back(w.number());
  } else if (bounds != "unbounded") {
    w.fail("expected \"bounds\" or \"unbounded\"");
  }
  w.done();
  return s;
}

std::string hex_of(const std::vector<uint8_t>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string actor_binary() {
  if (const char* path = std::getenv("MOONSEED_ACTOR_BINARY"); path != nullptr && *path != '\0') return path;
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::invalid_argument("describe_env: cannot find this program (/proc/self/exe)");
  const std::string self(buf, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + "moonseed-actor";
}

struct ChildOutput {
  std::string out;
  std::string err;
  int status = 0;
  bool timed_out = false;
  // Another thread's waitpid(-1) (cli/engine/local_actors.cc reaps its actors so) took the status.
  bool status_unknown = false;
};

// The inherited environment with `extra`'s NAME=VALUE pairs replacing or adding names.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  auto name_of = [](const std::string& pair) { return pair.substr(0, pair.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string pair = *e;
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || name_of(x) == name_of(pair);
    if (!replaced) out.push_back(pair);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

// Runs `argv` with stdin /dev/null and both outputs captured, for at most `timeout_s`, with
// `environment` added to the inherited one.
ChildOutput run_child(const std::vector<std::string>& argv, double timeout_s,
                      const std::vector<std::string>& environment = {}) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_pairs = environment_with(environment);
  std::vector<char*> envp;
  for (std::string& pair : env_pairs) envp.push_back(pair.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::invalid_argument("cannot run " + argv[0] + ": " + std::strerror(spawned));
  }
  ChildOutput result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  const size_t limits[2] = {kMaxDescriptionBytes, kMaxErrorBytes};
  int open = 2;
  char buf[1 << 16];
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      // Beyond its limit an output is drained, not kept (stdout that long is refused below).
      const size_t room = limits[i] + 1 > sinks[i]->size() ? limits[i] + 1 - sinks[i]->size() : 0;
      sinks[i]->append(buf, std::min(room, static_cast<size_t>(n)));
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  if (result.timed_out) ::kill(pid, SIGKILL);
  for (;;) {
    if (::waitpid(pid, &result.status, 0) >= 0) break;
    if (errno == EINTR) continue;
    result.status_unknown = true;
    break;
  }
  return result;
}

std::string last_lines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  constexpr size_t kKeep = 2000;
  return text.size() > kKeep ? "..." + text.substr(text.size() - kKeep) : text;
}

}  // namespace

EnvDescription describe_here(const std::string& id, const EnvOptions& options, const EnvFiles& files) {
  std::unique_ptr<Env> env = make_env(id, options, files);
  EnvDescription d;
  d.spec = env->spec();
  d.first_observation.resize(static_cast<size_t>(d.spec.observation.byte_size()));
  env->reset(uint64_t{0}, d.first_observation.data());
  return d;
}

std::string description_text(const EnvDescription& d) {
  std::ostringstream out;
  out << kMagic << "\n";
  write_space(out, "observation", d.spec.observation);
  write_space(out, "action", d.spec.action);
  out << "max_episode_steps " << d.spec.max_episode_steps << "\n";
  out << "first_observation " << hex_of(d.first_observation) << "\n";
  return out.str();
}

EnvDescription parse_description(const std::string& text, const std::string& id) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) {
    throw std::invalid_argument("not an env description (its first line is \"" + line.substr(0, 200) + "\")");
  }
  EnvDescription d;
  d.spec.id = id;
  const char* order[] = {"observation", "action", "max_episode_steps", "first_observation"};
  for (const char* key : order) {
    if (!std::getline(in, line)) throw std::invalid_argument(std::string("env description: no ") + key + " line");
    Words w(line);
    w.expect(key);
    const std::string k = key;
    if (k == "observation") {
      d.spec.observation = read_space(w);
    } else if (k == "action") {
      d.spec.action = read_space(w);
    } else if (k == "max_episode_steps") {
      d.spec.max_episode_steps = static_cast<int>(w.integer(0, INT_MAX));
      w.done();
    } else {
      const std::string hex = w.word();
      w.done();
      if (hex.size() != static_cast<size_t>(d.spec.observation.byte_size()) * 2) {
        w.fail("does not hold one observation");
      }
      for (size_t i = 0; i < hex.size(); i += 2) {
        const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0) w.fail("is not hexadecimal");
        d.first_observation.push_back(static_cast<uint8_t>(hi * 16 + lo));
      }
    }
  }
  return d;
}

std::vector<std::string> describe_arguments(const std::string& id, const EnvOptions& options, const EnvFiles& files) {
  std::vector<std::string> args = {"describe-env", "--id", id};
  if (!files.plugin.empty()) args.insert(args.end(), {"--plugin", files.plugin});
  if (!files.model.empty()) args.insert(args.end(), {"--model", files.model});
  for (const auto& [name, value] : options) args.insert(args.end(), {"--option", name + "=" + base::number_text(value)});
  return args;
}

void parse_describe_arguments(const std::vector<std::string>& args, std::string* id, EnvOptions* options,
                              EnvFiles* files) {
  for (size_t i = 0; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
    const std::string& value = args[i + 1];
    if (args[i] == "--id") {
      *id = value;
    } else if (args[i] == "--plugin") {
      files->plugin = value;
    } else if (args[i] == "--model") {
      files->model = value;
    } else if (args[i] == "--option") {
      const size_t eq = value.find('=');
      char* end = nullptr;
      const double v = eq == std::string::npos ? 0 : std::strtod(value.c_str() + eq + 1, &end);
      if (eq == std::string::npos || end == value.c_str() + eq + 1 || *end != '\0') {
        throw std::invalid_argument("--option takes NAME=NUMBER, got \"" + value + "\"");
      }
      options->emplace_back(value.substr(0, eq), v);
    } else {
      throw std::invalid_argument("unknown argument \"" + args[i] + "\"");
    }
  }
  if (id->empty()) throw std::invalid_argument("--id ID is required");
}

double describe_timeout_s() {
  const char* text = std::getenv("MOONSEED_DESCRIBE_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return kDescribeTimeoutS;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  return *end == '\0' && v > 0 && v <= 86400 ? v : kDescribeTimeoutS;
}

std::string python_interpreter() {
  if (const char* path = std::getenv("MOONSEED_PYTHON"); path != nullptr && *path != '\0') return path;
  return "/usr/bin/python3";
}

PythonCommand python_actor_command(const EnvFiles& files) {
  PythonCommand c;
  c.argv = {python_interpreter(), "-m", "moonseed.actor", "--env", files.python};
  const std::string binary = actor_binary();
  std::string path = binary.substr(0, binary.rfind('/') + 1) + "python";
  if (!files.python_path.empty()) path += ":" + files.python_path;
  if (const char* inherited = std::getenv("PYTHONPATH"); inherited != nullptr && *inherited != '\0') {
    path += std::string(":") + inherited;
  }
  c.environment = {"PYTHONPATH=" + path};
  return c;
}

EnvDescription describe_env(const std::string& id, const EnvOptions& options, const EnvFiles& files) {
  if (files.plugin.empty() && files.python.empty()) return describe_here(id, options, files);
  std::vector<std::string> argv, environment;
  std::string where, crashed;
  if (!files.python.empty()) {
    if (!files.plugin.empty() || !files.model.empty()) {
      throw std::invalid_argument("env.python = \"" + files.python + "\" names the env alone: env.plugin and "
                                  "env.model are for other envs");
    }
    PythonCommand python = python_actor_command(files);
    argv = std::move(python.argv);
    environment = std::move(python.environment);
    argv.push_back("--describe");
    for (const auto& [name, value] : options) argv.insert(argv.end(), {"--option", name + "=" + base::number_text(value)});
    where = "env.python = \"" + files.python + "\": describing env \"" + id + "\" in a child process (" + argv[0] +
            " -m moonseed.actor --describe, " + environment[0] + ") failed: ";
    crashed = "Python crashed";
  } else {
    check_plugin_file(files.plugin);
    argv = describe_arguments(id, options, files);
    argv.insert(argv.begin(), actor_binary());
    where = "plugin " + files.plugin + ": describing env \"" + id + "\" in a child process (" + argv[0] +
            " describe-env) failed: ";
    crashed = "the plugin crashed";
  }
  const double timeout_s = describe_timeout_s();
  ChildOutput child;
  try {
    child = run_child(argv, timeout_s, environment);
  } catch (const std::exception& e) {
    const std::string hint = files.python.empty() ? "" : " (set MOONSEED_PYTHON to the interpreter to use)";
    throw std::invalid_argument(where + e.what() + hint);
  }
  const std::string err = last_lines(child.err);
  const std::string said = err.empty() ? "" : "; it said: " + err;
  if (child.timed_out) {
    throw std::invalid_argument(where + "it did not finish within " + base::number_text(timeout_s) +
                                " s (does making or resetting the env loop? MOONSEED_DESCRIBE_TIMEOUT_S=SECONDS "
                                "waits longer)" + said);
  }
  if (child.status_unknown) {
    // Whatever the exit, a whole description is one; without it the child's words are all there is.
    try {
      return parse_description(child.out, id);
    } catch (const std::exception&) {
      if (!err.empty()) throw std::invalid_argument(err);
      throw std::invalid_argument(where + "it ended without printing a description");
    }
  }
  if (WIFSIGNALED(child.status)) {
    const int sig = WTERMSIG(child.status);
    throw std::invalid_argument(where + crashed + ": the process died of signal " + std::to_string(sig) +
                                " (" + strsignal(sig) + ")" + said);
  }
  if (!WIFEXITED(child.status) || WEXITSTATUS(child.status) != 0) {
    // The child's own message names the file and says why (a refused option, a missing symbol...).
    // The Python actor's message says why too (1: the env failed, 2: its factory cannot be imported).
    const int code = WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1;
    if (!err.empty() && !files.python.empty() && (code == 1 || code == 2)) {
      throw std::invalid_argument("env.python = \"" + files.python + "\": " + err);
    }
    if (!err.empty() && code == 1) throw std::invalid_argument(err);
    throw std::invalid_argument(where + "it exited with code " + std::to_string(WEXITSTATUS(child.status)) + said);
  }
  if (child.out.size() > kMaxDescriptionBytes) {
    throw std::invalid_argument(where + "it printed more than " + std::to_string(kMaxDescriptionBytes) + " bytes");
  }
  try {
    return parse_description(child.out, id);
  } catch (const std::exception& e) {
    throw std::invalid_argument(where + e.what());
  }
}

}  // namespace moonseed::envs
