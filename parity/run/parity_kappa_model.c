/* parity_kappa_model: the G-rounding error model (parity_kappa_model.h says
 * what is computed and why). */
#include "parity_kappa_model.h"

#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "kern.h"
#include "kern_vjp.h"

void parity_model_init(parity_model *m) { memset(m, 0, sizeof *m); }

void parity_model_clear(parity_model *m) {
  for (int t = 0; t < PARITY_T_N; t++) gdn_free(m->s[t]);
  parity_model_init(m);
}

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double parity_model_sign(int k, int64_t b, int64_t t, int64_t h) {
  uint64_t x = mix64(mix64(mix64((uint64_t)k * 0x1000193ull + 0x6d6f64656cull) ^ (uint64_t)b) ^ (uint64_t)t);
  return (mix64(x ^ (uint64_t)h) >> 63) ? 1.0 : -1.0;
}

/* in's g perturbed by probe k into g (the copy's tensor): G_i off by
 * A u_g |G_i| z_i for the tokens i of the probe (i mod C = k modulo
 * PARITY_MODEL_SAMPLES), inside each chunk of C (G in binary64). */
static void perturb_g(float *g, const gdn_inputs *in, int k, int64_t C, double u_g, int64_t head0) {
  const gdn_shape *S = &in->shape;
  for (int64_t b = 0; b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) {
      double G = 0, prev = 0;
      for (int64_t t = 0; t < S->T; t++) {
        const size_t i = (size_t)((b * S->T + t) * S->Hv + h);
        const double gi = in->g[i];
        if (t % C == 0) G = 0, prev = 0;
        G += gi;
        const int mine = (t % C) % PARITY_MODEL_SAMPLES == k; /* probe k moves every SAMPLES-th token */
        const double eps = mine ? PARITY_MODEL_AMP * u_g * fabs(G) * parity_model_sign(0, b, t, head0 + h) : 0;
        g[i] = (float)(gi + eps - prev);
        prev = eps;
      }
    }
}

/* in's g into g for the tree probe of block size W (a power of two, 2 <=
 * W < C): every aligned block [s, s + W) of a chunk (s past the chunk's
 * start) has its G off by one shared eps_b = A u_g |G_{s-1}| z_b, the
 * rounding of the prefix a tree-shaped cumsum hands the whole block (the
 * Blelloch down-sweep's exclusive prefix of a subtree, a pairwise or
 * Hillis-Steele partial sum under many tokens): errors correlated over W
 * tokens, which the token probes (independent eps_i) do not carry. */
static void perturb_g_tree(float *g, const gdn_inputs *in, int64_t W, int64_t C, double u_g, int64_t head0) {
  const gdn_shape *S = &in->shape;
  for (int64_t b = 0; b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) {
      double G = 0, eps = 0, prev = 0;
      for (int64_t t = 0; t < S->T; t++) {
        const size_t i = (size_t)((b * S->T + t) * S->Hv + h);
        const int64_t c = t % C;
        if (c == 0) G = 0, eps = 0, prev = 0;
        else if (c % W == 0) eps = PARITY_MODEL_AMP * u_g * fabs(G) * parity_model_sign(60 + (int)log2((double)W), b, t, head0 + h);
        G += in->g[i];
        g[i] = (float)(in->g[i] + eps - prev);
        prev = eps;
      }
    }
}

static size_t numel(int t, const gdn_shape *s) { return (size_t)parity_tensor_numel(&parity_tensors[t], s); }

static const double *tensor_of(int t, const gdn_outputs *o, const gdn_grads *g) {
  if (t == PARITY_T_O) return o->o;
  if (t == PARITY_T_HT) return o->ht;
  return g ? gdn_grads_tensor_c(g, parity_tensors[t].grad_id) : NULL;
}

/* acc[t] += ((x1 - x0) / A)^2 for every tensor both runs gave. */
static void accumulate(double *const acc[PARITY_T_N], const gdn_shape *s, const gdn_outputs *o0, const gdn_grads *g0,
                       const gdn_outputs *o1, const gdn_grads *g1, double A) {
  for (int t = 0; t < PARITY_T_N; t++) {
    const double *a = tensor_of(t, o0, g0), *b = tensor_of(t, o1, g1);
    if (!acc[t] || !a || !b) continue;
    const size_t n = numel(t, s);
    for (size_t i = 0; i < n; i++) {
      const double d = (b[i] - a[i]) / A;
      acc[t][i] += d * d;
    }
  }
}

