/* The per-channel gate and its synthetic draw (gdn_chgate.h). */
#include "gdn_chgate.h"

#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_rng.h"

/* Streams of the draw: distinct from gdn_synth's (small integers). */
enum {
  CHG_STREAM_X = 0x4b444100,     /* x[b, t, h, d] */
  CHG_STREAM_A = 0x4b444101,     /* A_log[h] */
  CHG_STREAM_DT = 0x4b444102,    /* dt[h, d] */
};

void gdn_chgate_init(gdn_chgate *cg) {
  memset(&cg->shape, 0, sizeof cg->shape);
  cg->g = NULL;
}

void gdn_chgate_clear(gdn_chgate *cg) {
  gdn_free(cg->g);
  gdn_chgate_init(cg);
}

int gdn_chgate_alloc(gdn_chgate *cg, const gdn_shape *s, gdn_error *e) {
  gdn_chgate_clear(cg);
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  cg->g = gdn_calloc(gdn_chgate_numel(s), sizeof(float), "per-channel gate g (B, T, Hv, Dk)", e);
  if (!cg->g) return e ? e->code : GDN_ERR_NOMEM;
  cg->shape = *s;
  return GDN_OK;
}

/* log(1 + e^x) without overflow, and its inverse log(e^y - 1) for y > 0. */
static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }
static double softplus_inv(double y) { return y > 30 ? y : log(expm1(y)); }

int gdn_chgate_draw_kimi(gdn_chgate *cg, const gdn_shape *s, uint64_t seed, gdn_error *e) {
  return gdn_chgate_draw_kimi_heads(cg, s, 0, s->Hv, seed, e);
}

int gdn_chgate_draw_kimi_heads(gdn_chgate *cg, const gdn_shape *s, int64_t v0, int64_t v1, uint64_t seed,
                               gdn_error *e) {
  if (v0 < 0 || v1 <= v0 || v1 > s->Hv)
    return gdn_error_set(e, GDN_ERR_INPUT, "per-channel gate: value heads [%lld, %lld) outside [0, %lld)",
                         (long long)v0, (long long)v1, (long long)s->Hv);
  gdn_shape gs = *s;
  const int64_t r = s->Hv / s->Hk;
  gs.Hv = v1 - v0;
  gs.Hk = gs.Hv % r ? 1 : gs.Hv / r; /* whole key heads: theirs (the gate reads only B, T, Hv, Dk) */
  int rc = gdn_chgate_alloc(cg, &gs, e);
  if (rc) return rc;
  const int64_t Hv = s->Hv, Hg = gs.Hv, Dk = s->Dk, rows = s->B * s->T;
  const uint64_t kx = gdn_rng_key(seed, CHG_STREAM_X), ka = gdn_rng_key(seed, CHG_STREAM_A),
                 kd = gdn_rng_key(seed, CHG_STREAM_DT);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    for (int64_t h = v0; h < v1; h++) {
      const double A = 1.0 + 15.0 * gdn_rng_uniform_k(ka, (uint64_t)h); /* exp(A_log), A_log = log U(1, 16) */
      float *row = cg->g + (r * Hg + h - v0) * Dk;
      for (int64_t d = 0; d < Dk; d++) {
        /* dt log-uniform in [1e-4, 1]: 10^(-4 u) */
        const double dt = pow(10.0, -4.0 * gdn_rng_uniform_k(kd, (uint64_t)(h * Dk + d)));
        const double x = gdn_rng_normal_k(kx, (uint64_t)((r * Hv + h) * Dk + d));
        row[d] = (float)(-A * softplus(x + softplus_inv(dt)));
      }
    }
  return GDN_OK;
}

int gdn_chgate_from_scalar(gdn_chgate *cg, const gdn_inputs *in, gdn_error *e) {
  if (!in || !in->g) return gdn_error_set(e, GDN_ERR_INTERNAL, "gdn_chgate_from_scalar: inputs or g missing");
  int rc = gdn_chgate_alloc(cg, &in->shape, e);
  if (rc) return rc;
  const gdn_shape *s = &in->shape;
  for (int64_t x = 0; x < s->B * s->T * s->Hv; x++)
    for (int64_t d = 0; d < s->Dk; d++) cg->g[x * s->Dk + d] = in->g[x];
  return GDN_OK;
}
