#include "gdn_synth.h"

#include "gdn_threads.h"

#include <math.h>
#include <omp.h>

#include "gdn_bf16.h"
#include "gdn_rng.h"

enum { S_Q = 1, S_K, S_V, S_B, S_A, S_ALOG, S_H0 };

static float round_to(double x, int bf16) {
  float f = (float)x;
  return bf16 ? gdn_bf16_round(f) : f;
}

/* Threads for n cheap elementwise items: one per 4096 at most (a thread
 * started for a handful of elements costs more than it does). */
#define FILL_THREADS(n) gdn_threads_for((int64_t)((n) / 4096 + 1))

static void fill_normal(float *x, size_t n, uint64_t seed, uint64_t stream, double sd, int bf16) {
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(n))
  for (size_t i = 0; i < n; i++) x[i] = round_to(sd * gdn_rng_normal(seed, stream, i), bf16);
}

/* Rows of length d normalised in binary64 as x * rsqrt(sum x^2 + 1e-6). */
static void fill_prenorm(float *x, size_t rows, int64_t d, uint64_t seed, uint64_t stream, int bf16) {
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(rows * (size_t)d))
  for (size_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t i = 0; i < d; i++) {
      double z = gdn_rng_normal(seed, stream, r * (size_t)d + (size_t)i);
      s += z * z;
    }
    double inv = 1.0 / sqrt(s + 1e-6);
    for (int64_t i = 0; i < d; i++)
      x[r * (size_t)d + (size_t)i] =
          round_to(gdn_rng_normal(seed, stream, r * (size_t)d + (size_t)i) * inv, bf16);
  }
}

static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

int gdn_synth_generate(gdn_inputs *in, const gdn_shape *s, const gdn_synth_opts *o, gdn_error *e) {
  int rc = gdn_inputs_alloc(in, s, (o->flags & GDN_SYNTH_H0) != 0, e);
  if (rc) return rc;
  uint64_t seed = o->seed;
  unsigned bm = o->bf16_mask;
  size_t nqk = gdn_shape_numel_qk(s), nv = gdn_shape_numel_v(s), ng = gdn_shape_numel_gate(s);
  if (o->flags & GDN_SYNTH_QK_PRENORM) {
    fill_prenorm(in->q, nqk / (size_t)s->Dk, s->Dk, seed, S_Q, (bm & GDN_T_Q) != 0);
    fill_prenorm(in->k, nqk / (size_t)s->Dk, s->Dk, seed, S_K, (bm & GDN_T_K) != 0);
    in->l2norm_in_kernel = 0;
  } else {
    fill_normal(in->q, nqk, seed, S_Q, 1.0, (bm & GDN_T_Q) != 0);
    fill_normal(in->k, nqk, seed, S_K, 1.0, (bm & GDN_T_K) != 0);
    in->l2norm_in_kernel = 1;
  }
  fill_normal(in->v, nv, seed, S_V, 1.0, (bm & GDN_T_V) != 0);
  int64_t Hv = s->Hv;
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(ng))
  for (size_t i = 0; i < ng; i++) {
    int64_t h = (int64_t)(i % (size_t)Hv);
    double uA = gdn_rng_uniform(seed, S_ALOG, (uint64_t)h);
    double A = (o->flags & GDN_SYNTH_SLOW_GATES) ? exp(log(1e-4) + uA * (log(1e-1) - log(1e-4)))
                                                 : 16.0 * uA; /* A_log = log(A) */
    double dt_bias = 1.0;
    double a = gdn_rng_normal(seed, S_A, i);
    double gi = -A * softplus(a + dt_bias); /* -exp(A_log) * softplus(a + dt_bias) */
    in->g[i] = round_to(gi, (bm & GDN_T_G) != 0);
    double b = gdn_rng_normal(seed, S_B, i);
    in->beta[i] = round_to(1.0 / (1.0 + exp(-b)), (bm & GDN_T_BETA) != 0);
  }
  if (in->h0) fill_normal(in->h0, gdn_shape_numel_state(s), seed, S_H0, 0.1, 0);
  in->bf16_mask = bm;
  in->has_scale = 0;
  in->scale = 0;
  return GDN_OK;
}
