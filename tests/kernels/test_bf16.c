/* Compute dtype bfloat16: MaxText's rounding points (kern_num.h).
 *
 * 1. The scale: for Dk = 128, MaxText's `rsqrt(128).astype(bf16)` is
 *    0.08837890625 (= 181 * 2^-11; 1/sqrt(128) = 0.0883883...).  With q = k
 *    = e_0, v = beta = 1, T = 1, o = scale * q_0 exactly: every kernel must
 *    return 0.08837890625 in bfloat16 and (float)(1/sqrt(128)) in float32.
 *    With the L2 norm and q = 2 e_0 the normalised 0.99999988 is cast to
 *    bfloat16 1.0 after the norm (MaxText's order), so o is the same value.
 *
 * 2. A two-token case, Dk = Dv = 1, g = 0 (every decay exp(0) = 1 exactly),
 *    dyadic inputs with few bits, chosen so that each rounding point rounds
 *    a value by hand (scale = 0.3 given):
 *      scale   bf16(0.3) = 77/256 = 0.30078125
 *      beta_1  bf16(0.3f) = 77/256                       (KERN_RP_INPUT)
 *      q_1     5 * 77/256 = 385/256 -> 384/256 = 1.5     (KERN_RP_Q_SCALE, a tie to even)
 *      kb_1    0.875 * 77/256 = 539/2048 -> 540/2048     (KERN_RP_BETA_MUL)
 *      vb_1    1.75 * 77/256 = 539/1024 -> 540/1024      (KERN_RP_BETA_MUL)
 *      S_10    kb_1 k_0 = 1485/4096 -> 1488/4096         (KERN_RP_KKT)
 *      U_1     -S_10 vb_0 + vb_1 = 261/1024 -> 260/1024  (KERN_RP_UW, a tie to even)
 *      attn_00 q_0 k_0 = 847/2048 -> 848/2048            (KERN_RP_QKT)
 *    Everything else (products and sums of these few-bit dyadics) is exact
 *    in float32, so the kernel must equal, bit for bit, the reference below
 *    evaluated exactly (double, with the bfloat16 roundings), for C = 1, 2, 4
 *    (C = 4 pads) in kern_scan and kern_affine_prefix (D = 1; D = 2 within
 *    float32 round-off).  Each rounding point is shown to matter: the
 *    reference without it differs from the kernel (for C = 1, where there is
 *    no S and U = vb, W = kb, only INPUT, Q_SCALE and QKT can show).  The recurrence has the
 *    first two points only and is checked against its own reference.
 *
 * 3. On synthetic inputs the bfloat16 kernel differs from the float32 kernel
 *    by O(2^-8) relative: more than 2^-11 (the inputs alone are perturbed by
 *    ~2^-9 RMS each), less than 2^-5 (the contractive recurrence does not
 *    amplify; about ten rounding points add up).  Measured ~2^-7.5.  Matmul
 *    modes on top of bfloat16 compute change little (bf16 operands already
 *    dominate): HIGHEST vs IEEE within 2^-14. */
#include <check.h>
#include <math.h>

#include "kern_num.h"
#include "kern_test_util.h"
#include "../check_runner.h"

static double bf(double x) { return (double)gdn_bf16_round((float)x); }
#define R(mask, bit, x) (((mask) & (bit)) ? bf(x) : (x))

