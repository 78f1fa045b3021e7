/* oracle_vjp's memory: the MPFR numbers of a run are (ceil(T / K) + K + 3)
 * state sets of G Dk Dv numbers plus a constant (oracle_vjp.h), and nothing
 * else grows with T.  The GMP heap (the numbers' limbs) is counted with
 * counting allocators (mp_set_memory_functions), one thread, and must be
 * exactly affine in n = ceil(T / K) + K over four lengths -- with the
 * default K = ceil(sqrt(T)), about 2 sqrt(T) sets: at T = 4096, 128 sets
 * where keeping every state would take 4096.  The negative control: the
 * same fit fails for n = T (what storing every state would cost). */
#include <check.h>
#include <gmp.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "gdn_grads.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "gmp_count_util.h"
#include "oracle_test_util.h"
#include "oracle_vjp.h"
#include "../check_runner.h"

static long peak_at(int64_t T, int64_t *n_sets) {
  gdn_shape s = {1, T, 1, 2, 4, 4};
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts o = {3, GDN_SYNTH_H0, 0};
  ck_assert(gdn_synth_generate(&in, &s, &o, &e) == GDN_OK);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  ck_assert(gdn_cotangents_alloc(&ct, &s, 1, &e) == GDN_OK);
  gdn_cotangents_synth(&ct, 1);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads g;
  gdn_grads_init(&g);
  long base = gcu_mark();
  ck_assert(oracle_vjp(&in, &ct, &cfg, &g, &e) == GDN_OK);
  ck_assert_msg(gcu_live() == base, "GMP bytes left after the run");
  int64_t K = (int64_t)ceil(sqrt((double)T));
  *n_sets = (T + K - 1) / K + K;
  gdn_grads_clear(&g);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
  return gcu_peak() - base;
}

/* Is y affine in x over the four points (exactly, integer arithmetic)? */
static int affine(const long *x, const long *y) {
  for (int i = 2; i < 4; i++)
    if ((y[i] - y[0]) * (x[1] - x[0]) != (y[1] - y[0]) * (x[i] - x[0])) return 0;
  return 1;
}

START_TEST(grows_as_sqrt_T) {
  gdn_threads_set(1);
  const int64_t Ts[5] = {64, 64, 256, 1024, 4096}; /* the first warms MPFR up */
  long p[5], n[5], tt[5];
  for (int i = 0; i < 5; i++) {
    int64_t ns;
    p[i] = peak_at(Ts[i], &ns);
    n[i] = (long)ns, tt[i] = (long)Ts[i];
  }
  fprintf(stderr, "GMP peak bytes: T=64 %ld, 256 %ld, 1024 %ld, 4096 %ld\n", p[1], p[2], p[3], p[4]);
  ck_assert_msg(affine(n + 1, p + 1), "not affine in ceil(T/K) + K");
  ck_assert_msg(!affine(tt + 1, p + 1), "affine in T: the control should fail");
  ck_assert_msg(p[4] < 3 * p[3], "T=4096: %ld bytes, T=1024: %ld", p[4], p[3]);
  gdn_threads_set(2);
}
END_TEST

int main(void) {
  gcu_install();
  Suite *su = suite_create("oracle_vjp_memory");
  CKR_TCASE(su, "memory", 120, grows_as_sqrt_T);
  return ckr_run_with(su, CK_NOFORK, CK_NORMAL);
}
