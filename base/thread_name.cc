#include "base/thread_name.h"

#include <pthread.h>

#include <cstring>
#include <string>

namespace moonseed::base {

void set_thread_name(const char* name) {
  std::string cut(name, strnlen(name, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace moonseed::base
