/* Helpers shared by the kernels tests: input cases, kernel dispatch,
 * distances.  Header-only (static), one copy per test executable. */
#ifndef KERN_TEST_UTIL_H
#define KERN_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "gdn_synth.h"
#include "kern.h"
#include "../check_runner.h"
#include "../test_util_kern_cfg.h"

typedef enum { K_RECURRENT, K_SCAN, K_AFFINE } kt_kernel;

static const char *const kt_kernel_names[] = {"recurrent", "scan", "affine-prefix"};

/* Synthetic Qwen 3.5-like inputs (gdn_synth), with g multiplied by
 * `decay` (1 = as drawn).  The drawn gates decay fast (A_log up to log 16), so
 * a state is forgotten within a few tokens and a device boundary barely
 * matters; decay = 0.002 gives a memory of hundreds of tokens, which is
 * where composition and seams are actually exercised. */
static inline void kt_make(gdn_inputs *in, gdn_shape s, uint64_t seed, int h0, int l2norm,
                    float decay) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts o = {seed, (h0 ? GDN_SYNTH_H0 : 0u) | (l2norm ? 0u : GDN_SYNTH_QK_PRENORM), 0};
  int rc = gdn_synth_generate(in, &s, &o, &e);
  ck_assert_msg(rc == GDN_OK, "gdn_synth_generate: %s", e.msg);
  if (decay != 1.0f)
    for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) in->g[i] *= decay;
}

/* kt_make as an initialiser: gdn_inputs in = kt_inputs(s, 37, 1, 1, 0.002f)
 * declares and draws a test's inputs in one statement (the caller owns
 * them: gdn_inputs_clear). */
static inline gdn_inputs kt_inputs(gdn_shape s, uint64_t seed, int h0, int l2norm, float decay) {
  gdn_inputs in;
  kt_make(&in, s, seed, h0, l2norm, decay);
  return in;
}

/* An empty outputs object as an initialiser, so a test declares its
 * outputs in one statement: gdn_outputs scan = kt_outputs(), aff =
 * kt_outputs(). */
static inline gdn_outputs kt_outputs(void) {
  gdn_outputs out;
  gdn_outputs_init(&out);
  return out;
}

static inline int kt_run_seams(kt_kernel k, const gdn_inputs *in, const kern_config *cfg,
                        gdn_outputs *out, kern_affine_seams *sm, gdn_error *e) {
  switch (k) {
  case K_RECURRENT: return kern_recurrent(in, cfg, out, e);
  case K_SCAN: return kern_scan(in, cfg, out, e);
  default: return kern_affine_prefix_seams(in, cfg, out, sm, e);
  }
}

static inline int kt_run(kt_kernel k, const gdn_inputs *in, const kern_config *cfg,
                         gdn_outputs *out, gdn_error *e) {
  return kt_run_seams(k, in, cfg, out, NULL, e);
}

/* Runs and asserts success. */
static inline void kt_run_ok(kt_kernel k, const gdn_inputs *in, const kern_config *cfg,
                      gdn_outputs *out) {
  gdn_error e;
  gdn_error_init(&e);
  int rc = kt_run(k, in, cfg, out, &e);
  ck_assert_msg(rc == GDN_OK, "%s: %s", kt_kernel_names[k], e.msg);
}

/* The tests written for array_split; token sharding sets its own. */
static inline kern_config kt_cfg(gdn_dtype dt, int64_t chunk, int64_t devices) {
  return tkc_cfg(dt, chunk, devices, KERN_SHARD_CHUNKS);
}

/* ||x - r||_F / ||r||_F */
static inline double kt_rel(const double *x, const double *r, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - r[i];
    num += d * d;
    den += r[i] * r[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}
static inline double kt_rel_o(const gdn_outputs *x, const gdn_outputs *r) {
  return kt_rel(x->o, r->o, gdn_shape_numel_v(&r->shape));
}
static inline double kt_rel_ht(const gdn_outputs *x, const gdn_outputs *r) {
  return kt_rel(x->ht, r->ht, gdn_shape_numel_state(&r->shape));
}

/* Bitwise equality of two double arrays (memcmp: -0 != +0, NaN payloads). */
static inline int kt_same(const double *a, const double *b, size_t n) {
  return memcmp(a, b, n * sizeof *a) == 0;
}
static inline int kt_same_outputs(const gdn_outputs *a, const gdn_outputs *b) {
  return kt_same(a->o, b->o, gdn_shape_numel_v(&a->shape)) &&
         kt_same(a->ht, b->ht, gdn_shape_numel_state(&a->shape));
}

static inline void kt_suite_run(Suite *su, int *failed) {
  *failed += ckr_run(su);
}

#endif
