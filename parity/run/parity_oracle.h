/* parity_oracle: the reference a sweep measures against, by tier.
 *
 *   PARITY_ORACLE_MPFR  oracle_run_certified at --oracle-bits (token form):
 *                       every element certified against p + 64 bits
 *   PARITY_ORACLE_DD    oracle_run_dd: double-double (106 bits), ~40x
 *                       faster per MAC; certified on a sample of state
 *                       columns (PARITY_ORACLE_DD_SAMPLE per head) against
 *                       MPFR at --oracle-bits, and bounded on every column
 *                       by a running error bound (guaranteed_bits)
 *   PARITY_ORACLE_AUTO  MPFR when its estimated cost is at most
 *                       PARITY_ORACLE_AUTO_MPFR_MACS, else DD
 *   PARITY_ORACLE_NONE  no reference: only affine-prefix vs scan is judged
 * The result always says which tier produced it (AUTO resolved), so a
 * report can.
 */
#ifndef PARITY_ORACLE_H
#define PARITY_ORACLE_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "oracle.h"

typedef enum parity_oracle_tier {
  PARITY_ORACLE_NONE = 0,
  PARITY_ORACLE_MPFR = 1,
  PARITY_ORACLE_DD = 2,
  PARITY_ORACLE_AUTO = 3,
} parity_oracle_tier;

/* State columns per (b, value head) the dd tier checks against MPFR. */
#define PARITY_ORACLE_DD_SAMPLE 2

/* AUTO's threshold on the MPFR tier's cost, in 128-bit-equivalent MACs
 * (parity_oracle_mpfr_cost).  The certified MPFR run (p = 128 and 192 in
 * lockstep) measured ~280 ns per MAC on one core of the 2-core Zen 3
 * workstation (102 ns plain, x 2.76 certified; MPFR 4.2), ~140 ns on two:
 * 1e9 MACs is about 2.3 minutes there.  Beyond that the dd tier (~2.3 ns
 * per MAC per core plus the sample) is used.  For example 1,4096,2,128
 * (4.0e8 MACs) stays MPFR; 1,65536,1,128 (3.2e9) and 1,1048576,1,128
 * (5.2e10) go dd. */
#define PARITY_ORACLE_AUTO_MPFR_MACS 1.0e9

typedef struct parity_reference {
  parity_oracle_tier tier;      /* the tier that produced it: NONE, MPFR or DD */
  parity_oracle_tier requested; /* the tier asked for (AUTO stays AUTO) */
  const char *form;             /* "token" */
  int precision_bits;           /* MPFR: p; DD: 106 */
  int check_bits;               /* MPFR: p + 64; DD: the sample's MPFR precision (p) */
  int certified_bits;           /* min elementwise agreement with the check */
  int normwise_bits;            /* DD: normwise agreement on the sample; MPFR: -1 */
  int guaranteed_bits;          /* DD: the running error bound's figure, every
                                   element of every column; MPFR: -1 */
  int64_t bound_violations;     /* DD: sampled elements beyond their bound (0;
                                   -1 unchecked below 120 bits); MPFR: -1 */
  int64_t sampled_columns;      /* state columns certified (MPFR: all of them) */
  int64_t total_columns;        /* B Hv Dv */
  double mpfr_cost;             /* parity_oracle_mpfr_cost of the inputs */
  int from_fixture;             /* 1: read from a fixture's fresh /oracle */
  int borrowed;                 /* out is a shallow copy owned elsewhere
                                   (parity_reference_borrow): clear leaves it */
  gdn_outputs out;
  double seconds;
  char note[320];               /* why a stored /oracle was not used ("" otherwise) */
  int64_t spot_columns;         /* stored oracle: state columns recomputed by the spot check (0: none) */
  double spot_rel;              /* and their normwise difference from the stored values */
  /* --grad: the oracle's gradients for the run's cotangents, by the same
   * tier (oracle_vjp_certified at p, or oracle_vjp_dd with its sampled
   * MPFR certificate); has_grads 0 without. */
  int has_grads;
  gdn_grads grads;
  parity_oracle_tier grad_tier; /* MPFR or DD (parity_oracle_resolve_grads) */
  char grad_sha256[65];         /* a fixture's grad_problem_sha256 (fix_grads.h), "" otherwise */
  int grad_certified_bits;      /* min over the six tensors */
  int grad_normwise_bits;       /* DD: normwise agreement on the sample; MPFR: -1 */
  double grad_seconds;
  int grads_from_fixture;       /* 1: a fixture's stored /oracle/grads (parity_stored_grads.h) */
  double grad_spot_rel;         /* and its spot check's normwise difference (one key head recomputed) */
  char grad_note[240];          /* why a stored /oracle/grads was not used ("" otherwise) */
  /* parity_docstate.h (an output declares final_state per_document): the
   * oracle's state at each document's end, (n_docs, Hv, Dk, Dv) binary64,
   * owned (NULL: not computed), by docs_tier with its certified bits. */
  double *ht_docs;
  int64_t n_docs;
  parity_oracle_tier docs_tier;
  int docs_certified_bits;
} parity_reference;

