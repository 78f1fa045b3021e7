/* check --fixture judges an output once, at the device count it declares:
 *   - a planted error in the last quarter of o (device 3 of 4) of an output
 *     "x" declaring devices 4, checked with --devices 1,2: the case D = 4
 *     is added, x is in that case's impls only, one case fails (of 3), and
 *     the FAIL line names the worst element: "worst: x o rel_fro ... at
 *     b=0 t=... (device 3, token ... of its shard), case ...";
 *   - negative control: the same output declaring no device count is judged
 *     in every case (2 of 2 failed), as before;
 *   - the correct output (the oracle rounded) passes, with no "worst:";
 *   - the console rows line up under the header: the judged row's column
 *     bars sit where the header's do.
 * argv[1]: the folder of shipped fixtures. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "parity_cli.h"
#include "report.h"
#include "../check_runner.h"
#include "synth_fixture.h"

static char *data_dir;

/* The shipped T = 256 fixture plus output "x": its oracle rounded to
 * float32, times 1 + 1e-3 from token 192 on when planted; devices 0: the
 * attribute is not recorded. */
static void make_fixture(char *path, int planted, int64_t devices) {
  char src[1024];
  snprintf(src, sizeof src, "%s/small-b1-t256-hk2-hv4-d32-slow.h5", data_dir);
  fix_fixture fx;
  sfx_load(&fx, src);
  gdn_error e;
  gdn_error_init(&e);
  fix_output *slot;
  ck_assert_int_eq(fix_fixture_add_output(&fx, "x", &slot, &e), GDN_OK);
  const gdn_shape *s = &fx.inputs.shape;
  ck_assert_int_eq(gdn_outputs_alloc(&slot->out, s, GDN_DTYPE_F32, &e), GDN_OK);
  size_t no = gdn_shape_numel_v(s), nh = gdn_shape_numel_state(s), per_t = (size_t)(s->Hv * s->Dv);
  for (size_t i = 0; i < no; i++) {
    int64_t t = (int64_t)((i / per_t) % (size_t)s->T);
    slot->out.o[i] = (float)(fx.oracle.out.o[i] * (planted && t >= 3 * s->T / 4 ? 1 + 1e-3 : 1));
  }
  for (size_t i = 0; i < nh; i++) slot->out.ht[i] = (float)fx.oracle.out.ht[i];
  slot->has_ht = 1;
  ck_assert_int_eq(fix_set_string(&slot->implementation, "affine-prefix", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&slot->platform, "test", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&slot->compute_dtype, "float32", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&slot->matmul_precision, "highest", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&slot->prefix, "associative-scan", &e), GDN_OK);
  slot->missing = devices ? 0 : FIX_ATTR_DEVICES;
  slot->devices = devices;
  strcpy(path, "/tmp/gdn-check-once-XXXXXX.h5");
  close(mkstemps(path, 3));
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  fix_fixture_clear(&fx);
}

/* check --fixture PATH --devices 1,2: the status, the document, the console. */
static int check(const char *path, json_t **doc, char *log, size_t n) {
  char js[] = "/tmp/gdn-check-once-XXXXXX.json";
  close(mkstemps(js, 5));
  char *av[] = {"gdn-parity", "check", "--fixture", (char *)path, "--devices", "1,2", "--json", js, "--reproducible",
                NULL};
  FILE *out = tmpfile(), *err = fopen("/dev/null", "w");
  ck_assert_ptr_nonnull(out);
  gdn_error e;
  gdn_error_init(&e);
  int st = parity_cli_main(9, av, out, err, &e);
  ck_assert_msg(st == 0 || st == 1, "exit %d: %s", st, e.msg);
  rewind(out);
  size_t got = fread(log, 1, n - 1, out);
  log[got] = '\0';
  fclose(out);
  fclose(err);
  ck_assert_msg(report_json_read(js, doc, &e) == GDN_OK, "%s", e.msg);
  unlink(js);
  return st;
}

