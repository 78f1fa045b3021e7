#include "gdn_prelude_apply.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_bf16.h"

static float bf(float x) { return gdn_bf16_round(x); }

/* One row of q or k through the bfloat16 L2 norm (gdn_prelude.h). */
void gdn_prelude_norm_row(float *y, const float *x, int64_t d) {
  float s = 0;
  for (int64_t i = 0; i < d; i++) s = s + bf(x[i] * x[i]);
  const float r = bf(1.0f / sqrtf(bf(bf(s) + bf(1e-6f))));
  for (int64_t i = 0; i < d; i++) y[i] = bf(x[i] * r);
}

float gdn_prelude_g(float a, float a_log, float dt_bias) {
  const float x = bf(a + dt_bias);
  const float sp = bf(x > 20.0f ? x : log1pf(expf(x)));
  return -bf(bf(expf(a_log)) * sp);
}

float gdn_prelude_beta(float b) { return bf(1.0f / (1.0f + expf(-b))); }

/* g and beta of one (b, t, h) element. */
static void gates(float *g, float *beta, float a, float b, float a_log, float dt_bias) {
  *g = gdn_prelude_g(a, a_log, dt_bias);
  *beta = gdn_prelude_beta(b);
}

/* Rows [r0, r1) of q and k, and gate elements [i0, i1). */
static void apply_rows(const gdn_prelude *p, gdn_inputs *in, size_t r0, size_t r1) {
  const int64_t d = p->shape.Dk;
  for (size_t r = r0; r < r1; r++) {
    gdn_prelude_norm_row(in->q + r * (size_t)d, p->t[GDN_PRELUDE_Q] + r * (size_t)d, d);
    gdn_prelude_norm_row(in->k + r * (size_t)d, p->t[GDN_PRELUDE_K] + r * (size_t)d, d);
  }
}

static void apply_gates(const gdn_prelude *p, gdn_inputs *in, size_t i0, size_t i1) {
  const size_t hv = (size_t)p->shape.Hv;
  const float *const *t = (const float *const *)p->t;
  for (size_t i = i0; i < i1; i++)
    gates(&in->g[i], &in->beta[i], t[GDN_PRELUDE_A][i], t[GDN_PRELUDE_B][i], t[GDN_PRELUDE_A_LOG][i % hv],
          t[GDN_PRELUDE_DT_BIAS][i % hv]);
}

static void apply_finish(const gdn_prelude *p, gdn_inputs *in) {
  memcpy(in->v, p->t[GDN_PRELUDE_V], gdn_shape_numel_v(&p->shape) * sizeof(float));
  in->l2norm_in_kernel = 0;
  in->bf16_mask = GDN_T_Q | GDN_T_K | GDN_T_V | GDN_T_G | GDN_T_BETA;
}

/* Blocks of work for the threads: each element's arithmetic is the same
 * whichever block computes it. */
enum { BLOCK = 1024 };

void gdn_prelude_apply(const gdn_prelude *p, gdn_inputs *in) {
  const gdn_shape *s = &p->shape;
  const size_t rows = gdn_shape_numel_qk(s) / (size_t)s->Dk, ng = gdn_shape_numel_gate(s);
  const size_t nr = (rows + BLOCK - 1) / BLOCK, ngb = (ng + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
  for (size_t b = 0; b < nr; b++) apply_rows(p, in, b * BLOCK, b * BLOCK + BLOCK < rows ? b * BLOCK + BLOCK : rows);
#pragma omp parallel for schedule(static)
  for (size_t b = 0; b < ngb; b++) apply_gates(p, in, b * BLOCK, b * BLOCK + BLOCK < ng ? b * BLOCK + BLOCK : ng);
  apply_finish(p, in);
}

/* The same, on the calling thread only: the loader runs in fix_isolate's
 * forked probe child, where GNU libgomp hangs once the parent has used a
 * thread team (as gdn-parity check has by its second fixture). */
static void apply_serial(const gdn_prelude *p, gdn_inputs *in) {
  apply_rows(p, in, 0, gdn_shape_numel_qk(&p->shape) / (size_t)p->shape.Dk);
  apply_gates(p, in, 0, gdn_shape_numel_gate(&p->shape));
  apply_finish(p, in);
}

/* First index where two float32 arrays differ in their bits, or n. */
static size_t first_diff(const float *x, const float *y, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (gdn_f32_bits(x[i]) != gdn_f32_bits(y[i])) return i;
  return n;
}

int gdn_prelude_verify(const gdn_inputs *in, const char *where, gdn_error *e) {
  const gdn_prelude *p = in->prelude;
  if (!p) return GDN_OK;
  if (in->l2norm_in_kernel)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: l2norm_in_kernel is 1 but /inputs/prelude is present: the prelude has L2-normalised "
                         "q and k already (l2norm_in_kernel must be 0)", where);
  gdn_inputs re;
  gdn_inputs_init(&re);
  int rc = gdn_inputs_alloc(&re, &in->shape, 0, e);
  if (rc) return rc;
  apply_serial(p, &re);
  const gdn_shape *s = &in->shape;
  struct { const char *name; const float *have, *want; int64_t dims[4]; int rank; } row[5] = {
      {"q", in->q, re.q, {s->B, s->T, s->Hk, s->Dk}, 4},  {"k", in->k, re.k, {s->B, s->T, s->Hk, s->Dk}, 4},
      {"v", in->v, re.v, {s->B, s->T, s->Hv, s->Dv}, 4},  {"g", in->g, re.g, {s->B, s->T, s->Hv, 1}, 3},
      {"beta", in->beta, re.beta, {s->B, s->T, s->Hv, 1}, 3}};
  for (int i = 0; i < 5 && !rc; i++) {
    size_t n = 1;
    for (int d = 0; d < row[i].rank; d++) n *= (size_t)row[i].dims[d];
    const size_t j = first_diff(row[i].have, row[i].want, n);
    if (j == n) continue;
    char ix[96];
    gdn_prelude_format_index(ix, sizeof ix, row[i].dims, row[i].rank, j);
    rc = gdn_error_set(e, GDN_ERR_INPUT,
                       "%s: /inputs/%s at index %s is %.9g but the bfloat16 prelude computes %.9g from "
                       "/inputs/prelude (the stored kernel inputs must equal the prelude bit for bit)",
                       where, row[i].name, ix, (double)row[i].have[j], (double)row[i].want[j]);
  }
  gdn_inputs_clear(&re);
  return rc;
}