/* ---- 1. the scale ---- */
START_TEST(scale_dk128) {
  for (int l2 = 0; l2 < 2; l2++) {
    gdn_inputs in;
    gdn_error e;
    gdn_error_init(&e);
    gdn_inputs_init(&in);
    gdn_shape s = {1, 1, 1, 1, 128, 1};
    ck_assert_int_eq(gdn_inputs_alloc(&in, &s, 0, &e), GDN_OK);
    in.q[0] = l2 ? 2.0f : 1.0f;
    in.k[0] = 1.0f;
    in.v[0] = 1.0f;
    in.beta[0] = 1.0f;
    in.g[0] = 0.0f;
    in.l2norm_in_kernel = l2;
    for (int k = 0; k < 3; k++) {
      kern_config c = kt_cfg(GDN_DTYPE_BF16, 64, 1);
      gdn_outputs out = kt_outputs();
      kt_run_ok((kt_kernel)k, &in, &c, &out);
      ck_assert_msg(out.o[0] == 0.08837890625, "%s l2=%d: o = %.17g", kt_kernel_names[k], l2,
                    out.o[0]);
      c.dtype = GDN_DTYPE_F32;
      kt_run_ok((kt_kernel)k, &in, &c, &out);
      if (!l2) ck_assert(out.o[0] == (double)(1.0f / sqrtf(128.0f)));
      ck_assert(fabs(out.o[0] - 0.0883883476) < 1e-7);
      gdn_outputs_clear(&out);
    }
    gdn_inputs_clear(&in);
  }
}
END_TEST

/* ---- 2. the two-token case ---- */
static const float Q[2] = {1.0f, 5.0f}, K[2] = {1.375f, 0.875f}, V[2] = {1.5f, 1.75f};
static const float BETA[2] = {0.5f, 0.3f}, H0 = 0.25f;
static const double SCALE = 0.3;

static void case_inputs(gdn_inputs *in) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_shape s = {1, 2, 1, 1, 1, 1};
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, 1, &e), GDN_OK);
  for (int t = 0; t < 2; t++) {
    in->q[t] = Q[t];
    in->k[t] = K[t];
    in->v[t] = V[t];
    in->beta[t] = BETA[t];
    in->g[t] = 0.0f;
  }
  in->h0[0] = H0;
  in->has_scale = 1;
  in->scale = SCALE;
  in->l2norm_in_kernel = 0;
}

/* The chunked algorithm for Dk = Dv = 1, g = 0, chunk size C, exactly, with
 * the rounding points in `mask` (kern_chunk_tmpl.h's steps). */
static void ref_chunked(unsigned mask, int C, double o[2], double *ht) {
  const double sc = R(mask, KERN_RP_Q_SCALE, (double)(float)SCALE);
  double q[2], k[2], v[2], b[2];
  for (int t = 0; t < 2; t++) {
    q[t] = R(mask, KERN_RP_Q_SCALE, R(mask, KERN_RP_INPUT, Q[t]) * sc);
    k[t] = R(mask, KERN_RP_INPUT, K[t]);
    v[t] = R(mask, KERN_RP_INPUT, V[t]);
    b[t] = R(mask, KERN_RP_INPUT, (double)BETA[t]);
  }
  double h = H0;
  for (int c0 = 0; c0 < 2; c0 += C) {
    int n = 2 - c0 < C ? 2 - c0 : C; /* real tokens; padding contributes zeros */
    double kb[2] = {0}, vb[2] = {0}, S[2][2] = {{0}}, A[2][2] = {{0}}, U[2], W[2], at[2][2] = {{0}}, vn[2];
    for (int i = 0; i < n; i++) {
      kb[i] = R(mask, KERN_RP_BETA_MUL, k[c0 + i] * b[c0 + i]);
      vb[i] = R(mask, KERN_RP_BETA_MUL, v[c0 + i] * b[c0 + i]);
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < i; j++) S[i][j] = R(mask, KERN_RP_KKT, kb[i] * k[c0 + j]);
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) A[i][j] = i == j;
      for (int m = 0; m < i; m++)
        for (int j = 0; j <= m; j++) A[i][j] -= S[i][m] * A[m][j];
    }
    for (int i = 0; i < n; i++) {
      double u = 0, w = 0;
      for (int j = 0; j < n; j++) {
        u += A[i][j] * vb[j];
        w += A[i][j] * kb[j];
      }
      U[i] = R(mask, KERN_RP_UW, u);
      W[i] = R(mask, KERN_RP_UW, w);
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j <= i; j++) at[i][j] = R(mask, KERN_RP_QKT, q[c0 + i] * k[c0 + j]);
    for (int i = 0; i < n; i++) vn[i] = U[i] - W[i] * h;
    double hn = h;
    for (int i = 0; i < n; i++) {
      double oi = q[c0 + i] * h;
      for (int j = 0; j <= i; j++) oi += at[i][j] * vn[j];
      o[c0 + i] = oi;
      hn += k[c0 + i] * vn[i];
    }
    h = hn;
  }
  *ht = h;
}

