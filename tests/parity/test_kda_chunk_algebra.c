/* The chunkwise backward of KDA's chunked kernel and affine-prefix
 * (kern_kda_chunk_vjp_algebra, kern_kda_affine_vjp_algebra: the VJP of the
 * chunk's WY form, solve and per-channel decays) against the VJP oracle:
 * float64 to 1e-12 at chunk sizes 16 (partial last chunk), 64, device
 * counts 1, 2, 4, 8, with GQA, h0 and dht, on several seeds and shapes;
 * float32 within the gradient band with its errors asserted and set beside
 * the token-by-token backward's; any thread count gives the same bits, and
 * D = 1 the chunked backward's; the two backward mutants fail. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "kern_kda_chunk_vjp.h"
#include "oracle_kda_vjp.h"
#include "oracle_vjp.h"
#include "parity_recur_grad.h"

/* GQA, h0, dht; T = 40 (chunks 16, 16, 8 at C = 16) and T = 50 with four
 * key heads' worth of value heads (T not a multiple of 16 or of 64). */
static const gdn_shape SHAPES[] = {{2, 40, 1, 2, 8, 6}, {1, 50, 2, 4, 8, 8}, {1, 48, 1, 1, 16, 4}};

typedef struct problem {
  gdn_shape s;
  gdn_inputs in;
  gdn_chgate gate;
  gdn_cotangents ct;
  gdn_grads ref;
} problem;

static void problem_make(problem *p, gdn_shape s, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  p->s = s;
  p->in = tsu_inputs(s, GDN_SYNTH_H0, seed);
  p->ct = tsu_cotangents(&s, 1, seed + 1);
  gdn_chgate_init(&p->gate);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&p->gate, &s, seed, &e), GDN_OK);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  gdn_grads_init(&p->ref);
  ck_assert_msg(oracle_kda_vjp(&p->in, &p->gate, &p->ct, &cfg, &p->ref, NULL, &e) == GDN_OK, "%s", e.msg);
}

static void problem_clear(problem *p) {
  gdn_grads_clear(&p->ref);
  gdn_chgate_clear(&p->gate);
  gdn_cotangents_clear(&p->ct);
  gdn_inputs_clear(&p->in);
}

/* D <= 0: the chunked backward; else the affine-prefix's over D devices;
 * algebra 0: the token-by-token one. */
static gdn_grads backward(const problem *p, int algebra, gdn_dtype dt, int64_t C, int64_t D, kern_kda_vjp_mutant m) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.dtype = dt;
  cfg.chunk = C;
  if (D > 0) cfg.devices = D;
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  int rc;
  if (algebra)
    rc = D > 0 ? kern_kda_affine_vjp_algebra(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e)
               : kern_kda_chunk_vjp_algebra(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e);
  else
    rc = D > 0 ? kern_kda_affine_vjp(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e)
               : kern_kda_chunk_vjp(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return g;
}

static int same_bits(const gdn_grads *a, const gdn_grads *b, const gdn_shape *s) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (memcmp(gdn_grads_tensor_c(a, (gdn_grad_id)id), gdn_grads_tensor_c(b, (gdn_grad_id)id),
               gdn_chgrads_numel(s, (gdn_grad_id)id) * sizeof(double)))
      return 0;
  return 1;
}

static const int64_t CHUNKS[] = {16, 64};
static const int64_t DEVICES[] = {0, 2, 4, 8}; /* 0: the chunked backward */

START_TEST(test_float64_against_oracle) {
  double worst = 0, err[GDN_GRADS_N];
  for (int sh = 0; sh < 3; sh++)
    for (uint64_t seed = 5; seed < 7; seed++) {
      problem p;
      problem_make(&p, SHAPES[sh], seed + 10 * (uint64_t)sh);
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
          if (DEVICES[j] && p.s.T % DEVICES[j]) continue;
          gdn_grads g = backward(&p, 1, GDN_DTYPE_F64, CHUNKS[i], DEVICES[j], KERN_KDA_VJP_MUTANT_NONE);
          const int ok = parity_recur_grad_judge(&g, &p.ref, &p.s, 1, 1e-12, err);
          for (int id = 0; id < GDN_GRADS_N; id++) worst = fmax(worst, err[id]);
          ck_assert_msg(ok, "shape %d seed %llu C=%lld D=%lld: dq %.2e dk %.2e dv %.2e dg %.2e dbeta %.2e dh0 %.2e", sh,
                        (unsigned long long)seed, (long long)CHUNKS[i], (long long)DEVICES[j], err[GDN_GRAD_DQ],
                        err[GDN_GRAD_DK], err[GDN_GRAD_DV], err[GDN_GRAD_DG], err[GDN_GRAD_DBETA], err[GDN_GRAD_DH0]);
          gdn_grads_clear(&g);
        }
      problem_clear(&p);
    }
  fprintf(stderr, "float64 chunkwise backward: worst err %.3e\n", worst);
  ck_assert(worst > 0 && worst < 1e-12);
}
END_TEST

/* float32 within the band (2^-12), each gradient's error asserted in
 * (0, 1e-5) and printed beside the token-by-token backward's. */
