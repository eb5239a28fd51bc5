// LineEditor reads one line of console input, with editing when the input is
// a terminal: our own small line editor (termios raw mode + ANSI escapes), so
// the console needs no readline/libedit.
//
// Terminal path (both fds are terminals): read_line() puts the input terminal
// in raw mode for the duration of the call and restores the previous mode on
// every exit, exceptions included. In raw mode the terminal sends Ctrl-C as a
// byte instead of raising SIGINT; it abandons the line (kInterrupted). A line
// wider than the terminal scrolls horizontally. Display columns count UTF-8
// code points (double-width characters are not measured).
//   Enter                       return the line
//   Left/Right, Ctrl-B/Ctrl-F   move by character; Alt-B/Alt-F by word
//   Home/End, Ctrl-A/Ctrl-E     start / end of line
//   Backspace/Ctrl-H, Delete    delete before / under the cursor
//   Ctrl-K, Ctrl-U, Ctrl-W      kill to end, kill to start, kill the word before
//   Up/Down, Ctrl-P/Ctrl-N      history (edits to recalled lines last for this read)
//   Tab                         completion through the Completer: a single
//                               candidate completes, several complete their
//                               common prefix, a second Tab in a row lists them
//   Ctrl-L                      clear the screen
//   Ctrl-C                      abandon the line (kInterrupted)
//   Ctrl-D                      end of input on an empty line, else Delete
// Both `ESC [ x` and `ESC O x` forms of the cursor keys are understood.
//
// Plain path (pipes, files, CI): buffered line reads, no echo, no editing; the
// prompt is written only when the input is a terminal. A final line without
// '\n' is still returned; then kEndOfInput.
//
// History holds lines in memory (the caller decides what to add) and, once a
// file is attached, rewrites that file after each add; a file that cannot be
// read or written is not an error (the console just forgets).
//
// Failures: read errors other than EINTR end the input (kEndOfInput); the fds
// are borrowed, never closed. Thread-safety: one thread uses a LineEditor.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace moonseed::cli {

// Candidates for the word before the cursor: each replaces line[start, cursor).
struct Completion {
  size_t start = 0;
  std::vector<std::string> candidates;
};
using Completer = std::function<Completion(const std::string& line, size_t cursor)>;

enum class ReadStatus { kLine, kInterrupted, kEndOfInput };

struct ReadResult {
  ReadStatus status = ReadStatus::kEndOfInput;
  std::string line;  // the text entered (kLine only), without the newline
};

class History {
 public:
  // Keeps at most `capacity` entries (the newest); capacity >= 1.
  explicit History(size_t capacity = 1000);

  // Appends `line` unless it is empty or equal to the newest entry, then
  // rewrites the attached file (if any). Throws std::invalid_argument for a
  // line containing '\n' (the file stores one entry per line).
  void add(const std::string& line);
  const std::vector<std::string>& entries() const { return entries_; }
  size_t capacity() const { return capacity_; }

  // Replaces the entries with the last `capacity` lines of `path` (none when
  // the file does not exist) and writes to it from now on.
  void attach_file(const std::string& path);
  // Writes the entries to the attached file; false when there is none or it
  // cannot be written.
  bool save() const;

 private:
  size_t capacity_;
  std::vector<std::string> entries_;
  std::string path_;
};

// $MOONSEED_HISTORY when set ("" disables the file), else ~/.moonseed_history;
// "" when there is no home directory either.
std::string default_history_path();

// Length of the longest common prefix of `words` (bytes, cut back to a UTF-8
// code point boundary); 0 for no words.
size_t common_prefix_length(const std::vector<std::string>& words);

class LineEditor {
 public:
  // Reads from `in_fd`, writes the prompt and echo to `out_fd`; both borrowed.
  explicit LineEditor(int in_fd = 0, int out_fd = 1);
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  // True when lines are read with editing (both fds are terminals).
  bool interactive() const { return interactive_; }

  void set_completer(Completer completer) { completer_ = std::move(completer); }
  History& history() { return history_; }

  // Reads one line after writing `prompt` (terminal input only).
  ReadResult read_line(const std::string& prompt);

 private:
  struct EditState;  // the line being edited (line_editor.cc)

  ReadResult read_plain_line(const std::string& prompt);
  ReadResult read_edited_line(const std::string& prompt);
  // One byte of input; false at end of input or on a read error.
  bool read_byte(unsigned char* byte);
  // A byte that arrives within `timeout_ms`, for escape sequences.
  bool read_byte_within(unsigned char* byte, int timeout_ms);
  void write_out(const std::string& bytes) const;
  size_t terminal_columns() const;

  void refresh(EditState& s) const;
  void complete(EditState& s, bool listing_allowed);
  void list_candidates(const std::vector<std::string>& candidates) const;
  void recall_history(EditState& s, int direction);
  void handle_escape(EditState& s);

  int in_fd_;
  int out_fd_;
  bool interactive_;
  Completer completer_;
  History history_;
  std::string pending_;  // plain path: bytes read past the last returned line
  bool input_ended_ = false;
};

}  // namespace moonseed::cli
