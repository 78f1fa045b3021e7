/* The float backward kernels against the oracle's gradients (oracle_vjp,
 * p = 128, certified >= 90 bits: its own error is nothing at these scales).
 *
 * Bounds, per gradient tensor, normwise (rel_fro = ||x - r||_F / ||r||_F):
 *   float64  2^-40 (9.1e-13).  Rounding in float64 is u = 2^-53 per step;
 *            the chunked backward's longest chains are sums over C, Dk or Dv
 *            terms and products of O(10) of them, so ~100 u = 1e-14 is what
 *            sound code reaches (measured 3e-16 to 8e-16); a wrong rule in the
 *            derivation (a transpose, a missing term) is off by O(1).  This
 *            checks the derivation itself on every device count.
 *   float32  per tensor, max(64 u, 4 x 2^29 x the float64 kernel's own
 *            error on the same case) with u = 2^-24: 64 u = 3.8e-6 is the
 *            forward's float32 band (docs/tolerance.md), and where a gradient is worse
 *            conditioned -- dg sums decay terms of both signs (the transpose
 *            of the cumsum), which cancel when the gates forget fast -- the
 *            float64 run of the same operations measures that condition:
 *            rounding errors scale with u, 2^29 = u_32 / u_64, and 4 leaves
 *            room for luck.  (Measured: 2e-7 to 5e-7 with slow gates; dg with
 *            the gates as initialised 4.2e-6, its float64 error 6.9e-15.)
 * Localized: the per-token error of dk, max_t ||x_t - r_t|| / max(||r_t||,
 * 2^-10 max_t ||r_t||) (rows of Dk; the floor keeps tokens whose gradient is
 * ~0 from dominating), must stay below 2^-16 (1.5e-5, 256 u) for correct
 * float32 gradients; a planted error of 1e-4 (relative) in one token's dk must
 * exceed it -- the negative control.
 */
#include <check.h>
#include <stdlib.h>

#include "gdn_threads.h"
#include "oracle_vjp.h"
#include "vjp_test_util.h"
#include "../check_runner.h"

#define F64_BOUND 0x1p-40
#define F32_BOUND (64 * 0x1p-24)
#define LOCAL_BOUND 0x1p-16

static void oracle(const gdn_inputs *in, const gdn_cotangents *ct, gdn_grads *g) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads_init(g);
  oracle_vjp_certificate cert;
  ck_assert_msg(oracle_vjp_certified(in, ct, &cfg, g, &cert, &e) == GDN_OK, "oracle: %s", e.msg);
  ck_assert_msg(cert.certified_bits >= 90, "oracle certified %d bits", cert.certified_bits);
}

/* max_t ||x_t - r_t|| / max(||r_t||, 2^-10 max ||r_t||) over the dk rows. */
static double local_dk(const gdn_grads *x, const gdn_grads *r, int64_t *worst_t) {
  const gdn_shape *s = &r->shape;
  const int64_t rows = s->B * s->T * s->Hk, Dk = s->Dk;
  double M = 0, w = 0;
  for (int64_t q = 0; q < rows; q++) {
    double n = 0;
    for (int64_t d = 0; d < Dk; d++) n += r->dk[q * Dk + d] * r->dk[q * Dk + d];
    M = sqrt(n) > M ? sqrt(n) : M;
  }
  for (int64_t q = 0; q < rows; q++) {
    double n = 0, m = 0;
    for (int64_t d = 0; d < Dk; d++) {
      double a = x->dk[q * Dk + d] - r->dk[q * Dk + d];
      n += a * a;
      m += r->dk[q * Dk + d] * r->dk[q * Dk + d];
    }
    double den = sqrt(m) > ldexp(M, -10) ? sqrt(m) : ldexp(M, -10);
    if (sqrt(n) / den > w) w = sqrt(n) / den, *worst_t = q;
  }
  return w;
}

typedef struct vcase {
  gdn_shape s;
  unsigned flags;
  int dht;
  int64_t C;
  double scale; /* 0: Dk^-1/2; else has_scale */
} vcase;