/* q, k, v of in moved by a few float32 steps into p (relative 2^-21 with
 * sample k's signs): the same problem to first order, met by other
 * roundings. */
static void perturb_qkv(gdn_inputs *p, const gdn_inputs *in, int k, int64_t head0) {
  const gdn_shape *S = &in->shape;
  float *dst[3] = {p->q, p->k, p->v};
  const float *src[3] = {in->q, in->k, in->v};
  const int64_t H[3] = {S->Hk, S->Hk, S->Hv}, D[3] = {S->Dk, S->Dk, S->Dv};
  for (int w = 0; w < 3; w++)
    for (int64_t b = 0; b < S->B; b++)
      for (int64_t t = 0; t < S->T; t++)
        for (int64_t h = 0; h < H[w]; h++)
          for (int64_t d = 0; d < D[w]; d++) {
            const size_t i = (size_t)(((b * S->T + t) * H[w] + h) * D[w] + d);
            const int64_t gh = w < 2 ? head0 / (S->Hv / S->Hk) + h : head0 + h; /* the whole run's head */
            const double z = parity_model_sign(100 + 3 * k + w, b, t, (gh << 16) + d);
            dst[w][i] = (float)(src[w][i] * (1 + 0x1p-21 * z));
          }
}

static int64_t last_dim(int t, const gdn_shape *s) {
  int64_t d[4];
  parity_tensors[t].dims(s, d);
  return d[3];
}

/* acc (sums of squares) into s: v_e = acc_e / div, lifted toward its
 * row's (the last axis) mean: s_e^2 = max(v_e, (v_e + mean_row v) / 2).  A
 * row's mean rests on many draws, an element's on few, so an element whose
 * draws happen to be small keeps half its row's mean square. */
static void pool(double *acc, size_t n, int64_t len, double div) {
  for (size_t r0 = 0; len > 0 && r0 < n; r0 += (size_t)len) {
    double row = 0;
    for (int64_t j = 0; j < len; j++) row += acc[r0 + (size_t)j];
    row /= (double)len * div;
    for (int64_t j = 0; j < len; j++) {
      const double v = acc[r0 + (size_t)j] / div;
      acc[r0 + (size_t)j] = sqrt(fmax(v, (v + row) / 2));
    }
  }
}

/* The scan (and its backward with ct) under cfg, or in binary64 with
 * chunk C when cfg is NULL; o held as binary64. */
static int run_scan(const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, const kern_config *c, gdn_outputs *o,
                    gdn_grads *g, double *dg_terms, gdn_error *e) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F64;
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.ftz = 0;
  cfg.chunk = C;
  if (c) cfg = *c, cfg.devices = 1, cfg.mutant = KERN_MUTANT_NONE;
  gdn_grads_clear(g);
  int rc = gdn_outputs_alloc(o, &in->shape, cfg.dtype, e);
  if (!rc) rc = kern_scan(in, &cfg, o, e);
  if (!rc && ct) rc = kern_scan_vjp_terms(in, ct, &cfg, g, dg_terms, e);
  return rc;
}

static int alloc_set(double *acc[PARITY_T_N], const gdn_shape *S, const gdn_outputs *o0, const gdn_grads *g0,
                     gdn_error *e) {
  for (int t = 0; t < PARITY_T_N; t++)
    if (tensor_of(t, o0, g0) && !(acc[t] = gdn_calloc(numel(t, S), sizeof(double), "error model", e)))
      return e ? e->code : GDN_ERR_NOMEM;
  return GDN_OK;
}

/* The arithmetic's part: sample k's q, k, v perturbed, the case's
 * float32 scan against the binary64 one on the same inputs. */
