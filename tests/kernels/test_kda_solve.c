/* The xla-expander solve in the KDA kernels (kern_solve_xla.h, shared with
 * GDN's chunked kernels; kern_kda_chunk_tmpl.h's kda_solve):
 *   - the shared function: a block padded with I solves its real rows to
 *     the same values (the header's padding claim); in float64 it gives the
 *     values of forward substitution with fma (the same sums); float32's
 *     residual |(I + S) X - I| is at float32's rounding;
 *   - float32 KDA chunked and affine-prefix (D = 2), ieee and highest
 *     products, a last chunk of 4 rows: the expander changes the bits
 *     (negative control: the mode reaches the kernel) and agrees with the
 *     substitution within float32 rounding (bounds below), both within
 *     2e-6 of the float64 token loop, the same bits at 1 and 2 threads;
 *   - float64: the same values as the substitution (the same products in
 *     the same order: a check of the expander's order on KDA's matrix);
 *   - the token loop has no solve: the same bits under either;
 *   - every channel's gate GDN's scalar gate: the KDA chunked kernel with
 *     the expander within the rounding GDN's kern_scan with the expander
 *     shows (both against the float64 token loop);
 *   - the backwards re-form the chunk by substitution under either solve,
 *     KDA's as GDN's kern_scan_vjp (the same bits). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_gemm.h"
#include "kern_kda.h"
#include "kern_kda_chunk_vjp.h"
#include "kern_solve_xla.h"
#include "kern_vjp.h"

/* T = 100 at C = 32: chunks of 32, 32, 32, 4; D = 2: pieces of 32 + 18 */
static const gdn_shape SHAPE = {1, 100, 1, 2, 32, 24};

typedef struct problem {
  gdn_inputs in;
  gdn_chgate g;
} problem;

static problem make(uint64_t seed, int scalar_gate) {
  problem p;
  p.in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  gdn_chgate_init(&p.g);
  gdn_error e;
  gdn_error_init(&e);
  const int rc = scalar_gate ? gdn_chgate_from_scalar(&p.g, &p.in, &e) : gdn_chgate_draw_kimi(&p.g, &SHAPE, seed, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return p;
}

static void problem_clear(problem *p) {
  gdn_chgate_clear(&p->g);
  gdn_inputs_clear(&p->in);
}

static kern_config config(gdn_dtype dt, kern_matmul mm, kern_solve sv, int64_t D) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = dt;
  cfg.matmul = mm;
  cfg.solve = sv;
  cfg.chunk = 32;
  cfg.devices = D;
  return cfg;
}

/* kind 0 token loop, 1 chunked, 2 affine-prefix (D = 2); 3 GDN's kern_scan,
 * 4 GDN's kern_recurrent (the scalar gate of p->in) */
static gdn_outputs run(const problem *p, int kind, gdn_dtype dt, kern_matmul mm, kern_solve sv) {
  kern_config cfg = config(dt, mm, sv, kind == 2 ? 2 : 1);
  gdn_outputs out;
  gdn_outputs_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  const kern_kda_mutant none = KERN_KDA_MUTANT_NONE;
  const int rc = kind == 0   ? kern_kda_recurrent(&p->in, &p->g, &cfg, none, &out, &e)
                 : kind == 1 ? kern_kda_chunk(&p->in, &p->g, &cfg, none, &out, &e)
                 : kind == 2 ? kern_kda_affine(&p->in, &p->g, &cfg, none, &out, &e)
                 : kind == 3 ? kern_scan(&p->in, &cfg, &out, &e)
                             : kern_recurrent(&p->in, &cfg, &out, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return out;
}

static double rel(const double *x, const double *r, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - r[i])), m = fmax(m, fabs(r[i]));
  return isnan(d) ? INFINITY : d / m;
}

/* normwise, the larger of o's and ht's */
static double err(const gdn_outputs *x, const gdn_outputs *r) {
  return fmax(rel(x->o, r->o, gdn_shape_numel_v(&SHAPE)), rel(x->ht, r->ht, gdn_shape_numel_state(&SHAPE)));
}

