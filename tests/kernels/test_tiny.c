/* Tiny cases worked out by hand: T = 2, one head, Dk = Dv = 1 and 2.
 *
 * With g = 0 (a_t = exp(0) = 1 exactly), no L2 norm, a dyadic scale and
 * dyadic q, k, v, beta, h0 with few significant bits, every intermediate of
 * every kernel -- the recurrence, the WY factors (the solve of a 2 x 2 unit
 * triangle), the scan body, the affine maps and their composition -- is a
 * dyadic rational with a denominator of at most 2^12 and a numerator of a
 * few bits, hence exactly representable in float32: no operation rounds, so
 * every kernel, every chunk size and device count must return the closed
 * form *exactly*, in float32 and float64 alike.  (C = 4 pads T = 2 with two
 * zero tokens: the state passes through them unchanged.)
 *
 * A third case uses g != 0 and the in-kernel L2 norm, where rounding is
 * unavoidable; there the closed form is evaluated in long double and the
 * kernels must agree to a few units of their precision (bounds below). */
#include <check.h>
#include <math.h>
#include <string.h>

#include "kern_test_util.h"
#include "../check_runner.h"

typedef struct tiny {
  int64_t Dk, Dv;
  float q[2][2], k[2][2], v[2][2], g[2], beta[2], h0[2][2];
  int has_h0, l2norm;
  double scale;
} tiny;

static void tiny_inputs(const tiny *c, gdn_inputs *in) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_shape s = {1, 2, 1, 1, c->Dk, c->Dv};
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, c->has_h0, &e), GDN_OK);
  for (int t = 0; t < 2; t++) {
    for (int64_t d = 0; d < c->Dk; d++) {
      in->q[t * c->Dk + d] = c->q[t][d];
      in->k[t * c->Dk + d] = c->k[t][d];
    }
    for (int64_t d = 0; d < c->Dv; d++) in->v[t * c->Dv + d] = c->v[t][d];
    in->g[t] = c->g[t];
    in->beta[t] = c->beta[t];
  }
  if (c->has_h0)
    for (int64_t i = 0; i < c->Dk; i++)
      for (int64_t j = 0; j < c->Dv; j++) in->h0[i * c->Dv + j] = c->h0[i][j];
  in->has_scale = 1;
  in->scale = c->scale;
  in->l2norm_in_kernel = c->l2norm;
}

/* The closed form h_t = a_t (I - beta_t k_t k_t^T) h_{t-1} + beta_t k_t v_t^T,
 * o_t = h_t^T (scale q_t), in long double (64-bit significand). */
static void tiny_closed_form(const tiny *c, long double o[2][2], long double ht[2][2]) {
  long double h[2][2] = {{0}};
  if (c->has_h0)
    for (int i = 0; i < c->Dk; i++)
      for (int j = 0; j < c->Dv; j++) h[i][j] = c->h0[i][j];
  for (int t = 0; t < 2; t++) {
    long double q[2], k[2];
    long double nq = 0, nk = 0;
    for (int d = 0; d < c->Dk; d++) {
      nq += (long double)c->q[t][d] * c->q[t][d];
      nk += (long double)c->k[t][d] * c->k[t][d];
    }
    for (int d = 0; d < c->Dk; d++) {
      q[d] = c->l2norm ? c->q[t][d] / sqrtl(nq + 1e-6L) : c->q[t][d];
      k[d] = c->l2norm ? c->k[t][d] / sqrtl(nk + 1e-6L) : c->k[t][d];
    }
    long double a = expl((long double)c->g[t]), bt = c->beta[t], nh[2][2] = {{0}};
    for (int i = 0; i < c->Dk; i++)
      for (int j = 0; j < c->Dv; j++) {
        long double s = 0;
        for (int m = 0; m < c->Dk; m++) s += ((i == m) - bt * k[i] * k[m]) * h[m][j];
        nh[i][j] = a * s + bt * k[i] * c->v[t][j];
      }
    memcpy(h, nh, sizeof h);
    for (int j = 0; j < c->Dv; j++) {
      long double s = 0;
      for (int i = 0; i < c->Dk; i++) s += h[i][j] * q[i] * c->scale;
      o[t][j] = s;
    }
  }
  memcpy(ht, h, sizeof h);
}