static int arith_samples(double *acc[PARITY_T_N], const gdn_inputs *in, const gdn_cotangents *ct, int64_t C,
                         const kern_config *acfg, int64_t head0, gdn_inputs *p, gdn_error *e) {
  gdn_outputs o0, o1;
  gdn_grads g0, g1;
  gdn_outputs_init(&o0), gdn_outputs_init(&o1);
  gdn_grads_init(&g0), gdn_grads_init(&g1);
  int rc = GDN_OK;
  for (int k = 0; !rc && k < PARITY_MODEL_ARITH; k++) {
    perturb_qkv(p, in, k, head0);
    if (!(rc = run_scan(p, ct, C, NULL, &o0, &g0, NULL, e)) && !(rc = run_scan(p, ct, C, acfg, &o1, &g1, NULL, e)))
      accumulate(acc, &in->shape, &o0, ct ? &g0 : NULL, &o1, ct ? &g1 : NULL, sqrt((double)PARITY_MODEL_ARITH));
  }
  memcpy(p->q, in->q, gdn_shape_numel_qk(&in->shape) * sizeof(float));
  memcpy(p->k, in->k, gdn_shape_numel_qk(&in->shape) * sizeof(float));
  memcpy(p->v, in->v, gdn_shape_numel_v(&in->shape) * sizeof(float));
  gdn_outputs_clear(&o0), gdn_outputs_clear(&o1);
  gdn_grads_clear(&g0), gdn_grads_clear(&g1);
  return rc;
}

/* The underflow part (parity_kappa_model.h): C eta^2 added to every
 * element's s^2, eta the case's compute format's smallest normal; none in
 * binary64, whose eta^2 is below binary64's range. */
static void underflow_part(double *acc[PARITY_T_N], const gdn_shape *S, int64_t C, gdn_dtype dt) {
  if (dt == GDN_DTYPE_F64) return;
  const double eta = parity_model_eta(dt), add = (double)C * eta * eta;
  for (int t = 0; t < PARITY_T_N; t++)
    if (acc[t])
      for (size_t i = 0, n = numel(t, S); i < n; i++) acc[t][i] += add;
}

double parity_model_eta(gdn_dtype dt) { return ldexp(1.0, gdn_dtype_emin(dt)); }

/* The padded chunk ends of the layouts (parity_kappa_model.h): len[t] > 0
 * when token t ends a device's piece of P = T / D tokens (D = 1: the whole
 * sequence) and P is not a multiple of C, so a chunk of len[t] = P mod C
 * real tokens padded to C ends at t (the largest over the layouts).
 * Returns how many tokens end one. */
static int64_t padded_ends(int64_t *len, const gdn_shape *S, int64_t C, const int64_t *dev, size_t nd) {
  const int64_t one = 1;
  if (!dev || !nd) dev = &one, nd = 1;
  memset(len, 0, (size_t)S->T * sizeof *len);
  int64_t n = 0;
  for (size_t i = 0; i < nd; i++) {
    const int64_t D = dev[i], P = D > 0 && S->T % D == 0 ? S->T / D : 0;
    for (int64_t r = 1; P > 0 && P % C && r <= D; r++) {
      const int64_t t = r * P - 1;
      n += len[t] == 0;
      if (P % C > len[t]) len[t] = P % C;
    }
  }
  return n;
}

/* eps of the chunk end at t (len[t] real tokens) of head (b, h): u_g times
 * the padded chunk's |G_L| (its own sum of g, binary64), seeded sign. */
static double end_eps(const gdn_inputs *in, const int64_t *len, int64_t b, int64_t h, int64_t t, double u_g,
                      int64_t head0) {
  const gdn_shape *S = &in->shape;
  double G = 0;
  for (int64_t i = t - len[t] + 1; i <= t; i++) G += in->g[(size_t)((b * S->T + i) * S->Hv + h)];
  return u_g * fabs(G) * parity_model_sign(50, b, t, head0 + h);
}

/* The chunk ends' probes: colour k of the padded ends before the last
 * token (alternate ends) scales the state after each end t by 1 + A eps_t
 * (g_{t+1} moved by A eps_t, not moved back: the state's decay into the
 * next token is the only way h_t reaches later tokens). */
