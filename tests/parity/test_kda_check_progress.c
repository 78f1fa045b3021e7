/* `gdn-parity check` of a Kimi Delta Attention fixture: the progress line
 * while its oracles run (parity_recur_check.h, opts.progress; the oracles
 * report as oracle_kda.h and oracle_kda_vjp.h say).
 *   - stderr a pseudo-terminal, a fixture without /oracle and with
 *     /cotangents and an output's gradients, checked whole: two steps,
 *     "[1/1] oracle (mpfr) of F" and "[2/2] oracle VJP of F's /cotangents",
 *     each advancing to 100 % without stepping back, the line erased at the
 *     end;
 *   - the same check streamed (--group-heads 1): one step "oracle and VJP
 *     of F, by key-head group" over both groups' forward and VJP, never
 *     stepping back (each run restarting the line would);
 *   - negative controls: --quiet draws nothing; stderr a file (a CI log)
 *     receives nothing; after regen --grads (a trusted stored /oracle and
 *     /oracle/grads) no oracle step is drawn, whole or streamed; and every
 *     run's document passes.
 * argv[1]: gdn-parity, argv[2]: gdn-fixture. */
#define _GNU_SOURCE
#include "../check_runner.h"
#include "../pty_run.h"

static char *exe, *fexe;

START_TEST(kda_check_oracle_steps) {
  char path[] = "/tmp/gdn-kprog-XXXXXX.h5", out[1 << 15], err[1 << 15], what[200], why[256];
  close(mkstemps(path, 3));
  const char *base = strrchr(path, '/') + 1;
  char *synth[] = {"synth", "--shape", "1,2100,2,8", "--key-heads", "2", "--seed", "5", "--recurrence", "kda",
                   "--grad", "--kernel-outputs", "1", "--force", "--out", path, NULL};
  ck_assert_msg(pty_run(fexe, synth, 0, out, err, sizeof out) == 0, "%s", err);
  char *whole[] = {"check", path, NULL};
  ck_assert_msg(pty_run(exe, whole, 1, out, err, sizeof out) == 0, "%s%s", out, err);
  snprintf(what, sizeof what, "[1/1] oracle (mpfr) of %s", base);
  ck_assert_msg(!pty_step_fails(err, what, why, sizeof why), "%s: %s", why, err);
  snprintf(what, sizeof what, "[2/2] oracle VJP of %s's /cotangents", base);
  ck_assert_msg(!pty_step_fails(err, what, why, sizeof why), "%s: %s", why, err);
  size_t n = strlen(err);
  ck_assert_msg(n >= 4 && !strcmp(err + n - 4, "\r\033[K"), "not erased: %s", err);
  ck_assert_msg(strstr(out, "PASS"), "%s", out);
  /* streamed: one step over the groups' forward and VJP */
  char *streamed[] = {"check", path, "--group-heads", "1", NULL};
  ck_assert_msg(pty_run(exe, streamed, 1, out, err, sizeof out) == 0, "%s%s", out, err);
  snprintf(what, sizeof what, "[1/1] oracle and VJP of %s, by key-head group", base);
  ck_assert_msg(!pty_step_fails(err, what, why, sizeof why), "%s: %s", why, err);
  ck_assert_msg(!strstr(err, "[2/2]"), "%s", err);
  /* negative controls: --quiet and a log see nothing */
  char *quiet[] = {"check", path, "--quiet", NULL};
  ck_assert_int_eq(pty_run(exe, quiet, 1, out, err, sizeof out), 0);
  ck_assert_msg(err[0] == 0, "--quiet drew '%s'", err);
  ck_assert_int_eq(pty_run(exe, whole, 0, out, err, sizeof out), 0);
  ck_assert_msg(!strstr(err, "\033[K") && !strstr(err, "oracle"), "a log got '%s'", err);
  /* a stored oracle with its gradients: nothing to compute, no step */
  char *regen[] = {"regen", path, "--grads", "--force", "--quiet", NULL};
  ck_assert_msg(pty_run(fexe, regen, 0, out, err, sizeof out) == 0, "%s", err);
  for (int s = 0; s < 2; s++) {
    ck_assert_msg(pty_run(exe, s ? streamed : whole, 1, out, err, sizeof out) == 0, "%s%s", out, err);
    ck_assert_msg(!strstr(err, "oracle"), "streamed %d: a stored oracle drew '%s'", s, err);
    ck_assert_msg(strstr(out, "the fixture's /oracle"), "streamed %d: %s", s, out);
  }
  unlink(path);
}
END_TEST

CKR_MAIN_ARGS("test_kda_check_progress GDN_PARITY_EXE GDN_FIXTURE_EXE", 2, (&exe, &fexe), "kda_check_progress",
              "core", 300, kda_check_oracle_steps)
