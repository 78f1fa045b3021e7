#include <check.h>
#include <stdlib.h>

#include "gdn_threads.h"
#include "oracle_vjp.h"
#include "vjp_test_util.h"

static void oracle(const gdn_inputs *in, const gdn_cotangents *ct, gdn_grads *g) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads_init(g);
  oracle_vjp_certificate cert;
  ck_assert_msg(oracle_vjp_certified(in, ct, &cfg, g, &cert, &e) == GDN_OK, "oracle: %s", e.msg);
  ck_assert_msg(cert.certified_bits >= 90, "oracle certified %d bits", cert.certified_bits);
}

static void report(const char *what, const gdn_grads *x, const gdn_grads *r) {
  fprintf(stderr, "%-28s", what);
  for (int id = 0; id < GDN_GRADS_N; id++)
    fprintf(stderr, " %s %.2e", gdn_grads_name((gdn_grad_id)id), gdn_grads_rel_fro(x, r, (gdn_grad_id)id));
  fprintf(stderr, "\n");
}

START_TEST(explore) {
  gdn_shape s = {1, 200, 2, 4, 16, 12};
  gdn_inputs in;
  vtu_synth(&in, s, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 7);
  gdn_cotangents ct;
  vtu_cots(&ct, &s, 1, 3);
  gdn_grads ref, g;
  oracle(&in, &ct, &ref);
  const int64_t Ds[] = {1, 2, 4, 8};
  for (int dt = 0; dt < 2; dt++)
    for (int k = 0; k < 4; k++) {
      kern_config cfg = vtu_cfg(dt ? GDN_DTYPE_F64 : GDN_DTYPE_F32, 16, Ds[k]);
      vtu_kern(&in, &ct, &cfg, 1, &g);
      char buf[64];
      snprintf(buf, sizeof buf, "%s D=%lld", dt ? "f64" : "f32", (long long)Ds[k]);
      report(buf, &g, &ref);
      gdn_grads_clear(&g);
    }
  gdn_grads_clear(&ref);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

int main(void) {
  Suite *su = suite_create("vjp_vs_oracle");
  TCase *tc = tcase_create("vs_oracle");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, explore);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
