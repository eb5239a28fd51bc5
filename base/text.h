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

// The shortest text that reads back as `v`: "0.1", "3", "1e-05"; "nan",
// "inf", "-inf" for non-finite values. For messages and JSON numbers.
std::string number_text(double v);

// A JSON string literal: quotes, backslashes and control characters escaped
// (\n, \r, \t, \u00XX); other bytes as they are.
std::string json_quote(std::string_view s);

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

}  // namespace moonseed::base
