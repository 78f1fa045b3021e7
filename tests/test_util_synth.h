/* Synthetic inputs and cotangents for tests, failing the test on error
 * (header-only, static; shared by tests/oracle, tests/grads, tests/parity). */
#ifndef TEST_UTIL_SYNTH_H
#define TEST_UTIL_SYNTH_H

#include <check.h>

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

/* N(0, 1) float32 cotangents do (and dht when with_dht) for shape s. */
static inline void tsu_cots(gdn_cotangents *ct, const gdn_shape *s, int with_dht, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_cotangents_init(ct);
  ck_assert(gdn_cotangents_alloc(ct, s, with_dht, &e) == GDN_OK);
  gdn_cotangents_synth(ct, seed);
}

#endif
