/* What the kernels refuse, and how: unknown numerics values, bad configs and
 * shapes.  Every refusal is GDN_ERR_INPUT with a message naming the kernel
 * and the option, and leaves `out` cleared (it held a result before the
 * call).  Every mode kern_config can express runs (dtype bfloat16, the bf16
 * pass modes, ftz, every prefix schedule).  Also the rounding-point hook and
 * kern_num_describe (kern_num.h). */
#include <check.h>

#include "kern_num.h"
#include "kern_test_util.h"
#include "../check_runner.h"

static gdn_inputs in;
static void setup(void) {
  gdn_shape s = {1, 40, 1, 2, 8, 8};
  kt_make(&in, s, 91, 1, 1, 1.0f);
}
static void teardown(void) { gdn_inputs_clear(&in); }

/* Runs kernel k with cfg, expecting GDN_ERR_INPUT with all of `needles`. */
static void refused(kt_kernel k, const kern_config *cfg, const char *n1, const char *n2) {
  gdn_outputs out = kt_outputs();
  kern_config ok = kt_cfg(GDN_DTYPE_F32, 16, 1);
  kt_run_ok(k, &in, &ok, &out);
  gdn_error e;
  gdn_error_init(&e);
  int rc = kt_run(k, &in, cfg, &out, &e);
  ck_assert_msg(rc == GDN_ERR_INPUT, "%s: rc %d (%s)", kt_kernel_names[k], rc, e.msg);
  ck_assert_msg(strstr(e.msg, n1) && strstr(e.msg, n2), "%s: message '%s' lacks '%s' / '%s'",
                kt_kernel_names[k], e.msg, n1, n2);
  ck_assert_ptr_nonnull(strstr(e.msg, "kern_"));
  ck_assert_ptr_null(out.o);
  ck_assert_ptr_null(out.ht);
  ck_assert_int_eq(kt_run(k, &in, cfg, &out, NULL), GDN_ERR_INPUT); /* same code without e */
}

/* Every combination kern_config can express runs, in every kernel. */
START_TEST(every_mode_runs) {
  for (int dt = 0; dt < 3; dt++)
    for (int m = 0; m < 4; m++)
      for (int f = 0; f < 2; f++)
        for (int p = 0; p < 3; p++)
          for (int k = 0; k < 3; k++) {
            if (k != K_AFFINE && p > 0) continue;
            kern_config c = kt_cfg((gdn_dtype)dt, 16, k == K_AFFINE ? 3 : 1);
            c.matmul = (kern_matmul)m;
            c.ftz = f;
            c.prefix = (kern_prefix)p;
            gdn_outputs out = kt_outputs();
            kt_run_ok((kt_kernel)k, &in, &c, &out);
            for (size_t i = 0; i < gdn_shape_numel_v(&in.shape); i++) ck_assert(isfinite(out.o[i]));
            gdn_outputs_clear(&out);
          }
}
END_TEST

/* Values outside the enums are refused, naming what. */
START_TEST(unknown_values_refused) {
  kern_config c = kt_cfg(GDN_DTYPE_F32, 16, 2);
  c.dtype = (gdn_dtype)7;
  for (int k = 0; k < 3; k++) refused((kt_kernel)k, &c, "compute dtype 7", "float32");
  c = kt_cfg(GDN_DTYPE_BF16, 16, 2);
  c.matmul = (kern_matmul)9;
  for (int k = 0; k < 3; k++) refused((kt_kernel)k, &c, "matmul precision 9", "highest");
  c = kt_cfg(GDN_DTYPE_F32, 16, 2);
  c.prefix = (kern_prefix)5;
  refused(K_AFFINE, &c, "--prefix 5", "hillis-steele");
}
END_TEST

/* float64 ignores the matmul mode and ftz (kern_config.h), so the CLI's
 * default --matmul-precision highest works with --dtype float64,
 * identically. */
