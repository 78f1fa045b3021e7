/* gdn-parity --recurrence kda with --dtype, --matmul-precision and --ftz:
 * each mode passes, every case's band the mode's (parity_recur_mode_band.h)
 * and its errors inside it (and above float32's where the mode loses
 * bits); the JSON names the mode; the gate-value-axis mutant fails under
 * each (negative control); --grad with a mode other than float32 ieee is
 * refused, and --ftz with --no-ftz. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "cli_inproc.h"

typedef struct mode {
  const char *dtype, *mm;
  double band_min, err_min; /* every case's band >= band_min; its o err >= err_min */
} mode;

static const mode MODES[] = {
    {"float32", "ieee", 0, 0},        {"float32", "highest", 0, 0},       {"float32", "high", 0x1p-13, 1e-6},
    {"float32", "default", 0x1p-6, 1e-4}, {"bfloat16", "ieee", 0x1p-6, 1e-4}, {"float64", "ieee", 1e-13, 0},
};

START_TEST(test_mode_passes) {
  const mode *m = &MODES[_i];
  char *dir = scratch_mkdtemp("/tmp/kda-modes");
  char *js = scratch_join(dir, "out.json");
  char *av[] = {"gdn-parity", "--shape", "1,96,2,16", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--chunk", "32", "--h0", "--dtype", (char *)m->dtype, "--matmul-precision", (char *)m->mm, "--ftz",
                "--json", js, NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(av, &e) == 0, "%s %s: %s", m->dtype, m->mm, e.msg);
  json_error_t je;
  json_t *d = json_load_file(js, 0, &je);
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(json_string_value(json_object_get(d, "dtype")), m->dtype);
  ck_assert_str_eq(json_string_value(json_object_get(d, "matmul")), m->mm);
  ck_assert(json_is_true(json_object_get(d, "ftz")));
  size_t i, n = 0;
  json_t *c;
  json_array_foreach(json_object_get(d, "cases"), i, c) {
    json_t *b = json_object_get(c, "band"); /* token, chunked, affine-prefix: each its own */
    ck_assert_ptr_nonnull(b);
    n++;
    const double err = json_real_value(json_object_get(json_object_get(c, "o"), "err")), band = json_real_value(b);
    ck_assert_msg(band >= m->band_min && (strcmp(m->dtype, "float64") || band == 1e-13), "%s %s band %.3e",
                  m->dtype, m->mm, band);
    ck_assert_msg(err >= m->err_min && err <= band / 2, "%s %s: err %.3e band %.3e", m->dtype, m->mm, err, band);
  }
  ck_assert_uint_eq(n, 3);
  json_decref(d);
  char *mu[] = {"gdn-parity", "--shape", "1,96,2,16", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--chunk", "32", "--dtype", (char *)m->dtype, "--matmul-precision", (char *)m->mm,
                "--mutant", "gate-value-axis", "--quiet", NULL};
  ck_assert_msg(cli_inproc(mu, &e) == 1, "%s %s: the mutant passed", m->dtype, m->mm);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

START_TEST(test_refusals) {
  char *g1[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--grad", "--matmul-precision", "high", NULL};
  char *g2[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--grad", "--dtype", "bfloat16", NULL};
  char *f[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--ftz", "--no-ftz", NULL};
  char **all[] = {g1, g2, f};
  for (int i = 0; i < 3; i++) {
    gdn_error e;
    ck_assert_int_eq(cli_inproc(all[i], &e), -1);
    ck_assert_int_eq(e.code, GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, i < 2 ? "--grad" : "--no-ftz"), "%s", e.msg);
  }
}
END_TEST

int main(void) {
  Suite *su = suite_create("parity");
  TCase *tc = tcase_create("kda_modes_cli");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_mode_passes, 0, (int)(sizeof MODES / sizeof MODES[0]));
  tcase_add_test(tc, test_refusals);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
