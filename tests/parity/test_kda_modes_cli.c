/* gdn-parity --recurrence kda --grad with --dtype, --matmul-precision and
 * --ftz at 1,128,2,32 Hk 1, C = 32, D 1 and 2 (the dd oracle: a quarter
 * of the MPFR one's time here): each mode passes forward
 * and backward, every case's band the mode's (parity_recur_mode_band.h:
 * the forward's and the backward's, with the reason where the mode moves
 * it) and its errors inside it (and above float32's where the mode loses
 * bits); the JSON names the mode; the gate-value-axis mutant fails the
 * forward under each and a backward mutant (dh-seam-dropped, dg-value-axis
 * in turn) the backward (negative controls); --ftz with --no-ftz is
 * refused. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "cli_inproc.h"
#include "gdn_grads.h"

typedef struct mode {
  const char *dtype, *mm;
  double band_min, err_min;   /* every case's band >= band_min; its o err >= err_min */
  double gband_min, gerr_min; /* the same for the backward's cases and their worst gradient */
} mode;

static const mode MODES[] = {
    {"float32", "ieee", 0, 0, 0, 0},
    {"float32", "highest", 0, 0, 0, 0},
    {"float32", "high", 0x1p-13, 1e-6, 0x1p-13, 1e-6},
    {"float32", "default", 0x1p-6, 1e-4, 0x1p-5, 1e-4},
    {"bfloat16", "ieee", 0x1p-6, 1e-4, 0x1p-5, 1e-4},
    {"float64", "ieee", 1e-13, 0, 1e-13, 0},
};

/* The backward's cases (token, chunked, affine-prefix D 1 and 2): each
 * passes, its band the mode's, its worst gradient >= gerr_min and within
 * half the band; the reason given where the mode moves the band. */
static void check_grad(json_t *d, const mode *m) {
  json_t *g = json_object_get(d, "grad");
  ck_assert_ptr_nonnull(g);
  const int moved = m->gband_min > 0;
  ck_assert_msg(!json_object_get(g, "band_reason") == !moved, "%s %s: band_reason", m->dtype, m->mm);
  ck_assert_msg(!json_object_get(d, "band_reason") == !moved, "%s %s: the forward's band_reason", m->dtype, m->mm);
  size_t i, n = 0;
  json_t *c;
  json_array_foreach(json_object_get(g, "cases"), i, c) {
    const double band = json_real_value(json_object_get(c, "band"));
    double worst = 0;
    for (int id = 0; id < GDN_GRADS_N; id++)
      worst = fmax(worst, json_real_value(json_object_get(json_object_get(c, gdn_grads_name((gdn_grad_id)id)), "err")));
    ck_assert_msg(json_is_true(json_object_get(c, "pass")), "%s %s backward case %zu", m->dtype, m->mm, i);
    ck_assert_msg(band >= m->gband_min && (strcmp(m->dtype, "float64") || band == 1e-13), "%s %s grad band %.3e",
                  m->dtype, m->mm, band);
    ck_assert_msg(worst >= m->gerr_min && worst <= band / 2, "%s %s: grad err %.3e band %.3e", m->dtype, m->mm, worst,
                  band);
    n++;
  }
  ck_assert_uint_eq(n, 4);
}

START_TEST(test_mode_passes) {
  const mode *m = &MODES[_i];
  char *dir = scratch_mkdtemp("/tmp/kda-modes");
  char *js = scratch_join(dir, "out.json");
  char *av[] = {"gdn-parity", "--shape", "1,128,2,32", "--key-heads", "1", "--recurrence", "kda", "--devices", "1,2",
                "--chunk", "32", "--oracle", "dd", "--h0", "--dtype", (char *)m->dtype, "--matmul-precision", (char *)m->mm, "--ftz",
                "--grad", "--json", js, NULL};
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
  ck_assert_uint_eq(n, 4);
  check_grad(d, m);
  json_decref(d);
  char *mu[] = {"gdn-parity", "--shape", "1,128,2,32", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--chunk", "32", "--oracle", "dd", "--dtype", (char *)m->dtype, "--matmul-precision", (char *)m->mm,
                "--mutant", "gate-value-axis", "--quiet", NULL};
  ck_assert_msg(cli_inproc(mu, &e) == 1, "%s %s: the mutant passed", m->dtype, m->mm);
  char *gm[] = {"gdn-parity", "--shape", "1,128,2,32", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--chunk", "32", "--oracle", "dd", "--h0", "--dtype", (char *)m->dtype, "--matmul-precision", (char *)m->mm, "--grad",
                "--mutant", _i % 2 ? "dg-value-axis" : "dh-seam-dropped", "--quiet", NULL};
  ck_assert_msg(cli_inproc(gm, &e) == 1, "%s %s: the backward mutant passed", m->dtype, m->mm);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

START_TEST(test_refusals) {
  char *f[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--ftz", "--no-ftz", NULL};
  gdn_error e;
  ck_assert_int_eq(cli_inproc(f, &e), -1);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "--no-ftz"), "%s", e.msg);
}
END_TEST

int main(void) {
  Suite *su = suite_create("parity");
  TCase *tc = tcase_create("kda_modes_cli");
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, test_mode_passes, 0, (int)(sizeof MODES / sizeof MODES[0]));
  tcase_add_test(tc, test_refusals);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