/* Every kernel x dtype x chunk x device count that the case admits. */
static void check_all(const tiny *c, const double o_want[2][2], const double h_want[2][2],
                      double tol32, double tol64) {
  gdn_inputs in;
  tiny_inputs(c, &in);
  static const int64_t chunks[] = {1, 2, 4};
  for (int dt = 0; dt < 2; dt++) {
    gdn_dtype dtype = dt ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
    double tol = dt ? tol64 : tol32;
    for (int kk = 0; kk < 3; kk++)
      for (int ci = 0; ci < 3; ci++)
        for (int64_t D = 1; D <= 2; D++) {
          if (kk != K_AFFINE && D > 1) continue;
          if (kk == K_RECURRENT && ci > 0) continue;
          if (D > gdn_shape_chunks(&in.shape, chunks[ci])) continue;
          kern_config cfg = kt_cfg(dtype, chunks[ci], D);
          gdn_outputs out = kt_outputs();
          kt_run_ok((kt_kernel)kk, &in, &cfg, &out);
          for (int t = 0; t < 2; t++)
            for (int64_t j = 0; j < c->Dv; j++) {
              double got = out.o[t * c->Dv + j], want = o_want[t][j];
              ck_assert_msg(fabs(got - want) <= tol * fabs(want),
                            "%s %s C=%ld D=%ld: o[t=%d][%ld] = %.17g, closed form %.17g",
                            kt_kernel_names[kk], gdn_dtype_name(dtype), (long)chunks[ci],
                            (long)D, t, (long)j, got, want);
            }
          for (int64_t i = 0; i < c->Dk; i++)
            for (int64_t j = 0; j < c->Dv; j++) {
              double got = out.ht[i * c->Dv + j], want = h_want[i][j];
              ck_assert_msg(fabs(got - want) <= tol * fabs(want),
                            "%s %s C=%ld D=%ld: ht[%ld][%ld] = %.17g, closed form %.17g",
                            kt_kernel_names[kk], gdn_dtype_name(dtype), (long)chunks[ci],
                            (long)D, (long)i, (long)j, got, want);
            }
          gdn_outputs_clear(&out);
        }
  }
  gdn_inputs_clear(&in);
}

/* Dk = Dv = 1, h0 = 0, scale = 1, g = 0:
 *   k = (1/2, 1), v = (2, -1), beta = (1/2, 1/4), q = (1, 1/2).
 *   t = 1: kv = 0; delta = 1/2 (2 - 0) = 1; h1 = 0 + (1/2)(1) = 1/2;
 *          o1 = h1 q1 = 1/2.
 *   t = 2: kv = h1 k2 = 1/2; delta = 1/4 (-1 - 1/2) = -3/8;
 *          h2 = 1/2 + 1 (-3/8) = 1/8;  o2 = h2 q2 = 1/16.
 *   Check with the closed form: h2 = (1 - beta2 k2^2) h1 + beta2 k2 v2
 *          = (3/4)(1/2) - 1/4 = 1/8.
 *   The chunked form with C = 2 gets the same through S_10 = beta1 k1 k0...
 *   e.g. A = [[1, 0], [-1/8, 1]], U = A (beta v) = (1, -3/8) = the deltas. */
START_TEST(scalar_state_exact) {
  tiny c = {1, 1, {{1}, {0.5f}}, {{0.5f}, {1}}, {{2}, {-1}}, {0, 0}, {0.5f, 0.25f}, {{0}},
            0, 0, 1.0};
  const double o[2][2] = {{0.5}, {0.0625}}, h[2][2] = {{0.125}};
  check_all(&c, o, h, 0, 0);
}
END_TEST

