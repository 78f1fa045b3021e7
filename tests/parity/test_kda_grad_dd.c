/* gdn-parity --recurrence kda --grad with the VJP's double-word tier
 * (parity_recur_grad.h): --oracle dd runs oracle_kda_vjp_dd, the JSON's
 * grad.oracle says tier "dd" with its certificate (106 bits, checked at
 * 128 on 2 sampled columns per head: >= 90 bits elementwise, >= 100
 * normwise) and every case's errors are the MPFR tier's (the two
 * references agree to binary64's last bit); --oracle auto keeps MPFR at a
 * small shape and picks dd at the shape (1,4096,4,128, Hk 2); the
 * backward mutant still fails against the dd reference (negative
 * control). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "cli_inproc.h"
#include "parity_oracle.h"

static json_t *run_json(const char *dir, const char *name, const char *oracle, const char *mutant, int want) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  char *a[] = {"gdn-parity", "--shape", "2,48,2,8", "--key-heads", "1", "--recurrence", "kda", "--chunk", "16",
               "--devices", "1,2", "--h0", "--grad", "--oracle", (char *)oracle, "--json", path,
               mutant ? "--mutant" : NULL, (char *)mutant, NULL};
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(cli_inproc(a, &e) == want, "%s %s: %s", oracle, mutant ? mutant : "", e.msg);
  json_error_t je;
  json_t *d = json_load_file(path, 0, &je);
  ck_assert_msg(d != NULL, "%s: %s", path, je.text);
  return d;
}

static json_t *goracle(json_t *d) { return json_object_get(json_object_get(d, "grad"), "oracle"); }
static json_int_t geti(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

START_TEST(test_dd_tier) {
  char *dir = scratch_mkdtemp("/tmp/kda-grad-dd");
  json_t *dd = run_json(dir, "dd", "dd", NULL, 0), *mp = run_json(dir, "mp", "mpfr", NULL, 0);
  json_t *od = goracle(dd), *om = goracle(mp);
  ck_assert_str_eq(json_string_value(json_object_get(od, "tier")), "dd");
  ck_assert_str_eq(json_string_value(json_object_get(om, "tier")), "mpfr");
  ck_assert_int_eq(geti(od, "precision_bits"), 106);
  ck_assert_int_eq(geti(od, "check_bits"), 128);
  ck_assert_int_ge(geti(od, "certified_bits"), 90);
  ck_assert_int_ge(geti(od, "normwise_bits"), 100);
  ck_assert_int_eq(geti(od, "sampled_columns"), 2 * 2 * 2);
  ck_assert_int_eq(geti(od, "total_columns"), 2 * 2 * 8);
  ck_assert_int_ge(geti(json_object_get(od, "certified"), "dg"), 90);
  ck_assert(json_is_true(json_object_get(dd, "pass")));
  json_t *cd = json_object_get(json_object_get(dd, "grad"), "cases"),
         *cm = json_object_get(json_object_get(mp, "grad"), "cases");
  ck_assert_int_eq(json_array_size(cd), json_array_size(cm));
  ck_assert_int_ge(json_array_size(cd), 4);
  const char *names[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  for (size_t i = 0; i < json_array_size(cd); i++)
    for (int k = 0; k < 6; k++) {
      const double a = json_real_value(json_object_get(json_object_get(json_array_get(cd, i), names[k]), "err")),
                   b = json_real_value(json_object_get(json_object_get(json_array_get(cm, i), names[k]), "err"));
      ck_assert_msg(fabs(a - b) <= 1e-9 * b, "case %zu %s: dd reference %.17g, mpfr %.17g", i, names[k], a, b);
    }
  json_decref(dd), json_decref(mp);
  /* the backward mutant fails against the dd reference as against MPFR's */
  json_t *bad = run_json(dir, "bad", "dd", "dg-value-axis", 1);
  ck_assert(json_is_false(json_object_get(bad, "pass")));
  ck_assert_str_eq(json_string_value(json_object_get(goracle(bad), "tier")), "dd");
  json_decref(bad);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

START_TEST(test_auto) {
  char *dir = scratch_mkdtemp("/tmp/kda-grad-auto");
  json_t *d = run_json(dir, "auto", "auto", NULL, 0);
  ck_assert_str_eq(json_string_value(json_object_get(goracle(d), "tier")), "mpfr"); /* small: MPFR */
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "oracle"), "tier")), "mpfr");
  json_decref(d);
  scratch_rmdir(dir);
  free(dir);
  const gdn_shape big = {1, 4096, 2, 4, 128, 128}, small = {2, 48, 1, 2, 8, 8};
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_AUTO, &big, 128), PARITY_ORACLE_DD);
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_AUTO, &small, 128), PARITY_ORACLE_MPFR);
}
END_TEST

CKR_MAIN("parity", "kda_grad_dd", 120, test_dd_tier, test_auto)
