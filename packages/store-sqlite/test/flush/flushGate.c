/*
 * A disk under the test's control, for ../walFlush.test.ts (compiled there with the system's `cc` and preloaded into
 * the child with LD_PRELOAD; Linux, glibc): every fsync and fdatasync of a file whose name ends in "-wal" first
 *   - waits while the file named by FLUSH_GATE exists (polling every millisecond, for at most 10 seconds, after which
 *     it creates that name with ".timedout" appended), as a disk whose flush takes until the test opens the gate;
 *   - fails with EIO while the file named by FLUSH_FAIL exists, as a disk that cannot write.
 * Other files' syncs pass through untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int exists(const char *name) {
  const char *file = getenv(name);
  return file != NULL && access(file, F_OK) == 0;
}

static int is_wal(int fd) {
  char link[64];
  char target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 4) return 0;
  target[n] = 0;
  return strcmp(target + n - 4, "-wal") == 0;
}

/* 0 to flush, -1 (errno EIO) to fail. */
static int gate(int fd) {
  if (!is_wal(fd)) return 0;
  struct timespec ms = { 0, 1000000 };
  int i = 0;
  for (; i < 10000 && exists("FLUSH_GATE"); i++) nanosleep(&ms, NULL);
  if (i == 10000) {
    /* Gave up waiting: FLUSH_GATE with ".timedout" appended is created, for the test to see. */
    char marker[4096];
    snprintf(marker, sizeof marker, "%s.timedout", getenv("FLUSH_GATE"));
    FILE *f = fopen(marker, "w");
    if (f != NULL) fclose(f);
  }
  if (exists("FLUSH_FAIL")) {
    errno = EIO;
    return -1;
  }
  return 0;
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return gate(fd) == 0 ? real(fd) : -1;
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  return gate(fd) == 0 ? real(fd) : -1;
}
