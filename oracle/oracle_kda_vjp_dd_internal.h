/* oracle_kda_vjp_dd_internal: one work item (b, key head) of the KDA VJP's
 * double-word tier (private to oracle/): the GDN dd VJP's workspace
 * (orc_vdd, oracle_vjp_internal.h: its buffers, layout and preparation)
 * with the per-channel decays a and the per-channel sums of dg, main and
 * sample (G Dk each, element (jj, i) at jj Dk + i). */
#ifndef ORACLE_KDA_VJP_DD_INTERNAL_H
#define ORACLE_KDA_VJP_DD_INTERNAL_H

#include "gdn_chgate.h"
#include "oracle_kda_vjp.h"
#include "oracle_vjp_internal.h"

typedef struct orc_kvdd {
  orc_vdd v;             /* v.a, v.dg, v.sg unused */
  orc_dd *a, *dg, *sg;   /* G Dk each (one allocation at a) */
} orc_kvdd;

void orc_kvdd_init(orc_kvdd *w);
void orc_kvdd_clear(orc_kvdd *w);
int orc_kvdd_alloc(orc_kvdd *w, const gdn_shape *s, int64_t K, int64_t ns, gdn_error *e);
/* h0 and dht for (b, kh), the first sweep; 0 when an exp(g_ti) overflows
 * binary64 (*bad_t = t).  w->v.s0 set by the caller. */
int orc_kvdd_begin(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, int64_t b,
                   int64_t kh, int64_t *bad_t);
void orc_kvdd_segment(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t m);
/* Token t backwards: its gradients into `out` (dg per channel); the
 * sample's partial sums stay in v.sK, v.sQ, sg, v.sb and v.dv. */
void orc_kvdd_rstep(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                    gdn_grads *out, int64_t t);

#endif
