#include "cli/console/line_editor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace moonseed::cli {
namespace {

// Bytes of an escape sequence or of a UTF-8 character arrive together; a lone
// ESC (the key itself) is dropped after this long.
constexpr int kSequenceTimeoutMs = 100;

constexpr unsigned char ctrl(char key) { return static_cast<unsigned char>(key & 0x1f); }

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

size_t previous_boundary(const std::string& s, size_t pos) {
  if (pos == 0) return 0;
  do {
    --pos;
  } while (pos > 0 && is_continuation(static_cast<unsigned char>(s[pos])));
  return pos;
}

size_t next_boundary(const std::string& s, size_t pos) {
  if (pos >= s.size()) return s.size();
  do {
    ++pos;
  } while (pos < s.size() && is_continuation(static_cast<unsigned char>(s[pos])));
  return pos;
}

// Display columns of s[from, to): one per code point.
size_t columns(const std::string& s, size_t from = 0, size_t to = std::string::npos) {
  to = std::min(to, s.size());
  size_t n = 0;
  for (size_t i = from; i < to; ++i) n += !is_continuation(static_cast<unsigned char>(s[i]));
  return n;
}

// Byte offset of display column `column` (s.size() past the end).
size_t offset_of_column(const std::string& s, size_t column) {
  size_t pos = 0;
  while (column > 0 && pos < s.size()) {
    pos = next_boundary(s, pos);
    --column;
  }
  return pos;
}

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// Raw mode for the duration of one read; the previous mode comes back on every
// exit path, exceptions included.
class RawMode {
 public:
  explicit RawMode(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_iflag &= ~(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_oflag &= ~OPOST;
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawMode() {
    if (active_) tcsetattr(fd_, TCSANOW, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  bool active() const { return active_; }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

}  // namespace

struct LineEditor::EditState {
  std::string prompt;
  std::string line;
  size_t cursor = 0;  // byte offset, always at a code point boundary
  size_t scroll = 0;  // first visible column of the line
  // The history as seen by this read, plus the new line at the back; edits to
  // a recalled line are kept here until the read ends.
  std::vector<std::string> recall;
  size_t recall_index = 0;
  bool last_key_was_tab = false;

  void insert(const std::string& text) {
    line.insert(cursor, text);
    cursor += text.size();
  }
  void erase(size_t from, size_t to) {
    line.erase(from, to - from);
    cursor = from;
  }
  size_t word_start() const {
    size_t p = cursor;
    while (p > 0 && !is_word_byte(static_cast<unsigned char>(line[p - 1]))) --p;
    while (p > 0 && is_word_byte(static_cast<unsigned char>(line[p - 1]))) --p;
    return p;
  }
  size_t word_end() const {
    size_t p = cursor;
    while (p < line.size() && !is_word_byte(static_cast<unsigned char>(line[p]))) ++p;
    while (p < line.size() && is_word_byte(static_cast<unsigned char>(line[p]))) ++p;
    return p;
  }
};

History::History(size_t capacity) : capacity_(capacity) {
  if (capacity == 0) throw std::invalid_argument("History: capacity must be at least 1, got 0");
}

void History::add(const std::string& line) {
  if (line.find('\n') != std::string::npos) {
    throw std::invalid_argument("History::add: an entry is one line, got \"" + line + "\"");
  }
  if (line.empty() || (!entries_.empty() && entries_.back() == line)) return;
  entries_.push_back(line);
  if (entries_.size() > capacity_) {
    entries_.erase(entries_.begin(), entries_.end() - static_cast<std::ptrdiff_t>(capacity_));
  }
  save();
}

void History::attach_file(const std::string& path) {
  path_ = path;
  entries_.clear();
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && (entries_.empty() || entries_.back() != line)) entries_.push_back(line);
  }
  if (entries_.size() > capacity_) {
    entries_.erase(entries_.begin(), entries_.end() - static_cast<std::ptrdiff_t>(capacity_));
  }
}

bool History::save() const {
  if (path_.empty()) return false;
  std::string text;
  for (const std::string& e : entries_) text += e + "\n";
  // 0600: typed lines may hold tokens or paths the user keeps private.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return ::close(fd) == 0 && done == text.size();
}

std::string default_history_path() {
  if (const char* path = std::getenv("MOONSEED_HISTORY")) return path;
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return "";
  return std::string(home) + "/.moonseed_history";
}

size_t common_prefix_length(const std::vector<std::string>& words) {
  if (words.empty()) return 0;
  const std::string& first = words.front();
  size_t n = first.size();
  for (const std::string& w : words) {
    size_t i = 0;
    while (i < n && i < w.size() && w[i] == first[i]) ++i;
    n = i;
  }
  while (n > 0 && n < first.size() && is_continuation(static_cast<unsigned char>(first[n]))) --n;
  return n;
}

LineEditor::LineEditor(int in_fd, int out_fd)
    : in_fd_(in_fd), out_fd_(out_fd), interactive_(isatty(in_fd) && isatty(out_fd)) {}

ReadResult LineEditor::read_line(const std::string& prompt) {
  return interactive_ ? read_edited_line(prompt) : read_plain_line(prompt);
}

ReadResult LineEditor::read_plain_line(const std::string& prompt) {
  if (isatty(in_fd_)) write_out(prompt);
  for (;;) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      ReadResult result{ReadStatus::kLine, pending_.substr(0, newline)};
      pending_.erase(0, newline + 1);
      if (!result.line.empty() && result.line.back() == '\r') result.line.pop_back();
      return result;
    }
    if (input_ended_) {
      if (pending_.empty()) return {ReadStatus::kEndOfInput, ""};
      ReadResult result{ReadStatus::kLine, std::move(pending_)};
      pending_.clear();
      return result;
    }
    char buffer[4096];
    const ssize_t n = ::read(in_fd_, buffer, sizeof buffer);
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      input_ended_ = true;
    }
  }
}

