/* The fixture loader on in-memory HDF5 images, in-process.
 *
 * The CLIs read a fixture first in a probe child (fix_isolate.h), because
 * HDF5 1.10.8 itself crashes and loops on some corrupt files.  A fork per
 * input held this target to about 13 inputs a second (768 in 60 s), so the
 * target calls the loader in-process (fix_load_image, the probe disabled):
 * libFuzzer sees every input's coverage at its own rate.  The price: a crash
 * inside HDF5 stops a plain libFuzzer run.  scripts/fuzz.sh therefore runs
 * this target in libFuzzer's fork mode, which goes on after a crash, and then
 * replays every crash it kept through `gdn-fixture verify` -- the probe and
 * the in-process load of the CLIs, sanitized: a crash the probe contains
 * (exit 2) is HDF5's known fragility, anything else is a finding.
 * Invariants on success: the shape is valid, every array is present, a
 * strict load never accepts a stale oracle, and the data hash agrees with
 * the inputs. */
#include "fix.h"
#include "fix_load.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  for (int strict = 0; strict < 2; strict++) {
    fix_fixture fx;
    fix_fixture_init(&fx);
    fix_load_opts lo;
    fix_load_opts_init(&lo);
    lo.max_bytes = (uint64_t)64 << 20; /* a header may declare terabytes */
    lo.allow_stale_oracle = !strict;
    gdn_error e;
    gdn_error_init(&e);
    int rc = fix_load_image(&fx, data, n, "fuzz.h5", &lo, &e);
    fuzz_check_error(rc, &e);
    if (!rc) {
      gdn_error e2;
      gdn_error_init(&e2);
      FUZZ_CHECK(gdn_shape_validate(&fx.inputs.shape, &e2) == GDN_OK, "loaded shape invalid: %s", e2.msg);
      FUZZ_CHECK(fx.inputs.q && fx.inputs.k && fx.inputs.v && fx.inputs.g && fx.inputs.beta, "missing input");
      FUZZ_CHECK(!strict || !fx.oracle.present || fx.oracle.fresh, "strict load accepted a stale oracle");
      char h[FIX_SHA256_HEX];
      FUZZ_CHECK(fix_inputs_sha256(&fx.inputs, h, &e2) == GDN_OK && !strcmp(h, fx.inputs_sha256),
                 "inputs_sha256 does not match the loaded inputs");
      for (size_t i = 0; i < fx.n_outputs; i++)
        FUZZ_CHECK(fx.outputs[i].out.o && (!fx.outputs[i].has_ht || fx.outputs[i].out.ht), "output %zu", i);
      FUZZ_CHECK(!fx.oracle.present || (fx.oracle.out.o && fx.oracle.out.ht), "oracle without data");
      /* schema v3: gradients only with cotangents, both with their data; cotangents finite */
      for (size_t i = 0; i < fx.n_outputs; i++)
        FUZZ_CHECK(!fx.outputs[i].has_grads || (fx.has_cotangents && fx.outputs[i].grads.dq), "grads %zu", i);
      FUZZ_CHECK(!fx.has_cotangents ||
                     gdn_cotangents_check(&fx.cot, &fx.inputs.shape, "fuzz", &e2) == GDN_OK,
                 "cotangents loaded but not valid: %s", e2.msg);
      FUZZ_CHECK(fix_fixture_check(&fx, "fuzz", &e2) == GDN_OK, "loaded fixture fails its own check: %s", e2.msg);
    }
    FUZZ_CHECK(rc == GDN_OK || fx.inputs.q == NULL, "failed load left data behind");
    fix_fixture_clear(&fx);
    if (rc && !strict) break; /* strict refuses whatever lenient refused */
  }
  return 0;
}
