/* Synthetic inputs and cotangents for tests, failing the test on error
 * (header-only, static; shared by tests/oracle, tests/grads, tests/parity,
 * tests/kernels). */
#ifndef TEST_UTIL_SYNTH_H
#define TEST_UTIL_SYNTH_H

#include <check.h>
#include <stdint.h>
#include <string.h>

#include "gdn_grads.h"
#include "gdn_synth.h"

/* gdn_synth_generate's inputs for shape s (float32 storage). */
static inline void tsu_synth(gdn_inputs *in, gdn_shape s, unsigned flags, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts o = {seed, flags, 0};
  ck_assert_msg(gdn_synth_generate(in, &s, &o, &e) == GDN_OK, "synth: %s", e.msg);
}

/* tsu_synth as an initialiser, so a test's inputs are declared and drawn in
 * one statement: gdn_inputs in = tsu_inputs((gdn_shape){1, 5, 1, 2, 4, 4},
 * GDN_SYNTH_H0, 1).  gdn_inputs holds only pointers it owns, so returning it
 * by value moves the ownership to the caller (gdn_inputs_clear frees it). */
static inline gdn_inputs tsu_inputs(gdn_shape s, unsigned flags, uint64_t seed) {
  gdn_inputs in;
  tsu_synth(&in, s, flags, seed);
  return in;
}

/* N(0, 1) float32 cotangents do (and dht when with_dht) for shape s, as an
 * initialiser like tsu_inputs: gdn_cotangents ct = tsu_cotangents(&in.shape,
 * 1, 3).  The VJP tests' set-up is the two: inputs, then cotangents for
 * them; tsu_problem_clear frees both. */
static inline gdn_cotangents tsu_cotangents(const gdn_shape *s, int with_dht, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  ck_assert(gdn_cotangents_alloc(&ct, s, with_dht, &e) == GDN_OK);
  gdn_cotangents_synth(&ct, seed);
  return ct;
}

static inline void tsu_problem_clear(gdn_inputs *in, gdn_cotangents *ct) {
  gdn_cotangents_clear(ct);
  gdn_inputs_clear(in);
}

/* Tokens [t0, t0 + L) of batch row b of `in` as inputs of their own (no
 * h0, the same L2-norm flag): one document of a packed sequence, alone. */
static inline void tsu_slice_tokens(gdn_inputs *one, const gdn_inputs *in, int64_t b, int64_t t0, int64_t L) {
  const gdn_shape S = in->shape;
  const gdn_shape ds = {1, L, S.Hk, S.Hv, S.Dk, S.Dv};
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(one);
  ck_assert_int_eq(gdn_inputs_alloc(one, &ds, 0, &e), GDN_OK);
  one->l2norm_in_kernel = in->l2norm_in_kernel;
  const int64_t off = b * S.T + t0;
  memcpy(one->q, in->q + off * S.Hk * S.Dk, (size_t)(L * S.Hk * S.Dk) * sizeof(float));
  memcpy(one->k, in->k + off * S.Hk * S.Dk, (size_t)(L * S.Hk * S.Dk) * sizeof(float));
  memcpy(one->v, in->v + off * S.Hv * S.Dv, (size_t)(L * S.Hv * S.Dv) * sizeof(float));
  memcpy(one->g, in->g + off * S.Hv, (size_t)(L * S.Hv) * sizeof(float));
  memcpy(one->beta, in->beta + off * S.Hv, (size_t)(L * S.Hv) * sizeof(float));
}

#endif
