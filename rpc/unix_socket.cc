#include "rpc/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace moonseed::rpc {
namespace {

bool fill_address(const std::string& path, sockaddr_un* address) {
  if (path.empty() || path.size() >= sizeof(address->sun_path)) return false;
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  std::memcpy(address->sun_path, path.c_str(), path.size() + 1);
  return true;
}

}  // namespace

bool unix_socket_is_live(const std::string& path) {
  const int fd = connect_unix(path);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int connect_unix(const std::string& path) {
  sockaddr_un address;
  if (!fill_address(path, &address)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

void remove_stale_unix_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode)) {
    throw std::system_error(std::make_error_code(std::errc::file_exists), path + " exists and is not a socket");
  }
  if (unix_socket_is_live(path)) {
    throw std::system_error(std::make_error_code(std::errc::address_in_use), "another process accepts on " + path);
  }
  ::unlink(path.c_str());
}

int listen_unix_private(const std::string& path, int backlog) {
  sockaddr_un address;
  if (!fill_address(path, &address)) {
    throw std::invalid_argument("Unix socket path is empty or longer than " +
                                std::to_string(sizeof(address.sun_path) - 1) + " bytes: " + path);
  }
  remove_stale_unix_socket(path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket for " + path);
  auto fail = [&](const char* what) {
    const int saved = errno;
    ::close(fd);
    throw std::system_error(saved, std::generic_category(), std::string(what) + " " + path);
  };
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) fail("bind");
  // Before listen(): nobody can connect while the mode is still the umask's.
  if (::chmod(path.c_str(), 0600) != 0) fail("chmod 0600");
  if (::listen(fd, backlog) != 0) fail("listen");
  return fd;
}

}  // namespace moonseed::rpc
