#include "cli/common/auth_token.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "base/log.h"

namespace moonseed::cli {

std::string read_auth_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read auth token file " + path + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  const size_t begin = line.find_first_not_of(" \t\r\n");
  const size_t end = line.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) throw std::runtime_error("auth token file " + path + " holds no token");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    base::log_warning("auth token file " + path + " can be read by other users (mode " + mode + "); chmod 600 it");
  }
  return line.substr(begin, end - begin + 1);
}

std::string auth_token(const std::string& file) {
  if (!file.empty()) return read_auth_token_file(file);
  const char* token = std::getenv(kAuthTokenVariable);
  return token ? token : "";
}

std::string auth_token_on_command_line_message() {
  return std::string("--auth-token would show the token to every user of this host (ps); use --auth-token-file "
                     "FILE (mode 600) or the ") +
         kAuthTokenVariable + " environment variable";
}

}  // namespace moonseed::cli
