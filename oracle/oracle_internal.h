/* oracle_internal: the pieces oracle_run is built from (private to oracle/).
 *
 * Workspaces own their MPFR numbers, all at one precision, so every
 * mpfr_mul / mpfr_add of an inner loop has operands of equal precision and
 * takes MPFR's same-precision fast paths; nothing is allocated or converted
 * inside an inner loop.  Each thread owns one workspace per precision.
 */
#ifndef ORACLE_INTERNAL_H
#define ORACLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <mpfr.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "oracle.h"
#include "oracle_part.h"

/* n MPFR numbers at precision p: one gdn_malloc'd array, limbs from GMP. */
typedef struct orc_vars {
  mpfr_t *v;
  size_t n;
} orc_vars;

void orc_vars_init(orc_vars *s);
int orc_vars_alloc(orc_vars *s, size_t n, mpfr_prec_t p, const char *what, gdn_error *e);
void orc_vars_clear(orc_vars *s);

/* Per-token preparation of q and k (oracle.h, "Per-token preparation"). */
typedef struct orc_prep {
  int64_t Dk;
  int l2norm;
  mpfr_ptr scale, eps, ss, inv, t;
} orc_prep;

/* Points the context at five numbers of a workspace and sets scale and eps
 * for `in`. */
void orc_prep_setup(orc_prep *c, const gdn_inputs *in, mpfr_t *five);
/* X[0..Dk) = the prepared row x (K when is_q == 0, Q when 1). */
void orc_prep_row(const orc_prep *c, const float *x, mpfr_t *X, int is_q);

/* Token form: one work item (b, j, columns [c0, c0 + nc)). */
typedef struct orc_tok {
  orc_vars vars;
  int64_t Dk, ncmax;
  int64_t b, j, kh, c0, nc; /* the item being run */
  mpfr_t *h;                /* ncmax x Dk: column c of the state at h + c Dk */
  mpfr_t *K, *Q, *v, *o;    /* Dk, Dk, ncmax, ncmax */
  mpfr_ptr a, beta, kv, delta, t, t2;
  orc_prep prep;
} orc_tok;

void orc_tok_init(orc_tok *w);
int orc_tok_alloc(orc_tok *w, mpfr_prec_t p, int64_t Dk, int64_t ncmax, gdn_error *e);
void orc_tok_clear(orc_tok *w);
/* Loads h0 (or zeros) for the item. */
void orc_tok_begin(orc_tok *w, const gdn_inputs *in, int64_t b, int64_t j, int64_t c0, int64_t nc);
/* One token: updates h, leaves o_t's columns in w->o[0..nc). */
void orc_tok_step(orc_tok *w, const gdn_inputs *in, int64_t t);
static inline mpfr_ptr orc_tok_h(orc_tok *w, int64_t i, int64_t c) { return w->h[c * w->Dk + i]; }

/* Chunked form: one work item (b, j), all Dv columns. */
typedef struct orc_chk {
  orc_vars vars;
  int64_t Dk, Dv, C;
  int64_t b, j, kh;
  mpfr_t *Q, *K, *Kb, *Kbg, *W, *Qg;  /* C x Dk (Qg: Dk) */
  mpfr_t *V, *U, *Vn, *O;             /* C x Dv */
  mpfr_t *E, *L, *A, *P;              /* C x C, lower part used */
  mpfr_t *h;                          /* Dk x Dv, row-major */
  mpfr_t *beta, *G, *eG;              /* C */
  mpfr_ptr t, acc;
  orc_prep prep;
} orc_chk;

void orc_chk_init(orc_chk *w);
int orc_chk_alloc(orc_chk *w, mpfr_prec_t p, int64_t Dk, int64_t Dv, int64_t C, gdn_error *e);
void orc_chk_clear(orc_chk *w);
void orc_chk_begin(orc_chk *w, const gdn_inputs *in, int64_t b, int64_t j);
/* The chunk of rows [t0, t0 + n), n <= C: updates h, leaves O in w->O (n x Dv). */
void orc_chk_chunk(orc_chk *w, const gdn_inputs *in, int64_t t0, int64_t n);

/* A magnitude m 2^e with m in [0.5, 1), or m == 0 for zero: 53-bit
 * significand, unbounded exponent (MPFR values underflow no binary64). */
typedef struct orc_mag {
  double m;
  long e;
} orc_mag;

