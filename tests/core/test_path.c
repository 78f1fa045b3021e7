/* gdn_path_check_uses and gdn_atomic_resolve: files by identity; every
 * refusal beside a negative control that is accepted. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdn_atomic.h"
#include "gdn_cli.h"
#include "gdn_path.h"
#include "../check_runner.h"

static char dir[64];

static const char *p(const char *name) {
  static char b[8][200];
  static int k;
  char *r = b[k++ % 8];
  snprintf(r, 200, "%s/%s", dir, name);
  return r;
}

static void touch(const char *f) {
  FILE *x = fopen(f, "w");
  ck_assert_ptr_nonnull(x);
  fputs("x\n", x);
  fclose(x);
}

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/gdn-path-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

static int check2(const char *r1, const char *a, int o1, const char *r2, const char *b, int o2, gdn_error *e) {
  gdn_path_use u[2] = {{r1, a, o1}, {r2, b, o2}};
  gdn_error_init(e);
  return gdn_path_check_uses(u, 2, e);
}

START_TEST(identity_not_spelling) {
  char in[200], dotted[220], hard[200], sym[200];
  snprintf(in, sizeof in, "%s", p("in.h5"));
  touch(in);
  snprintf(dotted, sizeof dotted, "%s/./in.h5", dir);
  snprintf(hard, sizeof hard, "%s", p("hard.h5"));
  snprintf(sym, sizeof sym, "%s", p("sym.h5"));
  ck_assert_int_eq(link(in, hard), 0);
  ck_assert_int_eq(symlink("in.h5", sym), 0);
  gdn_error e;
  const char *same[] = {in, dotted, hard, sym};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(check2("the fixture", in, 0, "--json", same[i], 1, &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, "destroy the input"), "%s", e.msg);
  }
  /* two new outputs spelled differently */
  char n1[220], n2[220];
  snprintf(n1, sizeof n1, "%s/new.json", dir);
  snprintf(n2, sizeof n2, "%s/./new.json", dir);
  ck_assert_int_eq(check2("--json", n1, 1, "--junit", n2, 1, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "are the same file"), "%s", e.msg);
  /* negative controls: distinct files; two inputs on one file */
  ck_assert_int_eq(check2("the fixture", in, 0, "--json", p("out.json"), 1, &e), GDN_OK);
  ck_assert_int_eq(check2("the fixture", in, 0, "the fixture", hard, 0, &e), GDN_OK);
  ck_assert_int_eq(check2("--json", p("a.json"), 1, "--junit", p("b.xml"), 1, &e), GDN_OK);
  /* an input that is a folder */
  ck_assert_int_eq(check2("the grid", dir, 0, "--json", p("a.json"), 1, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "is a folder"), "%s", e.msg);
}
END_TEST

/* Non-regular inputs: an input that is not a regular file is refused by the
 * shared check and by the shared opener, which never blocks on a FIFO (no
 * writer ever comes here: a blocking open would hang the test); the
 * controls: a regular file opens and reads, a missing one reports ENOENT. */
START_TEST(inputs_must_be_regular) {
  gdn_error e;
  gdn_error_init(&e);
  char fifo[200], reg[200];
  snprintf(fifo, sizeof fifo, "%s", p("in.fifo"));
  snprintf(reg, sizeof reg, "%s", p("in.json"));
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  FILE *w = fopen(reg, "w");
  ck_assert_ptr_nonnull(w);
  fputs("{}", w);
  fclose(w);
  static const char *const kinds[] = {"a FIFO", "a folder", "a character device"};
  const char *paths[] = {fifo, dir, "/dev/null"};
  for (int i = 0; i < 3; i++) {
    gdn_error_init(&e);
    ck_assert_int_eq(gdn_path_check_input("--grid", paths[i], &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, "--grid") && strstr(e.msg, paths[i]) && strstr(e.msg, kinds[i]), "%s", e.msg);
    FILE *f = (FILE *)1;
    int err = -1;
    gdn_error_init(&e);
    ck_assert_int_eq(gdn_path_fopen_input("--readme", paths[i], &f, &err, &e), GDN_ERR_INPUT);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(err, 0);
    ck_assert_msg(strstr(e.msg, "--readme") && strstr(e.msg, kinds[i]), "%s", e.msg);
    /* through the run's file check too */
    gdn_path_use u = {"the README", paths[i], 0};
    gdn_error_init(&e);
    ck_assert_int_eq(gdn_path_check_uses(&u, 1, &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, kinds[i]), "%s", e.msg);
  }
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_path_check_input("--grid", reg, &e), GDN_OK);
  ck_assert_int_eq(gdn_path_check_input("--grid", p("missing.json"), &e), GDN_OK); /* its reader says */
  FILE *f = NULL;
  int err = -1;
  ck_assert_int_eq(gdn_path_fopen_input("--grid", reg, &f, &err, &e), GDN_OK);
  char buf[8] = "";
  ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
  ck_assert_str_eq(buf, "{}");
  fclose(f);
  ck_assert_int_eq(gdn_path_fopen_input("--grid", p("missing.json"), &f, &err, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(err, ENOENT);
  ck_assert_msg(strstr(e.msg, "cannot open"), "%s", e.msg);
  unlink(fifo);
  unlink(reg);
}
END_TEST

START_TEST(resolve_refusals) {
  char *t;
  int ex;
  mode_t m;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_atomic_resolve("/dev/null", &t, &ex, &m, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "character device"), "%s", e.msg);
  ck_assert_int_eq(gdn_atomic_resolve(dir, &t, &ex, &m, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "a folder"), "%s", e.msg);
  char ro[200];
  snprintf(ro, sizeof ro, "%s", p("ro.json"));
  touch(ro);
  chmod(ro, 0444);
  ck_assert_int_eq(gdn_atomic_resolve(ro, &t, &ex, &m, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "read-only (mode 0444)"), "%s", e.msg);
  ck_assert_int_eq(symlink("missing", p("dangling")), 0);
  ck_assert_int_eq(gdn_atomic_resolve(p("dangling"), &t, &ex, &m, &e), GDN_ERR_INPUT);
  /* negative controls: a writable file (its mode), a link (its target), a new name */
  chmod(ro, 0640);
  ck_assert_int_eq(gdn_atomic_resolve(ro, &t, &ex, &m, &e), GDN_OK);
  ck_assert(ex == 1 && m == 0640 && !strcmp(t, ro));
  free(t);
  ck_assert_int_eq(symlink("ro.json", p("link")), 0);
  ck_assert_int_eq(gdn_atomic_resolve(p("link"), &t, &ex, &m, &e), GDN_OK);
  ck_assert_msg(strstr(t, "/ro.json") && ex == 1, "%s", t);
  free(t);
  ck_assert_int_eq(gdn_atomic_resolve(p("fresh"), &t, &ex, &m, &e), GDN_OK);
  ck_assert(ex == 0 && m == 0);
  free(t);
}
END_TEST

