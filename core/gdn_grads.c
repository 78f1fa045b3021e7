#include "gdn_grads.h"

#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_normal.h"
#include "gdn_rng.h"
#include "gdn_threads.h"

/* RNG streams of the cotangents, apart from gdn_synth's input streams. */
enum { S_DO = 101, S_DHT = 102 };

void gdn_cotangents_init(gdn_cotangents *c) { memset(c, 0, sizeof *c); }

void gdn_cotangents_clear(gdn_cotangents *c) {
  gdn_free(c->d_o);
  gdn_free(c->dht);
  gdn_cotangents_init(c);
}

int gdn_cotangents_alloc(gdn_cotangents *c, const gdn_shape *s, int with_dht, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  gdn_cotangents_clear(c);
  if (!(c->d_o = gdn_calloc(gdn_shape_numel_v(s), sizeof(float), "cotangent do", e)) ||
      (with_dht &&
       !(c->dht = gdn_calloc(gdn_shape_numel_state(s), sizeof(float), "cotangent dht", e)))) {
    gdn_cotangents_clear(c);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  c->shape = *s;
  return GDN_OK;
}

void gdn_cotangents_synth(gdn_cotangents *c, uint64_t seed) {
  gdn_cotangents_synth_heads(c, c->shape.Hv, 0, seed);
}

/* The n elements of x, rows of `len` of which row j is elements j * stride
 * + start .. of the whole tensor, each (float)gdn_rng_normal_k(key, its
 * index there): gdn_normal_fill's batches, in parallel (the same bits). */
static void fill_rows(float *x, size_t n, size_t len, size_t stride, size_t start, uint64_t key) {
  const size_t per = (len + GDN_NORMAL_BATCH - 1) / GDN_NORMAL_BATCH, nb = n / len * per;
#pragma omp parallel for schedule(static) num_threads(gdn_threads_for((int64_t)(n / 4096 + 1)))
  for (size_t b = 0; b < nb; b++) {
    const size_t j = b / per, lo = b % per * GDN_NORMAL_BATCH;
    const size_t m = len - lo < GDN_NORMAL_BATCH ? len - lo : GDN_NORMAL_BATCH;
    gdn_normal_fill(x + j * len + lo, m, key, j * stride + start + lo, 1.0, 0);
  }
}

/* Each value drawn at its index in the whole tensor: row j of `len`
 * elements of the slab is elements j * stride + start .. of the whole. */
void gdn_cotangents_synth_heads(gdn_cotangents *c, int64_t Hv, int64_t v0, uint64_t seed) {
  const gdn_shape *s = &c->shape;
  const uint64_t kdo = gdn_rng_key(seed, S_DO), kdht = gdn_rng_key(seed, S_DHT);
  fill_rows(c->d_o, gdn_shape_numel_v(s), (size_t)(s->Hv * s->Dv), (size_t)(Hv * s->Dv), (size_t)(v0 * s->Dv), kdo);
  if (!c->dht) return;
  fill_rows(c->dht, gdn_shape_numel_state(s), (size_t)(s->Hv * s->Dk * s->Dv), (size_t)(Hv * s->Dk * s->Dv),
            (size_t)(v0 * s->Dk * s->Dv), kdht);
}

int gdn_cotangents_check(const gdn_cotangents *c, const gdn_shape *s, const char *who,
                         gdn_error *e) {
  if (!c || !c->d_o)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: cotangent do is missing (NULL)", who);
  const gdn_shape *b = &c->shape;
  if (s->B != b->B || s->T != b->T || s->Hv != b->Hv || s->Dk != b->Dk || s->Dv != b->Dv)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: the cotangents' shape (B=%lld, T=%lld, Hv=%lld, Dk=%lld, Dv=%lld) is "
                         "not the inputs'",
                         who, (long long)b->B, (long long)b->T, (long long)b->Hv, (long long)b->Dk,
                         (long long)b->Dv);
  const struct { const char *name; const float *p; size_t n; } t[] = {
      {"do", c->d_o, gdn_shape_numel_v(s)}, {"dht", c->dht, gdn_shape_numel_state(s)}};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; t[k].p && i < t[k].n; i++)
      if (!isfinite(t[k].p[i]))
        return gdn_error_set(e, GDN_ERR_INPUT, "%s: cotangent %s: non-finite value %g at flat index %zu",
                             who, t[k].name, (double)t[k].p[i], i);
  return GDN_OK;
}

const char *gdn_grads_name(gdn_grad_id id) {
  static const char *const names[GDN_GRADS_N] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  return (unsigned)id < GDN_GRADS_N ? names[id] : "?";
}

size_t gdn_grads_numel(const gdn_shape *s, gdn_grad_id id) {
  switch (id) {
  case GDN_GRAD_DQ:
  case GDN_GRAD_DK: return gdn_shape_numel_qk(s);
  case GDN_GRAD_DV: return gdn_shape_numel_v(s);
  case GDN_GRAD_DG:
  case GDN_GRAD_DBETA: return gdn_shape_numel_gate(s);
  case GDN_GRAD_DH0: return gdn_shape_numel_state(s);
  }
  return 0;
}

double *gdn_grads_tensor(gdn_grads *g, gdn_grad_id id) {
  double **t[GDN_GRADS_N] = {&g->dq, &g->dk, &g->dv, &g->dg, &g->dbeta, &g->dh0};
  return (unsigned)id < GDN_GRADS_N ? *t[id] : NULL;
}

const double *gdn_grads_tensor_c(const gdn_grads *g, gdn_grad_id id) {
  return gdn_grads_tensor((gdn_grads *)g, id);
}

void gdn_grads_init(gdn_grads *g) { memset(g, 0, sizeof *g); }

void gdn_grads_clear(gdn_grads *g) {
  for (int i = 0; i < GDN_GRADS_N; i++) gdn_free(gdn_grads_tensor(g, (gdn_grad_id)i));
  gdn_grads_init(g);
}

int gdn_grads_alloc(gdn_grads *g, const gdn_shape *s, gdn_dtype dtype, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  gdn_grads_clear(g);
  double **t[GDN_GRADS_N] = {&g->dq, &g->dk, &g->dv, &g->dg, &g->dbeta, &g->dh0};
  for (int i = 0; i < GDN_GRADS_N; i++) {
    *t[i] = gdn_calloc(gdn_grads_numel(s, (gdn_grad_id)i), sizeof(double),
                       gdn_grads_name((gdn_grad_id)i), e);
    if (!*t[i]) {
      gdn_grads_clear(g);
      return e ? e->code : GDN_ERR_NOMEM;
    }
  }
  g->shape = *s;
  g->dtype = dtype;
  return GDN_OK;
}

double gdn_grads_rel_fro(const gdn_grads *x, const gdn_grads *r, gdn_grad_id id) {
  const double *a = gdn_grads_tensor_c(x, id), *b = gdn_grads_tensor_c(r, id);
  size_t n = gdn_grads_numel(&r->shape, id);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double d = a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  if (num == 0) return 0;
  return den == 0 ? INFINITY : sqrt(num / den);
}
