/* Helpers shared by the gradient tests (header-only, static). */
#ifndef VJP_TEST_UTIL_H
#define VJP_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_grads.h"
#include "gdn_synth.h"
#include "kern_vjp.h"

#include "../test_util_kern_cfg.h"
#include "../test_util_synth.h"

/* kern_config_init's shard mode (tokens, upstream's), which the tests
 * that compare modes change. */
static inline kern_config vtu_cfg(gdn_dtype dt, int64_t C, int64_t D) {
  return tkc_cfg(dt, C, D, KERN_SHARD_TOKENS);
}

/* The kernel (affine when D > 1 or `affine`), failing the test on error. */
static inline void vtu_kern(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                            int affine, gdn_grads *g) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads_init(g);
  int rc = affine ? kern_affine_prefix_vjp(in, ct, cfg, g, &e) : kern_scan_vjp(in, ct, cfg, g, &e);
  ck_assert_msg(rc == GDN_OK, "kernel vjp: %s", e.msg);
}

static inline int vtu_same(const gdn_grads *a, const gdn_grads *b) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (memcmp(gdn_grads_tensor_c(a, (gdn_grad_id)id), gdn_grads_tensor_c(b, (gdn_grad_id)id),
               gdn_grads_numel(&a->shape, (gdn_grad_id)id) * sizeof(double)))
      return 0;
  return 1;
}

/* The worst normwise relative error over the six tensors (rel_fro). */
static inline double vtu_worst(const gdn_grads *x, const gdn_grads *r, int *which) {
  double w = 0;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    double v = gdn_grads_rel_fro(x, r, (gdn_grad_id)id);
    if (v > w) w = v, *which = id;
  }
  return w;
}

#endif
