/* parity_packing: which packing semantics an external output computed.
 *   - parity_packing_err and parity_packing_decide on values worked by hand
 *     (the decisive factor 4 at its edge, NaN, ties: negative controls);
 *   - end to end through `gdn-parity check --fixture`: a fixture with packed
 *     documents under leak, one output computed under leak (passes, matched
 *     leak) and one under reset (fails, its verdict names reset); the same
 *     inputs without boundaries record no packing at all. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "parity_packing.h"
#include "report.h"
#include "../check_runner.h"
#include "synth_fixture.h"
#include "cli_inproc.h"

START_TEST(err_and_decide_by_hand) {
  const double ref[4] = {1, -2, 0.5, 0}, o[4] = {1.5, -2, 0.5, 0.25};
  /* max |o - ref| = 0.5, max |ref| = 2 */
  ck_assert_double_eq(parity_packing_err(o, ref, 4), 0.25);
  const double z[4] = {0, 0, 0, 0};
  ck_assert_double_eq(parity_packing_err(o, z, 4), 2.0); /* zero reference: absolute, max |o| */
  const double nan_o[2] = {NAN, 0};
  ck_assert(isnan(parity_packing_err(nan_o, ref, 2)));
  /* err[leak], err[reset] */
  const struct { double l, r; int want; } t[] = {
      {1e-8, 1e-2, GDN_PACKING_LEAK},  {1e-2, 1e-8, GDN_PACKING_RESET},
      {1.0, 4.0, GDN_PACKING_LEAK},    /* exactly the factor: decided */
      {1.0, 3.999, -1},                /* just under it: not decided */
      {1e-3, 1e-3, -1},                /* a tie */
      {0, 0, -1},                      /* both exact: no boundary effect at all */
      {NAN, 1.0, -1},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    double err[2] = {t[i].l, t[i].r};
    ck_assert_msg(parity_packing_decide(err) == t[i].want, "row %zu", i);
  }
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {2, 4, 1, 1, 1, 1};
  ck_assert_int_eq(gdn_inputs_alloc(&in, &s, 0, &e), GDN_OK);
  ck_assert_int_eq(parity_packing_boundaries(&in), 0);
  ck_assert_int_eq(gdn_inputs_alloc_seg(&in, &e), GDN_OK);
  const int32_t ids[8] = {1, 1, 2, 0, 1, 2, 2, 3}; /* row 0: t=2 (t=3 is padding); row 1: t=1, t=3 */
  memcpy(in.seg, ids, sizeof ids);
  ck_assert_int_eq(parity_packing_boundaries(&in), 3);
  gdn_inputs_clear(&in);
}
END_TEST

static int run_check(const char *path, const char *js, json_t **doc) {
  char *av[] = {"gdn-parity", "check", "--fixture", (char *)path, "--devices", "1,2", "--oracle", "mpfr",
                "--json", (char *)js, "--reproducible", NULL};
  gdn_error e;
  int st = cli_inproc(av, &e);
  ck_assert_msg(st >= 0, "%s", e.msg);
  ck_assert_msg(report_json_read(js, doc, &e) == GDN_OK, "%s", e.msg);
  return st;
}

/* An output slot holding the reference under `packing`, rounded to float32. */
static void add_output(fix_fixture *fx, const char *name, int packing, const char *declared) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in;
  gdn_inputs_init(&in);
  ck_assert_int_eq(gdn_inputs_copy(&in, &fx->inputs, &e), GDN_OK);
  in.packing = packing;
  parity_reference ref;
  parity_reference_init(&ref);
  ck_assert_int_eq(parity_reference_compute(&ref, &in, PARITY_ORACLE_MPFR, 128, &e), GDN_OK);
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(fx, name, &o, &e), GDN_OK);
  ck_assert_int_eq(gdn_outputs_alloc(&o->out, &fx->inputs.shape, GDN_DTYPE_F32, &e), GDN_OK);
  size_t n = gdn_shape_numel_v(&fx->inputs.shape);
  for (size_t i = 0; i < n; i++) o->out.o[i] = (float)ref.out.o[i];
  o->has_ht = 0; /* MaxText without h0: o alone */
  sfx_output_attrs(o, "scan", NULL, 1);
  if (declared) ck_assert_int_eq(fix_set_string(&o->packing, declared, &e), GDN_OK);
  parity_reference_clear(&ref);
  gdn_inputs_clear(&in);
}

