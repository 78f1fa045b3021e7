/* parity_progress: the line's text, and that it reaches a terminal only. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parity_progress.h"
#include "../check_runner.h"

START_TEST(format_text) {
  char b[128];
  /* Nothing done yet: no estimate. */
  parity_progress_format(b, sizeof b, 0, 6, 0.2, -1, "synthetic inputs");
  ck_assert_str_eq(b, "[1/6] synthetic inputs | 0:00 elapsed, ~? left");
  /* 2 of 6 done in 62 s, the last in 31 s, 4 left -> 124 s. */
  parity_progress_format(b, sizeof b, 2, 6, 62.0, 31.0, "C64 D4 sequential");
  ck_assert_str_eq(b, "[3/6] C64 D4 sequential | 1:02 elapsed, ~2:04 left");
  /* An hour and more. */
  parity_progress_format(b, sizeof b, 1, 3, 3725.0, 3725.0, "oracle");
  ck_assert_str_eq(b, "[2/3] oracle | 1:02:05 elapsed, ~2:04:10 left");
  /* Truncated to the buffer, still terminated. */
  char s[8];
  parity_progress_format(s, sizeof s, 0, 1, 0, -1, "x");
  ck_assert_str_eq(s, "[1/1] x");
}
END_TEST

/* Within a step (the oracle's progress): the share done and the step's
 * own time left, elapsed x (1 - f) / f. */
START_TEST(format_part_text) {
  char b[160];
  /* 25 % of the oracle in 30 s: 90 s left in it. */
  parity_progress_format_part(b, sizeof b, 1, 6, 41.0, 30.0, 0.25, "oracle");
  ck_assert_str_eq(b, "[2/6] oracle 25% | 0:41 elapsed, ~1:30 left in this step");
  /* Nothing done yet: no estimate. */
  parity_progress_format_part(b, sizeof b, 1, 6, 11.0, 0.0, 0.0, "oracle");
  ck_assert_str_eq(b, "[2/6] oracle 0% | 0:11 elapsed, ~? left in this step");
  /* Done: nothing left. */
  parity_progress_format_part(b, sizeof b, 1, 6, 3725.0, 3600.0, 1.0, "oracle");
  ck_assert_str_eq(b, "[2/6] oracle 100% | 1:02:05 elapsed, ~0:00 left in this step");
}
END_TEST

/* Everything a progress object writes to f for one step. */
static void one_step(FILE *f, int enabled) {
  parity_progress p;
  parity_progress_init(&p, f, enabled);
  parity_progress_add(&p, 2);
  parity_progress_begin(&p, "oracle");
  parity_progress_end(&p);
  parity_progress_clear(&p);
}

/* A step that reports its progress inside (as the oracle does, through
 * the oracle_progress callback): the final report (done == total) is
 * always drawn; intermediate ones at most every quarter second. */
static void one_step_inside(FILE *f, int enabled) {
  parity_progress p;
  parity_progress_init(&p, f, enabled);
  parity_progress_add(&p, 2);
  parity_progress_begin(&p, "oracle");
  parity_progress_oracle(&p, 1000, 1000);
  parity_progress_end(&p);
  parity_progress_clear(&p);
}

/* What a pseudo-terminal's master reads, until `want` bytes or a second
 * with nothing more (the writes are separate: one read may see only the
 * first). */
static ssize_t read_pty(int m, char *buf, size_t cap, size_t want) {
  ssize_t n = 0;
  struct pollfd pfd = {m, POLLIN, 0};
  while (n < (ssize_t)want && n < (ssize_t)cap - 1 && poll(&pfd, 1, 1000) > 0) {
    ssize_t k = read(m, buf + n, cap - 1 - (size_t)n);
    if (k <= 0) break;
    n += k;
  }
  buf[n > 0 ? n : 0] = 0;
  return n;
}

/* A pseudo-terminal: its writing end, the master's descriptor in *m. */
static FILE *open_pty(int *m) {
  *m = posix_openpt(O_RDWR | O_NOCTTY);
  ck_assert_int_ge(*m, 0);
  ck_assert_int_eq(grantpt(*m), 0);
  ck_assert_int_eq(unlockpt(*m), 0);
  FILE *t = fopen(ptsname(*m), "w");
  ck_assert_ptr_nonnull(t);
  return t;
}

/* `step`, enabled, writes nothing to a file (a CI log). */
static void nothing_in_a_file(void (*step)(FILE *, int)) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  step(f, 1);
  ck_assert_int_eq(ftell(f), 0);
  fclose(f);
}

START_TEST(inside_a_step_terminal_only) {
  nothing_in_a_file(one_step_inside); /* a CI log */
  int m;
  FILE *t = open_pty(&m);
  one_step_inside(t, 0); /* --quiet: nothing */
  one_step_inside(t, 1);
  fclose(t);
  const char *want = "\r\033[K[1/2] oracle | 0:00 elapsed, ~? left"
                     "\r\033[K[1/2] oracle 100% | 0:00 elapsed, ~0:00 left in this step\r\033[K";
  char buf[512];
  ssize_t n = read_pty(m, buf, sizeof buf, strlen(want));
  ck_assert_msg(n == (ssize_t)strlen(want) && strcmp(buf, want) == 0, "got '%s'", buf);
  close(m);
}
END_TEST

START_TEST(terminal_only) {
  /* A file (a CI log): nothing written. */
  nothing_in_a_file(one_step);
  /* A pseudo-terminal: the line, then its erasure; disabled (--quiet): nothing. */
  int m;
  FILE *t = open_pty(&m);
  one_step(t, 0);
  one_step(t, 1);
  fclose(t);
  /* The line and its erasure are separate writes: read until both have
   * arrived (or nothing more comes within a second), not just the first. */
  char buf[256];
  ssize_t n = 0;
  struct pollfd pfd = {m, POLLIN, 0};
  while (n < (ssize_t)sizeof buf - 1 && poll(&pfd, 1, 1000) > 0) {
    ssize_t k = read(m, buf + n, sizeof buf - 1 - (size_t)n);
    if (k <= 0) break;
    n += k;
  }
  ck_assert_int_gt(n, 0);
  buf[n] = 0;
  ck_assert_msg(strncmp(buf, "\r\033[K[1/2] oracle | 0:00 elapsed, ~? left\r\033[K", 44) == 0, "got '%s'", buf);
  ck_assert_int_eq((int)n, 44);
  close(m);
}
END_TEST

CKR_MAIN("progress", "core", 0, format_text, terminal_only, format_part_text, inside_a_step_terminal_only)
