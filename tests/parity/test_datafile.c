/* The coverage command's default grid (grids/upstream-pr.json) from an
 * installed distribution: run from a folder outside any checkout, the tool
 * finds the copy the wheel ships in its Python package, relative to its own
 * executable (parity_datafile.h), in both installed layouts -- auditwheel's
 * gdn_parity.scripts/ beside the package, a venv's bin/ -- and, with no copy
 * there (the negative control), exits 2 naming every place it looked.  The
 * "installed" grid is one small entry (tests/parity/coverage-small.json's
 * first: carry-zero is killed by it, exit 0) so a run takes about a second. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "cli_run.h"

static char *exe;

static const char grid[] =
    "{\"name\": \"upstream-pr\", \"description\": \"one entry that kills carry-zero\", \"entries\": [\n"
    "  {\"shape\": \"1,64,2,16\", \"gates\": \"slow\", \"seed\": 3, \"chunk\": [16], \"devices\": [2]}]}\n";

static void mkdirs(const char *path) {
  char p[1024];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') *s = '\0', mkdir(p, 0700), *s = '/';
  mkdir(p, 0700);
}

static void copy_file(const char *from, const char *to, mode_t mode) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  ck_assert_msg(in && out, "copy %s -> %s", from, to);
  char buf[1 << 16];
  for (size_t k; (k = fread(buf, 1, sizeof buf, in)) > 0;) ck_assert_uint_eq(fwrite(buf, 1, k, out), k);
  fclose(in);
  ck_assert_int_eq(fclose(out), 0);
  chmod(to, mode);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

/* `BIN coverage --mutants carry-zero --quiet` run in folder cwd. */
static void coverage_in(const char *cwd, const char *bin, cli_result *r) {
  char here[1024];
  ck_assert_ptr_nonnull(getcwd(here, sizeof here));
  ck_assert_int_eq(chdir(cwd), 0);
  char *av[] = {(char *)bin, "coverage", "--mutants", "carry-zero", "--quiet", NULL};
  cli_run(r, av);
  ck_assert_int_eq(chdir(here), 0);
}

/* One installed layout: the binary at root/BIN_REL, the package's grids at
 * root/GRIDS_REL; found, then (grid removed) refused naming that place. */
static void layout(const char *bin_rel, const char *grids_rel) {
  char *root = scratch_mkdtemp("/tmp/gdn-datafile");
  char bin_dir[1024], bin[1200], grids[1024], g[1200], cwd[1100];
  snprintf(bin_dir, sizeof bin_dir, "%s/%s", root, bin_rel);
  snprintf(bin, sizeof bin, "%s/gdn-parity", bin_dir);
  snprintf(grids, sizeof grids, "%s/%s", root, grids_rel);
  snprintf(g, sizeof g, "%s/upstream-pr.json", grids);
  snprintf(cwd, sizeof cwd, "%s/elsewhere", root);
  mkdirs(bin_dir), mkdirs(grids), mkdirs(cwd);
  copy_file(exe, bin, 0755);
  write_text(g, grid);
  cli_result r;
  coverage_in(cwd, bin, &r);
  ck_assert_msg(r.status == 0, "%s: status %d: %s%s", bin_rel, r.status, r.out, r.err);
  ck_assert_msg(strstr(r.out, "PASS"), "%s", r.out);
  unlink(g); /* the negative control: no installed grid, no checkout */
  coverage_in(cwd, bin, &r);
  ck_assert_msg(r.status == 2 && strstr(r.err, "default grid grids/upstream-pr.json: not found") &&
                    strstr(r.err, "gdn_parity_jax/grids/upstream-pr.json") && strstr(r.err, "give --grid"),
                "status %d: %s", r.status, r.err);
  scratch_rmdir(root);
  free(root);
}

START_TEST(beside_the_package) { layout("site/gdn_parity.scripts", "site/gdn_parity_jax/grids"); }
END_TEST

START_TEST(in_a_venv) { layout("venv/bin", "venv/lib/python3.11/site-packages/gdn_parity_jax/grids"); }
END_TEST

CKR_MAIN_ARGS("test_datafile PATH-TO-gdn-parity", 1, (&exe), "datafile", "datafile", 120, beside_the_package,
              in_a_venv)
