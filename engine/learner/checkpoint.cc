#include "engine/learner/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "engine/learner/optimizer.h"

namespace moonseed::engine {
namespace {

// Bumped when the layout of the archive changes incompatibly.
constexpr int64_t kFormatVersion = 1;
const char* const kFormatKey = "moonseed_checkpoint_format";

std::string errno_text() { return std::strerror(errno); }

// A rank part's counters file (save_rank_counters) says so under this key.
const char* const kRankPartKey = "moonseed_rank_part_format";

void write_counters(torch::serialize::OutputArchive& archive, const Counters& counters) {
  archive.write("optimizer_steps", c10::IValue(counters.optimizer_steps));
  archive.write("frames", c10::IValue(counters.frames));
  archive.write("episodes", c10::IValue(counters.episodes));
  archive.write("elapsed_s", c10::IValue(counters.elapsed_s));
  archive.write("trained_frames", c10::IValue(counters.trained_frames));
  archive.write("eval_episodes", c10::IValue(counters.eval_episodes));
  archive.write("train_s", c10::IValue(counters.train_s));
}

// Closes a file descriptor on every path out of a scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the result (close can report a deferred write error).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

// Writes all of `data`; returns 0 or the errno of the failed write.
int write_fully(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

void fsync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0) {
    throw CheckpointError("cannot fsync directory " + dir + " after writing a checkpoint: " +
                          errno_text());
  }
}

// Pairs every parameter and buffer of `module` with the saved tensor of the same
// name and shape, without modifying anything, so that a mismatch is found before
// the first byte of the model changes.
void match_module(const torch::nn::Module& module, torch::serialize::InputArchive& archive,
                  const std::string& prefix, const std::string& path,
                  std::vector<std::pair<torch::Tensor, torch::Tensor>>& pairs) {
  auto mismatch = [&](const std::string& what) {
    return CheckpointError("checkpoint " + path + " does not fit this model: " + what);
  };
  std::set<std::string> expected;
  auto match_tensor = [&](const std::string& name, const torch::Tensor& current, bool buffer) {
    expected.insert(name);
    torch::Tensor saved;
    if (!archive.try_read(name, saved, buffer)) {
      throw mismatch("it has no " + std::string(buffer ? "buffer " : "parameter ") + prefix +
                     name);
    }
    if (saved.sizes() != current.sizes() || saved.scalar_type() != current.scalar_type()) {
      std::ostringstream os;
      os << prefix << name << " is " << saved.scalar_type() << " " << saved.sizes()
         << " in the checkpoint but " << current.scalar_type() << " " << current.sizes()
         << " in the model";
      throw mismatch(os.str());
    }
    pairs.emplace_back(current, saved);
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    match_tensor(p.key(), p.value(), false);
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) {
    match_tensor(b.key(), b.value(), true);
  }
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    expected.insert(child.key());
    torch::serialize::InputArchive child_archive;
    if (!archive.try_read(child.key(), child_archive)) {
      throw mismatch("it has no submodule " + prefix + child.key());
    }
    match_module(*child.value(), child_archive, prefix + child.key() + ".", path, pairs);
  }
  for (const std::string& key : archive.keys()) {
    if (expected.count(key) == 0) throw mismatch("the model has nothing named " + prefix + key);
  }
}

c10::optional<torch::Device> device_of(const torch::nn::Module& model) {
  const auto params = model.parameters();
  if (params.empty()) return c10::nullopt;
  return params.front().device();
}

}  // namespace

std::string short_reason(const c10::Error& e) {
  std::string text = e.what_without_backtrace();
  const size_t eol = text.find('\n');
  return eol == std::string::npos ? text : text.substr(0, eol);
}

void write_archive_atomically(torch::serialize::OutputArchive& archive, const std::string& path,
                              const std::string& what) {
  const std::string partial = path + ".partial";
  FileDescriptor fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw CheckpointError("cannot create " + what + " " + partial + ": " + errno_text());
  // The callback never reports a failed write to LibTorch's zip writer: a
  // short count makes it throw mid-archive, and its destructor then finishes
  // the archive through the same failing callback and throws again, out of a
  // destructor: std::terminate. So the first error is kept, the rest of the
  // archive is consumed unwritten, and the error is reported once it returns.
  int write_errno = 0;
  try {
    archive.save_to([&](const void* data, size_t size) -> size_t {
      if (write_errno == 0) write_errno = write_fully(fd.get(), data, size);
      return size;
    });
  } catch (const c10::Error& e) {
    ::unlink(partial.c_str());
    throw CheckpointError("cannot write " + what + " " + partial + ": " +
                          (write_errno != 0 ? std::strerror(write_errno) : short_reason(e)));
  }
  const auto fail = [&](const std::string& doing, int error) {
    ::unlink(partial.c_str());
    return CheckpointError("cannot " + doing + ": " + std::strerror(error));
  };
  if (write_errno != 0) throw fail("write " + what + " " + partial, write_errno);
  if (::fsync(fd.get()) != 0) throw fail("fsync " + what + " " + partial, errno);
  if (!fd.close()) throw fail("close " + what + " " + partial, errno);
  if (::rename(partial.c_str(), path.c_str()) != 0) throw fail("rename " + partial + " to " + path, errno);
  // The rename is durable only once the directory entry is on disk.
  fsync_directory_of(path);
}

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const Counters& counters) {
  torch::serialize::OutputArchive archive;
  archive.write(kFormatKey, c10::IValue(kFormatVersion));
  archive.write("optimizer_kind", c10::IValue(optimizer_kind(optimizer)));
  write_counters(archive, counters);
  torch::serialize::OutputArchive model_archive(archive.compilation_unit());
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);

  write_archive_atomically(archive, path, "checkpoint");
}

