#include "gdn_inputs.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <stdio.h>

#include "gdn_alloc.h"
#include "gdn_prelude.h"

void gdn_inputs_init(gdn_inputs *in) { memset(in, 0, sizeof *in); }

void gdn_inputs_clear(gdn_inputs *in) {
  gdn_free(in->q);
  gdn_free(in->k);
  gdn_free(in->v);
  gdn_free(in->g);
  gdn_free(in->beta);
  gdn_free(in->h0);
  gdn_free(in->seg);
  if (in->prelude) gdn_prelude_clear(in->prelude);
  gdn_free(in->prelude);
  gdn_inputs_init(in);
}

const char *gdn_packing_name(int packing) {
  return packing == GDN_PACKING_RESET ? "reset" : packing == GDN_PACKING_LEAK ? "leak" : "?";
}

int gdn_packing_parse(const char *s, int *out, gdn_error *e) {
  if (s && !strcmp(s, "leak")) return *out = GDN_PACKING_LEAK, GDN_OK;
  if (s && !strcmp(s, "reset")) return *out = GDN_PACKING_RESET, GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT, "--packing '%s': unknown semantics; expected leak or reset",
                       s ? s : "");
}

int gdn_inputs_alloc_seg(gdn_inputs *in, gdn_error *e) {
  gdn_free(in->seg);
  in->seg = gdn_calloc((size_t)(in->shape.B * in->shape.T), sizeof(int32_t), "input segment ids", e);
  return in->seg ? GDN_OK : (e ? e->code : GDN_ERR_NOMEM);
}

int gdn_inputs_alloc(gdn_inputs *in, const gdn_shape *s, int with_h0, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  gdn_inputs_clear(in);
  in->shape = *s;
  size_t nqk = gdn_shape_numel_qk(s), nv = gdn_shape_numel_v(s), ng = gdn_shape_numel_gate(s);
  if (!(in->q = gdn_calloc(nqk, sizeof(float), "input q", e)) ||
      !(in->k = gdn_calloc(nqk, sizeof(float), "input k", e)) ||
      !(in->v = gdn_calloc(nv, sizeof(float), "input v", e)) ||
      !(in->g = gdn_calloc(ng, sizeof(float), "input g", e)) ||
      !(in->beta = gdn_calloc(ng, sizeof(float), "input beta", e)) ||
      (with_h0 && !(in->h0 = gdn_calloc(gdn_shape_numel_state(s), sizeof(float), "input h0", e)))) {
    gdn_inputs_clear(in);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  in->shape = *s;
  return GDN_OK;
}

/* First non-finite element of a (B, T, H, D) or (B, H, Dk, Dv) tensor. */
static int check_finite(const float *x, const int64_t dims[4], const char *name,
                        const char *const dn[4], gdn_error *e) {
  size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) {
      int64_t r = (int64_t)i, idx[4];
      for (int d = 3; d >= 0; d--) {
        idx[d] = r % dims[d];
        r /= dims[d];
      }
      /* g and beta are (B, T, H): no fourth index to name (dn[3] NULL) */
      char last[48] = "";
      if (dn[3]) snprintf(last, sizeof last, ", %s=%" PRId64, dn[3], idx[3]);
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "input %s: non-finite value %g at index (%s=%" PRId64 ", %s=%" PRId64
                           ", %s=%" PRId64 "%s) (flat index %zu)",
                           name, (double)x[i], dn[0], idx[0], dn[1], idx[1], dn[2], idx[2], last, i);
    }
  }
  return GDN_OK;
}

