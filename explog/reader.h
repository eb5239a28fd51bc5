// LogReader: reads an experience log (docs/experience-log-format.md) written
// by LogWriter: one segment file, or a directory of them (every *.mslog and
// *.mslog.partial, in name order, so NAME-000001 before NAME-000002).
//
// Opening reads each file's header and its index: the footer of a cleanly
// closed segment, or, for a segment without one (a .partial left by a crash),
// a scan of the chunk headers, which stops at a torn tail and skips (and
// reports) a chunk whose header is corrupt. No chunk data is read at open.
// Records are then read chunk by chunk; find_chunks and scan use the index to
// pick chunks by episode, actor or wall-time range without decompressing the
// others, and read_chunk and scan take a column selection to decompress only
// the meta and those columns' blocks of a chunk (its whole data is still read
// and checked against its data CRC).
//
// Failure: a path that is neither a segment file nor a directory holding one
// with a readable header throws std::runtime_error naming the path. Problems
// found at open (torn tail, corrupt footer, a segment whose header is bad or
// whose columns differ from the first one's: skipped; codec and filters may
// differ, each segment is decoded with its own) are in problems();
// verify() adds every checksum. read_chunk throws FormatError naming the file,
// chunk and offset; a RecordCursor skips such chunks and lists them.
//
// Ownership: cursors point into their reader, which must outlive them.
// Thread-safety: const members are safe to call concurrently (reads use
// pread). A cursor is used by one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "explog/format.h"

namespace moonseed::explog {

struct LogProblem {
  std::string file;
  int64_t chunk = -1;   // chunk index within the file; -1 when not about one chunk
  uint64_t offset = 0;  // byte offset in the file
  bool torn = false;    // an incomplete chunk at the end of the file (after a crash)
  std::string message;  // names the file, the chunk and the offset
};

struct SegmentInfo {
  std::string path;
  // The segment's own header: its columns are the log's (schema()); its codec
  // and column filters, how its chunks are stored, may differ from another
  // segment's (a resumed run with other settings).
  LogSchema schema;
  uint64_t file_size = 0;
  uint64_t header_size = 0;  // the file header's; the first chunk starts here
  bool has_footer = false;  // closed cleanly
  size_t first_chunk = 0;   // into LogReader::chunks()
  size_t chunk_count = 0;
  uint64_t data_end = 0;    // where chunks end: the footer's offset, or where the scan stopped
  std::optional<uint64_t> torn_at;
};

struct ChunkRef {
  size_t segment = 0;       // into LogReader::segments()
  size_t index_in_file = 0;
  ChunkSummary summary;
};

// Every set field must match; wall-time bounds are inclusive.
struct RecordFilter {
  std::optional<int64_t> episode_id;
  std::optional<int32_t> actor_id;
  std::optional<int64_t> min_wall_time_ns;
  std::optional<int64_t> max_wall_time_ns;

  bool may_match(const ChunkSummary& chunk) const;  // false: no record of the chunk matches
  bool matches(const RecordMeta& meta) const;
};

class LogReader;

// Yields the matching records of a reader in log order, each with the columns
// `columns` selects (LogReader::read_chunk's selection; empty: all).
class RecordCursor {
 public:
  RecordCursor(const LogReader& reader, std::vector<size_t> chunks, RecordFilter filter,
               std::vector<bool> columns = {});

  // The next matching record, or nullopt at the end.
  std::optional<Record> next();
  // Chunks that could not be decoded (and were skipped) so far.
  const std::vector<LogProblem>& problems() const { return problems_; }

 private:
  const LogReader* reader_;
  std::vector<size_t> chunks_;
  RecordFilter filter_;
  std::vector<bool> columns_;
  size_t next_chunk_ = 0;
  std::vector<Record> buffer_;
  size_t buffer_pos_ = 0;
  std::vector<LogProblem> problems_;
};

class LogReader {
 public:

  explicit LogReader(const std::string& path);
  ~LogReader();

  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // The first segment's header (every segment has its columns). Opening
  // throws when there is no segment, so there always is one.
  const LogSchema& schema() const { return segments_.front().schema; }
  const std::vector<SegmentInfo>& segments() const { return segments_; }
  const std::vector<ChunkRef>& chunks() const { return chunks_; }
  const std::vector<LogProblem>& problems() const { return problems_; }
  uint64_t record_count() const;

  // Decodes one chunk. `columns` (schema().columns.size() flags; empty: all)
  // selects the columns to decompress: an unselected column is left empty in
  // every record (decode_chunk_data). The whole chunk is read and both its
  // checksums are checked whatever the selection, so a corrupt byte in an
  // unselected column's block fails the same as in a full read.
  // Throws FormatError naming the file, chunk and offset; std::out_of_range
  // for a chunk index past chunks(); std::invalid_argument for a selection
  // of the wrong size.
  std::vector<Record> read_chunk(size_t chunk, const std::vector<bool>& columns = {}) const;
  // The chunks that may hold a record matching `filter`, from the index alone.
  std::vector<size_t> find_chunks(const RecordFilter& filter) const;
  // The records matching `filter`, with the columns `columns` selects (as for
  // read_chunk). Throws std::invalid_argument for a selection of the wrong size.
  RecordCursor scan(const RecordFilter& filter = {}, std::vector<bool> columns = {}) const;

  // Reads and checks every chunk (both checksums, decompression of every
  // block, sizes, and that the footer agrees with the chunk headers). Returns problems() plus
  // what it found; empty for a healthy log.
  std::vector<LogProblem> verify() const;

  // How many chunks have had their data read (for tests of index use).
  uint64_t chunks_decoded() const { return chunks_decoded_.load(); }

 private:
  void open_file(const std::string& path);
  // False (and a problem) when the footer is unusable.
  bool index_by_footer(size_t segment, int fd, const Trailer& trailer);
  void index_by_scan(size_t segment, int fd);
  // Reads and decodes the chunk header at `offset`, which must end by `end`;
  // throws FormatError.
  ChunkHeader read_header(int fd, uint64_t offset, uint64_t end) const;
  // The offset of the first valid chunk header in [from, end), if any.
  std::optional<uint64_t> find_next_chunk(int fd, uint64_t from, uint64_t end) const;
  std::string where(size_t chunk) const;  // "chunk K at offset X of FILE"

  std::vector<int> fds_;  // one per segment
  std::vector<SegmentInfo> segments_;
  std::vector<ChunkRef> chunks_;
  std::vector<LogProblem> problems_;
  mutable std::atomic<uint64_t> chunks_decoded_{0};
};

// Yields the records of several logs in wall-time order (ties: the earlier
// reader first). Each log is assumed to be in wall-time order already, as a
// writer that stamps wall_time_ns at append produces.
class MergedCursor {
 public:
  MergedCursor(const std::vector<const LogReader*>& readers, const RecordFilter& filter = {});

  // The next record and, in *source, the index of its reader.
  std::optional<Record> next(size_t* source = nullptr);
  std::vector<LogProblem> problems() const;

 private:
  std::vector<RecordCursor> cursors_;
  std::vector<std::optional<Record>> heads_;
};

}  // namespace moonseed::explog
