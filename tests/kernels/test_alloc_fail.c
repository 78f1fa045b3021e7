/* Allocation failures at every site in turn.
 *
 * For each kernel (affine with and without seams, D = 1 and D = 3) and
 * dtype, and again in the TPU modes (bfloat16 compute, the bf16 pass modes,
 * ftz, each prefix schedule, whose scratch holds the operand splits and the
 * composition work): count the allocations of a successful call (gdn_alloc_count), then
 * for n = 1 .. count make the n-th allocation from the call's start fail.
 * Each must return GDN_ERR_NOMEM with an "out of memory" message naming the
 * kernel, leave `out` (and `seams`) cleared -- even though `out` held a
 * previous result -- and leak nothing; with e = NULL the code is the same (ASan's leak checker covers that in
 * the sanitizer build).  A successful call after the failures still gives
 * the same result, bit for bit. */
#include <check.h>

#include "gdn_alloc.h"
#include "kern_test_util.h"
#include "../check_runner.h"

static void every_site_mode(kt_kernel k, gdn_dtype dt, int64_t D, int with_seams, kern_matmul mm,
                            int ftz, kern_prefix prefix) {
  gdn_inputs in = kt_inputs((gdn_shape){2, 70, 1, 2, 8, 8}, 81, 1, 1, 0.01f);
  kern_config c = kt_cfg(dt, 16, D);
  c.matmul = mm;
  c.ftz = ftz;
  c.prefix = prefix;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs ref = kt_outputs(), out = kt_outputs();
  kern_affine_seams sm;
  kern_affine_seams_init(&sm);
  kern_affine_seams *psm = with_seams ? &sm : NULL;
  long before = gdn_alloc_count();
  ck_assert_int_eq(kt_run_seams(k, &in, &c, &ref, psm, &e), GDN_OK);
  long sites = gdn_alloc_count() - before;
  ck_assert(sites >= 3); /* o, ht, scratch at least */
  for (long n = 1; n <= sites; n++) {
    kt_run_ok(k, &in, &c, &out); /* out holds a result the failure must clear */
    gdn_error_init(&e);
    gdn_alloc_fail_after(n);
    int rc = kt_run_seams(k, &in, &c, &out, psm, &e);
    gdn_alloc_fail_after(0);
    ck_assert_msg(rc == GDN_ERR_NOMEM, "%s %s D=%ld: site %ld of %ld gave %d (%s)",
                  kt_kernel_names[k], gdn_dtype_name(dt), (long)D, n, sites, rc, e.msg);
    ck_assert_ptr_nonnull(strstr(e.msg, "out of memory"));
    ck_assert_ptr_nonnull(strstr(e.msg, "kern_"));
    ck_assert_ptr_null(out.o);
    ck_assert_ptr_null(out.ht);
    ck_assert_ptr_null(sm.h_in);
    ck_assert_ptr_null(sm.h_out);
  }
  /* the code does not depend on having somewhere to put the message */
  gdn_alloc_fail_after(sites);
  int rc = kt_run_seams(k, &in, &c, &out, psm, NULL);
  gdn_alloc_fail_after(0);
  ck_assert_int_eq(rc, GDN_ERR_NOMEM);
  ck_assert_ptr_null(out.o);
  ck_assert_int_eq(kt_run_seams(k, &in, &c, &out, psm, &e), GDN_OK);
  ck_assert(kt_same_outputs(&out, &ref));
  gdn_outputs_clear(&ref);
  gdn_outputs_clear(&out);
  kern_affine_seams_clear(&sm);
  gdn_inputs_clear(&in);
}

static void every_site(kt_kernel k, gdn_dtype dt, int64_t D, int with_seams) {
  every_site_mode(k, dt, D, with_seams, KERN_MATMUL_IEEE, 0, KERN_PREFIX_SEQUENTIAL);
}

START_TEST(recurrent_sites) {
  every_site(K_RECURRENT, GDN_DTYPE_F32, 1, 0);
  every_site(K_RECURRENT, GDN_DTYPE_F64, 1, 0);
}
END_TEST
START_TEST(scan_sites) {
  every_site(K_SCAN, GDN_DTYPE_F32, 1, 0);
  every_site(K_SCAN, GDN_DTYPE_F64, 1, 0);
}
END_TEST
START_TEST(affine_sites) {
  for (int dt = 0; dt < 2; dt++) {
    gdn_dtype t = dt ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
    every_site(K_AFFINE, t, 1, 0);
    every_site(K_AFFINE, t, 3, 0);
    every_site(K_AFFINE, t, 1, 1);
    every_site(K_AFFINE, t, 3, 1);
  }
}
END_TEST

START_TEST(tpu_mode_sites) {
  for (int k = 0; k < 3; k++) {
    every_site_mode((kt_kernel)k, GDN_DTYPE_BF16, 1, 0, KERN_MATMUL_DEFAULT, 1,
                    KERN_PREFIX_SEQUENTIAL);
    every_site_mode((kt_kernel)k, GDN_DTYPE_F32, 1, 0, KERN_MATMUL_HIGHEST, 0,
                    KERN_PREFIX_SEQUENTIAL);
  }
  for (int p = 0; p < 3; p++) {
    every_site_mode(K_AFFINE, GDN_DTYPE_BF16, 3, 1, KERN_MATMUL_HIGH, 1, (kern_prefix)p);
    every_site_mode(K_AFFINE, GDN_DTYPE_F32, 3, 0, KERN_MATMUL_HIGHEST, 0, (kern_prefix)p);
  }
}
END_TEST

CKR_MAIN("alloc_fail", "alloc_fail", 60, recurrent_sites, scan_sites, affine_sites, tpu_mode_sites)