/* The certificate of one tensor, accumulated element by element, exact under
 * merging in any order (a max of magnitudes per bucket).
 *   rmax     max |r| rounded down to 53 bits;
 *   dmax[k]  max |x - r| rounded up to 53 bits over the elements whose
 *            relative agreement floor(log2(|r| / |x - r|)), clamped below at
 *            0, is k (k < cap); elements agreeing to >= cap bits are dropped.
 * The certified bits follow (oracle_cert.c): the largest b <= cap such that
 * every element with relative agreement < b still has
 * floor(log2(tau / |x - r|)) >= b. */
typedef struct orc_acc {
  int cap;
  orc_mag rmax;
  orc_mag *dmax; /* cap entries */
} orc_acc;

void orc_acc_init(orc_acc *a);
int orc_acc_alloc(orc_acc *a, int cap, const char *what, gdn_error *e);
void orc_acc_clear(orc_acc *a);
/* x at p bits, r at P > p bits, d scratch at P bits. */
void orc_acc_add(orc_acc *a, mpfr_srcptr x, mpfr_srcptr r, mpfr_ptr d);
/* x a binary64 value known to within `bound` of the truth. */
void orc_acc_add_d(orc_acc *a, double x, double bound);
void orc_acc_merge(orc_acc *dst, const orc_acc *src);
/* Certified bits of the tensor and its tau as binary64. */
int orc_acc_bits(const orc_acc *a, double *tau);
/* Normwise agreement: floor(log2(max|r| / max|x - r|)) in [0, cap]. */
int orc_acc_normwise(const orc_acc *a);


/* The inputs check both tiers share (oracle_run.c): shape, presence,
 * values, scale.  Messages start "oracle: ". */
int orc_check_inputs(const gdn_inputs *in, gdn_error *e);

/* Double-word token form (oracle.h, "The double-double tier"): one work
 * item (b, j, columns [c0, c0 + nc)).  The state is held by rows, row i of
 * the block at hh + i nc (hi words) and hl + i nc (lo words), so the
 * loops over the block's columns are unit-stride vector loops.  The
 * per-token scalars (the L2 norms, exp(g)) run in MPFR at
 * ORACLE_DD_PREP_PREC and are rounded to double-word. */
typedef struct orc_ddw {
  double *buf;                 /* one gdn_calloc: everything below */
  double *hh, *hl;             /* Dk x ncmax */
  double *Kh, *Kl, *Qh, *Ql;   /* Dk */
  double *xh, *xl, *oh, *ol;   /* ncmax: kv then delta; o */
  double *v;                   /* ncmax */
  /* The running error bound (oracle.h, "Guaranteed bound"), ncmax each:
   * E the bound on ||error of h_:c||_2 (kept across tokens); per token the
   * sums s2 = sum h'^2, sa = sum |K h'|, sS = sum of |partial sums of kv|,
   * n2 = sum h_new^2, qa = sum |Q h_new|, sO = sum of |partial sums of o|;
   * bo the bound on |error of o_tc|. */
  double *E, *s2, *sa, *sS, *n2, *qa, *sO, *bo;
  double knorm, qnorm;         /* upper bounds on ||K||_2, ||Q||_2 of the token */
  double ah, al, beta;         /* a = exp(g_t) as double-word; beta */
  double sh, sl;               /* the scale as double-word */
  int64_t Dk, ncmax;
  int64_t b, j, kh, c0, nc;    /* the item being run */
  orc_vars mp;                 /* 7 numbers at ORACLE_DD_PREP_PREC */
  mpfr_ptr A, tmp;
  orc_prep prep;
} orc_ddw;

void orc_ddw_init(orc_ddw *w);
int orc_ddw_alloc(orc_ddw *w, int64_t Dk, int64_t ncmax, gdn_error *e);
void orc_ddw_clear(orc_ddw *w);
/* Loads h0 (or zeros) for the item. */
void orc_ddw_begin(orc_ddw *w, const gdn_inputs *in, int64_t b, int64_t j, int64_t c0, int64_t nc);
/* One token: updates the state, leaves o_t in oh/ol[0..nc) and its error
 * bound in bo[0..nc) (E updated).  Returns 0, or 1 if exp(g_t) is not a
 * finite binary64 (the state is then left as it was). */