/* Grouped heads, T not a multiple of C (padding), D not dividing N, with
 * and without h0 / dht / the in-kernel L2 norm, a given scale, both gate
 * families. */
static const vcase cases[] = {
    {{1, 200, 2, 4, 16, 12}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 1, 16, 0},
    {{2, 77, 1, 2, 8, 8}, GDN_SYNTH_SLOW_GATES, 1, 8, 0.4},
    {{1, 130, 1, 1, 12, 6}, GDN_SYNTH_QK_PRENORM | GDN_SYNTH_H0, 0, 16, 0},
    {{1, 96, 2, 2, 8, 4}, 0, 1, 12, 0},
};

/* A case's problem: inputs (seed 7, the case's scale), cotangents (seed
 * 3) and the oracle's gradients for them, the reference every test here
 * measures the kernels against. */
typedef struct vproblem {
  gdn_inputs in;
  gdn_cotangents ct;
  gdn_grads ref;
} vproblem;

static vproblem vproblem_make(const vcase *c) {
  vproblem p = {.in = tsu_inputs(c->s, c->flags, 7), .ct = tsu_cotangents(&c->s, c->dht, 3)};
  if (c->scale != 0) p.in.has_scale = 1, p.in.scale = c->scale;
  oracle(&p.in, &p.ct, &p.ref);
  return p;
}

static void vproblem_clear(vproblem *p) {
  gdn_grads_clear(&p->ref);
  tsu_problem_clear(&p->in, &p->ct);
}

static void check_case(const vcase *c, gdn_dtype dt, double bound64) {
  vproblem p = vproblem_make(c);
  gdn_grads g;
  const int64_t Ds[] = {1, 2, 4, 8};
  /* Both shard modes on every device count each allows: chunks (array_split,
   * padding at the end) and tokens (D | T; with C not dividing T/D -- T = 200
   * at D = 2, 4, 8, T = 130 at D = 2 -- every seam is padded). */
  for (int sh = 0; sh < 2; sh++)
  for (int k = 0; k < 4; k++)
    for (int pf = 0; pf < (Ds[k] > 1 ? 3 : 1); pf++) {
    const kern_shard shard = sh ? KERN_SHARD_TOKENS : KERN_SHARD_CHUNKS;
    if (shard == KERN_SHARD_TOKENS && (Ds[k] == 1 || c->s.T % Ds[k])) continue;
    kern_config cfg = vtu_cfg(dt, c->C, Ds[k]);
    cfg.prefix = (kern_prefix)pf;
    cfg.shard = shard;
    for (int affine = 0; affine < 2; affine++) {
      if (Ds[k] > 1 && !affine) continue;
      vtu_kern(&p.in, &p.ct, &cfg, affine, &g);
      double bound[GDN_GRADS_N];
      for (int id = 0; id < GDN_GRADS_N; id++) bound[id] = bound64;
      if (dt == GDN_DTYPE_F32) {
        gdn_grads g64;
        kern_config c64 = vtu_cfg(GDN_DTYPE_F64, c->C, Ds[k]);
        c64.prefix = cfg.prefix;
        c64.shard = cfg.shard;
        vtu_kern(&p.in, &p.ct, &c64, affine, &g64);
        for (int id = 0; id < GDN_GRADS_N; id++) {
          double r64 = 4 * 0x1p29 * gdn_grads_rel_fro(&g64, &p.ref, (gdn_grad_id)id);
          bound[id] = r64 > F32_BOUND ? r64 : F32_BOUND;
        }
        gdn_grads_clear(&g64);
      }
      int which = 0;
      double w = 0;
      for (int id = 0; id < GDN_GRADS_N; id++) {
        double v = gdn_grads_rel_fro(&g, &p.ref, (gdn_grad_id)id);
        if (v / bound[id] > w / bound[which]) w = v, which = id;
      }
      fprintf(stderr, "T=%lld %s D=%lld %s %s %s: rel_fro %.2e (%s, bound %.2e)\n", (long long)c->s.T,
              dt == GDN_DTYPE_F64 ? "f64" : "f32", (long long)Ds[k], affine ? "affine" : "scan",
              kern_prefix_name(cfg.prefix), kern_shard_name(cfg.shard), w,
              gdn_grads_name((gdn_grad_id)which), bound[which]);
      ck_assert_msg(w <= bound[which], "T=%lld D=%lld: %s rel_fro %.3e > %.3e", (long long)c->s.T,
                    (long long)Ds[k], gdn_grads_name((gdn_grad_id)which), w, bound[which]);
      if (dt == GDN_DTYPE_F32) {
        int64_t t;
        double l = local_dk(&g, &p.ref, &t);
        ck_assert_msg(l <= LOCAL_BOUND, "D=%lld: local dk error %.3e at row %lld", (long long)Ds[k], l,
                      (long long)t);
      }
      gdn_grads_clear(&g);
    }
  }
  vproblem_clear(&p);
}

