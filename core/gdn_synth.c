#include "gdn_synth.h"

#include "gdn_threads.h"

#include <math.h>
#include <omp.h>

#include <inttypes.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "gdn_bf16.h"
#include "gdn_normal.h"
#include "gdn_prelude_apply.h"
#include "gdn_rng.h"

enum { S_Q = 1, S_K, S_V, S_B, S_A, S_ALOG, S_H0, S_SEG };

static float round_to(double x, int bf16) {
  float f = (float)x;
  return bf16 ? gdn_bf16_round(f) : f;
}

/* Threads for n cheap elementwise items: one per 4096 at most (a thread
 * started for a handful of elements costs more than it does). */
#define FILL_THREADS(n) gdn_threads_for((int64_t)((n) / 4096 + 1))

/* Where the elements of a (head-range) slab sit in the whole tensor: run j
 * of `len` elements starts at full index j * stride + start; the slab holds
 * the runs back to back.  Every value is drawn at its full index, so a slab
 * is bit for bit that part of the whole tensor (gdn_synth_generate_heads). */
typedef struct slab {
  size_t runs, len, stride, start;
} slab;

/* The slab of heads [h0, h1) of a (B, T, H, D) tensor (D = 1: a gate), or
 * of a (B, H, Dk Dv) state; the whole tensor is one run. */
static slab slab_heads(size_t outer, int64_t H, size_t D, int64_t h0, int64_t h1) {
  if (h0 == 0 && h1 == H) return (slab){1, outer * (size_t)H * D, outer * (size_t)H * D, 0};
  return (slab){outer, (size_t)(h1 - h0) * D, (size_t)H * D, (size_t)h0 * D};
}

static size_t slab_numel(slab sl) { return sl.runs * sl.len; }
static size_t slab_full(slab sl, size_t i) { return i / sl.len * sl.stride + sl.start + i % sl.len; }

/* Elements [lo, hi) of run j of a normal stream's slab, hi - lo <=
 * GDN_NORMAL_BATCH: gdn_normal_fill, the same bits as gdn_rng_normal_k
 * element by element without a C-library log and cos per element. */
#define FILL_BATCH GDN_NORMAL_BATCH
static void fill_normal_batch(float *x, slab sl, size_t j, size_t lo, size_t hi, uint64_t key, double sd,
                              int bf16) {
  gdn_normal_fill(x + j * sl.len + lo, hi - lo, key, j * sl.stride + sl.start + lo, sd, bf16);
}

static void fill_normal(float *x, slab sl, uint64_t seed, uint64_t stream, double sd, int bf16) {
  const uint64_t key = gdn_rng_key(seed, stream); /* once, not per element */
  const size_t per = (sl.len + FILL_BATCH - 1) / FILL_BATCH, nb = sl.runs * per;
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(slab_numel(sl)))
  for (size_t b = 0; b < nb; b++) {
    const size_t j = b / per, lo = b % per * FILL_BATCH;
    fill_normal_batch(x, sl, j, lo, lo + FILL_BATCH < sl.len ? lo + FILL_BATCH : sl.len, key, sd, bf16);
  }
}

/* Rows of length d normalised in binary64 as x * rsqrt(sum x^2 + 1e-6);
 * a slab's runs hold whole rows.  The norm reads the binary64 draws, not
 * their float32 roundings, so gdn_normal_fill's proof does not cover them:
 * each is glibc's, drawn once per row up to PRENORM_ROW elements. */
#define PRENORM_ROW 512
static void fill_prenorm(float *x, slab sl, int64_t d, uint64_t seed, uint64_t stream, int bf16) {
  const uint64_t key = gdn_rng_key(seed, stream);
  const size_t rows = slab_numel(sl) / (size_t)d;
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(rows * (size_t)d))
  for (size_t r = 0; r < rows; r++) {
    const size_t f = slab_full(sl, r * (size_t)d);
    double zr[PRENORM_ROW], s = 0; /* a row's draws kept for its second pass when it fits */
    for (int64_t i = 0; i < d; i++) {
      double z = gdn_rng_normal_k(key, f + (size_t)i);
      if (d <= PRENORM_ROW) zr[i] = z;
      s += z * z;
    }
    double inv = 1.0 / sqrt(s + 1e-6);
    for (int64_t i = 0; i < d; i++)
      x[r * (size_t)d + (size_t)i] =
          round_to((d <= PRENORM_ROW ? zr[i] : gdn_rng_normal_k(key, f + (size_t)i)) * inv, bf16);
  }
}

/* Key heads [k0, k1) of the whole shape `full`, value heads [v0, v1) =
 * [k0 r, k1 r) (r = Hv / Hk): the slab of each tensor. */
