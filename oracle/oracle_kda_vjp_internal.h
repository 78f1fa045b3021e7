/* oracle_kda_vjp_internal: one work item (b, key head) of oracle_kda_vjp
 * (private to oracle/): orc_vjp's layout (oracle_vjp_internal.h: states as
 * columns of Dk numbers, the item's state columns [c0, c0 + nc) -- all Dv
 * for oracle_kda_vjp, the sampled ones for the dd tier's certificate --
 * column (jj, c0 + c) of a state set X at X + (jj nc + c) Dk) with
 * per-channel decays a and gradients dg (G Dk each; the sums over columns
 * run over the item's columns only). */
#ifndef ORACLE_KDA_VJP_INTERNAL_H
#define ORACLE_KDA_VJP_INTERNAL_H

#include "gdn_chgate.h"
#include "oracle_internal.h"
#include "oracle_kda_vjp.h"

typedef struct orc_kvjp {
  orc_vars vars;
  int64_t Dk, Dv, G, K, nck, nc;
  int64_t b, kh, c0;
  size_t st;               /* G nc Dk */
  mpfr_t *h, *S, *ck, *seg;
  mpfr_t *Kp, *Qp, *hp, *dK, *dQ, *dk, *dq;
  mpfr_t *dv, *dg, *dbeta; /* G nc, G Dk, G */
  mpfr_t *a, *beta;        /* G Dk, G */
  mpfr_ptr kv, delta, vm, dd, t1, t2, kr, kss, qr, qss;
  orc_prep prep;
} orc_kvjp;

void orc_kvjp_init(orc_kvjp *w);
void orc_kvjp_clear(orc_kvjp *w);
int orc_kvjp_alloc(orc_kvjp *w, mpfr_prec_t p, const gdn_shape *s, int64_t K, int64_t nc, gdn_error *e);
/* h0, dht of columns [c0, c0 + nc), the first sweep (checkpoints). */
void orc_kvjp_begin(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, int64_t b,
                    int64_t kh, int64_t c0);
void orc_kvjp_segment(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t m);
/* Token t backwards: its gradients into dq, dk, dv, dg, dbeta; S becomes the
 * adjoint of the state before t. */
void orc_kvjp_rstep(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, int64_t t);
static inline mpfr_t *orc_kvjp_col(mpfr_t *X, const orc_kvjp *w, int64_t jj, int64_t c) {
  return X + (jj * w->nc + c) * w->Dk;
}

#endif
