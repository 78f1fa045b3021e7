/* The backward of KDA's chunked kernel and affine-prefix
 * (kern_kda_chunk_vjp.h) against the VJP oracle: float64 to 1e-12 at every
 * chunk size and device count (partial last chunks, GQA, h0, dht), float32
 * within the band with its errors asserted; the affine-prefix at D = 1 is
 * the chunked backward bit for bit, at D = 2, 4, 8 equal to D = 1's within
 * rounding; any thread count gives the same bits; the dh-seam-dropped
 * mutant (dh zeroed at each device seam) fails, the chunked backward (no
 * seam) is unmoved by it; refusals name the function. */
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

static const gdn_shape SHAPE = {2, 40, 1, 2, 8, 6}; /* GQA 2, two batch items */

typedef struct problem {
  gdn_inputs in;
  gdn_chgate gate;
  gdn_cotangents ct;
  gdn_grads ref;
} problem;

static void problem_make(problem *p, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  p->in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  p->ct = tsu_cotangents(&SHAPE, 1, seed + 1);
  gdn_chgate_init(&p->gate);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&p->gate, &SHAPE, seed, &e), GDN_OK);
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

/* D <= 0: the chunked backward; else the affine-prefix's over D devices. */
static gdn_grads backward(const problem *p, gdn_dtype dt, int64_t C, int64_t D, kern_kda_vjp_mutant m) {
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
  const int rc = D > 0 ? kern_kda_affine_vjp(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e)
                       : kern_kda_chunk_vjp(&p->in, &p->gate, &p->ct, &cfg, m, &g, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return g;
}

static int same_bits(const gdn_grads *a, const gdn_grads *b) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (memcmp(gdn_grads_tensor_c(a, (gdn_grad_id)id), gdn_grads_tensor_c(b, (gdn_grad_id)id),
               gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id) * sizeof(double)))
      return 0;
  return 1;
}

static const int64_t CHUNKS[] = {16, 64}; /* 16: chunks 16, 16, 8; 64: one chunk of 40 */
static const int64_t DEVICES[] = {2, 4, 8};

START_TEST(test_float64_against_oracle) {
  problem p;
  problem_make(&p, 5);
  double err[GDN_GRADS_N], worst = 0;
  for (int i = 0; i < 2; i++)
    for (int j = -1; j < 3; j++) {
      gdn_grads g = backward(&p, GDN_DTYPE_F64, CHUNKS[i], j < 0 ? 0 : DEVICES[j], KERN_KDA_VJP_MUTANT_NONE);
      ck_assert_int_eq(g.dtype, GDN_DTYPE_F64);
      ck_assert(parity_recur_grad_judge(&g, &p.ref, &SHAPE, 1, 1e-12, err));
      for (int id = 0; id < GDN_GRADS_N; id++) worst = fmax(worst, err[id]);
      gdn_grads_clear(&g);
    }
  fprintf(stderr, "float64 chunked/affine backward: worst err %.3e\n", worst);
  ck_assert(worst > 0 && worst < 1e-12);
  problem_clear(&p);
}
END_TEST

START_TEST(test_float32_within_band) {
  problem p;
  problem_make(&p, 7);
  double err[GDN_GRADS_N];
  for (int i = 0; i < 2; i++)
    for (int j = -1; j < 3; j++) {
      gdn_grads g = backward(&p, GDN_DTYPE_F32, CHUNKS[i], j < 0 ? 0 : DEVICES[j], KERN_KDA_VJP_MUTANT_NONE);
      ck_assert_int_eq(g.dtype, GDN_DTYPE_F32);
      ck_assert(parity_recur_grad_judge(&g, &p.ref, &SHAPE, 1, 0x1p-12, err));
      for (int id = 0; id < GDN_GRADS_N; id++) {
        fprintf(stderr, "float32 C=%lld D=%lld %s: %.3e\n", (long long)CHUNKS[i], (long long)(j < 0 ? 0 : DEVICES[j]),
                gdn_grads_name(id), err[id]);
        ck_assert_msg(err[id] < 1e-5 && err[id] > 0, "float32 %s: %.3e", gdn_grads_name(id), err[id]);
      }
      gdn_grads_clear(&g);
    }
  problem_clear(&p);
}
END_TEST

/* D = 1 is the chunked backward bit for bit (the forward's D = 1 is
 * kern_kda_chunk's); D = 2, 4, 8 differ from D = 1 by rounding only (the
 * prefix's composed start states and the per-device chunk grids). */
