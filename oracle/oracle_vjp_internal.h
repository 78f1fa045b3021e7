/* oracle_vjp_internal: one work item of oracle_vjp (private to oracle/).
 *
 * A workspace holds, at one precision, the states and adjoints of the G
 * value heads of one (b, key head) -- the state columns [c0, c0 + nc) of
 * each (all Dv of them for oracle_vjp; the sampled ones for the dd tier's
 * certificate) -- the checkpoints and one segment of states, all as columns
 * of Dk numbers: column (jj, c0 + c) of an array X of states starts at
 * X + (jj nc + c) Dk.  The sums over columns (dK, dQ, dg, dbeta) then run
 * over the item's columns only.
 */
#ifndef ORACLE_VJP_INTERNAL_H
#define ORACLE_VJP_INTERNAL_H

#include "gdn_grads.h"
#include "oracle_internal.h"
#include "oracle_vjp.h"

typedef struct orc_vjp {
  orc_vars vars;
  int64_t Dk, Dv, G, K, nck, nc;
  int64_t b, kh, c0;
  size_t st;              /* numbers in one state set: G nc Dk */
  mpfr_t *h, *S;          /* current state, adjoint */
  mpfr_t *ck, *seg;       /* nck and K state sets */
  mpfr_t *Kp, *Qp, *hp;   /* prepared K, Q; h' of one column */
  mpfr_t *dK, *dQ;        /* Dk accumulators */
  mpfr_t *dk, *dq;        /* Dk: the token's gradients (after the preparation) */
  mpfr_t *dv, *dg, *dbeta; /* G nc, G, G: the token's gradients */
  mpfr_t *a, *beta, *kv;  /* G, G, nc scratch */
  mpfr_ptr delta, vm, dd, t1, t2, kr, kss, qr, qss;
  orc_prep prep;
} orc_vjp;

void orc_vjp_init(orc_vjp *w);
int64_t orc_vjp_checkpoint(const oracle_vjp_config *cfg, int64_t T);
int orc_vjp_alloc(orc_vjp *w, mpfr_prec_t p, const gdn_shape *s, int64_t K, int64_t nc,
                  gdn_error *e);
void orc_vjp_clear(orc_vjp *w);
/* Loads h0 for (b, kh) and columns [c0, c0 + nc), runs the first sweep
 * (checkpoints), sets S = dht. */
void orc_vjp_begin(orc_vjp *w, const gdn_inputs *in, const gdn_cotangents *ct, int64_t b,
                   int64_t kh, int64_t c0);
/* Recomputes segment m's states into w->seg (seg[i] = state before token mK + i). */
void orc_vjp_segment(orc_vjp *w, const gdn_inputs *in, int64_t m);
/* Token t of segment m (reverse order): leaves the token's gradients in
 * dq, dk, dv, dg, dbeta and S the adjoint of the state before t. */
void orc_vjp_rstep(orc_vjp *w, const gdn_inputs *in, const gdn_cotangents *ct, int64_t t);
static inline mpfr_t *orc_vjp_col(mpfr_t *X, const orc_vjp *w, int64_t jj, int64_t c) {
  return X + (jj * w->nc + c) * w->Dk;
}

#endif
