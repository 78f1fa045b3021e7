#include "gdn_prelude.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_bf16.h"

const char *const gdn_prelude_names[GDN_PRELUDE_N] = {"q", "k", "v", "a", "b", "A_log", "dt_bias"};

void gdn_prelude_init(gdn_prelude *p) { memset(p, 0, sizeof *p); }

void gdn_prelude_clear(gdn_prelude *p) {
  for (int i = 0; i < GDN_PRELUDE_N; i++) gdn_free(p->t[i]);
  gdn_prelude_init(p);
}

int gdn_prelude_dims(const gdn_shape *s, int i, int64_t dims[4]) {
  switch (i) {
  case GDN_PRELUDE_Q:
  case GDN_PRELUDE_K:
    dims[0] = s->B, dims[1] = s->T, dims[2] = s->Hk, dims[3] = s->Dk;
    return 4;
  case GDN_PRELUDE_V:
    dims[0] = s->B, dims[1] = s->T, dims[2] = s->Hv, dims[3] = s->Dv;
    return 4;
  case GDN_PRELUDE_A:
  case GDN_PRELUDE_B:
    dims[0] = s->B, dims[1] = s->T, dims[2] = s->Hv;
    return 3;
  default:
    dims[0] = s->Hv;
    return 1;
  }
}

size_t gdn_prelude_numel(const gdn_shape *s, int i) {
  int64_t d[4];
  int r = gdn_prelude_dims(s, i, d);
  size_t n = 1;
  for (int j = 0; j < r; j++) n *= (size_t)d[j];
  return n;
}

uint64_t gdn_prelude_bytes(const gdn_shape *s) {
  uint64_t n = 0;
  for (int i = 0; i < GDN_PRELUDE_N; i++) {
    const uint64_t k = (uint64_t)gdn_prelude_numel(s, i);
    if (k > (UINT64_MAX / 4 - n)) return UINT64_MAX;
    n += k;
  }
  return 4 * n;
}

int gdn_prelude_alloc(gdn_prelude *p, const gdn_shape *s, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  gdn_prelude_clear(p);
  for (int i = 0; i < GDN_PRELUDE_N; i++)
    if (!(p->t[i] = gdn_calloc(gdn_prelude_numel(s, i), sizeof(float), "prelude tensor", e))) {
      gdn_prelude_clear(p);
      return e ? e->code : GDN_ERR_NOMEM;
    }
  p->shape = *s;
  return GDN_OK;
}

int gdn_prelude_copy(gdn_prelude *dst, const gdn_prelude *src, gdn_error *e) {
  int rc = gdn_prelude_alloc(dst, &src->shape, e);
  for (int i = 0; !rc && i < GDN_PRELUDE_N; i++)
    memcpy(dst->t[i], src->t[i], gdn_prelude_numel(&src->shape, i) * sizeof(float));
  return rc;
}

/* "(b, t, h, d)" etc. for flat index i of a tensor of rank r. */
void gdn_prelude_format_index(char *buf, size_t n, const int64_t *dims, int r, size_t i) {
  int64_t idx[4], rest = (int64_t)i;
  for (int d = r - 1; d >= 0; d--) {
    idx[d] = rest % dims[d];
    rest /= dims[d];
  }
  size_t at = 0;
  at += (size_t)snprintf(buf, n, "(");
  for (int d = 0; d < r && at < n; d++)
    at += (size_t)snprintf(buf + at, n - at, "%s%" PRId64, d ? ", " : "", idx[d]);
  if (at < n) snprintf(buf + at, n - at, ")");
}

int gdn_prelude_check_values(const gdn_prelude *p, const char *where, gdn_error *e) {
  for (int i = 0; i < GDN_PRELUDE_N; i++) {
    const size_t n = gdn_prelude_numel(&p->shape, i);
    for (size_t j = 0; j < n; j++) {
      const float x = p->t[i][j];
      if (isfinite(x) && gdn_bf16_round(x) == x) continue;
      int64_t dims[4];
      char ix[96];
      gdn_prelude_format_index(ix, sizeof ix, dims, gdn_prelude_dims(&p->shape, i, dims), j);
      return gdn_error_set(e, GDN_ERR_INPUT, "%s/%s: value %.9g at index %s is %s", where, gdn_prelude_names[i],
                           (double)x, ix, isfinite(x) ? "not a bfloat16 value" : "not finite");
    }
  }
  return GDN_OK;
}