typedef struct heads {
  const gdn_shape *full;
  int64_t k0, k1, v0, v1;
} heads;

static slab slab_qk(const heads *g) {
  const gdn_shape *s = g->full;
  return slab_heads((size_t)(s->B * s->T), s->Hk, (size_t)s->Dk, g->k0, g->k1);
}
static slab slab_v(const heads *g) {
  const gdn_shape *s = g->full;
  return slab_heads((size_t)(s->B * s->T), s->Hv, (size_t)s->Dv, g->v0, g->v1);
}
static slab slab_gate(const heads *g) {
  const gdn_shape *s = g->full;
  return slab_heads((size_t)(s->B * s->T), s->Hv, 1, g->v0, g->v1);
}
static slab slab_state(const heads *g) {
  const gdn_shape *s = g->full;
  return slab_heads((size_t)s->B, s->Hv, (size_t)(s->Dk * s->Dv), g->v0, g->v1);
}

static float bf(float x) { return gdn_bf16_round(x); }

/* A_log[h] = log(A) of value head h (gdn_synth.h), in binary64. */
static double head_log_a(uint64_t seed, int64_t h, unsigned flags) {
  const double uA = gdn_rng_uniform(seed, S_ALOG, (uint64_t)h);
  return log((flags & GDN_SYNTH_SLOW_GATES) ? exp(log(1e-4) + uA * (log(1e-1) - log(1e-4))) : 16.0 * uA);
}

/* The prelude's starting tensors, drawn as gdn_synth.h says, each rounded
 * once to bfloat16 (fill_normal with sd 1 and bf16: bf((float)z) of the
 * same z); gdn_prelude_apply then computes the kernel inputs.  Per head
 * (A_log, dt_bias) the heads' own values. */
static int prelude_draw(gdn_prelude *p, const gdn_shape *s, const heads *g, uint64_t seed, unsigned flags,
                        gdn_error *e) {
  int rc = gdn_prelude_alloc(p, s, e);
  if (rc) return rc;
  static const uint64_t stream[5] = {S_Q, S_K, S_V, S_A, S_B};
  const slab sl[5] = {slab_qk(g), slab_qk(g), slab_v(g), slab_gate(g), slab_gate(g)};
  for (int i = GDN_PRELUDE_Q; i <= GDN_PRELUDE_B; i++) fill_normal(p->t[i], sl[i], seed, stream[i], 1.0, 1);
  for (int64_t h = g->v0; h < g->v1; h++) {
    p->t[GDN_PRELUDE_A_LOG][h - g->v0] = bf((float)head_log_a(seed, h, flags));
    p->t[GDN_PRELUDE_DT_BIAS][h - g->v0] = bf(1.0f);
  }
  return GDN_OK;
}