/* The token recurrence with its rounding points (INPUT, Q_SCALE). */
static void ref_recurrent(unsigned mask, double o[2], double *ht) {
  const double sc = R(mask, KERN_RP_Q_SCALE, (double)(float)SCALE);
  double h = H0;
  for (int t = 0; t < 2; t++) {
    double q = R(mask, KERN_RP_Q_SCALE, R(mask, KERN_RP_INPUT, Q[t]) * sc);
    double k = R(mask, KERN_RP_INPUT, K[t]), v = R(mask, KERN_RP_INPUT, V[t]);
    double b = R(mask, KERN_RP_INPUT, (double)BETA[t]);
    double delta = b * (v - k * h);
    h = h + k * delta;
    o[t] = q * h;
  }
  *ht = h;
}

/* The hand values of the header, evaluated by the reference. */
START_TEST(hand_values) {
  ck_assert(bf(0.3) == 77.0 / 256 && bf(0.3f) == 77.0 / 256);
  ck_assert(bf(385.0 / 256) == 1.5);
  ck_assert(bf(539.0 / 2048) == 540.0 / 2048 && bf(539.0 / 1024) == 540.0 / 1024);
  ck_assert(bf(1485.0 / 4096) == 1488.0 / 4096);
  ck_assert(bf(261.0 / 1024) == 260.0 / 1024);
  ck_assert(bf(847.0 / 2048) == 848.0 / 2048);
  /* with C = 2 the reference meets exactly these values: U_1 and S_10 */
  double o[2], h;
  ref_chunked(KERN_RP_BF16_ALL, 2, o, &h);
  ck_assert(o[0] == 0.30078125 * 0.25 + 848.0 / 2048 * (0.75 - 0.6875 * 0.25));
}
END_TEST

START_TEST(chunked_rounding_points) {
  gdn_inputs in;
  case_inputs(&in);
  static const int Cs[] = {1, 2, 4};
  for (int ci = 0; ci < 3; ci++) {
    double o[2], h;
    ref_chunked(KERN_RP_BF16_ALL, Cs[ci], o, &h);
    for (int k = K_SCAN; k <= K_AFFINE; k++) {
      kern_config c = kt_cfg(GDN_DTYPE_BF16, Cs[ci], 1);
      gdn_outputs out = kt_outputs();
      kt_run_ok((kt_kernel)k, &in, &c, &out);
      ck_assert_msg(out.o[0] == o[0] && out.o[1] == o[1] && out.ht[0] == h,
                    "%s C=%d: o = (%.17g, %.17g) ht = %.17g; reference (%.17g, %.17g) %.17g",
                    kt_kernel_names[k], Cs[ci], out.o[0], out.o[1], out.ht[0], o[0], o[1], h);
      gdn_outputs_clear(&out);
    }
    /* every rounding point that the chunk size exercises is observable */
    static const unsigned pts[] = {KERN_RP_INPUT, KERN_RP_Q_SCALE, KERN_RP_BETA_MUL,
                                   KERN_RP_KKT,   KERN_RP_UW,      KERN_RP_QKT};
    for (int p = 0; p < 6; p++) {
      /* C = 1 has no S, U = vb and W = kb: U's and W's rounding repeats
       * (hides) the beta products' */
      if (Cs[ci] == 1 && (pts[p] == KERN_RP_KKT || pts[p] == KERN_RP_UW || pts[p] == KERN_RP_BETA_MUL))
        continue;
      double o2[2], h2;
      ref_chunked(KERN_RP_BF16_ALL & ~pts[p], Cs[ci], o2, &h2);
      ck_assert_msg(o2[0] != o[0] || o2[1] != o[1] || h2 != h,
                    "C=%d: rounding point %#x leaves no trace", Cs[ci], pts[p]);
    }
  }
  /* two devices (C = 1): the fold composes in float32, so within its
   * round-off (|values| ~ 1, a few operations: 1e-6) */
  double o[2], h;
  ref_chunked(KERN_RP_BF16_ALL, 1, o, &h);
  kern_config c = kt_cfg(GDN_DTYPE_BF16, 1, 2);
  for (int p = 0; p < 3; p++) {
    c.prefix = (kern_prefix)p;
    gdn_outputs out = kt_outputs();
    kt_run_ok(K_AFFINE, &in, &c, &out);
    ck_assert(fabs(out.o[0] - o[0]) <= 1e-6 && fabs(out.o[1] - o[1]) <= 1e-6 &&
              fabs(out.ht[0] - h) <= 1e-6);
    gdn_outputs_clear(&out);
  }
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(recurrent_rounding_points) {
  gdn_inputs in;
  case_inputs(&in);
  double o[2], h, of[2], hf;
  ref_recurrent(KERN_RP_BF16_ALL, o, &h);
  ref_recurrent(0, of, &hf);
  kern_config c = kt_cfg(GDN_DTYPE_BF16, 64, 1);
  gdn_outputs out = kt_outputs();
  kt_run_ok(K_RECURRENT, &in, &c, &out);
  /* the recurrence's products have more bits (beta (v - k h)): within
   * float32 round-off of the exact value, and away from the unrounded one */
  for (int t = 0; t < 2; t++) {
    ck_assert_msg(fabs(out.o[t] - o[t]) <= 2e-7 * fabs(o[t]), "o[%d] = %.17g, ref %.17g", t,
                  out.o[t], o[t]);
    ck_assert(fabs(out.o[t] - of[t]) > 1e-4 * fabs(of[t]));
  }
  ck_assert(fabs(out.ht[0] - h) <= 2e-7 * fabs(h));
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&in);
}
END_TEST

