#include "cli/engine/video_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace moonseed::cli {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
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
  if (!ToolProcess::on_path("ffmpeg")) {
    ::unlink(partial_.c_str());
    throw std::runtime_error("--video needs ffmpeg, which is not on PATH (Debian: apt-get install ffmpeg)");
  }
}

VideoWriter::~VideoWriter() {
  if (done_) return;
  ffmpeg_.reset();  // kills and reaps it
  ::unlink(partial_.c_str());
}

void VideoWriter::start(int width, int height) {
  width_ = width;
  height_ = height;
  std::vector<std::string> args = {"-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                                   "-s", std::to_string(width) + "x" + std::to_string(height),
                                   "-r", std::to_string(fps_), "-i", "-"};
  if (gif_) {
    args.insert(args.end(), {"-f", "gif"});
  } else {
    args.insert(args.end(), {"-pix_fmt", "yuv420p", "-f", "mp4"});
  }
  args.push_back(partial_);
  ffmpeg_ = std::make_unique<ToolProcess>("ffmpeg", args, "ffmpeg");
}

std::string VideoWriter::ffmpeg_error() const {
  const std::string text = ffmpeg_ ? ffmpeg_->messages() : "";
  return text.empty() ? "no message" : text;
}

void VideoWriter::write(const envs::Image& frame) {
  if (done_) throw std::logic_error("VideoWriter::write after finish");
  if (!ffmpeg_) start(frame.width, frame.height);
  if (frame.width != width_ || frame.height != height_) {
    throw std::runtime_error("a frame of " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                             " in a video of " + std::to_string(width_) + "x" + std::to_string(height_));
  }
  if (!ffmpeg_->write(frame.rgb.data(), frame.rgb.size())) {
    const std::string reason = std::strerror(errno);
    ffmpeg_->finish();
    throw std::runtime_error("ffmpeg stopped reading frames (" + reason + "): " + ffmpeg_error());
  }
  ++frames_;
}

void VideoWriter::finish() {
  if (frames_ == 0) throw std::runtime_error("no frame to write to " + path_);
  if (!ToolProcess::succeeded(ffmpeg_->finish())) {
    throw std::runtime_error("ffmpeg failed to write " + path_ + ": " + ffmpeg_error());
  }
  if (::rename(partial_.c_str(), path_.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + partial_ + " to " + path_ + ": " + std::strerror(errno));
  }
  done_ = true;
}

}  // namespace moonseed::cli
