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

/* in's g perturbed by sample k into g (the copy's tensor): G_i off by
 * A u_g |G_i| z_i inside each chunk of C (G in binary64). */
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
        const double eps = PARITY_MODEL_AMP * u_g * fabs(G) * parity_model_sign(k, b, t, head0 + h);
        g[i] = (float)(gi + eps - prev);
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

/* acc[t] += ((x - x0) / A)^2 for every tensor both runs gave. */
static void accumulate(parity_model *m, const gdn_shape *s, const gdn_outputs *o0, const gdn_grads *g0,
                       const gdn_outputs *o1, const gdn_grads *g1) {
  for (int t = 0; t < PARITY_T_N; t++) {
    const double *a = tensor_of(t, o0, g0), *b = tensor_of(t, o1, g1);
    if (!m->s[t] || !a || !b) continue;
    const size_t n = numel(t, s);
    for (size_t i = 0; i < n; i++) {
      const double d = (b[i] - a[i]) / PARITY_MODEL_AMP;
      m->s[t][i] += d * d;
    }
  }
}

static int64_t last_dim(int t, const gdn_shape *s) {
  int64_t d[4];
  parity_tensors[t].dims(s, d);
  return d[3];
}

/* acc (sums of squares over the samples) into s: each element's mean
 * square shrunk toward its row's (the last axis) with the weight of as many
 * samples, s_e^2 = (sum_k d_ke^2 + K mean_row) / (2 K), K the samples: a
 * row's mean rests on len x K draws, an element's on K, and an element
 * whose K draws happen to be small keeps half its row's mean square. */
static void pool(double *acc, size_t n, int64_t len) {
  const double K = PARITY_MODEL_SAMPLES;
  for (size_t r0 = 0; len > 0 && r0 < n; r0 += (size_t)len) {
    double row = 0;
    for (int64_t j = 0; j < len; j++) row += acc[r0 + (size_t)j];
    row /= (double)len * K;
    for (int64_t j = 0; j < len; j++) acc[r0 + (size_t)j] = sqrt((acc[r0 + (size_t)j] + K * row) / (2 * K));
  }
}

static int run_f64(const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, gdn_outputs *o, gdn_grads *g,
                   gdn_error *e) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F64;
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.ftz = 0;
  cfg.chunk = C;
  int rc = gdn_outputs_alloc(o, &in->shape, GDN_DTYPE_F64, e);
  if (!rc) rc = kern_scan(in, &cfg, o, e);
  if (!rc && ct) rc = kern_scan_vjp(in, ct, &cfg, g, e);
  return rc;
}

int parity_model_compute(parity_model *m, const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, double u_g,
                         int64_t head0, gdn_error *e) {
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
  int rc = run_f64(in, ct, C, &o0, &g0, e);
  if (!rc) rc = gdn_inputs_copy(&p, in, e);
  for (int t = 0; !rc && t < PARITY_T_N; t++) {
    if (tensor_of(t, &o0, ct ? &g0 : NULL) == NULL) continue;
    if (!(m->s[t] = gdn_calloc(numel(t, S), sizeof(double), "error model", e))) rc = e ? e->code : GDN_ERR_NOMEM;
  }
  for (int k = 0; !rc && k < PARITY_MODEL_SAMPLES; k++) {
    perturb_g(p.g, in, k, C, u_g, head0);
    gdn_grads_clear(&g1);
    if (!(rc = run_f64(&p, ct, C, &o1, &g1, e))) accumulate(m, S, &o0, ct ? &g0 : NULL, &o1, ct ? &g1 : NULL);
  }
  for (int t = 0; !rc && t < PARITY_T_N; t++)
    if (m->s[t]) pool(m->s[t], numel(t, S), last_dim(t, S));
  gdn_outputs_clear(&o0), gdn_outputs_clear(&o1);
  gdn_grads_clear(&g0), gdn_grads_clear(&g1);
  gdn_inputs_clear(&p);
  if (rc) parity_model_clear(m);
  return rc;
}