START_TEST(float64_ignores_matmul) {
  kern_config a = kt_cfg(GDN_DTYPE_F64, 16, 2), b = a;
  b.matmul = KERN_MATMUL_HIGHEST;
  b.ftz = 1;
  gdn_outputs x = kt_outputs(), y = kt_outputs();
  kt_run_ok(K_AFFINE, &in, &a, &x);
  kt_run_ok(K_AFFINE, &in, &b, &y);
  ck_assert(kt_same_outputs(&x, &y));
  ck_assert_int_eq(x.dtype, GDN_DTYPE_F64);
  gdn_outputs_clear(&x);
  gdn_outputs_clear(&y);
}
END_TEST

/* The harness prints kern_num_describe: what runs, and what is ignored;
 * each row's three phrases must all be in its line. */
static const struct {
  gdn_dtype dt;
  kern_matmul mm;
  int ftz;
  const char *says[3];
} described[] = {
    {GDN_DTYPE_F64, KERN_MATMUL_HIGHEST, 1, {"float64 compute; matmul ieee", "highest ignored", "ftz ignored"}},
    {GDN_DTYPE_BF16, KERN_MATMUL_DEFAULT, 1, {"bfloat16 compute", "matmul default: 1 bf16 pass", "ftz on"}},
    {GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 0, {"float32 compute; matmul highest: 6 bf16 passes", "ftz off", "ftz off"}},
};

START_TEST(describe) {
  char buf[512];
  gdn_error e;
  gdn_error_init(&e);
  kern_config c;
  for (size_t r = 0; r < sizeof described / sizeof described[0]; r++) {
    c = kt_cfg(described[r].dt, 16, 1);
    c.matmul = described[r].mm;
    c.ftz = described[r].ftz;
    ck_assert_int_eq(kern_num_describe(&c, buf, sizeof buf, &e), GDN_OK);
    for (int k = 0; k < 3; k++) ck_assert_msg(strstr(buf, described[r].says[k]), "row %zu: %s", r, buf);
  }
  char small[8];
  ck_assert_int_eq(kern_num_describe(&c, small, sizeof small, &e), GDN_OK);
  ck_assert_uint_eq(strlen(small), 7);
  c.matmul = (kern_matmul)9;
  ck_assert_int_eq(kern_num_describe(&c, buf, sizeof buf, &e), GDN_ERR_INPUT);
}
END_TEST

START_TEST(bad_config_and_shape) {
  kern_config c = kt_cfg(GDN_DTYPE_F32, 0, 1);
  refused(K_SCAN, &c, "--chunk 0", "at least 1");
  refused(K_AFFINE, &c, "--chunk 0", "at least 1");
  c = kt_cfg(GDN_DTYPE_F64, 16, 0);
  refused(K_AFFINE, &c, "--devices 0", "at least 1");
  c = kt_cfg(GDN_DTYPE_F32, 16, 4); /* 40 tokens = 3 chunks of 16 */
  refused(K_AFFINE, &c, "--devices 4", "3 chunks");
  refused(K_SCAN, &c, "--devices 4", "3 chunks"); /* the same config is checked for every run */
  /* the recurrence has no chunks or devices */
  gdn_outputs out = kt_outputs();
  c = kt_cfg(GDN_DTYPE_F32, 0, 99);
  kt_run_ok(K_RECURRENT, &in, &c, &out);
  gdn_outputs_clear(&out);
  /* Hv not a multiple of Hk */
  in.shape.Hk = 3;
  in.shape.Hv = 4;
  c = kt_cfg(GDN_DTYPE_F32, 16, 1);
  gdn_error e;
  gdn_error_init(&e);
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(kt_run((kt_kernel)k, &in, &c, &out, &e), GDN_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "kern_"));
    ck_assert_ptr_null(out.o);
  }
  in.shape.Hk = 1;
  in.shape.Hv = 2;
}
END_TEST

/* A chunk size whose scratch cannot exist (C^2 elements overflow size_t)
 * is refused as an allocation failure, cleanly: no wrapped-around size
 * reaches the allocator. */
START_TEST(absurd_chunk_refused) {
  kern_config c = kt_cfg(GDN_DTYPE_F32, (int64_t)1 << 40, 1);
  for (int k = K_SCAN; k <= K_AFFINE; k++) {
    gdn_outputs out = kt_outputs();
    gdn_error e;
    gdn_error_init(&e);
    ck_assert_int_eq(kt_run((kt_kernel)k, &in, &c, &out, &e), GDN_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(e.msg, "scratch"));
    ck_assert_ptr_null(out.o);
  }
}
END_TEST

