/* KDA's affine-prefix (kern_kda_affine and its backward
 * kern_kda_affine_vjp) under every prefix schedule and both shard modes:
 *   - float64 forward agrees with the float64 token loop to 1e-12 (rounding
 *     only, ~1e-15 measured) and float32 within 1e-5 (~1e-7 measured), every
 *     schedule x shard x D; the backward the same against the float64
 *     chunked backward;
 *   - where the schedules compose the same pairs in the same order they give
 *     the same bits: D = 2 (one composition), D = 3 sequential and
 *     associative-scan (x1 o x0, then x2 o (x1 o x0)); Hillis-Steele at D = 3
 *     composes (x2 o x1) o x0 (other bits, same band);
 *   - the two shard modes hold the same pieces when T/D is a multiple of C
 *     (then the same bits), and D = 1 is the chunked kernel bit for bit in
 *     either mode, forward and backward;
 *   - any thread count gives the same bits (Hillis-Steele, chunks);
 *   - negative controls: the cumsum-across-chunks and gate-value-axis
 *     mutants, the backward's dh-seam-dropped, fail under every schedule and
 *     shard mode (errors >= 1e-3 against bands of 1e-5);
 *   - an unknown schedule or shard mode is refused naming it. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "kern_kda.h"
#include "kern_kda_chunk_vjp.h"

/* T = 160: C = 16 gives 10 chunks; tokens D = 2, 4, 5 (pieces of 80, 40,
 * 32 tokens, 5 / 2.5 / 2 chunks), chunks D = 3, 4, 7 (array_split 4,3,3 ...). */
static const gdn_shape SHAPE = {1, 160, 1, 2, 16, 12};
static const kern_prefix SCHED[3] = {KERN_PREFIX_SEQUENTIAL, KERN_PREFIX_ASSOCIATIVE_SCAN, KERN_PREFIX_HILLIS_STEELE};

typedef struct problem {
  gdn_inputs in;
  gdn_chgate g;
  gdn_cotangents ct;
} problem;

static problem make(uint64_t seed) {
  problem p;
  p.in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  p.ct = tsu_cotangents(&SHAPE, 1, seed + 1);
  gdn_chgate_init(&p.g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&p.g, &SHAPE, seed, &e), GDN_OK);
  return p;
}

static void problem_clear(problem *p) {
  gdn_chgate_clear(&p->g);
  tsu_problem_clear(&p->in, &p->ct);
}

static kern_config config(gdn_dtype dt, int64_t D, kern_prefix pf, kern_shard sh) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = dt;
  cfg.chunk = 16;
  cfg.devices = D;
  cfg.prefix = pf;
  cfg.shard = sh;
  return cfg;
}

/* D <= 0: the token loop (float64) */
static gdn_outputs forward(const problem *p, const kern_config *cfg, int D, kern_kda_mutant m) {
  gdn_outputs out;
  gdn_outputs_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  const int rc = D > 0 ? kern_kda_affine(&p->in, &p->g, cfg, m, &out, &e)
                       : kern_kda_recurrent(&p->in, &p->g, cfg, m, &out, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return out;
}

static gdn_grads backward(const problem *p, const kern_config *cfg, int affine, kern_kda_vjp_mutant m) {
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  const int rc = affine ? kern_kda_affine_vjp(&p->in, &p->g, &p->ct, cfg, m, &g, &e)
                        : kern_kda_chunk_vjp(&p->in, &p->g, &p->ct, cfg, m, &g, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return g;
}

static double rel(const double *x, const double *r, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - r[i])), m = fmax(m, fabs(r[i]));
  return isnan(d) ? INFINITY : d / m;
}

static double err_out(const gdn_outputs *x, const gdn_outputs *r) {
  return fmax(rel(x->o, r->o, gdn_shape_numel_v(&SHAPE)), rel(x->ht, r->ht, gdn_shape_numel_state(&SHAPE)));
}

static double err_grads(const gdn_grads *x, const gdn_grads *r) {
  double w = 0;
  for (int id = 0; id < GDN_GRADS_N; id++)
    w = fmax(w, rel(gdn_grads_tensor_c(x, (gdn_grad_id)id), gdn_grads_tensor_c(r, (gdn_grad_id)id),
                    gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id)));
  return w;
}