/* ---- 3. bfloat16 vs float32 on synthetic inputs ---- */
START_TEST(bf16_vs_f32_band) {
  gdn_inputs in = kt_inputs((gdn_shape){2, 300, 1, 2, 32, 32}, 71, 1, 1, 0.01f);
  gdn_outputs f = kt_outputs(), b = kt_outputs(), b2 = kt_outputs();
  for (int k = 0; k < 3; k++) {
    kern_config c = kt_cfg(GDN_DTYPE_F32, 64, k == K_AFFINE ? 3 : 1);
    kt_run_ok((kt_kernel)k, &in, &c, &f);
    c.dtype = GDN_DTYPE_BF16;
    kt_run_ok((kt_kernel)k, &in, &c, &b);
    double ro = kt_rel_o(&b, &f), rh = kt_rel_ht(&b, &f);
    c.matmul = KERN_MATMUL_HIGHEST;
    kt_run_ok((kt_kernel)k, &in, &c, &b2);
    double mo = kt_rel_o(&b2, &b), mh = kt_rel_ht(&b2, &b);
    fprintf(stderr, "bf16 vs f32 %s: o 2^%.2f ht 2^%.2f; bf16 highest vs ieee o 2^%.2f ht 2^%.2f\n",
            kt_kernel_names[k], log2(ro), log2(rh), log2(mo), log2(mh));
    ck_assert_msg(ro >= 0x1p-11 && ro <= 0x1p-5 && rh >= 0x1p-11 && rh <= 0x1p-5,
                  "%s: o %.3g ht %.3g", kt_kernel_names[k], ro, rh);
    ck_assert(mo <= 0x1p-14 && mh <= 0x1p-14);
    ck_assert_int_eq(b.dtype, GDN_DTYPE_F32); /* o cast to the input dtype: float32 */
  }
  gdn_outputs_clear(&f);
  gdn_outputs_clear(&b);
  gdn_outputs_clear(&b2);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("bf16", "bf16", 60, scale_dk128, hand_values, chunked_rounding_points, recurrent_rounding_points,
    bf16_vs_f32_band)