START_TEST(test_devices_agree) {
  problem p;
  problem_make(&p, 11);
  for (int dt = 0; dt < 2; dt++) {
    const gdn_dtype t = dt ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
    gdn_grads c = backward(&p, t, 16, 0, KERN_KDA_VJP_MUTANT_NONE), a1 = backward(&p, t, 16, 1, KERN_KDA_VJP_MUTANT_NONE);
    ck_assert(same_bits(&c, &a1));
    double err[GDN_GRADS_N];
    for (int j = 0; j < 3; j++) {
      gdn_grads a = backward(&p, t, 16, DEVICES[j], KERN_KDA_VJP_MUTANT_NONE);
      ck_assert(parity_recur_grad_judge(&a, &a1, &SHAPE, 1, dt ? 1e-13 : 1e-5, err));
      gdn_grads_clear(&a);
    }
    gdn_grads_clear(&c), gdn_grads_clear(&a1);
  }
  problem_clear(&p);
}
END_TEST

START_TEST(test_threads_same_bits) {
  problem p;
  problem_make(&p, 3);
  gdn_grads a = backward(&p, GDN_DTYPE_F32, 16, 4, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(3);
  gdn_grads b = backward(&p, GDN_DTYPE_F32, 16, 4, KERN_KDA_VJP_MUTANT_NONE);
  gdn_threads_set(1);
  ck_assert(same_bits(&a, &b));
  gdn_grads_clear(&a), gdn_grads_clear(&b);
  problem_clear(&p);
}
END_TEST

/* dh zeroed at the device seam: every gradient before the last seam loses
 * the later tokens' share; dh0 fails by orders of magnitude.  The chunked
 * backward (one device) has no seam: the same bits as without the mutant.
 * dg-value-axis fails the chunked backward on dg. */
START_TEST(test_mutants_fail) {
  problem p;
  problem_make(&p, 13);
  double err[GDN_GRADS_N];
  for (int j = 0; j < 3; j++) {
    gdn_grads g = backward(&p, GDN_DTYPE_F32, 64, DEVICES[j], KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED);
    ck_assert(!parity_recur_grad_judge(&g, &p.ref, &SHAPE, 1, 0x1p-12, err));
    fprintf(stderr, "dh-seam-dropped D=%lld: dh0 err %.3e, dk err %.3e\n", (long long)DEVICES[j], err[GDN_GRAD_DH0],
            err[GDN_GRAD_DK]);
    ck_assert(err[GDN_GRAD_DH0] > 0.1);
    gdn_grads_clear(&g);
  }
  gdn_grads c = backward(&p, GDN_DTYPE_F32, 16, 0, KERN_KDA_VJP_MUTANT_NONE),
            cm = backward(&p, GDN_DTYPE_F32, 16, 0, KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED),
            a1 = backward(&p, GDN_DTYPE_F32, 16, 1, KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED);
  ck_assert(same_bits(&c, &cm));
  ck_assert(same_bits(&c, &a1));
  gdn_grads dv = backward(&p, GDN_DTYPE_F32, 16, 0, KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS);
  ck_assert(!parity_recur_grad_judge(&dv, &p.ref, &SHAPE, 1, 0x1p-12, err));
  ck_assert(err[GDN_GRAD_DG] > 0.05);
  ck_assert_str_eq(kern_kda_vjp_mutant_name(KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED), "dh-seam-dropped");
  gdn_grads_clear(&c), gdn_grads_clear(&cm), gdn_grads_clear(&a1), gdn_grads_clear(&dv);
  problem_clear(&p);
}
END_TEST

START_TEST(test_refusals) {
  problem p;
  problem_make(&p, 21);
  kern_config cfg;
  kern_config_init(&cfg);
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  cfg.devices = 3; /* does not divide T = 40 */
  ck_assert_int_eq(kern_kda_affine_vjp(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_affine_vjp"), "%s", e.msg);
  cfg.devices = 2; /* the chunked backward runs on one device */
  ck_assert_int_eq(kern_kda_chunk_vjp(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_chunk_vjp"), "%s", e.msg);
  kern_config_init(&cfg);
  cfg.dtype = (gdn_dtype)99; /* not a compute dtype (every real one is taken: test_kda_grad_modes) */
  ck_assert_int_eq(kern_kda_chunk_vjp(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kern_kda_chunk_vjp"), "%s", e.msg);
  kern_config_init(&cfg);
  ck_assert_int_eq(kern_kda_chunk_vjp(&p.in, NULL, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(kern_kda_chunk_vjp(&p.in, &p.gate, &p.ct, &cfg, KERN_KDA_VJP_MUTANT_COUNT, &g, &e), GDN_ERR_INPUT);
  ck_assert_ptr_null(g.dg);
  problem_clear(&p);
}
END_TEST

CKR_MAIN("parity", "kda_chunk_grad", 120, test_float64_against_oracle, test_float32_within_band, test_devices_agree,
         test_threads_same_bits, test_mutants_fail, test_refusals)
