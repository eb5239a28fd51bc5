#include "scripts/api/source_locator.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "scripts/state/embedded_lua.h"

namespace moonseed::scripts {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Lexer over one source text; tracks lines the way Lua does ("\r\n" and "\n\r"
// count once).
class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s) {}

  std::vector<SourceLocator::Token> run() {
    std::vector<SourceLocator::Token> out;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n' || c == '\r') {
        newline();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (c == '-' && peek(1) == '-') {
        i_ += 2;
        if (long_bracket_level() < 0) skip_line();
        else skip_long_bracket();
      } else if (c == '[' && long_bracket_level() >= 0) {
        const int line = line_;
        const size_t start = i_;
        skip_long_bracket();
        out.push_back({SourceLocator::Token::kString, s_.substr(start, i_ - start), line, start, i_});
      } else if (c == '"' || c == '\'') {
        const int line = line_;
        const size_t start = i_;
        std::string text = quoted_string(c);
        out.push_back({SourceLocator::Token::kString, std::move(text), line, start, i_});
      } else if (is_name_start(c)) {
        const size_t start = i_;
        while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
        out.push_back({SourceLocator::Token::kName, s_.substr(start, i_ - start), line_, start, i_});
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
        skip_number();
      } else {
        const size_t start = i_;
        std::string text = punctuation();
        out.push_back({SourceLocator::Token::kPunct, std::move(text), line_, start, i_});
      }
    }
    return out;
  }

 private:
  char peek(size_t ahead) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }

  void newline() {
    const char c = s_[i_++];
    if (i_ < s_.size() && (s_[i_] == '\n' || s_[i_] == '\r') && s_[i_] != c) ++i_;
    ++line_;
  }

  void skip_line() {
    while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
  }

  // At `[`: the level of a long bracket `[==[` (number of '='), or -1.
  int long_bracket_level() const {
    if (peek(0) != '[') return -1;
    size_t j = 1;
    while (peek(j) == '=') ++j;
    return peek(j) == '[' ? static_cast<int>(j - 1) : -1;
  }

  void skip_long_bracket() {
    const int level = long_bracket_level();
    i_ += static_cast<size_t>(level) + 2;
    const std::string close = "]" + std::string(static_cast<size_t>(level), '=') + "]";
    while (i_ < s_.size()) {
      if (s_.compare(i_, close.size(), close) == 0) {
        i_ += close.size();
        return;
      }
      if (s_[i_] == '\n' || s_[i_] == '\r') newline();
      else ++i_;
    }
  }

  std::string quoted_string(char quote) {
    ++i_;
    std::string text;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        text += s_[i_++];
        if (s_[i_] == '\n' || s_[i_] == '\r') {
          newline();
          continue;
        }
      } else if (s_[i_] == '\n' || s_[i_] == '\r') {
        break;  // unfinished string: Lua reports it; stop here
      }
      text += s_[i_++];
    }
    if (i_ < s_.size() && s_[i_] == quote) ++i_;
    return text;
  }

  void skip_number() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if ((c == '+' || c == '-') && i_ > 0 && std::strchr("eEpP", s_[i_ - 1]) != nullptr) {
        ++i_;
      } else if (is_name_char(c) || c == '.') {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string punctuation() {
    for (const char* p : {"...", "..", "==", "~=", "<=", ">=", "::"}) {
      const std::string op = p;
      if (s_.compare(i_, op.size(), op) == 0) {
        i_ += op.size();
        return op;
      }
    }
    return std::string(1, s_[i_++]);
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1;
};

bool is_punct(const SourceLocator::Token& t, const char* text) {
  return t.kind == SourceLocator::Token::kPunct && t.text == text;
}

// From the first token of a value: the index of its `{` when the value is a
// constructor, or a call `a.b.c {` / `a.b:c({`; npos otherwise.
size_t constructor_of_value(const std::vector<SourceLocator::Token>& tokens, size_t j) {
  if (j < tokens.size() && tokens[j].kind == SourceLocator::Token::kName) {
    ++j;
    while (j + 1 < tokens.size() && (is_punct(tokens[j], ".") || is_punct(tokens[j], ":")) &&
           tokens[j + 1].kind == SourceLocator::Token::kName) {
      j += 2;
    }
    if (j < tokens.size() && is_punct(tokens[j], "(")) ++j;
  }
  return j < tokens.size() && is_punct(tokens[j], "{") ? j : std::string::npos;
}

}  // namespace