/* A set: nothing renamed until the set commits; an abort leaves all old. */
START_TEST(atomic_sets) {
  char a[200], b[200];
  snprintf(a, sizeof a, "%s", p("a"));
  snprintf(b, sizeof b, "%s", p("b"));
  touch(a);
  gdn_error e;
  gdn_error_init(&e);
  gdn_atomic_set s;
  gdn_atomic_set_begin(&s);
  ck_assert_int_eq(gdn_atomic_write_all(a, "new\n", 4, &e), GDN_OK);
  ck_assert_int_eq(gdn_atomic_write_all(b, "new\n", 4, &e), GDN_OK);
  char buf[8] = "";
  FILE *f = fopen(a, "r");
  ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
  fclose(f);
  ck_assert_str_eq(buf, "x\n"); /* staged, not yet renamed */
  gdn_atomic_set_abort(&s);
  ck_assert_int_ne(access(b, F_OK), 0);
  gdn_atomic_set_begin(&s);
  ck_assert_int_eq(gdn_atomic_write_all(a, "new\n", 4, &e), GDN_OK);
  ck_assert_int_eq(gdn_atomic_write_all(b, "new\n", 4, &e), GDN_OK);
  ck_assert_int_eq(gdn_atomic_set_commit(&s, &e), GDN_OK);
  f = fopen(b, "r");
  ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
  fclose(f);
  ck_assert_str_eq(buf, "new\n");
}
END_TEST

/* gdn_cli: repeats, option-like values, foreign options. */
START_TEST(cli_table_rules) {
  static const gdn_cli_opt t[] = {{"json", "FILE", "", 0}, {"quiet", NULL, "", 0}, {"seed", "N", "", 1u},
                                  {"n", "N", "", 0}, {NULL, NULL, NULL, 0}};
  static const char *const cmds[] = {"run", "check", NULL};
  gdn_cli_args a;
  gdn_error e;
  gdn_error_init(&e);
  char *r1[] = {"x", "--json", "a", "--json", "b", NULL};
  ck_assert_int_eq(gdn_cli_parse(t, 5, r1, 1, &a, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "given twice ('a', then 'b')"), "%s", e.msg);
  char *r2[] = {"x", "--json", "--quiet", NULL};
  ck_assert_int_eq(gdn_cli_parse(t, 3, r2, 1, &a, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "followed by the option '--quiet'"), "%s", e.msg);
  char *r3[] = {"x", "--seed", "1", NULL};
  ck_assert_int_eq(gdn_cli_parse_cmd(t, cmds, 1, 3, r3, 1, &a, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "does not apply to check (it is for: run)"), "%s", e.msg);
  /* negative controls */
  ck_assert_int_eq(gdn_cli_parse_cmd(t, cmds, 0, 3, r3, 1, &a, &e), GDN_OK);
  char *c1[] = {"x", "--json=--quiet", "--n", "-3", "--quiet", NULL};
  ck_assert_int_eq(gdn_cli_parse(t, 5, c1, 1, &a, &e), GDN_OK);
  ck_assert_str_eq(gdn_cli_get(t, &a, "json"), "--quiet");
  ck_assert_str_eq(gdn_cli_get(t, &a, "n"), "-3");
}
END_TEST

int main(void) {
  Suite *s = suite_create("path");
  TCase *tc = CKR_TCASE(s, "path", 0, identity_not_spelling, resolve_refusals, inputs_must_be_regular, atomic_sets,
      cli_table_rules);
  tcase_add_checked_fixture(tc, setup, teardown);
  return ckr_run(s);
}
