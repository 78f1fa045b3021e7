#include "gdn_synth.h"

#include "gdn_threads.h"

#include <math.h>
#include <omp.h>

#include <inttypes.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "gdn_bf16.h"
#include "gdn_prelude.h"
#include "gdn_rng.h"

enum { S_Q = 1, S_K, S_V, S_B, S_A, S_ALOG, S_H0, S_SEG };

static float round_to(double x, int bf16) {
  float f = (float)x;
  return bf16 ? gdn_bf16_round(f) : f;
}

/* Threads for n cheap elementwise items: one per 4096 at most (a thread
 * started for a handful of elements costs more than it does). */
#define FILL_THREADS(n) gdn_threads_for((int64_t)((n) / 4096 + 1))

/* Elements [lo, hi) of a normal stream, hi - lo <= FILL_BATCH: the uniforms
 * of a batch first (a loop of integer mixing the compiler vectorises), then
 * log, sqrt and cos per element -- the same operations on the same values as
 * gdn_rng_normal_k, so the same bits. */
#define FILL_BATCH 256
static void fill_normal_batch(float *x, size_t lo, size_t hi, uint64_t key, double sd, int bf16) {
  double u[2 * FILL_BATCH];
  const size_t m = hi - lo;
#pragma omp simd
  for (size_t j = 0; j < 2 * m; j++) u[j] = gdn_rng_uniform_k(key, 2 * lo + j);
  for (size_t j = 0; j < m; j++)
    x[lo + j] = round_to(sd * (sqrt(-2.0 * log(u[2 * j])) * cos(6.283185307179586476925 * u[2 * j + 1])), bf16);
}

static void fill_normal(float *x, size_t n, uint64_t seed, uint64_t stream, double sd, int bf16) {
  const uint64_t key = gdn_rng_key(seed, stream); /* once, not per element */
  const size_t nb = (n + FILL_BATCH - 1) / FILL_BATCH;
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(n))
  for (size_t b = 0; b < nb; b++)
    fill_normal_batch(x, b * FILL_BATCH, b * FILL_BATCH + FILL_BATCH < n ? b * FILL_BATCH + FILL_BATCH : n, key, sd,
                      bf16);
}

/* Rows of length d normalised in binary64 as x * rsqrt(sum x^2 + 1e-6). */
static void fill_prenorm(float *x, size_t rows, int64_t d, uint64_t seed, uint64_t stream, int bf16) {
  const uint64_t key = gdn_rng_key(seed, stream);
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(rows * (size_t)d))
  for (size_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t i = 0; i < d; i++) {
      double z = gdn_rng_normal_k(key, r * (size_t)d + (size_t)i);
      s += z * z;
    }
    double inv = 1.0 / sqrt(s + 1e-6);
    for (int64_t i = 0; i < d; i++)
      x[r * (size_t)d + (size_t)i] =
          round_to(gdn_rng_normal_k(key, r * (size_t)d + (size_t)i) * inv, bf16);
  }
}

static float bf(float x) { return gdn_bf16_round(x); }

/* The prelude's starting tensors, drawn as gdn_synth.h says, each rounded
 * once to bfloat16; gdn_prelude_apply then computes the kernel inputs. */
static int prelude_draw(gdn_prelude *p, const gdn_shape *s, uint64_t seed, unsigned flags, gdn_error *e) {
  int rc = gdn_prelude_alloc(p, s, e);
  if (rc) return rc;
  static const uint64_t stream[5] = {S_Q, S_K, S_V, S_A, S_B};
  for (int i = GDN_PRELUDE_Q; i <= GDN_PRELUDE_B; i++) {
    float *x = p->t[i];
    const size_t n = gdn_prelude_numel(s, i);
    const uint64_t key = gdn_rng_key(seed, stream[i]);
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(n))
    for (size_t j = 0; j < n; j++) x[j] = bf((float)gdn_rng_normal_k(key, j));
  }
  for (int64_t h = 0; h < s->Hv; h++) {
    const double uA = gdn_rng_uniform(seed, S_ALOG, (uint64_t)h);
    const double A = (flags & GDN_SYNTH_SLOW_GATES) ? exp(log(1e-4) + uA * (log(1e-1) - log(1e-4)))
                                                    : 16.0 * uA;
    p->t[GDN_PRELUDE_A_LOG][h] = bf((float)log(A));
    p->t[GDN_PRELUDE_DT_BIAS][h] = bf(1.0f);
  }
  return GDN_OK;
}

