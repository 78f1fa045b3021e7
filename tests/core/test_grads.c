/* gdn_grads and gdn_cotangents: ownership, layout, the cotangents' check,
 * their synthesis, rel_fro's rules. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_grads.h"
#include "../check_runner.h"
#include "gdn_rng.h"

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

/* A head group's cotangents (a --grad run streamed by head group) are
 * its slab of the whole run's: every group of 1..3 value heads of a
 * 5-head, B = 2 shape, do and dht.  The whole tensors are still the values
 * the three-argument generator gives at each flat index (streams 101 and
 * 102: the cotangents every stored gradient fixture was made with).
 * Negative control: a group drawn one head off differs. */
START_TEST(cotangents_of_head_groups) {
  const gdn_shape s = {2, 7, 5, 5, 3, 2};
  gdn_error e;
  gdn_error_init(&e);
  gdn_cotangents w;
  gdn_cotangents_init(&w);
  ck_assert_int_eq(gdn_cotangents_alloc(&w, &s, 1, &e), GDN_OK);
  gdn_cotangents_synth(&w, 9);
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) ck_assert(w.d_o[i] == (float)gdn_rng_normal(9, 101, i));
  for (size_t i = 0; i < gdn_shape_numel_state(&s); i++) ck_assert(w.dht[i] == (float)gdn_rng_normal(9, 102, i));
  for (int64_t gs = 1; gs <= 3; gs++)
    for (int64_t v0 = 0; v0 + gs <= s.Hv; v0++) {
      gdn_shape g = s;
      g.Hk = g.Hv = gs;
      gdn_cotangents c;
      gdn_cotangents_init(&c);
      ck_assert_int_eq(gdn_cotangents_alloc(&c, &g, 1, &e), GDN_OK);
      gdn_cotangents_synth_heads(&c, s.Hv, v0, 9);
      const size_t row = (size_t)(gs * s.Dv), st = (size_t)(gs * s.Dk * s.Dv);
      for (size_t j = 0; j < (size_t)(s.B * s.T); j++)
        ck_assert(!memcmp(c.d_o + j * row, w.d_o + (j * (size_t)s.Hv + (size_t)v0) * (size_t)s.Dv, row * 4));
      for (size_t b = 0; b < (size_t)s.B; b++)
        ck_assert(!memcmp(c.dht + b * st, w.dht + (b * (size_t)s.Hv + (size_t)v0) * (size_t)(s.Dk * s.Dv), st * 4));
      if (v0 + gs < s.Hv) /* negative control */
        ck_assert(memcmp(c.d_o, w.d_o + (size_t)(v0 + 1) * (size_t)s.Dv, row * 4) != 0);
      gdn_cotangents_clear(&c);
    }
  gdn_cotangents_clear(&w);
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

CKR_MAIN("grads", "grads", 0, alloc_layout_clear, cotangents, cotangents_of_head_groups, rel_fro_rules)
