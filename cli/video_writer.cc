#include "cli/video_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace moonseed::cli {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The first executable `name` in the directories of $PATH, or "".
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(begin, end - begin);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return "";
}

}  // namespace

VideoWriter::VideoWriter(std::string path, int fps) : path_(std::move(path)), fps_(fps) {
  gif_ = ends_with(path_, ".gif");
  if (!gif_ && !ends_with(path_, ".mp4")) {
    throw std::invalid_argument("--video writes .mp4 or .gif files, got '" + path_ + "'");
  }
  partial_ = path_ + ".partial";
  const int fd = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + partial_ + ": " + std::strerror(errno));
  ::close(fd);
  ffmpeg_ = find_on_path("ffmpeg");
  if (ffmpeg_.empty()) {
    ::unlink(partial_.c_str());
    throw std::runtime_error("--video needs ffmpeg, which is not on PATH (Debian: apt-get install ffmpeg)");
  }
}

VideoWriter::~VideoWriter() {
  if (!done_) abandon();
}

void VideoWriter::abandon() {
  if (pipe_ >= 0) ::close(pipe_);
  pipe_ = -1;
  if (child_ > 0) {
    ::kill(child_, SIGKILL);
    int status = 0;
    ::waitpid(child_, &status, 0);
    child_ = -1;
  }
  if (stderr_ >= 0) ::close(stderr_);
  stderr_ = -1;
  ::unlink(partial_.c_str());
  done_ = true;
}

void VideoWriter::start(int width, int height) {
  width_ = width;
  height_ = height;
  stderr_ = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (stderr_ < 0) throw std::runtime_error(std::string("cannot make a file for ffmpeg's messages: ") + std::strerror(errno));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  std::vector<std::string> args = {ffmpeg_, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo",
                                   "-pix_fmt", "rgb24", "-s", size, "-r", std::to_string(fps_), "-i", "-"};
  if (gif_) {
    args.insert(args.end(), {"-f", "gif"});
  } else {
    args.insert(args.end(), {"-pix_fmt", "yuv420p", "-f", "mp4"});
  }
  args.push_back(partial_);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stderr_, 2);
  const int rc = ::posix_spawn(&child_, ffmpeg_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    child_ = -1;
    throw std::runtime_error("cannot start " + ffmpeg_ + ": " + std::strerror(rc));
  }
  pipe_ = fds[1];
}

std::string VideoWriter::ffmpeg_error() {
  std::string text;
  if (stderr_ >= 0) {
    char buffer[4096];
    off_t at = 0;
    for (ssize_t n; (n = ::pread(stderr_, buffer, sizeof buffer, at)) > 0; at += n) text.append(buffer, static_cast<size_t>(n));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "no message" : text;
}

void VideoWriter::write(const envs::Image& frame) {
  if (done_) throw std::logic_error("VideoWriter::write after finish");
  if (child_ < 0) start(frame.width, frame.height);
  if (frame.width != width_ || frame.height != height_) {
    throw std::runtime_error("a frame of " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                             " in a video of " + std::to_string(width_) + "x" + std::to_string(height_));
  }
  const uint8_t* data = frame.rgb.data();
  size_t left = frame.rgb.size();
  while (left > 0) {
    const ssize_t n = ::write(pipe_, data, left);  // SIGPIPE ignored by the caller: EPIPE instead
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(pipe_);
      pipe_ = -1;
      int status = 0;
      ::waitpid(child_, &status, 0);
      child_ = -1;
      throw std::runtime_error("ffmpeg stopped reading frames (" + reason + "): " + ffmpeg_error());
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  ++frames_;
}

void VideoWriter::finish() {
  if (frames_ == 0) throw std::runtime_error("no frame to write to " + path_);
  ::close(pipe_);
  pipe_ = -1;
  int status = 0;
  while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
  }
  child_ = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("ffmpeg failed to write " + path_ + ": " + ffmpeg_error());
  }
  if (::rename(partial_.c_str(), path_.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + partial_ + " to " + path_ + ": " + std::strerror(errno));
  }
  ::close(stderr_);
  stderr_ = -1;
  done_ = true;
}

}  // namespace moonseed::cli