static json_t *impl(json_t *doc, const char *name) {
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  json_t *x = json_object_get(json_object_get(c, "impls"), name);
  ck_assert_ptr_nonnull(x);
  return x;
}

START_TEST(check_names_the_packing_an_output_matches) {
  for (int docs = 3; docs >= 1; docs -= 2) {
    gdn_error e;
    gdn_error_init(&e);
    fix_fixture fx;
    sfx_make(&fx, (gdn_shape){1, 96, 2, 2, 16, 16}, 0, 0, 32);
    ck_assert_int_eq(gdn_synth_segments(&fx.inputs, 0, docs, &e), GDN_OK);
    fx.inputs.packing = GDN_PACKING_LEAK;
    if (docs > 1) ck_assert_int_gt(parity_packing_boundaries(&fx.inputs), 0);
    /* as_leak declares its packing truly, as_reset falsely (the note) */
    add_output(&fx, "as_leak", GDN_PACKING_LEAK, docs > 1 ? "leak" : NULL);
    add_output(&fx, "as_reset", GDN_PACKING_RESET, docs > 1 ? "leak" : NULL);
    char path[] = "/tmp/gdn-packing-XXXXXX.h5", js[] = "/tmp/gdn-packing-XXXXXX.json";
    close(mkstemps(path, 3));
    close(mkstemps(js, 5));
    ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
    fix_fixture_clear(&fx);
    json_t *doc = NULL;
    int st = run_check(path, js, &doc);
    json_t *l = impl(doc, "as_leak"), *r = impl(doc, "as_reset");
    json_t *la = json_object_get(l, "attrs"), *ra = json_object_get(r, "attrs");
    ck_assert(json_is_true(json_object_get(l, "pass")));
    if (docs > 1) {
      /* the leak output is rounding away from the leak oracle (float32:
       * ~3e-8 normwise) and ~3e-2 from the reset one; reset the mirror */
      ck_assert_int_eq(st, 1);
      ck_assert_str_eq(json_string_value(json_object_get(la, "packing_matched")), "leak");
      ck_assert_ptr_null(json_object_get(la, "packing_verdict"));
      double el = json_number_value(json_object_get(json_object_get(la, "packing_err"), "leak"));
      double er = json_number_value(json_object_get(json_object_get(la, "packing_err"), "reset"));
      ck_assert_msg(el < 1e-6 && er > 1e-3, "leak %g reset %g", el, er);
      ck_assert(json_is_false(json_object_get(r, "pass")));
      ck_assert_str_eq(json_string_value(json_object_get(ra, "packing_matched")), "reset");
      const char *v = json_string_value(json_object_get(ra, "packing_verdict"));
      ck_assert_msg(v && strstr(v, "matches packing reset, not the fixture's leak"), "%s", v ? v : "(none)");
      ck_assert_str_eq(json_string_value(json_object_get(ra, "packing_declared")),
                       "declares packing leak but computes reset");
      ck_assert_ptr_null(json_object_get(la, "packing_declared"));
    } else {
      /* one document: no boundary, nothing to tell apart, nothing recorded;
       * both outputs are the same function and pass */
      ck_assert_int_eq(st, 0);
      ck_assert_ptr_null(json_object_get(la, "packing_matched"));
      ck_assert_ptr_null(json_object_get(ra, "packing_matched"));
      ck_assert(json_is_true(json_object_get(r, "pass")));
    }
    json_decref(doc);
    unlink(path);
    unlink(js);
  }
}
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "packing", "packing", 300, err_and_decide_by_hand, check_names_the_packing_an_output_matches)
