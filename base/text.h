// Text that every room writes: numbers that read back exactly, quoted strings
// for JSON and Lua, shapes, lists, and the "did you mean" of unknown names.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moonseed::base {

// The one number format of everything Moonseed prints: the shortest text that
// reads back as exactly `v`, written the way people read numbers.
//   whole numbers up to 2^53: every digit, no fraction ("-500", "3", "1500000000")
//   others with 1e-5 <= |v| < 1e9: fixed point ("21.5", "0.000123", "0.00001")
//   others: scientific ("1.5e+20", "2.5e-07", "1.0000000005e+09")
// "nan", "inf", "-inf" for non-finite values (callers that write JSON or Lua
// put their own words there). For messages, tables and JSON numbers.
std::string number_text(double v);
// The same layout for a float: the fewest digits that read back as that float.
std::string float_text(float v);
// `v` rounded to `digits` significant digits (1 to 17) for a line a person
// reads, trailing zeros dropped; in fixed point every integer digit stays
// (12345.6 at 4 digits is "12346"), whole numbers up to 2^53 are exact, and
// others from 1e9 up are scientific ("1.235e+09").
std::string number_text(double v, int digits);

// A JSON string literal: quotes, backslashes and control characters escaped
// (\n, \r, \t, \u00XX); other bytes as they are.
std::string json_quote(std::string_view s);

// Text from a peer (an actor's host name, a Bye's reason, a notice), made safe
// for a terminal or a log line: control characters and DEL as \xHH, so that
// no newline or escape sequence in it can forge a line or recolour a terminal.
// Other bytes as they are.
std::string printable(std::string_view s);

// A Lua string literal that reads back as the same bytes: \" \\ \n \r \t,
// other control characters and DEL as \ddd.
std::string lua_quote(std::string_view s);

// "[4, 84, 84]" (with separator ",": "[4,84,84]"); "[]" for a scalar.
std::string shape_text(const std::vector<int64_t>& dims, std::string_view separator = ", ");

// "a, b, c" with `separator` between the items.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// Optimal string alignment distance (Levenshtein plus adjacent transposition).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` when close enough to be a typo (a third of
// its length, 1 to 3 edits), or else one that starts with the other (both at
// least 3 characters); "" when none is.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

// "myhost.lab, other.lab" -> {"myhost.lab", "other.lab"}: host names separated
// by commas, spaces around them ignored ("" -> none). Each must be a host name:
// dot-separated labels of letters, digits and hyphens (1 to 63 each, not
// starting or ending with a hyphen), 253 at most in all; no port, scheme, path
// or space. Otherwise sets `problem` to a sentence naming the first bad one
// and returns nothing.
std::vector<std::string> parse_host_names(const std::string& list, std::string* problem);

}  // namespace moonseed::base
