/* Fixtures for the check tests (header-only, static): one of synthetic
 * inputs, or a shipped one loaded; what each test then adds (outputs,
 * cotangents, segments, planted errors) is its own. */
#ifndef SYNTH_FIXTURE_H
#define SYNTH_FIXTURE_H

#include <check.h>
#include <stdint.h>

#include "fix.h"
#include "gdn_synth.h"

/* fx initialised and filled: gdn_synth_generate's inputs of shape s (seed,
 * GDN_SYNTH_* flags), chunk size `chunk`, source "synthetic", no outputs. */
static inline void sfx_make(fix_fixture *fx, gdn_shape s, uint64_t seed, unsigned flags, int64_t chunk) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture_init(fx);
  gdn_synth_opts so = {seed, flags, 0};
  ck_assert_msg(gdn_synth_generate(&fx->inputs, &s, &so, &e) == GDN_OK, "synth: %s", e.msg);
  fx->chunk_size = chunk;
  ck_assert_int_eq(fix_set_string(&fx->source, "synthetic", &e), GDN_OK);
}

/* fx initialised and loaded from path with the default options, failing
 * the test on error. */
static inline void sfx_load(fix_fixture *fx, const char *path) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture_init(fx);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  ck_assert_msg(fix_load(fx, path, &lo, &e) == GDN_OK, "%s", e.msg);
}

/* An output slot's attributes as these tests plant them: implementation
 * `impl`, prefix `prefix` (NULL: none, and the attribute counted missing, as
 * in a file without it), float32 at matmul precision "highest" on platform
 * "test", over `devices` devices. */
static inline void sfx_output_attrs(fix_output *o, const char *impl, const char *prefix, int64_t devices) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(fix_set_string(&o->implementation, impl, &e), GDN_OK);
  if (prefix) ck_assert_int_eq(fix_set_string(&o->prefix, prefix, &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&o->compute_dtype, "float32", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&o->matmul_precision, "highest", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&o->platform, "test", &e), GDN_OK);
  o->devices = devices;
  o->missing = prefix ? 0 : FIX_ATTR_PREFIX;
}

#endif