std::vector<SourceLocator::Token> SourceLocator::tokenize(const std::string& source) {
  return Lexer(source).run();
}

const SourceLocator::File* SourceLocator::file(const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return &it->second;
  std::string text;
  if (const EmbeddedLuaModule* embedded = find_embedded_lua_file(path.c_str())) {
    // A recipe of the engine's library: its text is in the binary, not on disk.
    text.assign(embedded->source, embedded->size);
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return nullptr;
    std::ostringstream read;
    read << in.rdbuf();
    text = read.str();
  }
  File f;
  f.tokens = tokenize(text);
  f.match.assign(f.tokens.size(), f.tokens.size());
  std::vector<size_t> open;
  for (size_t i = 0; i < f.tokens.size(); ++i) {
    if (is_punct(f.tokens[i], "{")) {
      open.push_back(i);
    } else if (is_punct(f.tokens[i], "}") && !open.empty()) {
      f.match[open.back()] = i;
      open.pop_back();
    }
  }
  return &files_.emplace(path, std::move(f)).first->second;
}

std::optional<SourceLocator::Anchor> SourceLocator::constructor_at_line(const std::string& path,
                                                                          int line) {
  const File* f = file(path);
  if (f == nullptr) return std::nullopt;
  std::optional<size_t> first;
  for (size_t i = 0; i < f->tokens.size(); ++i) {
    if (f->tokens[i].line != line || !is_punct(f->tokens[i], "{")) continue;
    if (!first) first = i;
    if (i > 0 && (f->tokens[i - 1].kind == Token::kName || is_punct(f->tokens[i - 1], "("))) {
      return Anchor{path, i};
    }
  }
  if (first) return Anchor{path, *first};
  return std::nullopt;
}

std::optional<SourceLocator::Anchor> SourceLocator::returned_constructor(const std::string& path) {
  const File* f = file(path);
  if (f == nullptr) return std::nullopt;
  int depth = 0;
  std::optional<size_t> last_return;
  for (size_t i = 0; i < f->tokens.size(); ++i) {
    const Token& t = f->tokens[i];
    if (is_punct(t, "{")) ++depth;
    else if (is_punct(t, "}")) --depth;
    else if (depth == 0 && t.kind == Token::kName && t.text == "return") last_return = i;
  }
  if (!last_return) return std::nullopt;
  const size_t brace = constructor_of_value(f->tokens, *last_return + 1);
  if (brace == std::string::npos) return std::nullopt;
  return Anchor{path, brace};
}

int SourceLocator::line_of(const Anchor& anchor) {
  const File* f = file(anchor.file);
  if (f == nullptr || anchor.brace >= f->tokens.size()) return 0;
  return f->tokens[anchor.brace].line;
}

std::optional<SourceLocator::KeyPlace> SourceLocator::find_key(const Anchor& anchor,
                                                               const std::string& key) {
  const File* f = file(anchor.file);
  if (f == nullptr || anchor.brace >= f->tokens.size()) return std::nullopt;
  const std::vector<Token>& tokens = f->tokens;
  const size_t end = f->match[anchor.brace];
  for (size_t i = anchor.brace + 1; i < end; ++i) {
    if (is_punct(tokens[i], "{")) {
      i = f->match[i];  // a nested constructor's keys are not this one's
      continue;
    }
    // Keys follow the `{`, a `,` or a `;` of this constructor.
    const Token& before = tokens[i - 1];
    if (!is_punct(before, "{") && !is_punct(before, ",") && !is_punct(before, ";")) continue;
    size_t value = std::string::npos;
    if (tokens[i].kind == Token::kName && tokens[i].text == key && i + 1 < end &&
        is_punct(tokens[i + 1], "=")) {
      value = i + 2;
    } else if (is_punct(tokens[i], "[") && i + 3 < end && tokens[i + 1].kind == Token::kString &&
               tokens[i + 1].text == key && is_punct(tokens[i + 2], "]") &&
               is_punct(tokens[i + 3], "=")) {
      value = i + 4;
    }
    if (value == std::string::npos) continue;
    KeyPlace place{tokens[i].line, std::nullopt};
    const size_t brace = constructor_of_value(tokens, value);
    if (brace != std::string::npos && brace < end) place.value = Anchor{anchor.file, brace};
    return place;
  }
  return std::nullopt;
}

}  // namespace moonseed::scripts
