/* failshim: LD_PRELOAD library that makes writes to output temporaries
 * ("*.tmp.*", as gdn_atomic names them) fail or be interrupted, so the
 * tests can put a real gdn-parity / gdn-fixture in the situations a CI
 * runner meets: a full disk and a kill in the middle of a write.
 *
 *   GDN_SHIM_FAIL=write|fsync|rename   that call fails with ENOSPC (write:
 *                                      half the bytes are written first, as a
 *                                      filling disk does)
 *   GDN_SHIM_KILL=SIG@write|fsync|rename
 *                                      raise signal SIG (a number) at that
 *                                      moment: write -- after half of the
 *                                      first write; fsync -- the temporary is
 *                                      complete, not renamed; rename -- just
 *                                      before the rename
 *
 *   GDN_SHIM_NTH=N                     act only at the N-th such event on a
 *                                      temporary (1-based; default: every
 *                                      one): the second of several outputs
 *
 * Interposes what our code calls through the PLT: fwrite, write, fsync,
 * rename (glibc's stdio calls its internal write directly; that is why
 * fwrite itself is wrapped).  Only temporaries are touched: inputs, logs and
 * stdout pass through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd_is_temp(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, ".tmp.") != NULL;
}

/* With GDN_SHIM_NTH: is this the N-th temporary to meet `event`?  fwrite
 * and write count files, not calls: a temporary is counted once. */
static int nth_hit(const char *event, int fd) {
  const char *n = getenv("GDN_SHIM_NTH");
  if (!n) return 1;
  static int count[3];
  static ino_t last_ino;
  int i = !strcmp(event, "write") ? 0 : !strcmp(event, "fsync") ? 1 : 2;
  struct stat st;
  if (i == 0) { /* one file, many writes: counted by inode (fds are reused) */
    if (fstat(fd, &st) == 0 && st.st_ino != last_ino) count[i]++, last_ino = st.st_ino;
  } else {
    count[i]++;
  }
  return count[i] == atoi(n);
}

/* What to do at `event` on a temporary: 0 nothing, 1 fail, 2 kill (*sig). */
static int action_fd(const char *event, int fd, int *sig);
static int action(const char *event, int *sig) { return action_fd(event, -1, sig); }

static int action_fd(const char *event, int fd, int *sig) {
  const char *f = getenv("GDN_SHIM_FAIL"), *k = getenv("GDN_SHIM_KILL");
  if ((f && !strcmp(f, event)) || (k && strchr(k, '@') && !strcmp(strchr(k, '@') + 1, event)))
    if (!nth_hit(event, fd)) return 0;
  if (f && !strcmp(f, event)) return 1;
  if (k) {
    const char *at = strchr(k, '@');
    if (at && !strcmp(at + 1, event)) {
      *sig = atoi(k);
      return 2;
    }
  }
  return 0;
}

size_t fwrite(const void *buf, size_t size, size_t n, FILE *f) {
  static size_t (*real)(const void *, size_t, size_t, FILE *);
  if (!real) real = (size_t (*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
  int sig = 0, a = size && n > 1 && fd_is_temp(fileno(f)) ? action_fd("write", fileno(f), &sig) : 0;
  if (!a) return real(buf, size, n, f);
  size_t half = n / 2, done = real(buf, size, half, f);
  fflush(f);
  if (a == 2) raise(sig);
  errno = ENOSPC;
  return done;
}

ssize_t write(int fd, const void *buf, size_t n) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  int sig = 0, a = n > 1 && fd > 2 && fd_is_temp(fd) ? action_fd("write", fd, &sig) : 0;
  if (!a) return real(fd, buf, n);
  ssize_t done = real(fd, buf, n / 2);
  if (a == 2) raise(sig);
  if (done > 0) return done; /* the caller comes back for the rest and then fails */
  errno = ENOSPC;
  return -1;
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  int sig = 0, a = fd_is_temp(fd) ? action_fd("fsync", fd, &sig) : 0;
  if (a == 2) raise(sig);
  if (a == 1) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd);
}

int rename(const char *from, const char *to) {
  static int (*real)(const char *, const char *);
  if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  int sig = 0, a = strstr(from, ".tmp.") ? action("rename", &sig) : 0;
  if (a == 2) raise(sig);
  if (a == 1) {
    errno = ENOSPC;
    return -1;
  }
  return real(from, to);
}