ReadResult LineEditor::read_edited_line(const std::string& prompt) {
  RawMode raw(in_fd_);
  if (!raw.active()) return read_plain_line(prompt);
  EditState s;
  s.prompt = prompt;
  s.recall = history_.entries();
  s.recall.emplace_back();
  s.recall_index = s.recall.size() - 1;
  refresh(s);
  for (;;) {
    unsigned char c = 0;
    if (!read_byte(&c)) {
      write_out("\r\n");
      return {ReadStatus::kEndOfInput, ""};
    }
    const bool tab_before = s.last_key_was_tab;
    s.last_key_was_tab = c == '\t';
    if (c == '\r' || c == '\n') {
      write_out("\r\n");
      return {ReadStatus::kLine, s.line};
    } else if (c == ctrl('C')) {
      write_out("^C\r\n");
      return {ReadStatus::kInterrupted, ""};
    } else if (c == ctrl('D') && s.line.empty()) {
      write_out("\r\n");
      return {ReadStatus::kEndOfInput, ""};
    } else if (c == ctrl('D')) {
      s.erase(s.cursor, next_boundary(s.line, s.cursor));
    } else if (c == '\t') {
      complete(s, tab_before);
    } else if (c == ctrl('A')) {
      s.cursor = 0;
    } else if (c == ctrl('E')) {
      s.cursor = s.line.size();
    } else if (c == ctrl('B')) {
      s.cursor = previous_boundary(s.line, s.cursor);
    } else if (c == ctrl('F')) {
      s.cursor = next_boundary(s.line, s.cursor);
    } else if (c == 127 || c == ctrl('H')) {
      s.erase(previous_boundary(s.line, s.cursor), s.cursor);
    } else if (c == ctrl('K')) {
      s.line.erase(s.cursor);
    } else if (c == ctrl('U')) {
      s.erase(0, s.cursor);
    } else if (c == ctrl('W')) {
      size_t p = s.cursor;
      while (p > 0 && s.line[p - 1] == ' ') --p;
      while (p > 0 && s.line[p - 1] != ' ') --p;
      s.erase(p, s.cursor);
    } else if (c == ctrl('P')) {
      recall_history(s, -1);
    } else if (c == ctrl('N')) {
      recall_history(s, +1);
    } else if (c == ctrl('L')) {
      write_out("\x1b[H\x1b[2J");
    } else if (c == 27) {
      handle_escape(s);
    } else if (c >= 0xc0 && c < 0xf8) {
      // A UTF-8 lead byte: the character is inserted whole or not at all.
      std::string character(1, static_cast<char>(c));
      const size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      unsigned char next = 0;
      while (character.size() < length && read_byte_within(&next, kSequenceTimeoutMs) &&
             is_continuation(next)) {
        character.push_back(static_cast<char>(next));
      }
      if (character.size() == length) s.insert(character);
    } else if (c >= 0x20 && c < 0x7f) {
      s.insert(std::string(1, static_cast<char>(c)));
    }
    refresh(s);
  }
}

