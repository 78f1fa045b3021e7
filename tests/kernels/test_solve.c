/* The in-chunk triangular solve (kern_config.solve, kern_chunk_tmpl.h):
 * substitution (fma forward substitution) and xla-expander (XLA's
 * TriangularSolveExpander as TPU runs it: X_i. = -(L_i. X), one HIGHEST dot
 * per row over the whole block).
 *
 *   - float64 (plain IEEE products): the expander's dot sums the same
 *     products in the same order as the substitution (ascending m, fma; the
 *     extra terms are exact zeros and the diagonal's exact -1, and
 *     round(-x) = -round(x)), so both give the same values -- a check of
 *     the expander's order; negative control: float32's HIGHEST passes do
 *     not (the modes differ bit-wise);
 *   - float32: both within 2e-5 of the float64 recurrence and within 2x of
 *     each other's error (the solve's rounding is a small part of a chunk's;
 *     measured: printed), and the two solves' outputs within 1e-5 of each
 *     other (measured ~1e-7);
 *   - names and refusal of an unknown solve. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "kern_test_util.h"
#include "../check_runner.h"

static const gdn_shape S = {1, 300, 1, 2, 32, 24};

static int same_values(const double *a, const double *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(a[i] == b[i])) return 0;
  return 1;
}

START_TEST(float64_orders_agree) {
  gdn_inputs in = kt_inputs(S, 3, 1, 1, 0.01f);
  for (int k = 1; k < 3; k++) {
    kern_config c = kt_cfg(GDN_DTYPE_F64, 64, k == 2 ? 3 : 1);
    gdn_outputs a = kt_outputs(), b = kt_outputs();
    kt_run_ok((kt_kernel)k, &in, &c, &a);
    c.solve = KERN_SOLVE_XLA_EXPANDER;
    kt_run_ok((kt_kernel)k, &in, &c, &b);
    ck_assert_msg(same_values(a.o, b.o, gdn_shape_numel_v(&S)) &&
                      same_values(a.ht, b.ht, gdn_shape_numel_state(&S)),
                  "%s: float64 solves differ", kt_kernel_names[k]);
    gdn_outputs_clear(&a), gdn_outputs_clear(&b);
  }
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(float32_both_accurate) {
  static const kern_matmul mms[2] = {KERN_MATMUL_IEEE, KERN_MATMUL_HIGHEST};
  for (int mi = 0; mi < 2; mi++) {
    gdn_inputs in = kt_inputs(S, 4, 1, 1, 0.002f);
    kern_config c = kt_cfg(GDN_DTYPE_F32, 64, 3), c64 = kt_cfg(GDN_DTYPE_F64, 64, 1);
    c.matmul = mms[mi];
    gdn_outputs ref, s1, s2, a2;
    gdn_outputs_init(&ref), gdn_outputs_init(&s1), gdn_outputs_init(&s2), gdn_outputs_init(&a2);
    kt_run_ok(K_RECURRENT, &in, &c64, &ref);
    kt_run_ok(K_SCAN, &in, &c, &s1);
    c.solve = KERN_SOLVE_XLA_EXPANDER;
    kt_run_ok(K_SCAN, &in, &c, &s2);
    kt_run_ok(K_AFFINE, &in, &c, &a2);
    const double e1 = kt_rel_o(&s1, &ref), e2 = kt_rel_o(&s2, &ref), ea = kt_rel_o(&a2, &ref);
    const double d12 = kt_rel_o(&s2, &s1);
    fprintf(stderr,
            "matmul %s: o rel_fro vs float64: scan substitution %.3g, scan xla-expander %.3g, "
            "affine D=3 xla-expander %.3g; xla-expander vs substitution %.3g\n",
            kern_matmul_name(mms[mi]), e1, e2, ea, d12);
    ck_assert(e1 < 2e-5 && e2 < 2e-5 && ea < 2e-5);
    ck_assert(e2 <= 2 * e1 && e1 <= 2 * e2);
    ck_assert(d12 < 1e-5);
    ck_assert(!kt_same(s1.o, s2.o, gdn_shape_numel_v(&S))); /* the mode is in force */
    gdn_outputs_clear(&ref), gdn_outputs_clear(&s1), gdn_outputs_clear(&s2), gdn_outputs_clear(&a2);
    gdn_inputs_clear(&in);
  }
}
END_TEST

START_TEST(names) {
  kern_solve m;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_solve_parse("xla-expander", &m, &e), GDN_OK);
  ck_assert_int_eq(m, KERN_SOLVE_XLA_EXPANDER);
  ck_assert_str_eq(kern_solve_name(KERN_SOLVE_SUBSTITUTION), "substitution");
  ck_assert_int_eq(kern_solve_parse("lapack", &m, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "--solve 'lapack'"));
  kern_config c;
  kern_config_init(&c);
  ck_assert_int_eq(c.solve, KERN_SOLVE_SUBSTITUTION);
  c.solve = (kern_solve)9;
  gdn_inputs in = kt_inputs((gdn_shape){1, 16, 1, 1, 8, 8}, 1, 0, 1, 1.0f);
  gdn_outputs out = kt_outputs();
  ck_assert_int_eq(kern_scan(&in, &c, &out, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "solve 9"));
  ck_assert_ptr_null(out.o);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("solve", "all", 120, float64_orders_agree, float32_both_accurate, names)
