/*
 * A disk whose flush is slow, for `concurrent_100_vs_floor_slow_flush` (slowFlush.ts compiles and preloads it into a
 * child process): every fsync and fdatasync of the process first sleeps SLOW_FLUSH_US microseconds, then flushes.
 * The thread blocks for the whole call, as it does on a disk whose cache flush takes that long; the bench's floor
 * and the store run in the same process, so both meet the same disk. Linux (glibc) only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static long flush_us = -1;

static void slow_flush(void) {
  if (flush_us < 0) {
    const char *value = getenv("SLOW_FLUSH_US");
    flush_us = value != NULL ? atol(value) : 8000;
  }
  struct timespec left = { flush_us / 1000000, (flush_us % 1000000) * 1000 };
  while (nanosleep(&left, &left) != 0) {}
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  slow_flush();
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  slow_flush();
  return real(fd);
}