static int end_probes_inner(double *acc[PARITY_T_N], const gdn_inputs *in, const gdn_cotangents *ct, int64_t C,
                            double u_g, int64_t head0, const int64_t *len, gdn_inputs *p, const gdn_outputs *o0,
                            const gdn_grads *g0, gdn_outputs *o1, gdn_grads *g1, gdn_error *e) {
  const gdn_shape *S = &in->shape;
  int rc = GDN_OK;
  for (int k = 0; !rc && k < 2; k++) {
    memcpy(p->g, in->g, gdn_shape_numel_gate(S) * sizeof(float));
    int64_t idx = 0, moved = 0;
    for (int64_t t = 0; t + 1 < S->T; t++) {
      if (!len[t] || idx++ % 2 != k) continue;
      moved = 1;
      for (int64_t b = 0; b < S->B; b++)
        for (int64_t h = 0; h < S->Hv; h++) {
          const size_t i = (size_t)((b * S->T + t + 1) * S->Hv + h);
          p->g[i] = (float)(in->g[i] + PARITY_MODEL_AMP * end_eps(in, len, b, h, t, u_g, head0));
        }
    }
    if (moved && !(rc = run_scan(p, ct, C, NULL, o1, g1, NULL, e)))
      accumulate(acc, S, o0, ct ? g0 : NULL, o1, ct ? g1 : NULL, PARITY_MODEL_AMP);
  }
  memcpy(p->g, in->g, gdn_shape_numel_gate(S) * sizeof(float));
  return rc;
}

/* The last token's padded chunk end: ht scaled by 1 + A eps per head, and
 * with cotangents the backward of (do, dht (1 + A eps)), against o0 and
 * g0. */
static int end_probe_last(double *acc[PARITY_T_N], const gdn_inputs *in, const gdn_cotangents *ct, int64_t C,
                          double u_g, int64_t head0, const int64_t *len, const gdn_outputs *o0, const gdn_grads *g0,
                          gdn_outputs *o1, gdn_grads *g1, gdn_error *e) {
  const gdn_shape *S = &in->shape;
  const int64_t kv = S->Dk * S->Dv, t = S->T - 1;
  gdn_cotangents c2;
  gdn_cotangents_init(&c2);
  float *dht = NULL;
  if (ct) {
    c2 = *ct; /* do borrowed, dht owned here */
    if (ct->dht && !(dht = gdn_malloc((size_t)(S->B * S->Hv * kv) * sizeof *dht, "error model cotangent", e)))
      return e ? e->code : GDN_ERR_NOMEM;
    c2.dht = dht;
  }
  for (int64_t b = 0; dht && b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) {
      const double f = 1 + PARITY_MODEL_AMP * end_eps(in, len, b, h, t, u_g, head0);
      const size_t at = (size_t)((b * S->Hv + h) * kv);
      for (int64_t x = 0; x < kv; x++) dht[at + (size_t)x] = (float)(ct->dht[at + (size_t)x] * f);
    }
  int rc = run_scan(in, ct ? &c2 : NULL, C, NULL, o1, g1, NULL, e); /* o1 = o0; g1: the backward of the moved dht */
  for (int64_t b = 0; !rc && b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) {
      const double f = 1 + PARITY_MODEL_AMP * end_eps(in, len, b, h, t, u_g, head0);
      const size_t at = (size_t)((b * S->Hv + h) * kv);
      for (int64_t x = 0; x < kv; x++) o1->ht[at + (size_t)x] *= f;
    }
  if (!rc) accumulate(acc, S, o0, ct ? g0 : NULL, o1, ct ? g1 : NULL, PARITY_MODEL_AMP);
  gdn_free(dht);
  return rc;
}

int parity_model_compute(parity_model *m, const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, double u_g,
                         const kern_config *acfg, int64_t head0, gdn_error *e) {
  return parity_model_compute_layouts(m, in, ct, C, u_g, acfg, head0, NULL, 0, e);
}