static int same_out(const gdn_outputs *a, const gdn_outputs *b) {
  return !memcmp(a->o, b->o, gdn_shape_numel_v(&SHAPE) * sizeof(double)) &&
         !memcmp(a->ht, b->ht, gdn_shape_numel_state(&SHAPE) * sizeof(double));
}

static int same_grads(const gdn_grads *a, const gdn_grads *b) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (memcmp(gdn_grads_tensor_c(a, (gdn_grad_id)id), gdn_grads_tensor_c(b, (gdn_grad_id)id),
               gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id) * sizeof(double)))
      return 0;
  return 1;
}

static const int64_t DEV_TOKENS[] = {2, 4, 5}, DEV_CHUNKS[] = {3, 4, 7};

/* _i: schedule x shard (6) */
START_TEST(test_forward_band) {
  problem p = make(41);
  const kern_config c0 = config(GDN_DTYPE_F64, 1, KERN_PREFIX_SEQUENTIAL, KERN_SHARD_TOKENS);
  gdn_outputs ref = forward(&p, &c0, 0, KERN_KDA_MUTANT_NONE);
  const kern_prefix pf = SCHED[_i / 2];
  const kern_shard sh = _i % 2 ? KERN_SHARD_CHUNKS : KERN_SHARD_TOKENS;
  double w64 = 0, w32 = 0;
  for (int j = 0; j < 3; j++) {
    const int64_t D = sh == KERN_SHARD_CHUNKS ? DEV_CHUNKS[j] : DEV_TOKENS[j];
    for (int f64 = 0; f64 < 2; f64++) {
      const kern_config cfg = config(f64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, D, pf, sh);
      gdn_outputs a = forward(&p, &cfg, 1, KERN_KDA_MUTANT_NONE);
      const double err = err_out(&a, &ref);
      ck_assert_msg(err > 0 && err <= (f64 ? 1e-12 : 1e-5), "%s %s D=%lld %s: %.3e", kern_prefix_name(pf),
                    kern_shard_name(sh), (long long)D, f64 ? "f64" : "f32", err);
      if (f64) w64 = fmax(w64, err);
      else w32 = fmax(w32, err);
      gdn_outputs_clear(&a);
      /* negative controls: a seam or chunk bug is not hidden by any schedule */
      const kern_kda_mutant ms[2] = {KERN_KDA_MUTANT_CUMSUM_ACROSS_CHUNKS, KERN_KDA_MUTANT_GATE_VALUE_AXIS};
      for (int k = 0; !f64 && k < 2; k++) {
        gdn_outputs m = forward(&p, &cfg, 1, ms[k]);
        const double em = err_out(&m, &ref);
        ck_assert_msg(em > 1e-3, "%s under %s %s D=%lld: %.3e", kern_kda_mutant_name(ms[k]), kern_prefix_name(pf),
                      kern_shard_name(sh), (long long)D, em);
        gdn_outputs_clear(&m);
      }
    }
  }
  fprintf(stderr, "kern_kda_affine %s %s: worst f64 %.3e, f32 %.3e\n", kern_prefix_name(pf), kern_shard_name(sh), w64,
          w32);
  gdn_outputs_clear(&ref);
  problem_clear(&p);
}
END_TEST

