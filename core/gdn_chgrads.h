/* gdn_chgrads: the gradients of a call with a per-channel gate (gdn_chgate.h,
 * Kimi Delta Attention): a gdn_grads whose dg has the gate's shape
 * (B, T, Hv, Dk) instead of (B, T, Hv).  Every other tensor, the ownership
 * (gdn_grads_clear frees it) and the layouts are gdn_grads.h's; code that
 * takes a gdn_grads with a head-token dg must not be handed one of these
 * (gdn_grads_numel and gdn_grads_rel_fro count dg per head). */
#ifndef GDN_CHGRADS_H
#define GDN_CHGRADS_H

#include <stddef.h>

#include "gdn_grads.h"

/* Elements of tensor id for a per-channel gate: dg B T Hv Dk, the rest as
 * gdn_grads_numel. */
size_t gdn_chgrads_numel(const gdn_shape *s, gdn_grad_id id);
/* Zeroed gradients for a validated shape, dg per channel; frees what g held
 * before (g initialised). */
int gdn_chgrads_alloc(gdn_grads *g, const gdn_shape *s, gdn_dtype dtype, gdn_error *e);

#endif