/* Dk = Dv = 2, h0 = diag(1/4, -1/2), scale = 1/2, g = 0:
 *   k1 = (1/2, 1/2), v1 = (1, 2), beta1 = 1/2, q1 = (1, 0)
 *   k2 = (1, -1/2),  v2 = (-2, 1/2), beta2 = 1/4, q2 = (1/2, 1)
 *   t = 1: kv = h0^T k1 = (1/8, -1/4); delta = 1/2 (v1 - kv) = (7/16, 9/8);
 *          h1 = h0 + k1 delta^T = [[15/32, 9/16], [7/32, 1/16]];
 *          o1 = h1^T (q1 / 2) = (15/64, 9/32).
 *   t = 2: kv = h1^T k2 = (15/32 - 7/64, 9/16 - 1/32) = (23/64, 17/32);
 *          delta = 1/4 (v2 - kv) = (-151/256, -1/128);
 *          h2 = h1 + k2 delta^T = [[-31/256, 71/128], [263/512, 17/256]];
 *          o2 = h2^T (q2 / 2) = (-31/1024 + 263/1024, 71/512 + 17/512)
 *             = (29/128, 11/64). */
START_TEST(matrix_state_exact) {
  tiny c = {2, 2, {{1, 0}, {0.5f, 1}}, {{0.5f, 0.5f}, {1, -0.5f}}, {{1, 2}, {-2, 0.5f}},
            {0, 0}, {0.5f, 0.25f}, {{0.25f, 0}, {0, -0.5f}}, 1, 0, 0.5};
  const double o[2][2] = {{15.0 / 64, 9.0 / 32}, {29.0 / 128, 11.0 / 64}};
  const double h[2][2] = {{-31.0 / 256, 71.0 / 128}, {263.0 / 512, 17.0 / 256}};
  check_all(&c, o, h, 0, 0);
}
END_TEST

/* g = (-1/2, -1/4), in-kernel L2 norm, Dk = Dv = 2, h0 given.  Reference:
 * the closed form in long double (error ~1e-19, negligible).  Each kernel
 * does O(10) dependent float operations per output on values of size ~1
 * with no cancellation worse than a factor ~4 (the smallest output is
 * ~0.04 against terms ~0.3), so 64 u relative bounds them with a wide
 * margin: 64 * 2^-24 = 3.8e-6 (float32), 64 * 2^-53 = 7.1e-15 (float64).
 * Measured: up to 1.8e-7 (3 u32) and 2.4e-16 (2 u64). */
START_TEST(decay_and_norm_close) {
  tiny c = {2, 2, {{3, 4}, {-1, 2}}, {{1, 1}, {2, -1}}, {{1, -0.5f}, {0.25f, 2}},
            {-0.5f, -0.25f}, {0.75f, 0.375f}, {{0.1f, -0.2f}, {0.3f, 0.05f}}, 1, 1, 0.5};
  long double o[2][2], h[2][2];
  tiny_closed_form(&c, o, h);
  double od[2][2], hd[2][2];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      od[i][j] = (double)o[i][j];
      hd[i][j] = (double)h[i][j];
    }
  check_all(&c, od, hd, 64 * ldexp(1, -24), 64 * ldexp(1, -53));
}
END_TEST

/* The long double closed form itself reproduces the hand-derived values
 * (guards the reference used above). */
START_TEST(closed_form_matches_hand) {
  tiny c = {2, 2, {{1, 0}, {0.5f, 1}}, {{0.5f, 0.5f}, {1, -0.5f}}, {{1, 2}, {-2, 0.5f}},
            {0, 0}, {0.5f, 0.25f}, {{0.25f, 0}, {0, -0.5f}}, 1, 0, 0.5};
  long double o[2][2], h[2][2];
  tiny_closed_form(&c, o, h);
  ck_assert(o[1][0] == 29.0L / 128 && o[1][1] == 11.0L / 64);
  ck_assert(h[1][0] == 263.0L / 512 && h[0][0] == -31.0L / 256);
}
END_TEST

CKR_MAIN("tiny", "tiny", 60, scalar_state_exact, matrix_state_exact, decay_and_norm_close, closed_form_matches_hand)
