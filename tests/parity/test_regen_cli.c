/* gdn-parity regen in one process (parity_regen_cli.c, parity_regen.h):
 * gdn-fixture regen's file byte for byte, whole and by head group, MPFR and
 * dd; its refusals leave the file as it was.  (Over mpirun's ranks:
 * tests/mpi/test_mpi_cli.sh part regen.)
 *
 * Negative control: the comparison tells two regens apart (another
 * working precision writes another file), so "the same file" can fail. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_runner.h"

#include "cli_files.h"
#include "../reports/test_util.h"

static char *exe, *fixture_exe;
static char dir[64];

static void dir_begin(void) {
  snprintf(dir, sizeof dir, "/tmp/gdn-regen-cli-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}
static void dir_end(void) { ck_assert_msg(rmdir(dir) == 0, "%s is not empty", dir); }

/* dir/name: a fixture with h0, 4 key heads, 8 value heads. */
static void synth(const char *name, char *path, size_t n) {
  snprintf(path, n, "%s/%s", dir, name);
  cli_result r;
  cli_run_sub(&r, fixture_exe, "synth", NULL,
      (const char *const[]){"--shape", "1,96,8,8", "--key-heads", "4", "--h0", "--slow-gates", "--out", path, NULL});
  ck_assert_msg(r.status == 0, "synth: %s", r.err);
}

/* gdn-fixture regen and gdn-parity regen with the same options on two
 * copies of src: the same bytes. */
static void same_as_fixture(const char *src, const char *const *args) {
  char a[128], b[128];
  snprintf(a, sizeof a, "%s/a.h5", dir);
  snprintf(b, sizeof b, "%s/b.h5", dir);
  cli_copy_file(src, a);
  cli_copy_file(src, b);
  cli_result r;
  cli_run_sub(&r, fixture_exe, "regen", a, args);
  ck_assert_msg(r.status == 0, "gdn-fixture regen: %s", r.err);
  cli_run_sub(&r, exe, "regen", b, args);
  ck_assert_msg(r.status == 0, "gdn-parity regen: %s", r.err);
  ck_assert_msg(strstr(r.out, "/oracle written") && strstr(r.out, "(1 rank)"), "%s", r.out);
  ck_assert_msg(cli_same_bytes(a, b), "gdn-parity regen %s ...: not gdn-fixture regen's file", args[0]);
  unlink(a);
  unlink(b);
}

START_TEST(one_process_is_gdn_fixture_regen) {
  char f[128];
  dir_begin();
  synth("f.h5", f, sizeof f);
  same_as_fixture(f, (const char *const[]){"--threads", "1", NULL});
  same_as_fixture(f, (const char *const[]){"--oracle", "dd", "--threads", "1", NULL});
  same_as_fixture(f, (const char *const[]){"--group-heads", "1", "--threads", "1", NULL});
  same_as_fixture(f, (const char *const[]){"--oracle", "dd", "--group-heads", "3", "--threads", "2", NULL});
  unlink(f);
  dir_end();
}
END_TEST

/* Negative control: another working precision, another file. */
START_TEST(the_comparison_can_fail) {
  char f[128], a[128], b[128];
  dir_begin();
  synth("f.h5", f, sizeof f);
  snprintf(a, sizeof a, "%s/a.h5", dir);
  snprintf(b, sizeof b, "%s/b.h5", dir);
  cli_copy_file(f, a);
  cli_copy_file(f, b);
  cli_result r;
  cli_run_sub(&r, fixture_exe, "regen", a, (const char *const[]){"--group-heads", "1", "--quiet", NULL});
  ck_assert_int_eq(r.status, 0);
  cli_run_sub(&r, exe, "regen", b, (const char *const[]){"--group-heads", "1", "--oracle-bits", "96", "--quiet", NULL});
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(!cli_same_bytes(a, b), "two regens at 128 and 96 bits wrote the same file");
  unlink(a);
  unlink(b);
  unlink(f);
  dir_end();
}
END_TEST

/* Refusals: exit 2 with the reason, the file as it was. */
START_TEST(refusals_leave_the_file) {
  char f[128], keep[128];
  dir_begin();
  synth("f.h5", f, sizeof f);
  snprintf(keep, sizeof keep, "%s/keep.h5", dir);
  cli_result r;
  cli_run_sub(&r, exe, "regen", f, (const char *const[]){"--quiet", NULL});
  ck_assert_msg(r.status == 0 && !r.out[0], "--quiet: %d [%s] %s", r.status, r.out, r.err);
  cli_copy_file(f, keep);
  cli_run_sub(&r, exe, "regen", f, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "already has an /oracle") && strstr(r.err, "--force"), "%d %s",
                r.status, r.err);
  cli_run_sub(&r, exe, "regen", f, (const char *const[]){"--oracle", "quad", NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "'quad' is not mpfr or dd"), "%d %s", r.status, r.err);
  cli_run_sub(&r, exe, "regen", f, (const char *const[]){"--group-heads", "0", NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "--group-heads"), "%d %s", r.status, r.err);
  cli_run_sub(&r, exe, "regen", f, (const char *const[]){keep, NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "expected one fixture file, got 2"), "%d %s", r.status, r.err);
  cli_run_sub(&r, exe, "regen", NULL, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "got 0"), "%d %s", r.status, r.err);
  ck_assert_msg(cli_same_bytes(f, keep), "a refused regen changed the file");
  cli_run_sub(&r, exe, "regen", f, (const char *const[]){"--force", "--oracle", "dd", "--quiet", NULL});
  ck_assert_msg(r.status == 0, "--force: %s", r.err);
  ck_assert_msg(!cli_same_bytes(f, keep), "--force --oracle dd left the MPFR /oracle");
  cli_run_sub(&r, exe, "regen", "/nonexistent/x.h5", NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "/nonexistent/x.h5"), "%d %s", r.status, r.err);
  cli_run_sub(&r, exe, "regen", NULL, (const char *const[]){"--help", NULL});
  ck_assert_msg(r.status == 0 && strstr(r.out, "usage: [mpirun -np N] gdn-parity regen"), "%s", r.out);
  unlink(keep);
  unlink(f);
  dir_end();
}
END_TEST

CKR_MAIN_ARGS("test_regen_cli PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, (&exe, &fixture_exe), "regen_cli",
              "regen_cli", 300, one_process_is_gdn_fixture_regen, the_comparison_can_fail, refusals_leave_the_file)
