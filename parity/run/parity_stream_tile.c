#include "parity_stream_tile.h"

#include <string.h>

#include "gdn_alloc.h"

void parity_stream_tile_init(parity_stream_tile *t) { gdn_inputs_init(&t->view); }

void parity_stream_tile_clear(parity_stream_tile *t) {
  gdn_free(t->view.q);
  gdn_free(t->view.k);
  parity_stream_tile_init(t);
}

/* q and k of key head 0 of `one` (a group of one key head) into key head j
 * of the view, every (b, t) row. */
static void tile_copy(gdn_inputs *view, const gdn_inputs *one, int64_t j) {
  const gdn_shape *s = &view->shape;
  const size_t row = (size_t)s->Dk * sizeof(float);
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t t = 0; t < s->T; t++) {
      const int64_t at = ((b * s->T + t) * s->Hk + j) * s->Dk, from = (b * s->T + t) * s->Dk;
      memcpy(view->q + at, one->q + from, row);
      memcpy(view->k + at, one->k + from, row);
    }
}

int parity_stream_tile_make(parity_stream_tile *t, const gdn_inputs *group, const gdn_shape *whole, int64_t k0,
                            const parity_group_inputs *src, gdn_error *e) {
  parity_stream_tile_clear(t);
  const int64_t hv = group->shape.Hv, v0 = k0 * (whole->Hv / whole->Hk);
  gdn_inputs *v = &t->view;
  *v = *group; /* v, g, beta, h0, segment ids: the group's, not owned */
  v->shape.Hk = hv;
  v->prelude = NULL;
  const size_t n = (size_t)(v->shape.B * v->shape.T * hv * v->shape.Dk);
  v->q = gdn_malloc(n * sizeof(float), "gqa-tile view q", e);
  v->k = v->q ? gdn_malloc(n * sizeof(float), "gqa-tile view k", e) : NULL;
  int rc = v->k ? GDN_OK : (e ? e->code : GDN_ERR_NOMEM);
  /* each key head the view reads, loaded once: value heads v0 + j with the
   * same (v0 + j) mod Hk share it */
  for (int64_t kh = 0; !rc && kh < whole->Hk; kh++) {
    int64_t j = 0;
    while (j < hv && (v0 + j) % whole->Hk != kh) j++;
    if (j == hv) continue;
    gdn_inputs one;
    gdn_inputs_init(&one);
    if (!(rc = src->load(src->ctx, kh, kh + 1, &one, NULL, e)))
      for (; j < hv; j++)
        if ((v0 + j) % whole->Hk == kh) tile_copy(v, &one, j);
    gdn_inputs_clear(&one);
  }
  if (rc) parity_stream_tile_clear(t);
  return rc;
}
