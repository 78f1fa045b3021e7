/* Thread-count determinism: every kernel gives bit-identical o, ht (and
 * seams) with 1, 2 and 3 threads, in float32 and float64 and in the TPU
 * modes: bfloat16 compute with matmul default and ftz, float32 with
 * highest / high, each prefix schedule.  Work items are independent (heads; head x
 * device for the affine fold and replay; heads for the prefix) and each
 * item's result depends only on its own data, not on which thread ran it or
 * how the heads were batched: 3 threads over 6 heads batch the affine
 * kernel's heads differently from 2 and from 1.  memcmp, no tolerance. */
#include <check.h>

#include "gdn_threads.h"
#include "kern_test_util.h"
#include "../check_runner.h"

typedef struct mode {
  gdn_dtype dt;
  kern_matmul mm;
  int ftz;
  kern_prefix prefix;
} mode;

static void run_threads(mode md, int nthreads, gdn_outputs out[3], kern_affine_seams *sm) {
  gdn_inputs in = kt_inputs((gdn_shape){3, 301, 1, 2, 16, 24}, 51, 1, 1, 0.005f);
  gdn_threads_set(nthreads);
  ck_assert_int_eq(gdn_threads_get(), nthreads);
  for (int k = 0; k < 3; k++) {
    kern_config c = kt_cfg(md.dt, 16, k == K_AFFINE ? 5 : 1);
    c.matmul = md.mm;
    c.ftz = md.ftz;
    c.prefix = md.prefix;
    gdn_error e;
    gdn_error_init(&e);
    gdn_outputs_init(&out[k]);
    ck_assert_int_eq(kt_run_seams((kt_kernel)k, &in, &c, &out[k], sm, &e), GDN_OK);
  }
  gdn_inputs_clear(&in);
}

static void same_for_threads(mode md) {
  gdn_outputs ref[3], x[3];
  kern_affine_seams sref, sx;
  kern_affine_seams_init(&sref);
  kern_affine_seams_init(&sx);
  run_threads(md, 1, ref, &sref);
  for (int nt = 2; nt <= 3; nt++) {
    run_threads(md, nt, x, &sx);
    for (int k = 0; k < 3; k++) {
      ck_assert_msg(kt_same_outputs(&x[k], &ref[k]), "%s %s %s: %d threads differ from 1",
                    kt_kernel_names[k], gdn_dtype_name(md.dt), kern_matmul_name(md.mm), nt);
      gdn_outputs_clear(&x[k]);
    }
    size_t n = (size_t)(sref.B * sref.Hv * sref.devices * sref.Dk * sref.Dv);
    ck_assert(kt_same(sx.h_in, sref.h_in, n) && kt_same(sx.h_out, sref.h_out, n));
    kern_affine_seams_clear(&sx);
  }
  for (int k = 0; k < 3; k++) gdn_outputs_clear(&ref[k]);
  kern_affine_seams_clear(&sref);
}

START_TEST(threads_f32) { same_for_threads((mode){GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0, 0}); }
END_TEST
START_TEST(threads_f64) { same_for_threads((mode){GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0, 0}); }
END_TEST
START_TEST(threads_bf16_default_ftz_assoc) {
  same_for_threads((mode){GDN_DTYPE_BF16, KERN_MATMUL_DEFAULT, 1, KERN_PREFIX_ASSOCIATIVE_SCAN});
}
END_TEST
START_TEST(threads_f32_highest_hillis) {
  same_for_threads((mode){GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 0, KERN_PREFIX_HILLIS_STEELE});
}
END_TEST
START_TEST(threads_f32_high_ftz) {
  same_for_threads((mode){GDN_DTYPE_F32, KERN_MATMUL_HIGH, 1, KERN_PREFIX_SEQUENTIAL});
}
END_TEST

CKR_MAIN("threads", "threads", 60, threads_f32, threads_f64, threads_bf16_default_ftz_assoc,
    threads_f32_highest_hillis, threads_f32_high_ftz)
