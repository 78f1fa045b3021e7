#include "parity_recur_other_head.h"

#include <string.h>

/* rows rows of a's na then b's nb floats each, into dst. */
static void rows_join(float *dst, const float *a, size_t na, const float *b, size_t nb, int64_t rows) {
  for (int64_t i = 0; i < rows; i++) {
    memcpy(dst, a + (size_t)i * na, na * sizeof(float));
    memcpy(dst + na, b + (size_t)i * nb, nb * sizeof(float));
    dst += na + nb;
  }
}

/* a's heads then b's, every tensor by its head axis (q, k by key head;
 * v, g, beta by value head; h0 by value head per batch item). */
static int inputs_join(gdn_inputs *dst, const gdn_inputs *a, const gdn_inputs *b, gdn_error *e) {
  const gdn_shape *sa = &a->shape, *sb = &b->shape;
  const gdn_shape s = {sa->B, sa->T, sa->Hk + sb->Hk, sa->Hv + sb->Hv, sa->Dk, sa->Dv};
  int rc = gdn_inputs_alloc(dst, &s, a->h0 != NULL, e);
  if (!rc) rc = gdn_inputs_copy_settings(dst, a, e);
  if (rc) return gdn_inputs_clear(dst), rc;
  const int64_t bt = s.B * s.T;
  rows_join(dst->q, a->q, (size_t)(sa->Hk * s.Dk), b->q, (size_t)(sb->Hk * s.Dk), bt);
  rows_join(dst->k, a->k, (size_t)(sa->Hk * s.Dk), b->k, (size_t)(sb->Hk * s.Dk), bt);
  rows_join(dst->v, a->v, (size_t)(sa->Hv * s.Dv), b->v, (size_t)(sb->Hv * s.Dv), bt);
  rows_join(dst->g, a->g, (size_t)sa->Hv, b->g, (size_t)sb->Hv, bt);
  rows_join(dst->beta, a->beta, (size_t)sa->Hv, b->beta, (size_t)sb->Hv, bt);
  if (a->h0) rows_join(dst->h0, a->h0, (size_t)(sa->Hv * s.Dk * s.Dv), b->h0, (size_t)(sb->Hv * s.Dk * s.Dv), s.B);
  return GDN_OK;
}

int parity_recur_other_head_draw(const gdn_shape *s, const gdn_synth_opts *so, uint64_t seed, int64_t k0, int64_t k1,
                                 gdn_inputs *in, gdn_chgate *gate, gdn_error *e) {
  const int64_t r = s->Hv / s->Hk, kx = k1 % s->Hk;
  gdn_inputs a, b;
  gdn_chgate ga, gb;
  gdn_inputs_init(&a), gdn_inputs_init(&b);
  gdn_chgate_init(&ga), gdn_chgate_init(&gb);
  int rc = gdn_synth_generate_heads(&a, s, k0, k1, so, e);
  if (!rc) rc = gdn_synth_generate_heads(&b, s, kx, kx + 1, so, e);
  if (!rc) rc = gdn_chgate_draw_kimi_heads(&ga, s, k0 * r, k1 * r, seed, e);
  if (!rc) rc = gdn_chgate_draw_kimi_heads(&gb, s, kx * r, (kx + 1) * r, seed, e);
  if (!rc) rc = inputs_join(in, &a, &b, e);
  if (!rc && !(rc = gdn_chgate_alloc(gate, &in->shape, e)))
    rows_join(gate->g, ga.g, (size_t)(a.shape.Hv * s->Dk), gb.g, (size_t)(b.shape.Hv * s->Dk), s->B * s->T);
  if (rc) gdn_inputs_clear(in), gdn_chgate_clear(gate);
  gdn_inputs_clear(&a), gdn_inputs_clear(&b);
  gdn_chgate_clear(&ga), gdn_chgate_clear(&gb);
  return rc;
}

int parity_recur_other_head_cut(const gdn_outputs *x, const gdn_shape *gs, gdn_outputs *out, gdn_error *e) {
  int rc = gdn_outputs_alloc(out, gs, GDN_DTYPE_F64, e);
  if (rc) return rc;
  const gdn_shape *xs = &x->shape;
  const size_t on = (size_t)(gs->Hv * gs->Dv), hn = (size_t)(gs->Hv * gs->Dk * gs->Dv);
  for (int64_t i = 0; i < gs->B * gs->T; i++)
    memcpy(out->o + (size_t)i * on, x->o + (size_t)i * (size_t)(xs->Hv * xs->Dv), on * sizeof(double));
  for (int64_t b = 0; b < gs->B; b++)
    memcpy(out->ht + (size_t)b * hn, x->ht + (size_t)b * (size_t)(xs->Hv * xs->Dk * xs->Dv), hn * sizeof(double));
  return GDN_OK;
}