/* o is rounded to the output dtype: with q stored as bfloat16, a float32
 * kernel's o is the bfloat16 rounding of the o it computes from the same
 * values (the compute itself does not look at bf16_mask), and ht stays
 * float32. */
START_TEST(output_dtype_bfloat16_input) {
  gdn_inputs b;
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(&b);
  ck_assert_int_eq(gdn_inputs_copy(&b, &in, &e), GDN_OK);
  b.bf16_mask = GDN_T_Q;
  for (int k = 0; k < 3; k++) {
    kern_config c = kt_cfg(GDN_DTYPE_F32, 16, k == K_AFFINE ? 2 : 1);
    gdn_outputs x = kt_outputs(), y = kt_outputs();
    kt_run_ok((kt_kernel)k, &in, &c, &x);
    kt_run_ok((kt_kernel)k, &b, &c, &y);
    ck_assert_int_eq(x.dtype, GDN_DTYPE_F32);
    ck_assert_int_eq(y.dtype, GDN_DTYPE_BF16);
    int bad = 0;
    for (size_t i = 0; i < gdn_shape_numel_v(&in.shape); i++)
      bad += y.o[i] != (double)gdn_bf16_round((float)x.o[i]);
    ck_assert_int_eq(bad, 0);
    ck_assert(kt_same(x.ht, y.ht, gdn_shape_numel_state(&in.shape)));
    gdn_outputs_clear(&x);
    gdn_outputs_clear(&y);
  }
  gdn_inputs_clear(&b);
}
END_TEST

/* kern_num_init: the float kernels' numerics; the rounding hook rounds to
 * bfloat16 only at the points in the mask; the mask is empty for float32
 * and float64 compute and holds every point for bfloat16. */
START_TEST(rounding_hook) {
  kern_num num;
  gdn_error e;
  gdn_error_init(&e);
  kern_config c = kt_cfg(GDN_DTYPE_F32, 16, 1);
  ck_assert_int_eq(kern_num_init(&num, &c, "test", &e), GDN_OK);
  ck_assert_uint_eq(num.round_mask, 0);
  float x[3] = {1.00390625f, 1.0f + 0x1p-20f, -3.14159274f};
  float y[3];
  memcpy(y, x, sizeof x);
  kern_num_round_f32(&num, KERN_RP_UW, y, 3);
  ck_assert(memcmp(x, y, sizeof x) == 0);
  num.round_mask = KERN_RP_UW;
  kern_num_round_f32(&num, KERN_RP_KKT, y, 3);
  ck_assert(memcmp(x, y, sizeof x) == 0);
  kern_num_round_f32(&num, KERN_RP_UW, y, 3);
  ck_assert(y[0] == 1.0f);   /* 1 + 2^-8: a tie, to even */
  ck_assert(y[1] == 1.0f);   /* 1 + 2^-20 rounds down */
  ck_assert(y[2] == -3.140625f);
  c.dtype = GDN_DTYPE_F64;
  c.matmul = KERN_MATMUL_HIGH;
  c.ftz = 1;
  ck_assert_int_eq(kern_num_init(&num, &c, "test", &e), GDN_OK);
  ck_assert_int_eq(num.matmul, KERN_MATMUL_IEEE);
  ck_assert_int_eq(num.ftz, 0);
  ck_assert_uint_eq(num.round_mask, 0);
  c.dtype = GDN_DTYPE_BF16;
  ck_assert_int_eq(kern_num_init(&num, &c, "test", &e), GDN_OK);
  ck_assert_uint_eq(num.round_mask, KERN_RP_BF16_ALL);
  ck_assert_int_eq(num.matmul, KERN_MATMUL_HIGH);
  ck_assert_int_eq(num.ftz, 1);
}
END_TEST

int main(void) {
  Suite *su = suite_create("num");
  TCase *tc = CKR_TCASE(su, "num", 60, every_mode_runs, unknown_values_refused, float64_ignores_matmul, describe,
      bad_config_and_shape, rounding_hook, absurd_chunk_refused, output_dtype_bfloat16_input);
  tcase_add_checked_fixture(tc, setup, teardown);
  return ckr_run(su);
}
