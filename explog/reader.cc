#include "explog/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace moonseed::explog {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_segment_name(const std::string& name) {
  return ends_with(name, ".mslog") || ends_with(name, ".mslog.partial");
}

// Reads `size` bytes at `offset`; a short read (end of file) is a FormatError.
void pread_exactly(int fd, uint8_t* out, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FormatError(std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0) throw FormatError("file ends at offset " + std::to_string(offset));
    out += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

std::vector<uint8_t> pread_vector(int fd, size_t size, uint64_t offset) {
  std::vector<uint8_t> out(size);
  pread_exactly(fd, out.data(), size, offset);
  return out;
}

std::string torn_message(uint64_t offset, const std::string& file, size_t complete) {
  return "torn at offset " + std::to_string(offset) + " of " + file + " (" +
         std::to_string(complete) + " complete chunks before it)";
}

}  // namespace

bool RecordFilter::may_match(const ChunkSummary& c) const {
  if (episode_id && (*episode_id < c.min_episode_id || *episode_id > c.max_episode_id)) return false;
  if (actor_id && !c.has_actor(*actor_id)) return false;
  if (min_wall_time_ns && c.max_wall_time_ns < *min_wall_time_ns) return false;
  if (max_wall_time_ns && c.min_wall_time_ns > *max_wall_time_ns) return false;
  return true;
}

bool RecordFilter::matches(const RecordMeta& m) const {
  if (episode_id && m.episode_id != *episode_id) return false;
  if (actor_id && m.actor_id != *actor_id) return false;
  if (min_wall_time_ns && m.wall_time_ns < *min_wall_time_ns) return false;
  if (max_wall_time_ns && m.wall_time_ns > *max_wall_time_ns) return false;
  return true;
}

// ---- RecordCursor ----

RecordCursor::RecordCursor(const LogReader& reader, std::vector<size_t> chunks, RecordFilter filter,
                           std::vector<bool> columns)
    : reader_(&reader),
      chunks_(std::move(chunks)),
      filter_(std::move(filter)),
      columns_(std::move(columns)) {}

std::optional<Record> RecordCursor::next() {
  while (true) {
    while (buffer_pos_ < buffer_.size()) {
      Record& r = buffer_[buffer_pos_++];
      if (filter_.matches(r.meta)) return std::move(r);
    }
    if (next_chunk_ >= chunks_.size()) return std::nullopt;
    const size_t chunk = chunks_[next_chunk_++];
    buffer_.clear();
    buffer_pos_ = 0;
    try {
      buffer_ = reader_->read_chunk(chunk, columns_);
    } catch (const FormatError& e) {
      const ChunkRef& ref = reader_->chunks()[chunk];
      problems_.push_back(LogProblem{reader_->segments()[ref.segment].path,
                                     static_cast<int64_t>(ref.index_in_file), ref.summary.offset,
                                     false, e.what()});
    }
  }
}

// ---- LogReader ----

LogReader::LogReader(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_regular_file(ec) && is_segment_name(entry.path().filename().string())) {
        files.push_back(entry.path().string());
      }
    }
    if (ec) throw std::runtime_error("experience log: cannot list " + path + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) open_file(f);
  } else if (fs::is_regular_file(path, ec)) {
    open_file(path);
  } else {
    throw std::runtime_error("experience log: " + path + " is neither a segment file nor a directory");
  }
  if (segments_.empty()) {
    throw std::runtime_error("experience log: no readable segment in " + path +
                             (problems_.empty() ? "" : ": " + problems_.front().message));
  }
}

LogReader::~LogReader() {
  for (int fd : fds_) ::close(fd);
}

uint64_t LogReader::record_count() const {
  uint64_t n = 0;
  for (const ChunkRef& c : chunks_) n += c.summary.record_count;
  return n;
}

