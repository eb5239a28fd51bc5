// Finds where a key of a Lua table constructor was written, so config errors
// can name file:line. Lua tables keep no source positions; the loader knows
// the line where a constructor starts (recorded by the DSL helpers, or found
// here) and asks this module for the lines of its keys.
//
// The heuristic, on the token stream of the file (comments and strings are
// skipped by a small Lua lexer):
//   - a constructor is anchored at its `{` token;
//   - key k of that constructor is the first `k =` or `["k"] =` at the
//     constructor's own nesting level between its `{` and matching `}`;
//   - the value of a key is itself a constructor when `=` is followed by `{`,
//     or by a call such as `ms.mlp {` / `ms.mlp({`;
//   - a helper's recorded line anchors at the first `{` on that line that
//     follows a name or `(` (a call's table argument);
//   - the top-level table of a script is the value of the last `return` at
//     brace depth 0.
// When a key is not in the text (the table was built by code) the caller
// falls back to the constructor's line. A key assigned inside a function body
// written earlier in the same constructor can be mistaken for it; that costs
// a wrong line number, never a wrong value.
//
// Not thread-safe (caches files); one per load.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moonseed::scripts {

class SourceLocator {
 public:
  struct Token {
    enum Kind { kName, kString, kPunct } kind;
    std::string text;  // name, string contents (escapes not decoded), or punctuation
    int line;
    size_t begin = 0;  // byte offsets of the token in the source: [begin, end)
    size_t end = 0;
  };

  // A constructor in a file: index of its `{` token.
  struct Anchor {
    std::string file;
    size_t brace;
  };

  struct KeyPlace {
    int line;
    std::optional<Anchor> value;  // set when the value is written as a constructor
  };

  // Tokens of Lua source text (exposed for tests).
  static std::vector<Token> tokenize(const std::string& source);

  // The helper-call constructor starting on `line` of `file`.
  std::optional<Anchor> constructor_at_line(const std::string& file, int line);
  // The constructor returned by the script's top-level `return`.
  std::optional<Anchor> returned_constructor(const std::string& file);
  // Line of the anchor's `{`.
  int line_of(const Anchor& anchor);
  std::optional<KeyPlace> find_key(const Anchor& anchor, const std::string& key);

 private:
  struct File {
    std::vector<Token> tokens;
    std::vector<size_t> match;  // for `{` tokens: index of the matching `}` (or size())
  };
  // nullptr when the file cannot be read. Paths of the engine's embedded
  // library ("[moonseed]/moonseed/x.lua") read the text built into the binary.
  const File* file(const std::string& path);

  std::map<std::string, File> files_;
};

}  // namespace moonseed::scripts
