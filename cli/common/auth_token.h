// Auth tokens come from a file or the environment, never from the command
// line, where `ps` shows them to every user of the host (docs/security.md).
#pragma once

#include <string>

namespace moonseed::cli {

// The variable a learner and its actors read the token from.
inline constexpr const char* kAuthTokenVariable = "MOONSEED_AUTH_TOKEN";

// The token in the file at `path`: its first line without surrounding
// whitespace. Throws std::runtime_error naming the file when it cannot be
// read or holds no token. Warns when users other than its owner may read it.
std::string read_auth_token_file(const std::string& path);

// The token of this process: the file's when `file` is given, else
// $MOONSEED_AUTH_TOKEN, else "".
std::string auth_token(const std::string& file);

// What `--auth-token VALUE` gets: a refusal that says where tokens go instead.
std::string auth_token_on_command_line_message();

}  // namespace moonseed::cli
