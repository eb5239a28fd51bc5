// Checking, parsing and writing the values of config fields (config_schema.h):
// range checks with readable messages, command-line override parsing, Lua
// literals for config.lua, and the edit distance behind "did you mean".
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "scripts/config_schema.h"

namespace moonseed::scripts {

// "(0, 1]", ">= 0", "one of: adam, rmsprop", "any", plus the field's rule_doc.
std::string range_text(const FieldSchema& field);

// "" when `value` has the field's type, is in range and passes the field's
// rule; else what is wrong: "expected a number in (0, 1], got 2".
std::string check_value(const FieldSchema& field, const FieldValue& value);

// Parses command-line override text by the field's type: "3e-4", "4",
// "adam", "true"/"false", "64,64" or "{64,64}", "a=1,b=2" or "{a=1,b=2}".
// Throws std::invalid_argument("expected ..., got '...'"). Range is not checked.
FieldValue parse_value(const FieldSchema& field, const std::string& text);

// The value as a Lua literal that reads back equal:
// 0.001, 20, "adam", true, {64, 64}, {max_episode_steps = 200}.
std::string lua_literal(const FieldValue& value);

// The shortest decimal text that reads back as the same double.
std::string format_number(double value);

// A Lua string literal with escapes.
std::string lua_quote(const std::string& s);

// Optimal string alignment distance (Levenshtein plus adjacent transposition).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `name` when close enough to be a typo (or when
// one starts with the other), else "".
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace moonseed::scripts