START_TEST(float64_matches_oracle) { check_case(&cases[_i], GDN_DTYPE_F64, F64_BOUND); }
END_TEST

START_TEST(float32_within_band) { check_case(&cases[_i], GDN_DTYPE_F32, 0); }
END_TEST

/* The negative control: 1e-4 relative in one token's dk (a token whose
 * gradient is above the floor) must be seen by the localized check, at
 * every device count, while the correct gradients pass it (above). */
START_TEST(planted_dk_error_fails) {
  const vcase *c = &cases[0];
  vproblem p = vproblem_make(c);
  gdn_grads g;
  const int64_t Ds[] = {1, 2, 4, 8}, t = c->s.T / 2, Dk = c->s.Dk;
  for (int k = 0; k < 4; k++) {
    kern_config cfg = vtu_cfg(GDN_DTYPE_F32, c->C, Ds[k]);
    vtu_kern(&p.in, &p.ct, &cfg, 1, &g);
    int64_t wt;
    double own = local_dk(&g, &p.ref, &wt);
    double *row = g.dk + (t * c->s.Hk + 1) * Dk; /* b = 0, key head 1 */
    for (int64_t d = 0; d < Dk; d++) row[d] = (float)(row[d] * (1 + 1e-4));
    double planted = local_dk(&g, &p.ref, &wt);
    double nw = gdn_grads_rel_fro(&g, &p.ref, GDN_GRAD_DK);
    fprintf(stderr, "D=%lld: own local %.2e, planted local %.2e at row %lld, planted rel_fro %.2e\n",
            (long long)Ds[k], own, planted, (long long)wt, nw);
    ck_assert_msg(planted > LOCAL_BOUND && planted > 10 * own, "D=%lld: planted %.3e vs own %.3e",
                  (long long)Ds[k], planted, own);
    ck_assert_int_eq(wt, t * c->s.Hk + 1);
    gdn_grads_clear(&g);
  }
  vproblem_clear(&p);
}
END_TEST

/* The matmul precision modes (kern_mm.h) in the backward, float32, with and
 * without ftz, scan and affine-prefix on 4 devices.  Each mode's unit is
 * the relative error of one of its products: highest ~ float32's u = 2^-24
 * (six passes), high 2^-16 (the ll pass left out), default bfloat16's
 * 2^-9 (one pass).  Every gradient must stay within 16 units of its mode
 * (the chains are those of IEEE, which reaches 3-8 u: measured 5-8 units for
 * highest, 2.4-3.8 for high and default), and for default and high be above 1/64 unit -- the control
 * that the mode is really applied (IEEE is 2^-22, a thousand times
 * smaller than high's unit). */
