/* parity_stream_seg: packed documents in a run streamed by head group.
 *
 * Segment ids are per token (B, T), not per head: every head group of a
 * run reads the same ids (a fixture's fix_group_read copies them whole into
 * each slab; synthetic inputs draw them from the seed and the shape's B and
 * T alone, gdn_synth_segments).  So each group's kernels and oracle run on
 * the group's heads under the whole run's ids and packing, and the
 * document's view of the inputs (the number of documents, the packing, a
 * case's packing) is the first group's.  That premise is checked, not
 * assumed: every group's ids and packing must equal the first's.
 *
 * Memory: one (B, T) int32 copy, held for the run (4 B T bytes beside
 * whatever a group holds).
 */
#ifndef PARITY_STREAM_SEG_H
#define PARITY_STREAM_SEG_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"

/* hdr->seg set to a copy of first->seg (allocated here for hdr->shape's B
 * and T, which must be first's; freed with gdn_free), or left NULL when
 * first has none; hdr->packing is first's.  hdr->seg must be NULL. */
int parity_stream_seg_keep(gdn_inputs *hdr, const gdn_inputs *first, gdn_error *e);

/* GDN_ERR_INTERNAL naming head group g and its first differing token
 * (b, t) when group's segment ids or packing are not hdr's (present in one
 * and not the other counts); GDN_OK when they are. */
int parity_stream_seg_same(const gdn_inputs *hdr, const gdn_inputs *group, int64_t g, gdn_error *e);

#endif
