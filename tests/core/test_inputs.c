#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_inputs.h"
#include "../check_runner.h"

static gdn_inputs make(void) {
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_shape s = {2, 3, 1, 2, 2, 2};
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_inputs_alloc(&in, &s, 1, &e), GDN_OK);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) {
    in.beta[i] = 0.5f;
    in.g[i] = -0.1f;
  }
  return in;
}

START_TEST(accessors_follow_layout) {
  gdn_inputs in = make();
  /* q is (B=2, T=3, Hk=1, Dk=2): (b=1, t=2, hk=0) starts at ((1*3+2)*1+0)*2 = 10 */
  ck_assert_ptr_eq(gdn_inputs_q(&in, 1, 2, 0), in.q + 10);
  /* v is (2, 3, Hv=2, Dv=2): (1, 2, 1) at ((1*3+2)*2+1)*2 = 22 */
  ck_assert_ptr_eq(gdn_inputs_v(&in, 1, 2, 1), in.v + 22);
  ck_assert_ptr_eq(gdn_inputs_h0(&in, 1, 1), in.h0 + 12);
  ck_assert_int_eq(gdn_inputs_key_head(&in, 1), 0);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(check_values_reports_first_bad_index) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in = make();
  int64_t npos = -1;
  ck_assert_int_eq(gdn_inputs_check_values(&in, &npos, &e), GDN_OK);
  ck_assert_int_eq(npos, 0);
  in.v[22] = NAN;
  ck_assert_int_eq(gdn_inputs_check_values(&in, NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "input v") && strstr(e.msg, "b=1, t=2, h=1, d=0"), "%s", e.msg);
  in.v[22] = 0;
  in.beta[3] = 2.5f;
  ck_assert_int_eq(gdn_inputs_check_values(&in, NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "beta") && strstr(e.msg, "b=0, t=1, h=1") && strstr(e.msg, "[0, 2]"),
                "%s", e.msg);
  in.beta[3] = 0.5f;
  in.h0[5] = INFINITY;
  ck_assert_int_eq(gdn_inputs_check_values(&in, NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "h0") && strstr(e.msg, "dk=0, dv=1"), "%s", e.msg);
  in.h0[5] = 0;
  in.g[0] = 0.25f;
  ck_assert_int_eq(gdn_inputs_check_values(&in, &npos, &e), GDN_OK);
  ck_assert_int_eq(npos, 1);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(copy_is_deep) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs a = make(), b;
  gdn_inputs_init(&b);
  a.q[3] = 7.0f;
  a.l2norm_in_kernel = 1;
  ck_assert_int_eq(gdn_inputs_copy(&b, &a, &e), GDN_OK);
  ck_assert(b.q != a.q && b.q[3] == 7.0f && b.l2norm_in_kernel == 1 && b.h0 != NULL);
  gdn_inputs_clear(&a);
  gdn_inputs_clear(&b);
}
END_TEST

CKR_MAIN("inputs", "inputs", 0, accessors_follow_layout, check_values_reports_first_bad_index, copy_is_deep)
