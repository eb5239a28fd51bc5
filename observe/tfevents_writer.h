// A TensorBoard event file: TFRecord records (docs/tensorboard.md), each
//   uint64 LE length | uint32 LE masked CRC-32C of those 8 bytes |
//   data (a serialized Event) | uint32 LE masked CRC-32C of the data,
// the first one an Event with file_version "brain.Event:2".
//
//   TfEventsWriter w(TfEventsWriter::new_file_path(run_dir, now_unix_s()));
//   w.scalar("fps", frames, wall_time, 1234.5);
//   w.text("config", 0, wall_time, config_text);
//   w.flush();   // at each log tick: written and fsync'd
//
// Records wait in memory until flush() (or until 1 MiB of them wait), so a
// crash loses at most the records since the last flush, and a record cut by a
// crash is only ever the file's last one, which readers skip.
//
// Failures never throw. A file that cannot be created is logged once (base/log.h)
// and every record is dropped. A write that fails (a full disk, a file size
// limit) is an outage: logged once with the path and the reason, the bytes of a
// half-written record are cut off again, the records waiting are dropped, and
// the next flush tries again; the first write that succeeds ends the outage with
// one more log line counting the records dropped. (Should the cut itself fail,
// the file ends in a torn record and the writer writes no more to it.) The
// caller's run goes on either way (metrics.jsonl has every row).
//
// Thread-safety: none; one thread owns a writer.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace moonseed::observe {

// One TFRecord record around `data`: the framing bytes and the data.
std::string tfrecord(std::string_view data);

class TfEventsWriter {
 public:
  // Opens `path` for appending (it is created if absent), writes the
  // file_version record and flushes it. A file that cannot be opened leaves a
  // writer that is off (ok() false), after one log line.
  explicit TfEventsWriter(const std::string& path);
  ~TfEventsWriter();  // flushes
  TfEventsWriter(const TfEventsWriter&) = delete;
  TfEventsWriter& operator=(const TfEventsWriter&) = delete;

  // DIR/events.out.tfevents.<unix_seconds>.<hostname>, TensorBoard's name for
  // a new event file, with ".1", ".2"... after it when that file exists.
  static std::string new_file_path(const std::string& dir, int64_t unix_seconds);

  // A scalar: Summary.Value{tag, simple_value = value as float32}.
  void scalar(const std::string& tag, int64_t step, double wall_time, double value);
  // Text for TensorBoard's text plugin: Summary.Value{tag, metadata.plugin_data
  // .plugin_name "text", tensor = DT_STRING of shape [] holding `text`}.
  void text(const std::string& tag, int64_t step, double wall_time, const std::string& text);

  // Writes the records waiting and fsyncs the file. Returns ok().
  bool flush();

  // False when the file could not be opened, or while an outage lasts.
  bool ok() const { return fd_ >= 0 && !failed_; }
  const std::string& path() const { return path_; }
  int64_t dropped_records() const { return dropped_; }

 private:
  void add(const std::string& event_bytes);
  bool write_pending();
  bool cut_to(off_t size);
  void fail(const std::string& what, int error);

  const std::string path_;
  int fd_ = -1;
  bool failed_ = false;     // in an outage (or never opened)
  bool fd_broken_ = false;  // a torn record could not be cut off: write no more
  std::string pending_;  // framed records not written yet
  int64_t pending_records_ = 0;
  int64_t dropped_ = 0;  // records dropped because the writer is off
  int64_t dropped_before_outage_ = 0;
};

}  // namespace moonseed::observe
