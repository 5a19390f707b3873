// An LD_PRELOAD shim for tests/bad/import_sigint_test.sh: fsync waits before it syncs,
// so that a tool's temporary file sits on disk, whole, until the test has seen it and
// sent its signal. The import is far too quick to be caught in the act otherwise.
//   TG_SLOW_FSYNC_S=N         wait up to N seconds (a signal cuts the wait short, as it
//                             would a slow disk's write: the tool must then stop by itself)
//   TG_SLOW_FSYNC_STUBBORN=1  wait all N seconds whatever arrives (a tool stuck in one
//                             call: only the harness's watchdog can stop it then)
#include <dlfcn.h>
#include <time.h>

#include <cerrno>
#include <cstdlib>

extern "C" int fsync(int fd) {
  if (const char* s = std::getenv("TG_SLOW_FSYNC_S")) {
    timespec left{std::atoi(s), 0};
    const bool stubborn = std::getenv("TG_SLOW_FSYNC_STUBBORN") != nullptr;
    while (nanosleep(&left, &left) != 0 && errno == EINTR && stubborn) {
    }
  }
  using Fsync = int (*)(int);
  const auto real = reinterpret_cast<Fsync>(dlsym(RTLD_NEXT, "fsync"));
  return real ? real(fd) : 0;
}