START_TEST(matmul_modes) {
  const vcase *c = &cases[0];
  vproblem p = vproblem_make(c);
  gdn_grads g;
  const struct { kern_matmul m; double unit; } modes[] = {
      {KERN_MATMUL_HIGHEST, 0x1p-24}, {KERN_MATMUL_HIGH, 0x1p-16}, {KERN_MATMUL_DEFAULT, 0x1p-9}};
  for (int k = 0; k < 3; k++)
    for (int ftz = 0; ftz < 2; ftz++)
      for (int64_t D = 1; D <= 4; D += 3) {
        kern_config cfg = vtu_cfg(GDN_DTYPE_F32, c->C, D);
        cfg.matmul = modes[k].m;
        cfg.ftz = ftz;
        vtu_kern(&p.in, &p.ct, &cfg, D > 1, &g);
        int which = 0;
        double w = vtu_worst(&g, &p.ref, &which);
        fprintf(stderr, "mode %s ftz %d D=%lld: worst rel_fro %.2e (%s) = %.2f units\n",
                kern_matmul_name(cfg.matmul), ftz, (long long)D, w, gdn_grads_name((gdn_grad_id)which),
                w / modes[k].unit);
        ck_assert_msg(w <= 16 * modes[k].unit, "mode %s: %.3e", kern_matmul_name(cfg.matmul), w);
        if (modes[k].m != KERN_MATMUL_HIGHEST)
          ck_assert_msg(w >= modes[k].unit / 64, "mode %s not applied? %.3e", kern_matmul_name(cfg.matmul), w);
        gdn_grads_clear(&g);
      }
  vproblem_clear(&p);
}
END_TEST

/* Compute dtype bfloat16 (kern_vjp.h: the forward's rounding points and
 * their transposes' in the backward), u = 2^-8, on every case and 1, 2, 4,
 * 8 devices (chunks shard mode, sequential prefix; the other modes share
 * the code the float32 tests cover).  Bounds:
 *   every gradient  rel_fro <= BF16_BOUND = 2^-4 (16 u), 9x the worst
 *                   measured here (2.5e-3 to 6.9e-3, 0.63u to 1.8u; printed;
 *                   the policy's band is 8u, docs/gradients.md)
 *   affine-prefix   rel_fro <= 4 x max(the scan's, u) per tensor (the
 *                   policy's grad-affine-no-worse-than-scan-bfloat16;
 *                   measured 0.95x to 1.16x here)
 *   control         the worst >= 2^-12: the roundings are really applied
 *                   (float32 compute reaches 2^-22). */
#define BF16_BOUND 0x1p-4
START_TEST(bfloat16_within_band) {
  const vcase *c = &cases[_i];
  vproblem p = vproblem_make(c);
  gdn_grads g;
  const int64_t Ds[] = {1, 2, 4, 8};
  double scan[GDN_GRADS_N];
  for (int k = 0; k < 4; k++) {
    kern_config cfg = vtu_cfg(GDN_DTYPE_BF16, c->C, Ds[k]);
    cfg.shard = KERN_SHARD_CHUNKS;
    vtu_kern(&p.in, &p.ct, &cfg, Ds[k] > 1, &g);
    double worst = 0;
    for (int id = 0; id < GDN_GRADS_N; id++) {
      const double v = gdn_grads_rel_fro(&g, &p.ref, (gdn_grad_id)id);
      const char *nm = gdn_grads_name((gdn_grad_id)id);
      fprintf(stderr, "bf16 T=%lld D=%lld %s: rel_fro %.3e (%.2f u)\n", (long long)c->s.T, (long long)Ds[k],
              nm, v, v / 0x1p-8);
      ck_assert_msg(v <= BF16_BOUND, "bf16 D=%lld %s: %.3e", (long long)Ds[k], nm, v);
      if (Ds[k] == 1) scan[id] = v;
      const double lim = 4 * (scan[id] > 0x1p-8 ? scan[id] : 0x1p-8);
      ck_assert_msg(v <= lim, "bf16 D=%lld %s: %.3e > 4 x scan", (long long)Ds[k], nm, v);
      worst = v > worst ? v : worst;
    }
    ck_assert_msg(worst >= 0x1p-12, "bf16 D=%lld: worst %.3e, roundings not applied?", (long long)Ds[k], worst);
    gdn_grads_clear(&g);
  }
  vproblem_clear(&p);
}
END_TEST

CKR_MAIN_TABLE("vjp_vs_oracle", "vs_oracle", 300, cases, (float64_matches_oracle, float32_within_band, bfloat16_within_band),
    planted_dk_error_fails, matmul_modes)