static int prelude_bf16(gdn_inputs *in, const gdn_shape *s, uint64_t seed, unsigned flags, gdn_error *e) {
  gdn_prelude p;
  gdn_prelude_init(&p);
  int rc = prelude_draw(&p, s, seed, flags, e);
  if (!rc) {
    gdn_prelude_apply(&p, in);
    rc = gdn_prelude_attach(in, &p, e);
  }
  gdn_prelude_clear(&p);
  if (rc) gdn_inputs_clear(in);
  return rc;
}

static uint64_t draw(uint64_t seed, uint64_t idx, uint64_t n) {
  return n ? gdn_rng_bits(seed, S_SEG, idx) % n : 0;
}

/* Boundary i of row b, of kind i mod 3 (gdn_synth.h). */
static int64_t boundary(uint64_t seed, int64_t T, int64_t b, int64_t i) {
  const uint64_t base = ((uint64_t)b << 32) + 4 * (uint64_t)i;
  switch (i % 3) {
  case 0: {
    static const int64_t ds[4] = {2, 3, 4, 8};
    const int64_t d = ds[draw(seed, base, 4)], m = 1 + (int64_t)draw(seed, base + 1, (uint64_t)(d - 1));
    return (T * m + d / 2) / d;
  }
  case 1:
    return T > 64 ? 64 * (1 + (int64_t)draw(seed, base, (uint64_t)((T - 1) / 64))) : 0;
  default: {
    int64_t t = 1 + (int64_t)draw(seed, base, (uint64_t)(T - 1));
    if (t % 16 == 0) t += 1 + (int64_t)draw(seed, base + 1, 15);
    return t < T ? t : 0; /* 0: dropped */
  }
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int gdn_synth_segments(gdn_inputs *in, uint64_t seed, int64_t documents, gdn_error *e) {
  const int64_t T = in->shape.T, nd = documents;
  if (nd < 2) return GDN_OK;
  if (nd > T)
    return gdn_error_set(e, GDN_ERR_INPUT, "--documents %" PRId64 ": more documents than the %" PRId64
                         " tokens of a row", nd, T);
  int rc = gdn_inputs_alloc_seg(in, e);
  if (rc) return rc;
  int64_t *bd = gdn_malloc((size_t)nd * sizeof *bd, "synthetic document boundaries", e);
  if (!bd) {
    gdn_free(in->seg);
    in->seg = NULL;
    return e ? e->code : GDN_ERR_NOMEM;
  }
  const int64_t pad = T / 32 > 1 ? T / 32 : 1, end = T - pad;
  for (int64_t b = 0; b < in->shape.B; b++) {
    for (int64_t i = 0; i < nd - 1; i++) bd[i] = boundary(seed, T, b, i);
    qsort(bd, (size_t)(nd - 1), sizeof *bd, cmp_i64);
    int32_t *sg = in->seg + b * T;
    int32_t id = 1;
    int64_t k = 0;
    for (int64_t t = 0; t < T; t++) {
      int at = 0; /* coinciding boundaries count once */
      while (k < nd - 1 && bd[k] <= t) at |= bd[k++] == t;
      if (at && t > 0 && t < end) id++;
      sg[t] = t < end ? id : 0;
    }
  }
  gdn_free(bd);
  return GDN_OK;
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
  const uint64_t kalog = gdn_rng_key(seed, S_ALOG), ka = gdn_rng_key(seed, S_A), kb = gdn_rng_key(seed, S_B);
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(ng))
  for (size_t i = 0; i < ng; i++) {
    int64_t h = (int64_t)(i % (size_t)Hv);
    double uA = gdn_rng_uniform_k(kalog, (uint64_t)h);
    double A = (o->flags & GDN_SYNTH_SLOW_GATES) ? exp(log(1e-4) + uA * (log(1e-1) - log(1e-4)))
                                                 : 16.0 * uA; /* A_log = log(A) */
    double dt_bias = 1.0;
    double a = gdn_rng_normal_k(ka, i);
    double gi = -A * softplus(a + dt_bias); /* -exp(A_log) * softplus(a + dt_bias) */
    in->g[i] = round_to(gi, (bm & GDN_T_G) != 0);
    double b = gdn_rng_normal_k(kb, i);
    in->beta[i] = round_to(1.0 / (1.0 + exp(-b)), (bm & GDN_T_BETA) != 0);
  }
  if (in->h0) fill_normal(in->h0, gdn_shape_numel_state(s), seed, S_H0, 0.1, 0);
  in->bf16_mask = bm;
  in->has_scale = 0;
  in->scale = 0;
  if (o->flags & GDN_SYNTH_PRELUDE_BF16) return prelude_bf16(in, s, seed, o->flags, e);
  return GDN_OK;
}
