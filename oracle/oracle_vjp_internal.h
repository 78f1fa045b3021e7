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
#include "oracle_dd_arith.h"
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
/* The first failed item of a run (fail[item] >= 0: the token t < T where a
 * value left the tier's range, or T for dh0), as GDN_ERR_INPUT naming
 * b, the key head and t; GDN_OK when none failed.  `who` names the tier,
 * `range` what was left ("MPFR's exponent range"), `hint` ends the
 * message (may be ""). */
int orc_vjp_report_fail(const int64_t *fail, int64_t n_items, const gdn_shape *s, const char *who,
                        const char *range, const char *hint, gdn_error *e);
static inline mpfr_t *orc_vjp_col(mpfr_t *X, const orc_vjp *w, int64_t jj, int64_t c) {
  return X + (jj * w->nc + c) * w->Dk;
}

/* The dd tier's work item (oracle_vjp_dd_item.c): the G value heads' states
 * and adjoints in double-word, by rows -- element (i, c) of value head jj
 * at (jj Dk + i) Dv + c, hi words and lo words in separate arrays. */
enum { VDD_MP = 14 }; /* MPFR numbers of the preparation (5 are orc_prep's) */

/* A set of states: hi words, then lo words, st each. */
typedef struct orc_vdd {
  double *buf;
  int64_t Dk, Dv, G, K, nck, ns, s0, b, kh;
  size_t st, kd;                    /* G Dk Dv; Dk Dv */
  double *h, *S, *ck, *seg;         /* 1, 1, nck, K sets */
  double *tQ, *t1, *t2, *tg;        /* Dk Dv terms, hi then lo (2 Dk Dv each) */
  double *cv;                       /* column vectors: kv, vm, delta, dd, e (hi, lo), v, do */
  orc_dd *Kp, *Qp;                  /* Dk */
  orc_dd *dK, *dQ, *sK, *sQ, *row;  /* Dk: main and sample accumulators; a row */
  orc_dd *dv;                       /* G Dv */
  orc_dd *dg, *db, *sg, *sb, *a;    /* G */
  double *beta;                     /* G (exact) */
  orc_dd rk, ik, rq, iq, scale;     /* r and 1 / ss of k and q; the scale */
  orc_vars mp;                      /* 128 bits: prep (5), t, A, rows K, Q */
  mpfr_t *Km, *Qm;
  orc_prep prep;
} orc_vdd;

void orc_vdd_init(orc_vdd *w);
void orc_vdd_clear(orc_vdd *w);
int orc_vdd_alloc(orc_vdd *w, const gdn_shape *s, int64_t K, int64_t ns, gdn_error *e);
/* h0 and dht for (b, kh), the first sweep; 0 when exp(g_t) overflows
 * binary64 (*bad_t = t). */
int orc_vdd_begin(orc_vdd *w, const gdn_inputs *in, const gdn_cotangents *ct, int64_t b, int64_t kh,
                  int64_t *bad_t);
void orc_vdd_segment(orc_vdd *w, const gdn_inputs *in, int64_t m);
/* Token t backwards: its gradients into `out`; the sample's partial sums
 * stay in sK, sQ, sg, sb and dv for the certificate. */
void orc_vdd_rstep(orc_vdd *w, const gdn_inputs *in, const gdn_cotangents *ct, gdn_grads *out,
                   int64_t t);
/* The per-token preparation (shared with the KDA dd VJP): K (and r, 1 / ss
 * of k) for token t, Q too when with_q, at 128 bits rounded to
 * double-word; and its backward, dx = r (dX - ((x . dX) iss) x) with the
 * L2 norm, dX (times the scale for q) without, rounded into out. */
void orc_vdd_prep_token(orc_vdd *w, const gdn_inputs *in, int64_t t, int with_q);
void orc_vdd_prep_back(const orc_vdd *w, const float *x, const orc_dd *dX, orc_dd r, orc_dd iss, int is_q, int l2,
                       double *out);

#endif
