/* A child's stdout and stderr caught in two temporary files (test helper,
 * header-only), for the two ways the tests run a built program: the parity
 * suite's cli_run (tests/parity/cli_run.h) and the hostile suite's hu_run_ex
 * (tests/hostile/hostile_util.h), which adds a time limit, signals and extra
 * environment.  Files rather than pipes, so a child that writes more than a
 * pipe holds never blocks while the parent waits.
 *
 *   run_capture c;
 *   run_capture_open(&c, "/tmp/gdn-cli");   before the fork
 *   run_capture_redirect(&c);                in the child, before exec
 *   run_capture_collect(&c, out, sizeof out, err, sizeof err);  after the wait
 */
#ifndef GDN_TESTS_RUN_CAPTURE_H
#define GDN_TESTS_RUN_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct run_capture {
  char out_path[64], err_path[64];
  int out_fd, err_fd;
} run_capture;

/* Two fresh files named from prefix; abort()s if one cannot be made (a test
 * that cannot start fails). */
static inline void run_capture_open(run_capture *c, const char *prefix) {
  snprintf(c->out_path, sizeof c->out_path, "%.40s-out-XXXXXX", prefix);
  snprintf(c->err_path, sizeof c->err_path, "%.40s-err-XXXXXX", prefix);
  c->out_fd = mkstemp(c->out_path);
  c->err_fd = mkstemp(c->err_path);
  if (c->out_fd < 0 || c->err_fd < 0) {
    perror(prefix);
    abort();
  }
}

static inline void run_capture_redirect(const run_capture *c) {
  dup2(c->out_fd, 1);
  dup2(c->err_fd, 2);
}

/* The file from its start into buf, NUL-terminated; what does not fit in
 * cap - 1 bytes is dropped. */
static inline void run_capture_read(int fd, char *buf, size_t cap) {
  size_t n = 0;
  ssize_t r;
  lseek(fd, 0, SEEK_SET);
  while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
  buf[n] = '\0';
}

/* Both files read back, closed and removed. */
static inline void run_capture_collect(run_capture *c, char *out, size_t out_cap, char *err, size_t err_cap) {
  run_capture_read(c->out_fd, out, out_cap);
  run_capture_read(c->err_fd, err, err_cap);
  close(c->out_fd);
  close(c->err_fd);
  unlink(c->out_path);
  unlink(c->err_path);
}

#endif