START_TEST(test_float32_within_band) {
  for (int sh = 0; sh < 2; sh++) {
    problem p;
    problem_make(&p, SHAPES[sh], 7 + (uint64_t)sh);
    double err[GDN_GRADS_N], tok[GDN_GRADS_N];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) {
        if (DEVICES[j] && p.s.T % DEVICES[j]) continue;
        gdn_grads g = backward(&p, 1, GDN_DTYPE_F32, CHUNKS[i], DEVICES[j], KERN_KDA_VJP_MUTANT_NONE),
                  t = backward(&p, 0, GDN_DTYPE_F32, CHUNKS[i], DEVICES[j], KERN_KDA_VJP_MUTANT_NONE);
        ck_assert_int_eq(g.dtype, GDN_DTYPE_F32);
        ck_assert(parity_recur_grad_judge(&g, &p.ref, &p.s, 1, 0x1p-12, err));
        ck_assert(parity_recur_grad_judge(&t, &p.ref, &p.s, 1, 0x1p-12, tok));
        for (int id = 0; id < GDN_GRADS_N; id++) {
          fprintf(stderr, "float32 shape %d C=%lld D=%lld %-5s: chunkwise %.3e  token-by-token %.3e\n", sh,
                  (long long)CHUNKS[i], (long long)DEVICES[j], gdn_grads_name(id), err[id], tok[id]);
          ck_assert_msg(err[id] < 1e-5 && err[id] > 0, "float32 %s: %.3e", gdn_grads_name(id), err[id]);
        }
        gdn_grads_clear(&g), gdn_grads_clear(&t);
      }
    problem_clear(&p);
  }
}
END_TEST

/* Any thread count gives the same bits; the affine-prefix at D = 1 is the
 * chunked backward bit for bit. */
START_TEST(test_threads_same_bits) {
  problem p;
  problem_make(&p, SHAPES[1], 3);
  gdn_grads a = backward(&p, 1, GDN_DTYPE_F32, 16, 2, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(3);
  gdn_grads b = backward(&p, 1, GDN_DTYPE_F32, 16, 2, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(1);
  ck_assert(same_bits(&a, &b, &p.s));
  gdn_grads c = backward(&p, 1, GDN_DTYPE_F32, 16, 0, KERN_KDA_VJP_MUTANT_NONE),
            a1 = backward(&p, 1, GDN_DTYPE_F32, 16, 1, KERN_KDA_VJP_MUTANT_NONE);
  ck_assert(same_bits(&c, &a1, &p.s));
  gdn_grads_clear(&a), gdn_grads_clear(&b), gdn_grads_clear(&c), gdn_grads_clear(&a1);
  problem_clear(&p);
}
END_TEST

/* dh-seam-dropped fails the affine-prefix's chunkwise backward at every
 * device count (dh0 by orders of magnitude); dg-value-axis (the state
 * decay's gradient summed along the value axis) fails it on dg. */
START_TEST(test_mutants_fail) {
  problem p;
  problem_make(&p, SHAPES[0], 13);
  double err[GDN_GRADS_N];
  for (int j = 1; j < 4; j++) {
    gdn_grads g = backward(&p, 1, GDN_DTYPE_F32, 64, DEVICES[j], KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED);
    ck_assert(!parity_recur_grad_judge(&g, &p.ref, &p.s, 1, 0x1p-12, err));
    fprintf(stderr, "dh-seam-dropped D=%lld: dh0 err %.3e\n", (long long)DEVICES[j], err[GDN_GRAD_DH0]);
    ck_assert(err[GDN_GRAD_DH0] > 0.1);
    gdn_grads_clear(&g);
  }
  for (int i = 0; i < 2; i++) {
    gdn_grads dv = backward(&p, 1, GDN_DTYPE_F32, CHUNKS[i], 0, KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS);
    ck_assert(!parity_recur_grad_judge(&dv, &p.ref, &p.s, 1, 0x1p-12, err));
    fprintf(stderr, "dg-value-axis C=%lld: dg err %.3e\n", (long long)CHUNKS[i], err[GDN_GRAD_DG]);
    ck_assert(err[GDN_GRAD_DG] > 0.05);
    gdn_grads_clear(&dv);
  }
  problem_clear(&p);
}
END_TEST

/* The chunkwise functions refuse as the token-by-token ones do, naming
 * themselves. */
START_TEST(test_refusals) {
  problem p;
  problem_make(&p, SHAPES[0], 21);
  kern_config cfg;
  kern_config_init(&cfg);
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  cfg.devices = 3; /* does not divide T = 40 */
  ck_assert_int_eq(kern_kda_affine_vjp_algebra(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e),
                   GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_affine_vjp_algebra"), "%s", e.msg);
  cfg.devices = 2; /* the chunked backward runs on one device */
  ck_assert_int_eq(kern_kda_chunk_vjp_algebra(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e),
                   GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_chunk_vjp_algebra"), "%s", e.msg);
  kern_config_init(&cfg);
  ck_assert_int_eq(kern_kda_chunk_vjp_algebra(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_COUNT, &g, &e),
                   GDN_ERR_INPUT);
  ck_assert_ptr_null(g.dg);
  problem_clear(&p);
}
END_TEST

CKR_MAIN("parity", "kda_chunk_algebra", 300, test_float64_against_oracle, test_float32_within_band,
         test_threads_same_bits, test_mutants_fail, test_refusals)