void LogReader::open_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    problems_.push_back({path, -1, 0, false, "cannot open " + path + ": " + std::strerror(errno)});
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problems_.push_back({path, -1, 0, false, "cannot stat " + path + ": " + std::strerror(errno)});
    ::close(fd);
    return;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  LogSchema schema;
  uint64_t header_size = 0;
  try {
    if (size < kFileHeaderPrefixSize) {
      throw FormatError("file of " + std::to_string(size) + " bytes has no complete header");
    }
    uint8_t prefix[kFileHeaderPrefixSize];
    pread_exactly(fd, prefix, sizeof(prefix), 0);
    header_size = file_header_size(prefix);
    if (header_size > size) {
      throw FormatError("file of " + std::to_string(size) + " bytes has no complete header");
    }
    const std::vector<uint8_t> header = pread_vector(fd, header_size, 0);
    schema = decode_file_header(header.data(), header.size());
  } catch (const FormatError& e) {
    // A header cut short is what a crash right after creating the file leaves.
    const bool torn = header_size > size || size < kFileHeaderPrefixSize;
    problems_.push_back({path, -1, 0, torn,
                         (torn ? torn_message(0, path, 0) + ": " : path + ": ") + e.what()});
    ::close(fd);
    return;
  }
  if (!segments_.empty() && !same_layout(segments_.front().schema, schema)) {
    problems_.push_back({path, -1, 0, false,
                         path + ": columns differ from " + segments_.front().path +
                             "; segment skipped"});
    ::close(fd);
    return;
  }
  SegmentInfo info;
  info.path = path;
  info.schema = std::move(schema);
  info.file_size = size;
  info.header_size = header_size;
  info.first_chunk = chunks_.size();
  segments_.push_back(info);
  fds_.push_back(fd);
  const size_t segment = segments_.size() - 1;
  bool indexed = false;
  if (size >= header_size + kTrailerSize) {
    uint8_t trailer_bytes[kTrailerSize];
    pread_exactly(fd, trailer_bytes, kTrailerSize, size - kTrailerSize);
    if (const std::optional<Trailer> trailer = decode_trailer(trailer_bytes)) {
      indexed = index_by_footer(segment, fd, *trailer);
    }
  }
  if (!indexed) index_by_scan(segment, fd);
  segments_[segment].chunk_count = chunks_.size() - segments_[segment].first_chunk;
}

bool LogReader::index_by_footer(size_t segment, int fd, const Trailer& trailer) {
  SegmentInfo& info = segments_[segment];
  const uint64_t footer_end = info.file_size - kTrailerSize;
  try {
    if (trailer.footer_offset < info.header_size || trailer.footer_offset > footer_end) {
      throw FormatError("trailer points at offset " + std::to_string(trailer.footer_offset));
    }
    const std::vector<uint8_t> footer =
        pread_vector(fd, footer_end - trailer.footer_offset, trailer.footer_offset);
    std::vector<ChunkSummary> summaries = decode_footer(footer.data(), footer.size(), trailer);
    if (!summaries.empty() && summaries.front().offset < info.header_size) {
      throw FormatError("first chunk offset " + std::to_string(summaries.front().offset) +
                        " is inside the file header");
    }
    for (size_t i = 0; i < summaries.size(); ++i) {
      chunks_.push_back(ChunkRef{segment, i, std::move(summaries[i])});
    }
  } catch (const FormatError& e) {
    problems_.push_back({info.path, -1, trailer.footer_offset, false,
                         "footer at offset " + std::to_string(trailer.footer_offset) + " of " +
                             info.path + " is unusable (" + e.what() +
                             "); index rebuilt by scanning chunk headers"});
    return false;
  }
  info.has_footer = true;
  info.data_end = trailer.footer_offset;
  return true;
}

ChunkHeader LogReader::read_header(int fd, uint64_t offset, uint64_t end) const {
  if (offset > end || end - offset < kChunkHeaderFixedSize) {
    throw FormatError("chunk header runs past offset " + std::to_string(end));
  }
  uint8_t fixed[kChunkHeaderFixedSize];
  pread_exactly(fd, fixed, sizeof(fixed), offset);
  const size_t header_size = chunk_header_size(fixed, schema().columns.size());
  if (header_size > end - offset) {
    throw FormatError("chunk header runs past offset " + std::to_string(end));
  }
  const std::vector<uint8_t> header = pread_vector(fd, header_size, offset);
  return decode_chunk_header(header.data(), header.size(), schema().columns.size());
}

