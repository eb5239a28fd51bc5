// `moonseed ctl RUN_DIR COMMAND...`: one request to a running learner's
// control socket. No Lua and no LibTorch: the `moonseed` launcher serves it
// itself, so a shell script polling `ctl RUN status` pays milliseconds, not
// LibTorch's start-up (`ctl -e` and `ctl --help` go to moonseed-engine,
// cli/engine/ctl_command.cc).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli/common/commands.h"
#include "rpc/control_socket.h"

namespace moonseed::cli {

std::string strip_slash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

bool ctl_needs_engine(const Args& args) {
  return args.size() < 2 || wants_help(args) || args[1] == "-e";
}

int ctl_request(const std::string& run_dir, const Args& words) {
  std::string line;
  for (size_t i = 0; i < words.size(); ++i) line += (i > 0 ? " " : "") + words[i];
  // The same lookup as ms.attach: RUN_DIR/control.address names the socket.
  std::string socket = run_dir + "/control.sock";
  {
    std::FILE* f = std::fopen((run_dir + "/control.address").c_str(), "r");
    if (f == nullptr) {
      throw std::runtime_error(run_dir + " is not a run directory with a control socket (no control.address)");
    }
    char buf[4096];
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    std::string address(buf, n);
    while (!address.empty() && (address.back() == '\n' || address.back() == ' ')) address.pop_back();
    if (address.rfind("unix:", 0) == 0) socket = address.substr(5);
  }
  rpc::ControlClient client(socket);
  const std::string reply = client.request(line, std::chrono::seconds(600));
  // {"ok": true, "result": R} -> R; {"ok": false, "error": "..."} -> stderr.
  const std::string ok_prefix = "{\"ok\": true, \"result\": ";
  if (reply.rfind(ok_prefix, 0) == 0 && reply.size() > ok_prefix.size()) {
    std::cout << reply.substr(ok_prefix.size(), reply.size() - ok_prefix.size() - 1) << "\n";
    return 0;
  }
  // {"ok": false, "error": "..."}: the message, unescaped enough to read.
  std::string message = reply;
  const std::string error_prefix = "{\"ok\": false, \"error\": \"";
  if (reply.rfind(error_prefix, 0) == 0 && reply.size() >= error_prefix.size() + 2) {
    message.clear();
    const std::string body = reply.substr(error_prefix.size(), reply.size() - error_prefix.size() - 2);
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\\' && i + 1 < body.size()) {
        const char e = body[++i];
        message += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        message += body[i];
      }
    }
  }
  std::cerr << "moonseed ctl: " << message << "\n";
  return 1;
}

}  // namespace moonseed::cli