static int prelude_bf16(gdn_inputs *in, const heads *g, uint64_t seed, unsigned flags, gdn_error *e) {
  gdn_prelude p;
  gdn_prelude_init(&p);
  int rc = prelude_draw(&p, &in->shape, g, seed, flags, e);
  if (!rc) {
    gdn_prelude_apply(&p, in);
    rc = gdn_inputs_attach_prelude(in, &p, e);
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

/* g and beta of the slab's gates, each from its full index i (value head
 * i mod Hv); either destination may be NULL (a range of one of them). */
static void fill_gates(float *gd, float *betad, slab sl, int64_t Hv, uint64_t seed, const gdn_synth_opts *o) {
  const unsigned bm = o->bf16_mask;
  const size_t ng = slab_numel(sl);
  const uint64_t kalog = gdn_rng_key(seed, S_ALOG), ka = gdn_rng_key(seed, S_A), kb = gdn_rng_key(seed, S_B);
#pragma omp parallel for schedule(static) num_threads(FILL_THREADS(ng))
  for (size_t j = 0; j < ng; j++) {
    const size_t i = slab_full(sl, j);
    int64_t h = (int64_t)(i % (size_t)Hv);
    double uA = gdn_rng_uniform_k(kalog, (uint64_t)h);
    double A = (o->flags & GDN_SYNTH_SLOW_GATES) ? exp(log(1e-4) + uA * (log(1e-1) - log(1e-4)))
                                                 : 16.0 * uA; /* A_log = log(A) */
    double dt_bias = 1.0;
    double a = gdn_rng_normal_k(ka, i);
    double gi = -A * softplus(a + dt_bias); /* -exp(A_log) * softplus(a + dt_bias) */
    if (gd) gd[j] = round_to(gi, (bm & GDN_T_G) != 0);
    double b = gdn_rng_normal_k(kb, i);
    if (betad) betad[j] = round_to(1.0 / (1.0 + exp(-b)), (bm & GDN_T_BETA) != 0);
  }
}

void gdn_synth_settings(gdn_inputs *in, const gdn_synth_opts *o) {
  in->l2norm_in_kernel = (o->flags & GDN_SYNTH_QK_PRENORM) ? 0 : 1; /* pre-normalised q, k: not again */
  in->bf16_mask = o->bf16_mask;
  in->has_scale = 0;
  in->scale = 0;
}

static int generate(gdn_inputs *in, const heads *g, const gdn_synth_opts *o, gdn_error *e) {
  const gdn_shape *f = g->full;
  gdn_shape s = *f;
  s.Hk = g->k1 - g->k0, s.Hv = g->v1 - g->v0;
  int rc = gdn_inputs_alloc(in, &s, (o->flags & GDN_SYNTH_H0) != 0, e);
  if (rc) return rc;
  uint64_t seed = o->seed;
  unsigned bm = o->bf16_mask;
  if (o->flags & GDN_SYNTH_QK_PRENORM) {
    fill_prenorm(in->q, slab_qk(g), f->Dk, seed, S_Q, (bm & GDN_T_Q) != 0);
    fill_prenorm(in->k, slab_qk(g), f->Dk, seed, S_K, (bm & GDN_T_K) != 0);
  } else {
    fill_normal(in->q, slab_qk(g), seed, S_Q, 1.0, (bm & GDN_T_Q) != 0);
    fill_normal(in->k, slab_qk(g), seed, S_K, 1.0, (bm & GDN_T_K) != 0);
  }
  fill_normal(in->v, slab_v(g), seed, S_V, 1.0, (bm & GDN_T_V) != 0);
  fill_gates(in->g, in->beta, slab_gate(g), f->Hv, seed, o);
  if (in->h0) fill_normal(in->h0, slab_state(g), seed, S_H0, 0.1, 0);
  gdn_synth_settings(in, o);
  if (o->flags & GDN_SYNTH_PRELUDE_BF16) return prelude_bf16(in, g, seed, o->flags, e);
  return GDN_OK;
}

int gdn_synth_generate(gdn_inputs *in, const gdn_shape *s, const gdn_synth_opts *o, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  const heads g = {s, 0, s->Hk, 0, s->Hv};
  return generate(in, &g, o, e);
}

int gdn_synth_generate_heads(gdn_inputs *in, const gdn_shape *s, int64_t k0, int64_t k1, const gdn_synth_opts *o,
                             gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  if (k0 < 0 || k1 <= k0 || k1 > s->Hk)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "synthetic inputs: key heads [%" PRId64 ", %" PRId64 ") are not a non-empty range of the "
                         "shape's %" PRId64 " key heads", k0, k1, s->Hk);
  const int64_t r = s->Hv / s->Hk;
  const heads g = {s, k0, k1, k0 * r, k1 * r};
  return generate(in, &g, o, e);
}

/* A range is a slab of one run: element j at full index start + j. */
static void fill_tensor(float *x, int t, slab sl, const gdn_shape *s, const gdn_synth_opts *o) {
  const unsigned bm = o->bf16_mask;
  const uint64_t seed = o->seed;
  const int pre = (o->flags & GDN_SYNTH_QK_PRENORM) != 0;
  switch (t) {
  case GDN_SYNTH_TQ:
  case GDN_SYNTH_TK: {
    const uint64_t stream = t == GDN_SYNTH_TQ ? S_Q : S_K;
    const int bf = (bm & (t == GDN_SYNTH_TQ ? GDN_T_Q : GDN_T_K)) != 0;
    if (pre) fill_prenorm(x, sl, s->Dk, seed, stream, bf);
    else fill_normal(x, sl, seed, stream, 1.0, bf);
    break;
  }
  case GDN_SYNTH_TV: fill_normal(x, sl, seed, S_V, 1.0, (bm & GDN_T_V) != 0); break;
  case GDN_SYNTH_TG: fill_gates(x, NULL, sl, s->Hv, seed, o); break;
  case GDN_SYNTH_TBETA: fill_gates(NULL, x, sl, s->Hv, seed, o); break;
  default: fill_normal(x, sl, seed, S_H0, 0.1, 0); break;
  }
}

size_t gdn_synth_numel(const gdn_shape *s, int t) {
  static const int kind[GDN_SYNTH_TN] = {0, 0, 1, 2, 2, 3};
  if (t < 0 || t >= GDN_SYNTH_TN) return 0;
  switch (kind[t]) {
  case 0: return gdn_shape_numel_qk(s);
  case 1: return gdn_shape_numel_v(s);
  case 2: return gdn_shape_numel_gate(s);
  default: return gdn_shape_numel_state(s);
  }
}

/* Elements of a (B, T, Hv) gate range under the bfloat16 prelude: a or b
 * drawn as prelude_draw draws them, then g or beta (gdn_prelude_apply). */
static void prelude_gates_range(float *x, int t, slab sl, const gdn_shape *s, const gdn_synth_opts *o) {
  fill_normal(x, sl, o->seed, t == GDN_SYNTH_TG ? S_A : S_B, 1.0, 1);
  for (size_t i = 0; i < sl.len; i++) {
    const int64_t h = (int64_t)((sl.start + i) % (size_t)s->Hv);
    x[i] = t == GDN_SYNTH_TG ? gdn_prelude_g(x[i], bf((float)head_log_a(o->seed, h, o->flags)), bf(1.0f))
                             : gdn_prelude_beta(x[i]);
  }
}

/* A range of a kernel input under the bfloat16 prelude (gdn_synth.h): the
 * prelude's tensor drawn there, then its step of gdn_prelude_apply (q and k
 * in whole rows; v as drawn; h0 as without the prelude). */
static void prelude_fill_tensor(float *x, int t, slab sl, const gdn_shape *s, const gdn_synth_opts *o) {
  switch (t) {
  case GDN_SYNTH_TQ:
  case GDN_SYNTH_TK:
    fill_normal(x, sl, o->seed, t == GDN_SYNTH_TQ ? S_Q : S_K, 1.0, 1);
    for (size_t r = 0; r < sl.len / (size_t)s->Dk; r++) gdn_prelude_norm_row(x + r * (size_t)s->Dk, x + r * (size_t)s->Dk, s->Dk);
    break;
  case GDN_SYNTH_TV: fill_normal(x, sl, o->seed, S_V, 1.0, 1); break;
  case GDN_SYNTH_TG:
  case GDN_SYNTH_TBETA: prelude_gates_range(x, t, sl, s, o); break;
  default: fill_normal(x, sl, o->seed, S_H0, 0.1, 0); break;
  }
}

int gdn_synth_range(const gdn_shape *s, const gdn_synth_opts *o, int t, size_t start, size_t n, float *x,
                    gdn_error *e) {
  static const char *const names[GDN_SYNTH_TN] = {"q", "k", "v", "g", "beta", "h0"};
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  const int pre = (o->flags & GDN_SYNTH_PRELUDE_BF16) != 0;
  if (t < 0 || t >= GDN_SYNTH_TN || (t == GDN_SYNTH_TH0 && !(o->flags & GDN_SYNTH_H0)))
    return gdn_error_set(e, GDN_ERR_INTERNAL, "synthetic inputs: no range of tensor %d", t);
  const size_t total = gdn_synth_numel(s, t);
  const int rows = (pre || (o->flags & GDN_SYNTH_QK_PRENORM)) && t <= GDN_SYNTH_TK;
  if (start > total || n > total - start || (rows && (start % (size_t)s->Dk || n % (size_t)s->Dk)))
    return gdn_error_set(e, GDN_ERR_INTERNAL,
                         "synthetic inputs: elements [%zu, %zu) are not a range of %s's %zu%s", start, start + n,
                         names[t], total, rows ? " in whole rows" : "");
  if (n && pre) prelude_fill_tensor(x, t, (slab){1, n, n, start}, s, o);
  else if (n) fill_tensor(x, t, (slab){1, n, n, start}, s, o);
  return GDN_OK;
}

int gdn_synth_prelude_range(const gdn_shape *s, const gdn_synth_opts *o, int i, size_t start, size_t n, float *x,
                            gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  const size_t total = i >= 0 && i < GDN_PRELUDE_N ? gdn_prelude_numel(s, i) : 0;
  if (!(o->flags & GDN_SYNTH_PRELUDE_BF16) || i < 0 || i >= GDN_PRELUDE_N || start > total || n > total - start)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "synthetic inputs: no range [%zu, %zu) of prelude tensor %d%s", start,
                         start + n, i, (o->flags & GDN_SYNTH_PRELUDE_BF16) ? "" : " (no bfloat16 prelude)");
  static const uint64_t stream[5] = {S_Q, S_K, S_V, S_A, S_B};
  if (i <= GDN_PRELUDE_B && n) fill_normal(x, (slab){1, n, n, start}, o->seed, stream[i], 1.0, 1);
  for (size_t j = 0; i > GDN_PRELUDE_B && j < n; j++)
    x[j] = i == GDN_PRELUDE_A_LOG ? bf((float)head_log_a(o->seed, (int64_t)(start + j), o->flags)) : bf(1.0f);
  return GDN_OK;
}
