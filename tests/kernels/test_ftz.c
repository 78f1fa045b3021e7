/* Flush-to-zero (cfg->ftz, kern_num.h).
 *
 * One token, Dk = Dv = 1, g = 0, scale 1, q = 1, beta = 1, no L2 norm: the
 * chunked kernels compute o = (q k) (beta v) and ht = k (beta v) through
 * products that are exact here, the recurrence the same through its own
 * steps, so:
 *   - a subnormal input v = +-2^-130 (a bfloat16 value too, so that the
 *     bf16 rounding points and passes keep it) gives o = v exactly with ftz
 *     off, and
 *     +0 with ftz on (the input is flushed to a zero of its sign,
 *     kern_num_in_f32; o_inter + attn v_new = +0 + -0 = +0 then);
 *   - normal inputs k = 2^-63, v = 2^-70 give the subnormal product 2^-133:
 *     kept with ftz off, flushed with ftz on (a result is flushed);
 *   - k = 1 - 2^-24, v = 2^-126: the exact product 2^-126 - 2^-150 rounds
 *     (gradual underflow, a tie to even) to 2^-126 with ftz off; with ftz on
 *     it is flushed, x86 detecting tininess after rounding to 24 bits with
 *     unbounded exponent (the rule kern_num.h documents);
 *   - a subnormal h0 is read as zero.
 * Every kernel, every matmul mode, compute dtypes float32 and bfloat16
 * (whose rounding points keep these power-of-two values exact).
 * float64 ignores ftz.  With inputs that produce no subnormal anywhere
 * (slow gates), ftz on and off are bit-identical: ftz touches nothing else.
 * With fast gates (g * 4) exp(G) and the decays fall into the subnormal
 * range; flushing them changes o and ht by less than 1e-30 (in practice not
 * at all: such terms are absorbed by O(1) sums).  The calling thread's MXCSR
 * is restored. */
#include <check.h>
#include <float.h>
#include <math.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "gdn_threads.h"
#include "kern_num.h"
#include "kern_test_util.h"
#include "../check_runner.h"

static void one_token(gdn_inputs *in, float k, float v, float h0) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_shape s = {1, 1, 1, 1, 1, 1};
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, 1, &e), GDN_OK);
  in->q[0] = 1.0f;
  in->k[0] = k;
  in->v[0] = v;
  in->beta[0] = 1.0f;
  in->g[0] = 0.0f;
  in->h0[0] = h0;
  in->has_scale = 1;
  in->scale = 1.0;
}

/* every kernel, dtype float32 / bfloat16, every mode: o[0] and ht[0] */
static void expect(const gdn_inputs *in, int ftz, double o_want, double h_want) {
  for (int dt = 0; dt < 2; dt++)
    for (int mm = 0; mm < 4; mm++)
      for (int k = 0; k < 3; k++) {
        kern_config c = kt_cfg(dt ? GDN_DTYPE_BF16 : GDN_DTYPE_F32, 1, 1);
        c.matmul = (kern_matmul)mm;
        c.ftz = ftz;
        gdn_outputs out = kt_outputs();
        kt_run_ok((kt_kernel)k, in, &c, &out);
        int ok = out.o[0] == o_want && out.ht[0] == h_want &&
                 (o_want != 0 || signbit(out.o[0]) == signbit(o_want));
        ck_assert_msg(ok, "%s %s %s ftz=%d: o %a ht %a, want %a %a", kt_kernel_names[k],
                      dt ? "bf16" : "f32", kern_matmul_name((kern_matmul)mm), ftz, out.o[0],
                      out.ht[0], o_want, h_want);
        gdn_outputs_clear(&out);
      }
}

/* o and h equal to v without flush-to-zero and 0 with it; frees in. */
static void expect_flushed(gdn_inputs *in, double v) {
  expect(in, 0, v, v);
  expect(in, 1, 0.0, 0.0);
  gdn_inputs_clear(in);
}

START_TEST(subnormal_input) {
  gdn_inputs in;
  for (int sg = 0; sg < 2; sg++) {
    float v = sg ? -0x1p-130f : 0x1p-130f;
    one_token(&in, 1.0f, v, 0.0f);
    expect_flushed(&in, v);
  }
  kern_num num = {GDN_DTYPE_F32, KERN_MATMUL_IEEE, 1, 0, KERN_SOLVE_SUBSTITUTION};
  ck_assert(kern_num_in_f32(&num, -0x1p-140f) == 0 && signbit(kern_num_in_f32(&num, -0x1p-140f)));
  ck_assert(kern_num_in_f32(&num, 0x1p-126f) == 0x1p-126f);
  num.ftz = 0;
  ck_assert(kern_num_in_f32(&num, -0x1p-140f) == -0x1p-140f);
  one_token(&in, 0.0f, 1.0f, 0x1p-130f); /* h0 subnormal, k = 0: o = q h0 */
  in.beta[0] = 0.0f;
  expect_flushed(&in, 0x1p-130);
}
END_TEST

START_TEST(subnormal_result) {
  gdn_inputs in;
  one_token(&in, 0x1p-63f, 0x1p-70f, 0.0f);
  expect_flushed(&in, 0x1p-133);
}
END_TEST