/* How many cases hold x in impls; *where: the device count of the last. */
static int cases_with_x(json_t *doc, int64_t *where) {
  json_t *cases = json_object_get(doc, "cases");
  int n = 0;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    json_t *c = json_array_get(cases, i);
    if (!json_object_get(json_object_get(c, "impls"), "x")) continue;
    n++;
    *where = json_integer_value(json_object_get(c, "devices"));
  }
  return n;
}

static int failed_cases(json_t *doc) {
  json_t *cases = json_object_get(doc, "cases");
  int n = 0;
  for (size_t i = 0; i < json_array_size(cases); i++) n += json_is_false(json_object_get(json_array_get(cases, i), "pass"));
  return n;
}

/* The offsets of '|' in the line of log that contains `needle`. */
static int bars(const char *log, const char *needle, int *at, int max) {
  const char *p = strstr(log, needle);
  ck_assert_msg(p, "no line with '%s' in:\n%s", needle, log);
  while (p > log && p[-1] != '\n') p--;
  int n = 0;
  for (int i = 0; p[i] && p[i] != '\n' && n < max; i++)
    if (p[i] == '|') at[n++] = i;
  return n;
}

START_TEST(judged_once_at_its_devices) {
  char path[64], log[16384];
  json_t *doc;
  int64_t where = 0;
  make_fixture(path, 1, 4);
  ck_assert_int_eq(check(path, &doc, log, sizeof log), 1);
  ck_assert_int_eq((int)json_array_size(json_object_get(doc, "cases")), 3); /* 1, 2 and the declared 4 */
  ck_assert_int_eq(cases_with_x(doc, &where), 1);
  ck_assert_int_eq(where, 4);
  ck_assert_int_eq(failed_cases(doc), 1);
  ck_assert_msg(strstr(log, "FAIL: 3 cases, 1 failed; worst: x o rel_fro "), "%s", log);
  ck_assert_msg(strstr(log, "(device 3, token "), "%s", log);
  const char *w = strstr(log, "; worst: x o");
  ck_assert_msg(strstr(w, " at b=0 t=") && strstr(w, ", case B1-T256-"), "%s", w);
  /* the judged row's bars where the header's are */
  int hb[8], rb[8];
  int nh = bars(log, "case (C, devices, prefix)", hb, 8), nr = bars(log, " x    ", rb, 8);
  ck_assert_int_eq(nh, 5);
  ck_assert_int_eq(nr, nh);
  for (int i = 0; i < nh; i++) ck_assert_int_eq(rb[i], hb[i]);
  json_decref(doc);
  unlink(path);
}
END_TEST

START_TEST(control_undeclared_is_judged_in_every_case) {
  char path[64], log[16384];
  json_t *doc;
  int64_t where = 0;
  make_fixture(path, 1, 0);
  ck_assert_int_eq(check(path, &doc, log, sizeof log), 1);
  ck_assert_int_eq((int)json_array_size(json_object_get(doc, "cases")), 2);
  ck_assert_int_eq(cases_with_x(doc, &where), 2);
  ck_assert_int_eq(failed_cases(doc), 2);
  json_decref(doc);
  unlink(path);
}
END_TEST

START_TEST(control_correct_output_passes) {
  char path[64], log[16384];
  json_t *doc;
  int64_t where = 0;
  make_fixture(path, 0, 4);
  ck_assert_int_eq(check(path, &doc, log, sizeof log), 0);
  ck_assert_int_eq(cases_with_x(doc, &where), 1);
  ck_assert_ptr_null(strstr(log, "worst:"));
  json_decref(doc);
  unlink(path);
}
END_TEST

CKR_MAIN_ARGS("test_check_once FIXTURE-DATA-DIR", 1, (&data_dir), "check_once", "check_once", 300,
    judged_once_at_its_devices, control_undeclared_is_judged_in_every_case, control_correct_output_passes)
