/* Running a program with stderr on a pseudo-terminal (header-only, static),
 * for the tests of the progress line (gdn_progress.h draws it only on a
 * terminal): stdout to a file, stderr to a pseudo-terminal read while the
 * program runs, or to a file (a CI log).  Uses Check's assertions; the
 * including file defines _GNU_SOURCE before any include (posix_openpt). */
#ifndef GDN_TESTS_PTY_RUN_H
#define GDN_TESTS_PTY_RUN_H

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs prog with `args` (NULL-terminated, at most 22), stdout to a file
 * read back into out, stderr to a pseudo-terminal (tty 1) or a file (tty 0)
 * read back into err (each of cap bytes).  Returns the exit status. */
static inline int pty_run(const char *prog, char *const args[], int tty, char *out, char *err, size_t cap) {
  char ol[] = "/tmp/gdn-pty-out-XXXXXX", el[] = "/tmp/gdn-pty-err-XXXXXX";
  int of = mkstemp(ol), ef = tty ? -1 : mkstemp(el), m = -1;
  ck_assert_int_ge(of, 0);
  if (tty) {
    m = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(grantpt(m), 0);
    ck_assert_int_eq(unlockpt(m), 0);
  }
  char *av[24] = {(char *)prog};
  int ac = 1;
  while (args[ac - 1] && ac < 23) av[ac] = args[ac - 1], ac++;
  av[ac] = NULL;
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int t = tty ? open(ptsname(m), O_WRONLY) : ef;
    if (t < 0) _exit(126);
    dup2(of, 1);
    dup2(t, 2);
    execv(prog, av);
    _exit(127);
  }
  size_t n = 0;
  if (tty) { /* read while it runs, until the child's side closes (EIO) */
    struct pollfd pfd = {m, POLLIN, 0};
    while (n < cap - 1 && poll(&pfd, 1, 60000) > 0) {
      ssize_t k = read(m, err + n, cap - 1 - n);
      if (k <= 0) break;
      n += (size_t)k;
    }
    close(m);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!tty) {
    ssize_t k = pread(ef, err, cap - 1, 0);
    n = k > 0 ? (size_t)k : 0;
    close(ef);
    unlink(el);
  }
  err[n] = 0;
  ssize_t ko = pread(of, out, cap - 1, 0);
  out[ko > 0 ? ko : 0] = 0;
  close(of);
  unlink(ol);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The percentages the line drew for step `what`, in order, into pc (at
 * most n); returns how many. */
static inline int pty_percents(const char *err, const char *what, int *pc, int n) {
  int k = 0;
  const size_t w = strlen(what);
  for (const char *p = strstr(err, what); p && k < n; p = strstr(p + w, what)) {
    int v;
    if (sscanf(p + w, " %d%%", &v) == 1) pc[k++] = v;
  }
  return k;
}

/* Whether the line drew step `what` from start to 100 % without stepping
 * back: 0 yes; else a message in why. */
static inline int pty_step_fails(const char *err, const char *what, char *why, size_t cap) {
  int pc[512], n = pty_percents(err, what, pc, 512);
  if (n < 1 || pc[n - 1] != 100) {
    snprintf(why, cap, "'%s': %d draws, the last %d%%", what, n, n ? pc[n - 1] : -1);
    return 1;
  }
  for (int i = 1; i < n; i++)
    if (pc[i] < pc[i - 1]) {
      snprintf(why, cap, "'%s': %d%% after %d%%", what, pc[i], pc[i - 1]);
      return 1;
    }
  return 0;
}

#endif