std::optional<uint64_t> LogReader::find_next_chunk(int fd, uint64_t from, uint64_t end) const {
  constexpr size_t kWindow = 1u << 20;
  std::vector<uint8_t> window;
  for (uint64_t start = from; start + sizeof(kChunkMagic) <= end;
       start += kWindow - (sizeof(kChunkMagic) - 1)) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kWindow, end - start));
    window.resize(n);
    pread_exactly(fd, window.data(), n, start);
    for (size_t i = 0; i + sizeof(kChunkMagic) <= n; ++i) {
      if (std::memcmp(window.data() + i, kChunkMagic, sizeof(kChunkMagic)) != 0) continue;
      try {
        const ChunkHeader h = read_header(fd, start + i, end);
        if (h.total_size() <= end - (start + i)) return start + i;
      } catch (const FormatError&) {
        // Not a chunk header after all (the magic bytes can occur in data).
      }
    }
    if (n < kWindow) break;
  }
  return std::nullopt;
}

void LogReader::index_by_scan(size_t segment, int fd) {
  SegmentInfo& info = segments_[segment];
  const uint64_t size = info.file_size;
  uint64_t pos = info.header_size;
  size_t complete = 0;
  info.data_end = size;
  while (pos < size) {
    uint8_t magic[sizeof(kFooterMagic)] = {};
    if (size - pos >= sizeof(magic)) pread_exactly(fd, magic, sizeof(magic), pos);
    if (std::memcmp(magic, kFooterMagic, sizeof(magic)) == 0) {  // a footer we could not use
      info.data_end = pos;
      return;
    }
    std::string why;
    try {
      const ChunkHeader h = read_header(fd, pos, size);
      if (h.total_size() <= size - pos) {
        ChunkRef ref{segment, complete, h.summary};
        ref.summary.offset = pos;
        chunks_.push_back(std::move(ref));
        ++complete;
        pos += h.total_size();
        continue;
      }
      why = "its data runs past the end of the file";
    } catch (const FormatError& e) {
      why = e.what();
    }
    // Either the tail a crash left, or a corrupt header in the middle: a later
    // valid chunk tells them apart.
    const std::optional<uint64_t> next = find_next_chunk(fd, pos + 1, size);
    if (!next) {
      info.torn_at = pos;
      info.data_end = pos;
      problems_.push_back({info.path, static_cast<int64_t>(complete), pos, true,
                           torn_message(pos, info.path, complete) + ": " + why});
      return;
    }
    problems_.push_back({info.path, static_cast<int64_t>(complete), pos, false,
                         "chunk " + std::to_string(complete) + " at offset " + std::to_string(pos) +
                             " of " + info.path + " has a bad header (" + why +
                             "); skipped to the next chunk at offset " + std::to_string(*next)});
    pos = *next;
  }
}

std::string LogReader::where(size_t chunk) const {
  const ChunkRef& ref = chunks_[chunk];
  return "chunk " + std::to_string(ref.index_in_file) + " at offset " +
         std::to_string(ref.summary.offset) + " of " + segments_[ref.segment].path;
}

std::vector<Record> LogReader::read_chunk(size_t chunk, const std::vector<bool>& columns) const {
  if (chunk >= chunks_.size()) {
    throw std::out_of_range("LogReader: chunk " + std::to_string(chunk) + " of " +
                            std::to_string(chunks_.size()));
  }
  const ChunkRef& ref = chunks_[chunk];
  const SegmentInfo& seg = segments_[ref.segment];
  const int fd = fds_[ref.segment];
  try {
    const ChunkHeader h = read_header(fd, ref.summary.offset, seg.data_end);
    if (h.total_size() > seg.data_end - ref.summary.offset) {
      throw FormatError("chunk data runs past offset " + std::to_string(seg.data_end));
    }
    const std::vector<uint8_t> data = pread_vector(fd, h.data_size, ref.summary.offset + h.header_size);
    chunks_decoded_.fetch_add(1);
    return decode_chunk_data(seg.schema, h, data.data(), data.size(), &columns);
  } catch (const FormatError& e) {
    throw FormatError(where(chunk) + ": " + e.what());
  }
}

