#include "parity_stream_seg.h"

#include <inttypes.h>
#include <string.h>

#include "gdn_alloc.h"

int parity_stream_seg_keep(gdn_inputs *hdr, const gdn_inputs *first, gdn_error *e) {
  hdr->packing = first->packing;
  if (!first->seg) return GDN_OK;
  if (first->shape.B != hdr->shape.B || first->shape.T != hdr->shape.T)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "segment ids of a head group: its (B, T) = (%" PRId64 ", %" PRId64
                         ") is not the run's (%" PRId64 ", %" PRId64 ")", first->shape.B, first->shape.T,
                         hdr->shape.B, hdr->shape.T);
  const size_t n = (size_t)(hdr->shape.B * hdr->shape.T);
  if (!(hdr->seg = gdn_malloc(n * sizeof *hdr->seg, "segment ids of a streamed run", e)))
    return e ? e->code : GDN_ERR_NOMEM;
  memcpy(hdr->seg, first->seg, n * sizeof *hdr->seg);
  return GDN_OK;
}

int parity_stream_seg_same(const gdn_inputs *hdr, const gdn_inputs *group, int64_t g, gdn_error *e) {
  if (!hdr->seg != !group->seg || (hdr->seg && group->packing != hdr->packing))
    return gdn_error_set(e, GDN_ERR_INTERNAL,
                         "head group %" PRId64 ": %s, unlike the first group's (segment ids are per token, the "
                         "same for every group)", g,
                         !group->seg ? "no segment ids" : hdr->seg ? "another packing" : "segment ids");
  if (!hdr->seg) return GDN_OK;
  if (group->shape.B != hdr->shape.B || group->shape.T != hdr->shape.T)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "head group %" PRId64 ": its segment ids' (B, T) is not the run's", g);
  const int64_t T = hdr->shape.T;
  for (int64_t i = 0; i < hdr->shape.B * T; i++)
    if (group->seg[i] != hdr->seg[i])
      return gdn_error_set(e, GDN_ERR_INTERNAL,
                           "head group %" PRId64 ": segment id at (b %" PRId64 ", t %" PRId64 ") is %" PRId32
                           " where the first group's is %" PRId32 " (segment ids are per token, the same for every "
                           "group)", g, i / T, i % T, group->seg[i], hdr->seg[i]);
  return GDN_OK;
}
