/* Never let a repeated option hide a failure (docs/errors.md, catalogue of
 * the hostile tests, rows 5, 6 and 16): one option table (core/gdn_cli.h)
 * refuses a repeated option, a value that is really the next option, and an
 * option of another command; usage errors exit 2 with a message that says
 * what is wrong (argv[1] gdn-parity, argv[2] gdn-fixture).  Each refusal has a
 * negative control: the same command spelled right runs. */
#include "hostile_util.h"

static char *parity, *fixture;
static char fx[600];

static void setup(void) {
  hu_scratch_make();
  snprintf(fx, sizeof fx, "%s/good.h5", hu_dir);
  hu_result r;
  char *a1[] = {fixture, "synth", "--shape", "1,32,1,8", "--chunk-size", "16", "--out", fx, NULL};
  hu_run(&r, a1, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
}

static void refused(char *const av[], const char *n1, const char *n2) {
  hu_result r;
  hu_run(&r, av, NULL);
  hu_expect_refusal(&r, 2, av[1], n1, n2, hu_dir, NULL, NULL, 0);
}

static void runs(char *const av[]) {
  hu_result r;
  hu_run(&r, av, NULL);
  ck_assert_msg(r.status == 0, "control %s %s: %d %s", av[1], av[2], r.status, r.err);
}

/* Row 5: check --fixture bad --fixture good judged good alone, exit 0. */
START_TEST(repeated_options_refused) {
  const char *bad = hu_path("bad.h5");
  hu_write(bad, "not hdf5", 8);
  char *a1[] = {parity, "check", "--fixture", (char *)bad, "--fixture", fx, "--oracle", "dd", NULL};
  refused(a1, "'--fixture' is given twice", bad);
  char *a2[] = {parity, "--shape", "1,32,1,8", "--json", (char *)hu_path("a.json"), "--json", (char *)hu_path("b.json"), NULL};
  refused(a2, "'--json' is given twice", "give it once");
  ck_assert(access(hu_path("a.json"), F_OK) != 0 && access(hu_path("b.json"), F_OK) != 0);
  char *a3[] = {parity, "--shape", "1,32,1,8", "--quiet", "--quiet", NULL};
  refused(a3, "'--quiet' is given twice", NULL);
  char *a4[] = {fixture, "synth", "--shape", "1,8,1,4", "--seed", "1", "--seed", "2", "--out", (char *)hu_path("s.h5"), NULL};
  refused(a4, "'--seed' is given twice", NULL);
  /* negative control: the same fixtures as arguments are both judged (4
   * cases each: --shard tokens keeps the default devices 1, 2, 4, 8 that
   * divide T = 32) */
  char *c1[] = {parity, "check", fx, fx, "--oracle", "dd", "--quiet", NULL};
  hu_result r;
  hu_run(&r, c1, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "PASS: 8 cases"), "%d %s %s", r.status, r.out, r.err);
  char *c2[] = {parity, "check", (char *)bad, fx, "--oracle", "dd", "--quiet", NULL};
  hu_run(&r, c2, NULL);
  ck_assert_msg(r.status == 2, "a bad fixture among arguments: %d %s", r.status, r.err);
}
END_TEST

/* Row 6: --json --quiet wrote a file named --quiet; options of other
 * commands were ignored. */
START_TEST(option_values_and_foreign_options) {
  char *a1[] = {parity, "--shape", "1,32,1,8", "--oracle", "dd", "--json", "--quiet", NULL};
  refused(a1, "'--json' needs a value", "followed by the option '--quiet'");
  ck_assert(access("--quiet", F_OK) != 0);
  static const char *const foreign[][3] = {{"--seed", "3", "check"}, {"--gates", "slow", "check"},
                                           {"--h0", NULL, "check"}, {"--key-heads", "1", "check"},
                                           {"--dv", "8", "check"}, {"--grid", "g.json", "check"},
                                           {"--shape", "1,8,1,4", "check"}};
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
    char *av[] = {parity, "check", fx, (char *)foreign[i][0], (char *)foreign[i][1], NULL};
    char want[120];
    snprintf(want, sizeof want, "'%s' does not apply to check", foreign[i][0]);
    refused(av, want, NULL);
  }
  char *a2[] = {parity, "sweep", "--grid", (char *)hu_path("g.json"), "--fixture", fx, NULL};
  refused(a2, "'--fixture' does not apply to sweep", "it is for: check");
  char *a3[] = {parity, "report", (char *)hu_path("r.json"), "-o", (char *)hu_path("r.html"), "--seed", "1", NULL};
  refused(a3, "'--seed' does not apply to report", NULL);
  char *a4[] = {fixture, "info", fx, "--force", NULL};
  refused(a4, "unknown option '--force'", NULL);
  /* negative controls: a value that starts with '-' given with '=' and a
   * negative number are values */
  char *c1[] = {parity, "--shape", "1,32,1,8", "--chunk", "16", "--oracle", "dd", "--quiet",
                "--json=-dash.json", NULL};
  hu_result r;
  char cwd[600];
  ck_assert(getcwd(cwd, sizeof cwd));
  ck_assert_int_eq(chdir(hu_dir), 0);
  hu_run(&r, c1, NULL);
  ck_assert_int_eq(chdir(cwd), 0);
  ck_assert_msg(r.status == 0 && access(hu_path("-dash.json"), F_OK) == 0, "%d %s", r.status, r.err);
  char *c2[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)hu_path("l.h5"), NULL};
  runs(c2);
  char *c3[] = {parity, "check", fx, "--chunk", "16", "--oracle", "dd", "--quiet", NULL};
  runs(c3);
}
END_TEST

/* Row 16: exit 2 where documented, and messages that say what is wrong. */
START_TEST(messages_and_exit_statuses) {
  char *a1[] = {parity, "--shape", "0x10,8,1,4", NULL};
  refused(a1, "is not a decimal integer", "'x' at position 2");
  char *a2[] = {parity, "--shape", "1,8,1,4", "--threads", "-1", NULL};
  refused(a2, "--threads '-1': out of range [1, 4096]", NULL);
  char *a3[] = {parity, "--shape", "1,8,1,4", "--max-bytes", "K", NULL};
  refused(a3, "--max-bytes 'K': not a byte size", NULL);
  char *a4[] = {parity, "report", hu_dir, "-o", (char *)hu_path("x.html"), NULL};
  refused(a4, "is a folder, not a regular file", NULL);
  const char *missing = hu_path("no/such/x.h5");
  char *a5[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)missing, NULL};
  refused(a5, "does not exist", missing);
  char *a6[] = {fixture, "import", (char *)hu_path("nodir"), "--out", (char *)missing, NULL};
  hu_result r;
  hu_run(&r, a6, NULL);
  ck_assert_msg(r.status == 2, "import into a missing folder: %d %s", r.status, r.err);
  ck_assert_int_eq(mkdir(hu_path("ro"), 0555), 0);
  if (geteuid() != 0) {
    char *a7[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)hu_path("ro/x.h5"), NULL};
    refused(a7, "not writable", NULL);
  }
  /* negative controls */
  char *c1[] = {parity, "--shape", "1,16,1,8", "--chunk", "16", "--oracle", "dd", "--quiet", "--threads", "1",
                "--max-bytes", "1G", NULL};
  runs(c1);
}
END_TEST

HU_MAIN("test_options GDN-PARITY GDN-FIXTURE", 2, (&parity, &fixture), "options", "options", setup, NULL, 300,
    repeated_options_refused, option_values_and_foreign_options, messages_and_exit_statuses)