std::vector<size_t> LogReader::find_chunks(const RecordFilter& filter) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    if (filter.may_match(chunks_[i].summary)) out.push_back(i);
  }
  return out;
}

RecordCursor LogReader::scan(const RecordFilter& filter, std::vector<bool> columns) const {
  if (!columns.empty() && columns.size() != schema().columns.size()) {
    throw std::invalid_argument("LogReader::scan: a selection of " + std::to_string(columns.size()) +
                                " columns for a log of " + std::to_string(schema().columns.size()));
  }
  return RecordCursor(*this, find_chunks(filter), filter, std::move(columns));
}

std::vector<LogProblem> LogReader::verify() const {
  std::vector<LogProblem> out = problems_;
  auto report = [&](size_t chunk, const std::string& what) {
    const ChunkRef& ref = chunks_[chunk];
    out.push_back({segments_[ref.segment].path, static_cast<int64_t>(ref.index_in_file),
                   ref.summary.offset, false, where(chunk) + ": " + what});
  };
  for (size_t s = 0; s < segments_.size(); ++s) {
    const SegmentInfo& seg = segments_[s];
    uint64_t expected = seg.header_size;  // where the next chunk should start
    bool known = true;                    // false after a chunk whose header is unreadable
    for (size_t i = seg.first_chunk; i < seg.first_chunk + seg.chunk_count; ++i) {
      const ChunkRef& ref = chunks_[i];
      if (seg.has_footer && known && expected != ref.summary.offset) {
        report(i, "the previous chunk ends at offset " + std::to_string(expected));
      }
      known = false;
      try {
        const ChunkHeader h = read_header(fds_[s], ref.summary.offset, seg.data_end);
        expected = ref.summary.offset + h.total_size();
        known = true;
        ChunkSummary from_header = h.summary;
        from_header.offset = ref.summary.offset;
        if (!(from_header == ref.summary)) report(i, "the footer's index entry differs from the header");
        read_chunk(i);
      } catch (const FormatError& e) {
        const std::string what = e.what();
        const std::string prefix = where(i) + ": ";
        report(i, what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what);
      }
    }
    if (seg.has_footer && known && expected != seg.data_end) {
      out.push_back({seg.path, -1, expected, false,
                     "bytes between offset " + std::to_string(expected) + " and the footer at " +
                         std::to_string(seg.data_end) + " of " + seg.path + " belong to no chunk"});
    }
  }
  return out;
}

// ---- MergedCursor ----

MergedCursor::MergedCursor(const std::vector<const LogReader*>& readers, const RecordFilter& filter) {
  for (const LogReader* r : readers) cursors_.push_back(r->scan(filter));
  for (RecordCursor& c : cursors_) heads_.push_back(c.next());
}

std::optional<Record> MergedCursor::next(size_t* source) {
  size_t best = heads_.size();
  for (size_t i = 0; i < heads_.size(); ++i) {
    if (!heads_[i]) continue;
    if (best == heads_.size() || heads_[i]->meta.wall_time_ns < heads_[best]->meta.wall_time_ns) {
      best = i;
    }
  }
  if (best == heads_.size()) return std::nullopt;
  std::optional<Record> out = std::move(heads_[best]);
  heads_[best] = cursors_[best].next();
  if (source) *source = best;
  return out;
}

std::vector<LogProblem> MergedCursor::problems() const {
  std::vector<LogProblem> out;
  for (const RecordCursor& c : cursors_) {
    out.insert(out.end(), c.problems().begin(), c.problems().end());
  }
  return out;
}

}  // namespace moonseed::explog