static int same_bits(const gdn_outputs *a, const gdn_outputs *b) {
  return !memcmp(a->o, b->o, gdn_shape_numel_v(&SHAPE) * sizeof(double)) &&
         !memcmp(a->ht, b->ht, gdn_shape_numel_state(&SHAPE) * sizeof(double));
}

static int same_values(const gdn_outputs *a, const gdn_outputs *b) {
  for (size_t i = 0; i < gdn_shape_numel_v(&SHAPE); i++)
    if (!(a->o[i] == b->o[i])) return 0;
  for (size_t i = 0; i < gdn_shape_numel_state(&SHAPE); i++)
    if (!(a->ht[i] == b->ht[i])) return 0;
  return 1;
}

/* A strictly lower S of n rows (leading dimension ld), entries of beta K's
 * size (|S_ij| < 0.3: a well-conditioned I + S, as the chunks' are). */
static void draw_s(double *S, int64_t n, int64_t ld, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      S[i * ld + j] = j < i ? 0.6 * ((double)(x >> 11) / 9007199254740992.0 - 0.5) : 0;
    }
}

enum { NP = 20, CP = 32 };

/* X = (I + S)^-1 of the NP x NP S by kern_solve_xla_f32 in an n x n block (n >= NP, padded with I) */
static void solve_f32(const double *S, int64_t n, float *X) {
  static float L[CP * CP], row[CP], ws[1 << 16], mem[2][3 * CP * CP + 64];
  ck_assert(kern_gemm_ws_elems_f32() <= sizeof ws / sizeof ws[0]);
  ck_assert(kern_split_elems_f32(KERN_MATMUL_HIGHEST, (size_t)(n * n)) <= sizeof mem[0] / sizeof mem[0][0]);
  kern_split_f32 sl, sx;
  kern_split_bind_f32(&sl, KERN_MATMUL_HIGHEST, mem[0], (size_t)(n * n));
  kern_split_bind_f32(&sx, KERN_MATMUL_HIGHEST, mem[1], (size_t)(n * n));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) L[i * n + j] = i < NP && j < NP ? (float)S[i * NP + j] : 0.0f;
  kern_solve_xla_f32(n, L, X, &sl, &sx, row, ws);
}

START_TEST(test_shared_function) {
  static double S[NP * NP], L[NP * NP], X[NP * NP], A[NP * NP], row[NP], ws[1 << 16];
  static float X1[CP * CP], X2[CP * CP];
  draw_s(S, NP, NP, 7);
  /* padding: the real rows' values unchanged (== : the sign of a zero may differ) */
  solve_f32(S, NP, X1);
  solve_f32(S, CP, X2);
  double resid = 0;
  for (int64_t i = 0; i < NP; i++)
    for (int64_t j = 0; j < NP; j++) {
      ck_assert_msg(X1[i * NP + j] == X2[i * CP + j], "padding moved X[%lld][%lld]", (long long)i, (long long)j);
      double s = (i == j) - (double)X1[i * NP + j]; /* (I + S) X - I, in double */
      for (int64_t m = 0; m < i; m++) s -= S[i * NP + m] * (double)X1[m * NP + j];
      resid = fmax(resid, fabs(s));
    }
  /* |X| <= ~2 here and at most 20 terms a row, each rounded to float32
   * (u = 6e-8): at worst ~2.4e-6; measured 2.9e-8 */
  fprintf(stderr, "kern_solve_xla float32: residual %.3g\n", resid);
  ck_assert_msg(resid < 4e-6, "float32 residual %.3g", resid);
  /* float64: forward substitution with fma (row i from e_i, m ascending) gives the same values */
  memcpy(L, S, sizeof S);
  kern_split_f64 sl, sx;
  kern_split_bind_f64(&sl, KERN_MATMUL_HIGHEST, NULL, NP * NP);
  kern_split_bind_f64(&sx, KERN_MATMUL_HIGHEST, NULL, NP * NP);
  ck_assert(kern_gemm_ws_elems_f64() <= sizeof ws / sizeof ws[0]);
  kern_solve_xla_f64(NP, L, X, &sl, &sx, row, ws);
  for (int64_t i = 0; i < NP; i++) {
    for (int64_t j = 0; j < NP; j++) A[i * NP + j] = i == j;
    for (int64_t m = 0; m < i; m++)
      for (int64_t j = 0; j <= m; j++) A[i * NP + j] = fma(-S[i * NP + m], A[m * NP + j], A[i * NP + j]);
  }
  for (int64_t x = 0; x < NP * NP; x++) ck_assert_msg(X[x] == A[x], "float64 X[%lld]", (long long)x);
  ck_assert(L[NP + 1] == 1 && L[1] == 0); /* L = I + S in place */
}
END_TEST

