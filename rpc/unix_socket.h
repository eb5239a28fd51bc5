// Plain POSIX helpers for Unix-domain stream sockets that several parts of rpc/
// share: the learner's actor socket (server.cc) and the run's control socket
// (control_socket.h).
//
// Thread-safety: free functions over file descriptors the caller owns.
#pragma once

#include <string>

namespace moonseed::rpc {

// True when some process accepts connections on `path` now.
bool unix_socket_is_live(const std::string& path);

// Removes `path` when it is a socket nobody accepts on (left by a process that
// died). Throws std::system_error when it exists and is not a socket, or when a
// live process listens on it.
void remove_stale_unix_socket(const std::string& path);

// A listening, non-blocking, close-on-exec socket at `path`, mode 0600 before
// anyone can connect. Removes a stale socket first (as above). Throws
// std::system_error naming the path on failure, std::invalid_argument when the
// path does not fit in sockaddr_un.
int listen_unix_private(const std::string& path, int backlog = 16);

// A connected, blocking, close-on-exec socket to `path`; -1 with errno set on failure.
int connect_unix(const std::string& path);

}  // namespace moonseed::rpc