namespace {

// The checkpoint's archive, loaded onto `device`, after its format is checked.
torch::serialize::InputArchive open_checkpoint(const std::string& path, c10::optional<torch::Device> device) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw CheckpointError("checkpoint not found: " + path);
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint " + path +
                          " cannot be read (truncated or corrupt): " + short_reason(e));
  }
  try {
    c10::IValue format;
    if (!archive.try_read(kFormatKey, format) || !format.isInt()) {
      throw CheckpointError("file " + path + " is not a Moonseed checkpoint");
    }
    if (format.toInt() != kFormatVersion) {
      throw CheckpointError("checkpoint " + path + " has format " +
                            std::to_string(format.toInt()) + ", this build reads format " +
                            std::to_string(kFormatVersion));
    }
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint " + path + " is corrupt: " + short_reason(e));
  }
  return archive;
}

// The run's counters (c10::Error escapes for a corrupt file).
Counters read_counters(torch::serialize::InputArchive& archive) {
  Counters counters;
  c10::IValue value;
  archive.read("optimizer_steps", value);
  counters.optimizer_steps = value.toInt();
  archive.read("frames", value);
  counters.frames = value.toInt();
  archive.read("episodes", value);
  counters.episodes = value.toInt();
  archive.read("elapsed_s", value);
  counters.elapsed_s = value.toDouble();
  // Added later in format 1: older checkpoints lack them and start these counters at 0.
  if (archive.try_read("trained_frames", value)) counters.trained_frames = value.toInt();
  if (archive.try_read("eval_episodes", value)) counters.eval_episodes = value.toInt();
  // Older checkpoints did not tell training time from wall time: their wall time stands in.
  counters.train_s = archive.try_read("train_s", value) ? value.toDouble() : counters.elapsed_s;
  return counters;
}

void copy_saved(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& pairs) {
  torch::NoGradGuard no_grad;
  for (const auto& [current, saved] : pairs) current.copy_(saved);
}

}  // namespace

Counters load_checkpoint(const std::string& path, torch::nn::Module& model,
                         torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive = open_checkpoint(path, device_of(model));
  Counters counters;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
  try {
    c10::IValue value;
    archive.read("optimizer_kind", value);
    const std::string saved_kind = value.toStringRef();
    if (saved_kind != optimizer_kind(optimizer)) {
      throw CheckpointError("checkpoint " + path + " holds " + saved_kind +
                            " optimizer state but the optimizer is " +
                            optimizer_kind(optimizer));
    }
    counters = read_counters(archive);

    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    match_module(model, model_archive, "", path, pairs);

    // Optimizer first: it is the step that can still fail on a bad file, and
    // the model must stay untouched when loading fails.
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint " + path + " is corrupt: " + short_reason(e));
  }
  copy_saved(pairs);
  return counters;
}

Counters load_checkpoint_model(const std::string& path, torch::nn::Module& model, const std::string& part) {
  torch::serialize::InputArchive archive = open_checkpoint(path, device_of(model));
  Counters counters;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
  try {
    counters = read_counters(archive);
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    if (part.empty()) {
      match_module(model, model_archive, "", path, pairs);
    } else {
      torch::serialize::InputArchive part_archive;
      if (!model_archive.try_read(part, part_archive)) {
        throw CheckpointError("checkpoint " + path + " does not fit this model: it has no submodule " + part);
      }
      match_module(model, part_archive, part + ".", path, pairs);
    }
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint " + path + " is corrupt: " + short_reason(e));
  }
  copy_saved(pairs);
  return counters;
}

void save_rank_counters(const std::string& path, const Counters& counters, int rank) {
  torch::serialize::OutputArchive archive;
  archive.write(kRankPartKey, c10::IValue(kFormatVersion));
  archive.write("rank", c10::IValue(static_cast<int64_t>(rank)));
  write_counters(archive, counters);
  write_archive_atomically(archive, path, "rank part");
}

Counters load_rank_counters(const std::string& path, int rank) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw CheckpointError("rank part not found: " + path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, torch::Device(torch::kCPU));
    c10::IValue value;
    if (!archive.try_read(kRankPartKey, value) || !value.isInt()) {
      throw CheckpointError("file " + path + " is not a Moonseed rank part");
    }
    if (value.toInt() != kFormatVersion) {
      throw CheckpointError("rank part " + path + " has format " + std::to_string(value.toInt()) +
                            ", this build reads format " + std::to_string(kFormatVersion));
    }
    archive.read("rank", value);
    if (value.toInt() != rank) {
      throw CheckpointError("rank part " + path + " is rank " + std::to_string(value.toInt()) + "'s, not rank " +
                            std::to_string(rank) + "'s");
    }
    return read_counters(archive);
  } catch (const c10::Error& e) {
    throw CheckpointError("rank part " + path + " cannot be read (truncated or corrupt): " + short_reason(e));
  }
}

}  // namespace moonseed::engine
