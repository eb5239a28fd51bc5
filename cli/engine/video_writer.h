// VideoWriter: RGB frames into an .mp4 (H.264, yuv420p) or an animated .gif through Debian's
// ffmpeg, a child process (cli/common/tool_process.h) that reads raw rgb24 frames from a pipe
// (docs/eval.md). The file appears whole or not at all: ffmpeg writes PATH.partial, renamed
// to PATH once it exited cleanly; an abandoned or failed writer removes it.
//
// Not thread-safe: one thread writes its frames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli/common/tool_process.h"
#include "envs/env.h"

namespace moonseed::cli {

class VideoWriter {
 public:
  // Checks what can fail before any frame: the name ends in .mp4 or .gif, PATH.partial can be
  // created, and ffmpeg is on PATH. Throws std::runtime_error (std::invalid_argument for the
  // name) saying which.
  VideoWriter(std::string path, int fps);
  ~VideoWriter();  // without finish(): stops ffmpeg, removes PATH.partial
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  // The first frame sets the size; every later one must have it. Throws std::runtime_error
  // with ffmpeg's own message when it stopped reading.
  void write(const envs::Image& frame);
  // Ends the stream, waits for ffmpeg, renames PATH.partial to PATH. Throws
  // std::runtime_error with ffmpeg's message when it failed, or when no frame was written.
  void finish();

  int64_t frames() const { return frames_; }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  void start(int width, int height);
  std::string ffmpeg_error() const;

  std::string path_;
  std::string partial_;
  bool gif_ = false;
  int fps_;
  std::unique_ptr<ToolProcess> ffmpeg_;  // from the first frame
  int64_t frames_ = 0;
  int width_ = 0, height_ = 0;
  bool done_ = false;
};

}  // namespace moonseed::cli