/* Spot check of a stored oracle: up to `ncols` state columns (dv indices
 * spread evenly; columns evolve independently, and o[.., dv] depends on
 * column dv only) recomputed by the double-double oracle on inputs sliced
 * to those columns, for every (b, head) and token; *rel is the larger of
 * the o and ht normwise differences ||stored - recomputed|| / ||recomputed||
 * over those columns.  The caller compares it with a tolerance (both round
 * to binary64, so ~1e-16 is agreement; both norms are exact sums).  Sampled: a stored oracle wrong
 * only in columns not sampled passes. */
int parity_reference_spot_check(const gdn_inputs *in, const gdn_outputs *stored, int64_t ncols, double *rel,
                                int64_t *checked, gdn_error *e);
/* The same a head group at a time: the group's inputs and its slab of the
 * stored oracle add their sums of squares (exact: any order of groups) to
 * ro (o) and rh (ht); returns the columns checked, or -(error code).
 * spot_rel: *rel from the sums (+inf for NaN), as the whole check gives. */
struct parity_rel_acc;
int64_t parity_reference_spot_part(const gdn_inputs *in, const gdn_outputs *stored, int64_t ncols,
                                   struct parity_rel_acc *ro, struct parity_rel_acc *rh, gdn_error *e);
double parity_reference_spot_rel(const struct parity_rel_acc *ro, const struct parity_rel_acc *rh);

const char *parity_oracle_tier_name(parity_oracle_tier t);
/* "mpfr", "dd", "auto", "none". */
int parity_oracle_tier_parse(const char *s, parity_oracle_tier *t, gdn_error *e);

/* The certified MPFR tier's cost for shape s at `bits`, in MACs at 128
 * bits: 3 B Hv T Dk Dv multiply-adds, scaled by the limbs of the two
 * precisions it runs, (ceil(p/64) + ceil((p+64)/64)) / 5 (1 at p = 128). */
double parity_oracle_mpfr_cost(const gdn_shape *s, int bits);
/* AUTO resolved for shape s (other tiers returned as they are). */
parity_oracle_tier parity_oracle_resolve(parity_oracle_tier t, const gdn_shape *s, int bits);

void parity_reference_init(parity_reference *r);
void parity_reference_clear(parity_reference *r);
/* A shallow copy of `out` (a fixture's stored oracle): r->out points at its
 * arrays, which its owner frees after r is cleared; clear does not. */
void parity_reference_borrow(parity_reference *r, const gdn_outputs *out);
/* The oracle VJP's cost relative to the forward's (docs/gradients.md: the
 * reverse sweep recomputes the forward between checkpoints and carries an
 * adjoint state as large as the state, about 5x the forward's MACs). */
#define PARITY_ORACLE_VJP_COST 5.0
/* The tier of the gradients: `requested` as it is, except AUTO, which
 * counts the forward and the VJP together -- MPFR when (1 +
 * PARITY_ORACLE_VJP_COST) x parity_oracle_mpfr_cost <= the AUTO threshold,
 * else DD -- so a size whose forward alone would stay MPFR may take its
 * gradients from dd. */
parity_oracle_tier parity_oracle_resolve_grads(parity_oracle_tier requested, const gdn_shape *s, int bits);
/* The oracle's gradients of `in` for cotangents `ct` at `bits`, by the
 * tier parity_oracle_resolve_grads gives for `requested` (NONE: nothing);
 * r->grad_tier records it.  r->tier (the forward's) may differ: a stored
 * MPFR /oracle with dd gradients, or an MPFR forward with dd gradients. */
int parity_reference_compute_grads(parity_reference *r, const gdn_inputs *in, const gdn_cotangents *ct,
                                   parity_oracle_tier requested, int bits, gdn_error *e);
/* Computes the reference of `in` with the given tier and precision. */
int parity_reference_compute(parity_reference *r, const gdn_inputs *in, parity_oracle_tier tier,
                             int bits, gdn_error *e);
/* The same, reporting its progress to `progress` (NULL: none; oracle.h's
 * oracle_progress, e.g. parity_progress_oracle for the terminal line). */
/* A certificate's fields into r, as parity_reference_compute sets them
 * (the streamed run's reference, parity_oracle_group.h, shares them); dd:
 * GDN_ERR_INTERNAL when sampled elements exceeded the tier's bound. */
int parity_reference_take_dd(parity_reference *r, const oracle_dd_certificate *cert, gdn_error *e);
void parity_reference_take_mpfr(parity_reference *r, const oracle_certificate *cert, const gdn_shape *s);

int parity_reference_compute_progress(parity_reference *r, const gdn_inputs *in, parity_oracle_tier tier,
                                      int bits, const oracle_progress *progress, gdn_error *e);

#endif