START_TEST(test_float32_agrees) {
  problem p = make(61, 0);
  gdn_outputs ref = run(&p, 0, GDN_DTYPE_F64, KERN_MATMUL_IEEE, KERN_SOLVE_SUBSTITUTION);
  for (int x = 0; x < 4; x++) { /* ieee, highest products x chunked, affine-prefix */
    const kern_matmul mm = x < 2 ? KERN_MATMUL_IEEE : KERN_MATMUL_HIGHEST;
    const int kind = 1 + x % 2;
    gdn_outputs s = run(&p, kind, GDN_DTYPE_F32, mm, KERN_SOLVE_SUBSTITUTION);
    gdn_outputs x = run(&p, kind, GDN_DTYPE_F32, mm, KERN_SOLVE_XLA_EXPANDER);
    const double es = err(&s, &ref), ex = err(&x, &ref), d = err(&x, &s);
    fprintf(stderr, "kda %s %s: vs float64 substitution %.3g, xla-expander %.3g; apart %.3g\n",
            kind == 1 ? "chunk" : "affine D=2", kern_matmul_name(mm), es, ex, d);
    ck_assert_msg(!same_bits(&s, &x), "kind %d: the expander changed no bit", kind); /* the mode is in force */
    /* the solve's rounding is a small part of a chunk's (float32's 2e-7 ..
     * 7e-7, kern_kda.h): the two solves within 1e-5 of each other
     * (measured ~1e-7), each within 2e-6 of float64 and within 2x + 8u of
     * the other's error */
    ck_assert(d < 1e-5);
    ck_assert(es < 2e-6 && ex < 2e-6);
    ck_assert(ex <= 2 * es + 8 * 0x1p-24 && es <= 2 * ex + 8 * 0x1p-24);
    const int nt = gdn_threads_get(); /* the heads are independent items: any thread count, the same bits */
    gdn_threads_set(nt == 1 ? 2 : 1);
    gdn_outputs y = run(&p, kind, GDN_DTYPE_F32, mm, KERN_SOLVE_XLA_EXPANDER);
    gdn_threads_set(nt);
    ck_assert(same_bits(&x, &y));
    gdn_outputs_clear(&s), gdn_outputs_clear(&x), gdn_outputs_clear(&y);
  }
  gdn_outputs_clear(&ref);
  problem_clear(&p);
}
END_TEST

START_TEST(test_float64_same_values) {
  problem p = make(62, 0);
  for (int kind = 1; kind <= 2; kind++) {
    gdn_outputs s = run(&p, kind, GDN_DTYPE_F64, KERN_MATMUL_IEEE, KERN_SOLVE_SUBSTITUTION);
    gdn_outputs x = run(&p, kind, GDN_DTYPE_F64, KERN_MATMUL_IEEE, KERN_SOLVE_XLA_EXPANDER);
    ck_assert_msg(same_values(&s, &x), "kind %d: float64 solves differ", kind);
    gdn_outputs_clear(&s), gdn_outputs_clear(&x);
  }
  /* negative control of the float64 check: float32's HIGHEST passes do not give the substitution's values */
  gdn_outputs s = run(&p, 1, GDN_DTYPE_F32, KERN_MATMUL_IEEE, KERN_SOLVE_SUBSTITUTION);
  gdn_outputs x = run(&p, 1, GDN_DTYPE_F32, KERN_MATMUL_IEEE, KERN_SOLVE_XLA_EXPANDER);
  ck_assert(!same_values(&s, &x));
  gdn_outputs_clear(&s), gdn_outputs_clear(&x);
  problem_clear(&p);
}
END_TEST