/* The same bits where the compositions are the same (the header). */
START_TEST(test_forward_same_bits) {
  problem p = make(42);
  const kern_config chk = config(GDN_DTYPE_F32, 1, KERN_PREFIX_SEQUENTIAL, KERN_SHARD_TOKENS);
  gdn_outputs c = forward(&p, &chk, 1, KERN_KDA_MUTANT_NONE);
  for (int s = 0; s < 3; s++)
    for (int sh = 0; sh < 2; sh++) {
      const kern_config c1 = config(GDN_DTYPE_F32, 1, SCHED[s], (kern_shard)sh);
      gdn_outputs a = forward(&p, &c1, 1, KERN_KDA_MUTANT_NONE);
      ck_assert_msg(same_out(&a, &c), "D = 1 %s %s", kern_prefix_name(SCHED[s]), kern_shard_name((kern_shard)sh));
      gdn_outputs_clear(&a);
    }
  static const int64_t devs[] = {2, 3};
  for (int d = 0; d < 2; d++) {
    const kern_config cs = config(GDN_DTYPE_F32, devs[d], KERN_PREFIX_SEQUENTIAL, KERN_SHARD_CHUNKS);
    gdn_outputs seq = forward(&p, &cs, 1, KERN_KDA_MUTANT_NONE);
    const kern_config ca = config(GDN_DTYPE_F32, devs[d], KERN_PREFIX_ASSOCIATIVE_SCAN, KERN_SHARD_CHUNKS);
    const kern_config ch = config(GDN_DTYPE_F32, devs[d], KERN_PREFIX_HILLIS_STEELE, KERN_SHARD_CHUNKS);
    gdn_outputs as = forward(&p, &ca, 1, KERN_KDA_MUTANT_NONE), hs = forward(&p, &ch, 1, KERN_KDA_MUTANT_NONE);
    ck_assert(same_out(&seq, &as));
    ck_assert_msg(same_out(&seq, &hs) == (devs[d] == 2), "D=%lld hillis-steele", (long long)devs[d]);
    gdn_outputs_clear(&seq), gdn_outputs_clear(&as), gdn_outputs_clear(&hs);
  }
  /* D = 2: tokens and chunks hold the same pieces [0, 80), [80, 160) */
  const kern_config ct = config(GDN_DTYPE_F32, 2, KERN_PREFIX_HILLIS_STEELE, KERN_SHARD_TOKENS);
  const kern_config cc = config(GDN_DTYPE_F32, 2, KERN_PREFIX_HILLIS_STEELE, KERN_SHARD_CHUNKS);
  gdn_outputs t = forward(&p, &ct, 1, KERN_KDA_MUTANT_NONE), k = forward(&p, &cc, 1, KERN_KDA_MUTANT_NONE);
  ck_assert(same_out(&t, &k));
  gdn_outputs_clear(&t), gdn_outputs_clear(&k), gdn_outputs_clear(&c);
  problem_clear(&p);
}
END_TEST

