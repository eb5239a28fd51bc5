#include "tests/e2e/checkpoint_files.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

#include "engine/learner/learner.h"
#include "scripts/loader/experiment_loader.h"

namespace moonseed::testing {

HeldCheckpoint load_checkpoint(const std::string& run_dir, const std::string& checkpoint) {
  const engine::ExperimentConfig config = scripts::load_experiment(run_dir + "/config.lua");
  engine::Learner learner(config, "checkpoint-test");
  const engine::Counters counters = learner.restore(checkpoint);
  HeldCheckpoint held;
  held.optimizer_steps = counters.optimizer_steps;
  held.frames = counters.frames;
  if (config.algo == "r2d2") held.replay_size = learner.stats().metric("replay_size");
  held.weights_hash = learner.weights_hash();
  return held;
}

std::vector<std::string> checkpoint_paths(const std::string& run_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string& name : file_names(run_dir + "/checkpoints")) {
    if (checkpoint_step(name) >= 0) found.emplace_back(checkpoint_step(name), run_dir + "/checkpoints/" + name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

void flip_a_tensor_exponent(const std::string& archive) {
  std::fstream f(archive, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto u16 = [&](size_t at) {
    const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(bytes[i])); };
    return byte(at) | byte(at + 1) << 8;
  };
  // Zip local file headers: "PK\3\4", name length at 26, extra length at 28, the name at 30.
  for (size_t at = bytes.find("PK\x03\x04"); at != std::string::npos && at + 30 < bytes.size();
       at = bytes.find("PK\x03\x04", at + 4)) {
    const size_t name_length = u16(at + 26);
    const std::string name = bytes.substr(at + 30, name_length);
    if (name.find("/data/") == std::string::npos) continue;
    const size_t data = at + 30 + name_length + u16(at + 28);
    f.clear();
    f.seekp(static_cast<std::streamoff>(data + 3));
    f.put(static_cast<char>(bytes[data + 3] ^ 0x02));
    if (!f) throw std::runtime_error("cannot write " + archive);
    return;
  }
  throw std::runtime_error(archive + " holds no tensor record");
}

void copy_run_directory(const std::string& from, const std::string& to) {
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (e.is_regular_file()) std::filesystem::copy_file(e.path(), to + "/" + e.path().filename().string());
  }
  std::filesystem::copy(from + "/checkpoints", to + "/checkpoints", std::filesystem::copy_options::recursive);
}

std::vector<std::string> file_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

int64_t checkpoint_step(const std::string& name) {
  static const std::regex pattern("ckpt-([0-9]+)\\.pt");
  std::smatch m;
  return std::regex_match(name, m, pattern) ? std::stoll(m[1].str()) : -1;
}

std::string newest_complete_r2d2_checkpoint(const std::string& run_dir) {
  const std::string dir = run_dir + "/checkpoints";
  int64_t newest = -1;
  for (const std::string& name : file_names(dir)) {
    const int64_t step = checkpoint_step(name);
    const std::string path = dir + "/" + name;
    if (step > newest && std::filesystem::exists(path + ".replay") && std::filesystem::exists(path + ".sum")) {
      newest = step;
    }
  }
  return newest < 0 ? "" : dir + "/ckpt-" + std::to_string(newest) + ".pt";
}

std::vector<MetricsLine> read_metrics_lines(const std::string& path) {
  static const std::regex number("\"([a-z_]+)\": (-?[0-9][0-9.eE+-]*)");
  static const std::regex event("\"event\": \"([a-z_]+)\"");
  static const std::regex checkpoint("\"checkpoint\": \"([^\"]*)\"");
  std::vector<MetricsLine> lines;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    MetricsLine line;
    for (std::sregex_iterator it(text.begin(), text.end(), number), end; it != end; ++it) {
      line.numbers[(*it)[1].str()] = std::stod((*it)[2].str());
    }
    std::smatch m;
    if (std::regex_search(text, m, event)) line.event = m[1].str();
    if (std::regex_search(text, m, checkpoint)) line.checkpoint = m[1].str();
    line.text = std::move(text);
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<MetricsLine> events(const std::vector<MetricsLine>& lines, const std::string& event) {
  std::vector<MetricsLine> out;
  for (const MetricsLine& line : lines) {
    if (line.event == event) out.push_back(line);
  }
  return out;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

DirectoryWatch::DirectoryWatch(const std::string& dir) : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
  if (fd_ < 0 || ::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
    throw std::runtime_error("cannot watch " + dir + " with inotify");
  }
}

DirectoryWatch::~DirectoryWatch() { ::close(fd_); }

std::optional<std::string> DirectoryWatch::next(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (pending_.empty()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    alignas(inotify_event) char buffer[16384];
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      if (event->len > 0) pending_.emplace_back(event->name);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  std::string name = std::move(pending_.front());
  pending_.pop_front();
  return name;
}

}  // namespace moonseed::testing
