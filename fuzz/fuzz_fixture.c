/* The fixture loader on in-memory HDF5 images.
 *
 * HDF5 1.10.8 itself crashes and loops on some corrupt files (fix_isolate.h),
 * so the target calls the loader the CLIs use, fix_load_image_isolated: the
 * image is read first in a probe child, then -- only if that succeeded --
 * in-process, where libFuzzer sees the coverage and ASan/UBSan watch our
 * code.  A crash in the parent is a finding; one contained in the child is
 * the gate working.  The child's sanitizer death callback is silenced
 * (fix_isolate_child_hook) so a contained crash writes no artifact.
 * Invariants on success: the shape is valid, every array is present, a
 * strict load never accepts a stale oracle, and the data hash agrees with
 * the inputs. */
#include <sanitizer/common_interface_defs.h>

#include "fix.h"
#include "fix_isolate.h"
#include "fuzz_util.h"

static void quiet_death(void) {}
static void child_hook(void) { __sanitizer_set_death_callback(quiet_death); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fix_isolate_child_hook = child_hook;
  for (int strict = 0; strict < 2; strict++) {
    fix_fixture fx;
    fix_fixture_init(&fx);
    fix_load_opts lo;
    fix_load_opts_init(&lo);
    lo.max_bytes = (uint64_t)64 << 20; /* a header may declare terabytes */
    lo.allow_stale_oracle = !strict;
    lo.probe_timeout_s = 1; /* a legitimate image this small loads in milliseconds */
    gdn_error e;
    gdn_error_init(&e);
    int rc = fix_load_image_isolated(&fx, data, n, "fuzz.h5", &lo, &e);
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
    }
    FUZZ_CHECK(rc == GDN_OK || fx.inputs.q == NULL, "failed load left data behind");
    fix_fixture_clear(&fx);
    if (rc && !strict) break; /* strict refuses whatever lenient refused */
  }
  return 0;
}