int gdn_inputs_check_values(const gdn_inputs *in, int64_t *n_positive_g, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  static const char *const tok[4] = {"b", "t", "h", "d"};
  static const char *const st[4] = {"b", "h", "dk", "dv"};
  static const char *const gate[4] = {"b", "t", "h", NULL};
  int64_t dq[4] = {s->B, s->T, s->Hk, s->Dk}, dv[4] = {s->B, s->T, s->Hv, s->Dv},
          dg[4] = {s->B, s->T, s->Hv, 1}, dh[4] = {s->B, s->Hv, s->Dk, s->Dv};
  int rc;
  if ((rc = check_finite(in->q, dq, "q", tok, e)) || (rc = check_finite(in->k, dq, "k", tok, e)) ||
      (rc = check_finite(in->v, dv, "v", tok, e)) || (rc = check_finite(in->g, dg, "g", gate, e)) ||
      (rc = check_finite(in->beta, dg, "beta", gate, e)) ||
      (in->h0 && (rc = check_finite(in->h0, dh, "h0", st, e))))
    return rc;
  size_t ng = gdn_shape_numel_gate(s);
  for (size_t i = 0; i < ng; i++) {
    float b = in->beta[i];
    if (!(b >= 0.0f && b <= 2.0f)) {
      int64_t h = (int64_t)i % s->Hv, t = ((int64_t)i / s->Hv) % s->T, bb = (int64_t)i / s->Hv / s->T;
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "input beta: value %.9g at index (b=%" PRId64 ", t=%" PRId64 ", h=%" PRId64
                           ") is outside [0, 2]",
                           (double)b, bb, t, h);
    }
  }
  for (int64_t i = 0; in->seg && i < s->B * s->T; i++)
    if (in->seg[i] < 0)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "input segment_ids: value %" PRId32 " at index (b=%" PRId64 ", t=%" PRId64
                           ") is negative (0 is padding, documents are 1, 2, ...)",
                           in->seg[i], i / s->T, i % s->T);
  if (n_positive_g) {
    int64_t np = 0;
    for (size_t i = 0; i < ng; i++) np += in->g[i] > 0.0f;
    *n_positive_g = np;
  }
  return GDN_OK;
}

int gdn_inputs_copy_settings(gdn_inputs *dst, const gdn_inputs *src, gdn_error *e) {
  dst->l2norm_in_kernel = src->l2norm_in_kernel;
  dst->has_scale = src->has_scale;
  dst->scale = src->scale;
  dst->bf16_mask = src->bf16_mask;
  dst->packing = src->packing;
  if (!src->seg) return GDN_OK;
  int rc = gdn_inputs_alloc_seg(dst, e);
  if (!rc) memcpy(dst->seg, src->seg, (size_t)(src->shape.B * src->shape.T) * sizeof(int32_t));
  return rc;
}

int gdn_inputs_copy(gdn_inputs *dst, const gdn_inputs *src, gdn_error *e) {
  int rc = gdn_inputs_alloc(dst, &src->shape, src->h0 != NULL, e);
  if (rc) return rc;
  const gdn_shape *s = &src->shape;
  memcpy(dst->q, src->q, gdn_shape_numel_qk(s) * sizeof(float));
  memcpy(dst->k, src->k, gdn_shape_numel_qk(s) * sizeof(float));
  memcpy(dst->v, src->v, gdn_shape_numel_v(s) * sizeof(float));
  memcpy(dst->g, src->g, gdn_shape_numel_gate(s) * sizeof(float));
  memcpy(dst->beta, src->beta, gdn_shape_numel_gate(s) * sizeof(float));
  if (src->h0) memcpy(dst->h0, src->h0, gdn_shape_numel_state(s) * sizeof(float));
  if ((rc = gdn_inputs_copy_settings(dst, src, e))) {
    gdn_inputs_clear(dst);
    return rc;
  }
  if (src->prelude) {
    gdn_prelude p;
    gdn_prelude_init(&p);
    if ((rc = gdn_prelude_copy(&p, src->prelude, e)) || (rc = gdn_inputs_attach_prelude(dst, &p, e))) {
      gdn_prelude_clear(&p);
      gdn_inputs_clear(dst);
      return rc;
    }
  }
  return GDN_OK;
}

int gdn_inputs_attach_prelude(gdn_inputs *in, gdn_prelude *p, gdn_error *e) {
  gdn_prelude *h = gdn_malloc(sizeof *h, "prelude", e);
  if (!h) return e ? e->code : GDN_ERR_NOMEM;
  *h = *p;
  gdn_prelude_init(p);
  if (in->prelude) {
    gdn_prelude_clear(in->prelude);
    gdn_free(in->prelude);
  }
  in->prelude = h;
  return GDN_OK;
}