int orc_ddw_step(orc_ddw *w, const gdn_inputs *in, int64_t t);
/* x rounded to double-word: hi = RN(x), lo = RN(x - hi), then Fast2Sum.
 * tmp has x's precision (x - hi is exact there). */
void orc_dd_of_mpfr(mpfr_srcptr x, mpfr_ptr tmp, double *hi, double *lo);

/* oracle_tally.c: accumulator a of a tally (oracle_part.h's layout) from an
 * orc_acc of the same cap, and back (acc allocated here); GDN_OK when t is
 * allocated with this tier and cap, GDN_ERR_INTERNAL naming `what` and
 * both kinds otherwise. */
void orc_tally_put(oracle_tally *t, int a, const orc_acc *acc);
int orc_tally_get(const oracle_tally *t, int a, orc_acc *acc, gdn_error *e);
int orc_tally_same_kind(const oracle_tally *a, int tier, int cap, const char *what, gdn_error *e);
/* A failed part's tally: it holds partial sums nobody may merge, so it is
 * emptied, but the failing item stays named (failed_head) for the
 * caller's message (oracle_part.h). */
void orc_tally_drop(oracle_tally *t);
/* The drivers with a selection of heads and a tally (oracle_part.h);
 * heads == NULL and tally == NULL is the whole run.  The tally is
 * allocated by the caller at the right tier and cap. */
/* oracle_vjp.c's driver with a selection of items (b, key head), index
 * b Hk + kh, and a tally of GDN_GRADS_N accumulators (oracle_part.h). */
int orc_vjp_run(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                gdn_grads *out, oracle_vjp_certificate *cert, const unsigned char *sel,
                oracle_tally *tally, gdn_error *e);
int orc_vjp_dd_run(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                   gdn_grads *out, oracle_vjp_dd_certificate *cert, const unsigned char *sel,
                   oracle_tally *tally, gdn_error *e);
/* The shape the column block is chosen for: B Hv heads, or with a
 * selection (heads != NULL) one batch of the selected heads (at least 1),
 * so a part of few heads still spreads over the threads.  Speed only: the
 * block never changes a result.  (oracle_prep.c) */
gdn_shape orc_block_shape(const gdn_shape *s, const unsigned char *heads);
int orc_run_mpfr(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                 oracle_certificate *cert, const unsigned char *heads, oracle_tally *tally,
                 gdn_error *e);
int orc_run_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
               oracle_dd_certificate *cert, const unsigned char *heads, oracle_tally *tally,
               gdn_error *e);

/* The progress of one run (oracle.h, oracle_progress): work items add the
 * token-columns they finished; a call to the callback whenever the total
 * crosses the next thousandth, serialised (a critical section), and
 * orc_meter_done's final one.  Off (every call a no-op) when p or p->fn is
 * NULL.  Never touches a result. */
typedef struct orc_meter {
  const oracle_progress *p;
  int64_t total, step;
  int64_t done;     /* atomic */
  int64_t reported; /* under the critical section */
} orc_meter;

void orc_meter_init(orc_meter *m, const oracle_progress *p, int64_t total);
void orc_meter_add(orc_meter *m, int64_t n);
void orc_meter_done(orc_meter *m);
/* Tokens an item runs between two orc_meter_add calls. */
#define ORC_METER_TOKENS 1024

/* The config checks the four oracle tiers share (oracle_config.c), one
 * message each: who is the tier's name ("oracle", "oracle dd", "oracle_vjp",
 * "oracle_vjp_dd"), field the config's member, note what 0 means or "". */
/* "WHO config: FIELD = V; it must be >= 0NOTE" for a negative v. */
int orc_config_nonneg(const char *who, const char *field, int64_t v, const char *note, gdn_error *e);
/* "WHO config: FIELD = B bits; it must be in [MIN, MAX]" outside them. */
int orc_config_bits(const char *who, const char *field, long bits, gdn_error *e);
/* The dd tiers' sample placement (oracle_dd_config.head0, whole_hv). */
int orc_config_placement(const char *who, int64_t head0, int64_t whole_hv, gdn_error *e);
/* The self-check's precision with certified set: 0 (prec + 64), or above
 * prec and at most ORACLE_CHECK_PREC_MAX. */
int orc_config_check_prec(const char *who, long prec, long check_prec, int certified, gdn_error *e);

#endif