/* float32 only: 1 - 2^-24 is not a bfloat16 value */
START_TEST(tininess_after_rounding) {
  gdn_inputs in;
  one_token(&in, 0x1.fffffep-1f, FLT_MIN, 0.0f);
  for (int ftz = 0; ftz < 2; ftz++)
    for (int k = 0; k < 3; k++) {
      kern_config c = kt_cfg(GDN_DTYPE_F32, 1, 1);
      c.ftz = ftz;
      gdn_outputs out = kt_outputs();
      kt_run_ok((kt_kernel)k, &in, &c, &out);
      double want = ftz ? 0.0 : (double)FLT_MIN;
      ck_assert_msg(out.o[0] == want, "%s ftz=%d: o %a", kt_kernel_names[k], ftz, out.o[0]);
      gdn_outputs_clear(&out);
    }
  gdn_inputs_clear(&in);
}
END_TEST

/* Kernel k on in with c as given (a) and with flush-to-zero on (b); c keeps
 * ftz = 1 afterwards. */
static void run_without_and_with_ftz(kt_kernel k, const gdn_inputs *in, kern_config *c, gdn_outputs *a, gdn_outputs *b) {
  gdn_outputs_init(a);
  gdn_outputs_init(b);
  kt_run_ok(k, in, c, a);
  c->ftz = 1;
  kt_run_ok(k, in, c, b);
}

/* float64 compute ignores ftz: identical outputs, subnormal kept. */
START_TEST(float64_ignores_ftz) {
  gdn_inputs in;
  one_token(&in, 0x1p-63f, 0x1p-70f, 0.0f);
  for (int k = 0; k < 3; k++) {
    kern_config c = kt_cfg(GDN_DTYPE_F64, 1, 1);
    gdn_outputs a, b;
    run_without_and_with_ftz((kt_kernel)k, &in, &c, &a, &b);
    ck_assert(kt_same_outputs(&a, &b));
    ck_assert(a.o[0] == 0x1p-133);
    gdn_outputs_clear(&a);
    gdn_outputs_clear(&b);
  }
  gdn_inputs_clear(&in);
}
END_TEST

/* No subnormal anywhere (slow gates, moderate values): ftz is invisible;
 * fast gates: exp(G) reaches the subnormal range and ftz changes bits, but
 * only by amounts of that size. */
START_TEST(only_subnormals_change) {
  gdn_shape s = {1, 300, 1, 2, 16, 16};
  for (int fast = 0; fast < 2; fast++) {
    gdn_inputs in = kt_inputs(s, 33, 1, 1, fast ? 4.0f : 0.002f);
    for (int dt = 0; dt < 2; dt++)
      for (int k = 0; k < 3; k++) {
        kern_config c = kt_cfg(dt ? GDN_DTYPE_BF16 : GDN_DTYPE_F32, 64, k == K_AFFINE ? 3 : 1);
        c.matmul = dt ? KERN_MATMUL_DEFAULT : KERN_MATMUL_IEEE;
        gdn_outputs a, b;
        run_without_and_with_ftz((kt_kernel)k, &in, &c, &a, &b);
        if (!fast) {
          ck_assert_msg(kt_same_outputs(&a, &b), "%s %s: ftz changed a subnormal-free run",
                        kt_kernel_names[k], gdn_dtype_name(c.dtype));
        } else {
          double worst = 0;
          for (size_t i = 0; i < gdn_shape_numel_v(&s); i++)
            worst = fmax(worst, fabs(a.o[i] - b.o[i]));
          for (size_t i = 0; i < gdn_shape_numel_state(&s); i++)
            worst = fmax(worst, fabs(a.ht[i] - b.ht[i]));
          /* a flushed value is < 2^-126 and enters o and h multiplied by
           * O(1) factors (contractive recurrence, |q|, |k| <= 1) */
          ck_assert_msg(worst < 1e-30, "%s: ftz changed o/ht by %.3g", kt_kernel_names[k], worst);
        }
        gdn_outputs_clear(&a);
        gdn_outputs_clear(&b);
      }
    gdn_inputs_clear(&in);
  }
}
END_TEST

START_TEST(mxcsr_restored) {
#if defined(__x86_64__) || defined(__i386__)
  gdn_inputs in;
  one_token(&in, 0x1p-63f, 0x1p-70f, 0.0f);
  unsigned before = _mm_getcsr();
  kern_config c = kt_cfg(GDN_DTYPE_F32, 1, 1);
  c.ftz = 1;
  gdn_outputs out = kt_outputs();
  for (int k = 0; k < 3; k++) {
    kt_run_ok((kt_kernel)k, &in, &c, &out);
    ck_assert_uint_eq(_mm_getcsr(), before);
  }
  volatile float tiny = FLT_MIN, half = 0.5f;
  ck_assert(tiny * half == 0x1p-127f); /* this thread still has gradual underflow */
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&in);
#endif
}
END_TEST

CKR_MAIN("ftz", "ftz", 60, subnormal_input, subnormal_result, tininess_after_rounding, float64_ignores_ftz,
    only_subnormals_change, mxcsr_restored)
