/* gdn_grads and gdn_cotangents: ownership, layout, the cotangents' check,
 * their synthesis, rel_fro's rules. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_grads.h"
#include "../check_runner.h"

START_TEST(alloc_layout_clear) {
  gdn_shape s = {2, 5, 1, 3, 4, 6};
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads g;
  gdn_grads_init(&g);
  ck_assert_int_eq(gdn_grads_alloc(&g, &s, GDN_DTYPE_F32, &e), GDN_OK);
  const size_t want[GDN_GRADS_N] = {2 * 5 * 1 * 4, 2 * 5 * 1 * 4, 2 * 5 * 3 * 6, 2 * 5 * 3, 2 * 5 * 3, 2 * 3 * 4 * 6};
  const char *names[GDN_GRADS_N] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  for (int id = 0; id < GDN_GRADS_N; id++) {
    ck_assert_uint_eq(gdn_grads_numel(&s, (gdn_grad_id)id), want[id]);
    ck_assert_str_eq(gdn_grads_name((gdn_grad_id)id), names[id]);
    double *t = gdn_grads_tensor(&g, (gdn_grad_id)id);
    for (size_t i = 0; i < want[id]; i++) ck_assert(t[i] == 0.0);
  }
  ck_assert_str_eq(gdn_grads_name((gdn_grad_id)9), "?");
  gdn_grads_clear(&g);
  gdn_grads_clear(&g); /* twice is safe */
  for (int id = 0; id < GDN_GRADS_N; id++) ck_assert(gdn_grads_tensor(&g, (gdn_grad_id)id) == NULL);
  /* every allocation failing in turn leaves it cleared */
  for (long n = 1; n <= GDN_GRADS_N; n++) {
    gdn_alloc_fail_after(n);
    ck_assert_int_eq(gdn_grads_alloc(&g, &s, GDN_DTYPE_F32, &e), GDN_ERR_NOMEM);
    gdn_alloc_fail_after(0);
    ck_assert(g.dq == NULL && g.dh0 == NULL);
  }
}
END_TEST

START_TEST(cotangents) {
  gdn_shape s = {1, 3, 1, 2, 2, 2};
  gdn_error e;
  gdn_error_init(&e);
  gdn_cotangents a, b;
  gdn_cotangents_init(&a);
  gdn_cotangents_init(&b);
  ck_assert_int_eq(gdn_cotangents_alloc(&a, &s, 1, &e), GDN_OK);
  ck_assert_int_eq(gdn_cotangents_alloc(&b, &s, 0, &e), GDN_OK);
  ck_assert(b.dht == NULL);
  gdn_cotangents_synth(&a, 7);
  gdn_cotangents_synth(&b, 7);
  ck_assert(!memcmp(a.d_o, b.d_o, gdn_shape_numel_v(&s) * sizeof(float))); /* same seed, same do */
  ck_assert(a.d_o[0] != a.d_o[1] && a.dht[0] != 0);
  ck_assert_int_eq(gdn_cotangents_check(&a, &s, "who", &e), GDN_OK);
  a.dht[3] = NAN;
  ck_assert_int_eq(gdn_cotangents_check(&a, &s, "who", &e), GDN_ERR_INPUT);
  ck_assert_str_eq(e.msg, "who: cotangent dht: non-finite value nan at flat index 3");
  gdn_shape s2 = s;
  s2.T = 4;
  ck_assert_int_eq(gdn_cotangents_check(&b, &s2, "who", &e), GDN_ERR_INPUT);
  ck_assert(strstr(e.msg, "who: the cotangents' shape (B=1, T=3"));
  ck_assert_int_eq(gdn_cotangents_check(NULL, &s, "who", &e), GDN_ERR_INPUT);
  gdn_cotangents_clear(&a);
  gdn_cotangents_clear(&a);
  gdn_cotangents_clear(&b);
}
END_TEST

START_TEST(rel_fro_rules) {
  gdn_shape s = {1, 1, 1, 1, 2, 1};
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads x, r;
  gdn_grads_init(&x);
  gdn_grads_init(&r);
  ck_assert_int_eq(gdn_grads_alloc(&x, &s, GDN_DTYPE_F64, &e), GDN_OK);
  ck_assert_int_eq(gdn_grads_alloc(&r, &s, GDN_DTYPE_F64, &e), GDN_OK);
  ck_assert(gdn_grads_rel_fro(&x, &r, GDN_GRAD_DK) == 0); /* both zero */
  x.dk[0] = 1;
  ck_assert(isinf(gdn_grads_rel_fro(&x, &r, GDN_GRAD_DK))); /* only the reference is zero */
  r.dk[0] = 3, r.dk[1] = 4, x.dk[0] = 3, x.dk[1] = 4 + 0.5;
  ck_assert(gdn_grads_rel_fro(&x, &r, GDN_GRAD_DK) == 0.1); /* 0.5 / 5 */
  gdn_grads_clear(&x);
  gdn_grads_clear(&r);
}
END_TEST

CKR_MAIN("grads", "grads", 0, alloc_layout_clear, cotangents, rel_fro_rules)