int parity_model_compute_layouts(parity_model *m, const gdn_inputs *in, const gdn_cotangents *ct, int64_t C,
                                 double u_g, const kern_config *acfg, int64_t head0, const int64_t *devices,
                                 size_t n_devices, gdn_error *e) {
  parity_model_clear(m);
  m->chunk = C;
  m->u_g = u_g;
  const gdn_shape *S = &in->shape;
  gdn_outputs o0, o1;
  gdn_grads g0, g1;
  gdn_inputs p;
  gdn_outputs_init(&o0), gdn_outputs_init(&o1);
  gdn_grads_init(&g0), gdn_grads_init(&g1);
  gdn_inputs_init(&p);
  const size_t ng = gdn_shape_numel_gate(S);
  double *terms = ct && acfg ? gdn_calloc(ng, sizeof(double), "error model dg terms", e) : NULL;
  int rc = ct && acfg && !terms ? (e ? e->code : GDN_ERR_NOMEM) : GDN_OK;
  if (!rc) rc = run_scan(in, ct, C, NULL, &o0, &g0, terms, e);
  if (!rc) rc = gdn_inputs_copy(&p, in, e);
  if (!rc) rc = alloc_set(m->s, S, &o0, ct ? &g0 : NULL, e);
  for (int k = 0; !rc && k < PARITY_MODEL_SAMPLES; k++) { /* G's probes: their squares sum to its variance */
    perturb_g(p.g, in, k, C, u_g, head0);
    if (!(rc = run_scan(&p, ct, C, NULL, &o1, &g1, NULL, e)))
      accumulate(m->s, S, &o0, ct ? &g0 : NULL, &o1, ct ? &g1 : NULL, PARITY_MODEL_AMP);
  }
  for (int64_t W = 2; !rc && W < C; W *= 2) { /* the tree probes: G's errors shared over W tokens */
    perturb_g_tree(p.g, in, W, C, u_g, head0);
    if (!(rc = run_scan(&p, ct, C, NULL, &o1, &g1, NULL, e)))
      accumulate(m->s, S, &o0, ct ? &g0 : NULL, &o1, ct ? &g1 : NULL, PARITY_MODEL_AMP);
  }
  if (!rc) memcpy(p.g, in->g, gdn_shape_numel_gate(S) * sizeof(float));
  int64_t *len = rc ? NULL : gdn_calloc((size_t)S->T, sizeof *len, "error model chunk ends", e);
  if (!rc && !len) rc = e ? e->code : GDN_ERR_NOMEM;
  if (!rc && padded_ends(len, S, C, devices, n_devices)) { /* the padded chunks' own G_L */
    rc = end_probes_inner(m->s, in, ct, C, u_g, head0, len, &p, &o0, &g0, &o1, &g1, e);
    if (!rc && len[S->T - 1]) rc = end_probe_last(m->s, in, ct, C, u_g, head0, len, &o0, &g0, &o1, &g1, e);
  }
  gdn_free(len);
  if (!rc && acfg) rc = arith_samples(m->s, in, ct, C, acfg, head0, &p, e); /* adds each sample's square / ARITH */
  if (!rc && acfg) underflow_part(m->s, S, C, acfg->dtype);
  if (!rc && terms && m->s[PARITY_T_DG]) /* dg's own sums, in any order */
    for (size_t i = 0; i < ng; i++) {
      const double r = PARITY_MODEL_TERMS * u_g * terms[i];
      m->s[PARITY_T_DG][i] += r * r;
    }
  gdn_free(terms);
  for (int t = 0; !rc && t < PARITY_T_N; t++)
    if (m->s[t]) pool(m->s[t], numel(t, S), last_dim(t, S), 1);
  gdn_outputs_clear(&o0), gdn_outputs_clear(&o1);
  gdn_grads_clear(&g0), gdn_grads_clear(&g1);
  gdn_inputs_clear(&p);
  if (rc) parity_model_clear(m);
  return rc;
}

size_t parity_model_bytes(const gdn_shape *s, int grads) {
  size_t n = 0;
  for (int t = 0; t < PARITY_T_N; t++)
    if (!parity_tensors[t].grad || grads) n += (size_t)parity_tensor_numel(&parity_tensors[t], s);
  /* the model's s, the two binary64 runs' outputs (and gradients), the moved inputs (and with gradients
   * the chunk ends' moved dht), the chunk ends' lengths, with gradients dg's terms (kern_scan_vjp_terms) */
  const size_t state = (size_t)(s->B * s->Hv * s->Dk * s->Dv);
  return 3 * n * sizeof(double) + (size_t)s->T * sizeof(int64_t) +
         (grads ? gdn_shape_numel_gate(s) * sizeof(double) : 0) +
         sizeof(float) * (2 * gdn_shape_numel_qk(s) + gdn_shape_numel_v(s) + 2 * gdn_shape_numel_gate(s) + state +
                          (grads ? state : 0));
}