START_TEST(test_threads) {
  problem p = make(43);
  const kern_config cfg = config(GDN_DTYPE_F32, 3, KERN_PREFIX_HILLIS_STEELE, KERN_SHARD_CHUNKS);
  gdn_threads_set(1);
  gdn_outputs a = forward(&p, &cfg, 1, KERN_KDA_MUTANT_NONE);
  gdn_grads ga = backward(&p, &cfg, 1, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(3);
  gdn_outputs b = forward(&p, &cfg, 1, KERN_KDA_MUTANT_NONE);
  gdn_grads gb = backward(&p, &cfg, 1, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(1);
  ck_assert(same_out(&a, &b));
  ck_assert(same_grads(&ga, &gb));
  gdn_outputs_clear(&a), gdn_outputs_clear(&b), gdn_grads_clear(&ga), gdn_grads_clear(&gb);
  problem_clear(&p);
}
END_TEST

/* The backward: against the float64 chunked backward (one device); D = 1
 * is it bit for bit; D = 2 all schedules the same bits; dh-seam-dropped
 * fails under every schedule and shard.  _i: schedule x shard. */
START_TEST(test_backward) {
  problem p = make(44);
  const kern_prefix pf = SCHED[_i / 2];
  const kern_shard sh = _i % 2 ? KERN_SHARD_CHUNKS : KERN_SHARD_TOKENS;
  const kern_config c64 = config(GDN_DTYPE_F64, 1, pf, sh), c32 = config(GDN_DTYPE_F32, 1, pf, sh);
  gdn_grads ref = backward(&p, &c64, 0, KERN_KDA_VJP_MUTANT_NONE);
  gdn_grads r32 = backward(&p, &c32, 0, KERN_KDA_VJP_MUTANT_NONE), a1 = backward(&p, &c32, 1, KERN_KDA_VJP_MUTANT_NONE);
  ck_assert(same_grads(&r32, &a1));
  const kern_config s2 = config(GDN_DTYPE_F32, 2, KERN_PREFIX_SEQUENTIAL, sh), x2 = config(GDN_DTYPE_F32, 2, pf, sh);
  gdn_grads gs = backward(&p, &s2, 1, KERN_KDA_VJP_MUTANT_NONE), gx = backward(&p, &x2, 1, KERN_KDA_VJP_MUTANT_NONE);
  ck_assert(same_grads(&gs, &gx));
  double w64 = 0, w32 = 0;
  for (int j = 0; j < 3; j++) {
    const int64_t D = sh == KERN_SHARD_CHUNKS ? DEV_CHUNKS[j] : DEV_TOKENS[j];
    for (int f64 = 0; f64 < 2; f64++) {
      const kern_config cfg = config(f64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, D, pf, sh);
      gdn_grads g = backward(&p, &cfg, 1, KERN_KDA_VJP_MUTANT_NONE);
      const double err = err_grads(&g, &ref);
      ck_assert_msg(err > 0 && err <= (f64 ? 1e-12 : 1e-5), "backward %s %s D=%lld: %.3e", kern_prefix_name(pf),
                    kern_shard_name(sh), (long long)D, err);
      if (f64) w64 = fmax(w64, err);
      else w32 = fmax(w32, err);
      gdn_grads_clear(&g);
    }
    const kern_config cfg = config(GDN_DTYPE_F32, D, pf, sh);
    gdn_grads m = backward(&p, &cfg, 1, KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED);
    const double em = err_grads(&m, &ref);
    ck_assert_msg(em > 1e-2, "dh-seam-dropped under %s %s D=%lld: %.3e", kern_prefix_name(pf), kern_shard_name(sh),
                  (long long)D, em);
    gdn_grads_clear(&m);
  }
  fprintf(stderr, "kern_kda_affine_vjp %s %s: worst f64 %.3e, f32 %.3e\n", kern_prefix_name(pf), kern_shard_name(sh),
          w64, w32);
  gdn_grads_clear(&ref), gdn_grads_clear(&r32), gdn_grads_clear(&a1), gdn_grads_clear(&gs), gdn_grads_clear(&gx);
  problem_clear(&p);
}
END_TEST

START_TEST(test_refusals) {
  problem p = make(45);
  gdn_outputs out;
  gdn_outputs_init(&out);
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  kern_config cfg = config(GDN_DTYPE_F32, 2, (kern_prefix)7, KERN_SHARD_TOKENS);
  ck_assert_int_eq(kern_kda_affine(&p.in, &p.g, &cfg, 0, &out, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_affine") && strstr(e.msg, "schedule"), "%s", e.msg);
  ck_assert_int_eq(kern_kda_affine_vjp(&p.in, &p.g, &p.ct, &cfg, 0, &g, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_affine_vjp"), "%s", e.msg);
  cfg = config(GDN_DTYPE_F32, 2, KERN_PREFIX_SEQUENTIAL, (kern_shard)5);
  ck_assert_int_eq(kern_kda_affine(&p.in, &p.g, &cfg, 0, &out, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "shard"), "%s", e.msg);
  cfg = config(GDN_DTYPE_F32, 11, KERN_PREFIX_SEQUENTIAL, KERN_SHARD_CHUNKS); /* 10 chunks of 16 */
  ck_assert_int_eq(kern_kda_affine(&p.in, &p.g, &cfg, 0, &out, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(kern_kda_affine_vjp(&p.in, &p.g, &p.ct, &cfg, 0, &g, &e), GDN_ERR_INPUT);
  cfg = config(GDN_DTYPE_F32, 3, KERN_PREFIX_SEQUENTIAL, KERN_SHARD_TOKENS); /* does not divide 160 */
  ck_assert_int_eq(kern_kda_affine(&p.in, &p.g, &cfg, 0, &out, &e), GDN_ERR_INPUT);
  problem_clear(&p);
}
END_TEST

int main(void) {
  Suite *su = suite_create("kernels");
  TCase *tc = tcase_create("kda_prefix");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_forward_band, 0, 6);
  tcase_add_test(tc, test_forward_same_bits);
  tcase_add_test(tc, test_threads);
  tcase_add_loop_test(tc, test_backward, 0, 6);
  tcase_add_test(tc, test_refusals);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