void LineEditor::handle_escape(EditState& s) {
  unsigned char c = 0;
  if (!read_byte_within(&c, kSequenceTimeoutMs)) return;
  if (c == 'b') {
    s.cursor = s.word_start();
    return;
  }
  if (c == 'f') {
    s.cursor = s.word_end();
    return;
  }
  if (c != '[' && c != 'O') return;
  std::string params;
  unsigned char final_byte = 0;
  for (;;) {
    if (!read_byte_within(&final_byte, kSequenceTimeoutMs)) return;
    if ((final_byte < '0' || final_byte > '9') && final_byte != ';') break;
    if (params.size() > 16) return;  // not a key we know
    params.push_back(static_cast<char>(final_byte));
  }
  // Ctrl+arrow arrives as ESC [ 1 ; 5 C and moves by word.
  const bool by_word = params == "1;5" || params == "1;3";
  switch (final_byte) {
    case 'A': recall_history(s, -1); break;
    case 'B': recall_history(s, +1); break;
    case 'C': s.cursor = by_word ? s.word_end() : next_boundary(s.line, s.cursor); break;
    case 'D': s.cursor = by_word ? s.word_start() : previous_boundary(s.line, s.cursor); break;
    case 'H': s.cursor = 0; break;
    case 'F': s.cursor = s.line.size(); break;
    case '~':
      if (params == "1" || params == "7") s.cursor = 0;
      if (params == "4" || params == "8") s.cursor = s.line.size();
      if (params == "3") s.erase(s.cursor, next_boundary(s.line, s.cursor));
      break;
    default: break;
  }
}

void LineEditor::recall_history(EditState& s, int direction) {
  const long target = static_cast<long>(s.recall_index) + direction;
  if (target < 0 || target >= static_cast<long>(s.recall.size())) return;
  s.recall[s.recall_index] = s.line;
  s.recall_index = static_cast<size_t>(target);
  s.line = s.recall[s.recall_index];
  s.cursor = s.line.size();
}

void LineEditor::complete(EditState& s, bool listing_allowed) {
  if (!completer_) {
    write_out("\a");
    return;
  }
  Completion completion = completer_(s.line, s.cursor);
  if (completion.start > s.cursor) {
    throw std::logic_error("LineEditor: the completer returned start " +
                           std::to_string(completion.start) + " past the cursor " +
                           std::to_string(s.cursor));
  }
  std::vector<std::string>& candidates = completion.candidates;
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.empty()) {
    write_out("\a");
    return;
  }
  const size_t typed = s.cursor - completion.start;
  const size_t prefix = candidates.size() == 1 ? candidates[0].size() : common_prefix_length(candidates);
  if (prefix > typed || (candidates.size() == 1 && prefix != typed)) {
    s.erase(completion.start, s.cursor);
    s.insert(candidates[0].substr(0, prefix));
  } else if (candidates.size() > 1 && listing_allowed) {
    list_candidates(candidates);
  } else if (candidates.size() > 1) {
    write_out("\a");
  }
}

void LineEditor::list_candidates(const std::vector<std::string>& candidates) const {
  size_t widest = 0;
  for (const std::string& c : candidates) widest = std::max(widest, columns(c));
  const size_t cell = widest + 2;
  const size_t per_row = std::max<size_t>(1, terminal_columns() / cell);
  const size_t rows = (candidates.size() + per_row - 1) / per_row;
  std::string text = "\r\n";
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = r; i < candidates.size(); i += rows) {
      text += candidates[i];
      if (i + rows < candidates.size()) text.append(cell - columns(candidates[i]), ' ');
    }
    text += "\r\n";
  }
  write_out(text);
}

void LineEditor::refresh(EditState& s) const {
  const size_t width = terminal_columns();
  const size_t prompt_columns = columns(s.prompt);
  // The last column stays free so that the terminal never wraps the line.
  const size_t room = width > prompt_columns + 1 ? width - prompt_columns - 1 : 1;
  const size_t cursor_column = columns(s.line, 0, s.cursor);
  const size_t line_columns = columns(s.line);
  // Keep the cursor visible, and scroll back when text was deleted at the end
  // so that the line fills the room it has.
  const size_t fill = line_columns + 1 > room ? line_columns + 1 - room : 0;
  s.scroll = std::min({s.scroll, fill, cursor_column});
  if (cursor_column >= s.scroll + room) s.scroll = cursor_column - room + 1;
  const size_t first = offset_of_column(s.line, s.scroll);
  const size_t last = offset_of_column(s.line, s.scroll + room);
  std::string text = "\r" + s.prompt + s.line.substr(first, last - first) + "\x1b[0K\r";
  const size_t column = prompt_columns + cursor_column - s.scroll;
  if (column > 0) text += "\x1b[" + std::to_string(column) + "C";
  write_out(text);
}

bool LineEditor::read_byte(unsigned char* byte) {
  for (;;) {
    const ssize_t n = ::read(in_fd_, byte, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

bool LineEditor::read_byte_within(unsigned char* byte, int timeout_ms) {
  pollfd p{in_fd_, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  return ready > 0 && read_byte(byte);
}

void LineEditor::write_out(const std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed terminal: nothing more to show
    done += static_cast<size_t>(n);
  }
}

size_t LineEditor::terminal_columns() const {
  winsize ws{};
  if (ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace moonseed::cli