START_TEST(test_token_loop_unchanged) {
  problem p = make(63, 0);
  gdn_outputs s = run(&p, 0, GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, KERN_SOLVE_SUBSTITUTION);
  gdn_outputs x = run(&p, 0, GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, KERN_SOLVE_XLA_EXPANDER);
  ck_assert(same_bits(&s, &x));
  gdn_outputs_clear(&s), gdn_outputs_clear(&x);
  problem_clear(&p);
}
END_TEST

START_TEST(test_equal_gates_gdn) {
  problem p = make(64, 1);
  gdn_outputs ref = run(&p, 4, GDN_DTYPE_F64, KERN_MATMUL_IEEE, KERN_SOLVE_SUBSTITUTION);
  gdn_outputs g = run(&p, 3, GDN_DTYPE_F32, KERN_MATMUL_IEEE, KERN_SOLVE_XLA_EXPANDER);
  gdn_outputs k = run(&p, 1, GDN_DTYPE_F32, KERN_MATMUL_IEEE, KERN_SOLVE_XLA_EXPANDER);
  const double eg = err(&g, &ref), ek = err(&k, &ref), d = err(&k, &g);
  fprintf(stderr, "equal gates, xla-expander: kern_scan %.3g, kda-chunk %.3g vs float64; apart %.3g\n", eg, ek, d);
  /* test_kda_conformance's rule for the substitution: the KDA chunked
   * kernel's error within 4x of the stock scan's, floored at 8 u; the two
   * apart by no more than both errors together (plus the floor) */
  ck_assert_msg(ek <= fmax(4 * eg, 8 * 0x1p-24), "kda-chunk %.3e vs scan %.3e", ek, eg);
  ck_assert_msg(d <= 2 * (ek + eg) + 8 * 0x1p-24, "apart %.3e", d);
  gdn_outputs_clear(&ref), gdn_outputs_clear(&g), gdn_outputs_clear(&k);
  problem_clear(&p);
}
END_TEST

static int same_grads(const gdn_grads *a, const gdn_grads *b, const gdn_shape *s, int per_channel) {
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const size_t n = per_channel ? gdn_chgrads_numel(s, (gdn_grad_id)id) : gdn_grads_numel(s, (gdn_grad_id)id);
    const double *x = gdn_grads_tensor_c(a, (gdn_grad_id)id), *y = gdn_grads_tensor_c(b, (gdn_grad_id)id);
    if ((x == NULL) != (y == NULL) || (x && memcmp(x, y, n * sizeof(double)))) return 0;
  }
  return 1;
}

START_TEST(test_backwards_substitution) {
  problem p = make(65, 0);
  gdn_cotangents ct = tsu_cotangents(&SHAPE, 1, 66);
  gdn_grads r[2][2]; /* [kda, gdn][substitution, xla-expander] */
  gdn_error e;
  gdn_error_init(&e);
  for (int sv = 0; sv < 2; sv++) {
    kern_config cfg = config(GDN_DTYPE_F32, KERN_MATMUL_IEEE, (kern_solve)sv, 1);
    gdn_grads_init(&r[0][sv]), gdn_grads_init(&r[1][sv]);
    ck_assert_msg(kern_kda_chunk_vjp_algebra(&p.in, &p.g, &ct, &cfg, 0, &r[0][sv], &e) == GDN_OK, "%s", e.msg);
    ck_assert_msg(kern_scan_vjp(&p.in, &ct, &cfg, &r[1][sv], &e) == GDN_OK, "%s", e.msg);
  }
  ck_assert(same_grads(&r[0][0], &r[0][1], &SHAPE, 1));
  ck_assert(same_grads(&r[1][0], &r[1][1], &SHAPE, 0));
  for (int x = 0; x < 4; x++) gdn_grads_clear(&r[x / 2][x % 2]);
  gdn_cotangents_clear(&ct);
  problem_clear(&p);
}
END_TEST

CKR_MAIN("kda_solve", "all", 120, test_shared_function, test_float32_agrees, test_float64_same_values,
         test_token_loop_unchanged, test_equal_gates_gdn, test_backwards_substitution)
