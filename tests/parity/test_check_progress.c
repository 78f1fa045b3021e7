/* `gdn-parity check FIXTURE`: the progress line while the oracle runs
 * as --shape shows it (parity_progress.h).
 *   - stderr a pseudo-terminal, a fixture without /oracle: the oracle is one
 *     step named with its tier and the file ("[1/4] oracle (mpfr) of F"),
 *     counted in the total with the sweep's steps from the first line
 *     (1 oracle + 1 scan + 2 device counts = 4), advancing inside
 *     ("... 100% | ... left in this step"), then the sweep's steps [2/4]..;
 *     the dd tier names itself the same way;
 *   - negative controls: --quiet writes nothing to the terminal; stderr a
 *     file (a CI log) receives nothing; a fixture with a trusted stored
 *     /oracle runs no oracle step (the line starts at the scan, total 3). */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fix.h"
#include "fix_regen.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "../check_runner.h"

/* A fixture of T = 64 tokens (4 chunks of 16), no outputs; with `oracle`
 * its /oracle computed and stored by gdn-fixture regen's function.  Made
 * in a child: OpenMP's threads (the oracle's, the synthesis') do not
 * survive a fork, so the process that forks the runs below never starts
 * them.  Returns the child's status: 0 written. */
static int make_fixture(const char *path, int oracle) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_shape s = {1, 64, 1, 2, 8, 8};
  gdn_synth_opts so = {7, 0, 0};
  if (gdn_synth_generate(&fx.inputs, &s, &so, &e)) return 1;
  fx.chunk_size = 16;
  if (fix_set_string(&fx.source, "synthetic", &e) || fix_write(&fx, path, &e)) return 2;
  fix_fixture_clear(&fx);
  if (!oracle) return 0;
  fix_regen_opts ro;
  fix_regen_opts_init(&ro);
  ro.force = 1;
  return fix_regen(path, &ro, NULL, &e) ? 3 : 0;
}

static void write_fixture(const char *path, int oracle) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) _exit(make_fixture(path, oracle));
  int st = 0;
  waitpid(pid, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writing %s failed (status %d)", path, st);
}

/* Runs `check path --devices 1,2 --oracle tier [--quiet]` in a child whose
 * stderr is a pseudo-terminal (tty 1) or a file (tty 0); returns the exit
 * status, and in buf what the terminal (or the file) received. */
static int run_check(const char *path, const char *tier, int quiet, int tty, char *buf, size_t cap) {
  char log[] = "/tmp/gdn-cprog-XXXXXX";
  int lf = -1, m = -1;
  if (tty) {
    m = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(grantpt(m), 0);
    ck_assert_int_eq(unlockpt(m), 0);
  } else {
    lf = mkstemp(log);
    ck_assert_int_ge(lf, 0);
  }
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    FILE *err = tty ? fopen(ptsname(m), "w") : fdopen(lf, "w");
    FILE *out = fopen("/dev/null", "w");
    if (!err || !out) _exit(100);
    char *av[] = {"gdn-parity", "check", (char *)path, "--devices", "1,2", "--oracle", (char *)tier,
                  quiet ? "--quiet" : NULL, NULL};
    gdn_error e;
    gdn_error_init(&e);
    int st = parity_cli_main(quiet ? 8 : 7, av, out, err, &e);
    fclose(err);
    _exit(st < 0 ? 2 : st);
  }
  size_t n = 0;
  if (tty) { /* read while it runs (a full terminal would block the child) until it closes the terminal */
    struct pollfd pfd = {m, POLLIN, 0};
    while (n < cap - 1 && poll(&pfd, 1, 60000) > 0) {
      ssize_t k = read(m, buf + n, cap - 1 - n);
      if (k <= 0) break; /* EIO: the child closed its side */
      n += (size_t)k;
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (tty) {
    close(m);
  } else {
    ssize_t k = pread(lf, buf, cap - 1, 0);
    n = k > 0 ? (size_t)k : 0;
    close(lf);
    unlink(log);
  }
  buf[n] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(oracle_step_on_a_terminal) {
  char path[] = "/tmp/gdn-cprog-XXXXXX.h5", buf[1 << 14], want[160];
  close(mkstemps(path, 3));
  write_fixture(path, 0);
  const char *base = strrchr(path, '/') + 1;
  const char *tiers[] = {"mpfr", "dd"};
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(run_check(path, tiers[i], 0, 1, buf, sizeof buf), 0);
    /* the step starts counted with everything after it */
    snprintf(want, sizeof want, "\r\033[K[1/4] oracle (%s) of %s | ", tiers[i], base);
    ck_assert_msg(strstr(buf, want), "no '%s' in '%s'", want + 4, buf);
    /* and advances inside: the oracle's final report is always drawn */
    snprintf(want, sizeof want, "\r\033[K[1/4] oracle (%s) of %s 100%% | ", tiers[i], base);
    ck_assert_msg(strstr(buf, want), "no '%s' in '%s'", want + 4, buf);
    ck_assert_msg(strstr(buf, "left in this step"), "%s", buf);
    /* then the sweep's steps, after it */
    ck_assert_msg(strstr(buf, "\r\033[K[2/4] C16 scan | "), "%s", buf);
    ck_assert_msg(strstr(buf, "\r\033[K[4/4] C16 D2 sequential | "), "%s", buf);
    ck_assert_msg(strstr(buf, want) < strstr(buf, "[2/4] C16 scan"), "%s", buf);
    /* the line erased at the end: the terminal is left clean */
    size_t n = strlen(buf);
    ck_assert_msg(n >= 4 && !strcmp(buf + n - 4, "\r\033[K"), "%s", buf);
  }
  /* negative controls: --quiet, and stderr a file, see nothing */
  ck_assert_int_eq(run_check(path, "mpfr", 1, 1, buf, sizeof buf), 0);
  ck_assert_msg(buf[0] == 0, "--quiet wrote '%s'", buf);
  ck_assert_int_eq(run_check(path, "mpfr", 0, 0, buf, sizeof buf), 0);
  ck_assert_msg(!strstr(buf, "oracle (") && !strstr(buf, "\033[K"), "a log got '%s'", buf);
  unlink(path);
}
END_TEST

START_TEST(stored_oracle_no_step) {
  char path[] = "/tmp/gdn-cprog-XXXXXX.h5", buf[1 << 14];
  close(mkstemps(path, 3));
  write_fixture(path, 1);
  ck_assert_int_eq(run_check(path, "mpfr", 0, 1, buf, sizeof buf), 0);
  ck_assert_msg(!strstr(buf, "oracle ("), "a trusted /oracle was recomputed: '%s'", buf);
  ck_assert_msg(strstr(buf, "\r\033[K[1/3] C16 scan | "), "%s", buf);
  unlink(path);
}
END_TEST

CKR_MAIN("check_progress", "core", 120, oracle_step_on_a_terminal, stored_oracle_no_step)
