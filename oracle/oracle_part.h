/* oracle_part: the oracle's forward on a subset of its heads, and its
 * certificate as accumulators that combine exactly -- what a run dealt
 * across processes needs from the oracle.  oracle/ knows no transport: the
 * dealing and the messages are parity/run/parity_dist_oracle.c's and mpi/'s.
 *
 * Why a head is the unit: every work item of both tiers lies inside one
 * head (b, value head j) -- its o[b, :, j, :] and ht[b, j] are a function
 * of that head's inputs alone (oracle.h) -- so heads can be computed in any
 * process and any grouping, and the selected heads' values are those of
 * the whole run bit for bit (the same operations on the same data; the
 * column blocking never changes a result, and is chosen for the selected
 * heads, so that a part of one head still spreads its columns over the
 * threads).  The dd tier's sample columns are a hash of
 * (b, j) and the full shape, so they too are the whole run's.
 *
 * heads: B Hv bytes, entry b Hv + j nonzero for a head to compute (NULL:
 * all).  out: allocated at the full shape (dtype float64); the heads not
 * selected are left zero.
 *
 * The tally.  Both certificates are functions of per-tensor accumulators
 * (oracle_internal.h, orc_acc): max |r| rounded down, and per bucket k of
 * relative agreement the max |x - r| rounded up, each a 53-bit magnitude
 * m 2^e.  A maximum is exact and independent of order, so merging the
 * tallies of parts that together compute every head exactly once gives the
 * accumulators, hence the certificate, of the whole run bit for bit
 * (oracle_tally_certificate, oracle_tally_dd_certificate).  The tally holds
 * them as binary64 numbers so that they travel exactly (m is a binary64,
 * e an integer below 2^31 in magnitude, exact in binary64), laid out as
 *   v[0]                       dd: sampled elements beyond their bound
 *                              (-1 unchecked); MPFR: -1
 *   v[1 + 2 (a (cap + 1) + i)] accumulator a, magnitude i: significand,
 *   and the next one           exponent; i = 0 is max |r|, i = 1 + k
 *                              bucket k
 * with accumulators a = 0 (o), 1 (ht) -- for dd the sample's -- and for dd
 * also 2 (o), 3 (ht) of the guaranteed bound.  cap = p (MPFR) or
 * ORACLE_DD_BITS.  Merging two dd tallies adds the counts (-1 stays -1).
 *
 * Errors: as the whole run's, same codes and words.  A part fails only for
 * its own heads; failed_head says whose error it is (b Hv + j; -1 for one
 * that is not a head's, e.g. the inputs check or memory), so that parts
 * can agree on the error the whole run reports: the least failed_head's
 * (the whole run reports the first failing head in (b, j) order), -1
 * before any head.  On error `out` is cleared and the tally emptied (its
 * failed_head kept).
 */
#ifndef ORACLE_PART_H
#define ORACLE_PART_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "oracle.h"
#include "oracle_vjp.h"

enum { ORACLE_TALLY_MPFR = 1, ORACLE_TALLY_DD = 2, ORACLE_TALLY_VJP = 3, ORACLE_TALLY_VJP_DD = 4 };

typedef struct oracle_tally {
  int tier;            /* ORACLE_TALLY_MPFR, ORACLE_TALLY_DD; 0 empty */
  int cap;             /* buckets per accumulator */
  int64_t failed_head; /* after an error (above); -1 otherwise */
  size_t n;            /* oracle_tally_size(tier, cap) doubles at v */
  double *v;
} oracle_tally;

void oracle_tally_init(oracle_tally *t);
void oracle_tally_clear(oracle_tally *t);
/* Doubles in a tally of this tier and cap (0 for an unknown tier or a
 * cap outside [1, ORACLE_PREC_MAX]). */
size_t oracle_tally_size(int tier, int cap);
/* An empty tally (every accumulator empty, count 0 or -1 as for a part
 * with no heads): what a receiver fills, or a merge starts from. */
int oracle_tally_alloc(oracle_tally *t, int tier, int cap, int64_t violations, gdn_error *e);
/* dst = the merge of dst and src (same tier and cap: GDN_ERR_INTERNAL
 * otherwise, naming both). */
int oracle_tally_merge(oracle_tally *dst, const oracle_tally *src, gdn_error *e);

/* oracle_run_certified on the selected heads (cfg->form either). */
int oracle_run_part(const gdn_inputs *in, const oracle_config *cfg, const unsigned char *heads,
                    gdn_outputs *out, oracle_tally *tally, gdn_error *e);
/* oracle_run_dd on the selected heads. */
int oracle_run_dd_part(const gdn_inputs *in, const oracle_dd_config *cfg, const unsigned char *heads,
                       gdn_outputs *out, oracle_tally *tally, gdn_error *e);

/* The certificate of the merged tally: oracle_run_certified's with the same
 * cfg when the parts covered every head once.  GDN_ERR_INTERNAL for a
 * tally of the other tier or another cap. */
int oracle_tally_certificate(const oracle_tally *t, const oracle_config *cfg, oracle_certificate *cert,
                             gdn_error *e);
/* oracle_run_dd's certificate, likewise (s the inputs' shape). */
int oracle_tally_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_dd_config *cfg,
                                oracle_dd_certificate *cert, gdn_error *e);

/* The certified MPFR VJP (oracle_vjp_certified) on a selection of its
 * items: an item is (b, key head kh) with the G = Hv / Hk value heads that
 * share it (dq, dk sum over them), index b Hk + kh in `items` (B Hk bytes;
 * NULL: all).  The selected items' dq[b, :, kh, :], dk[b, :, kh, :] and
 * dv, dg, dbeta, dh0 of value heads kh G .. kh G + G - 1 equal the whole
 * run's bit for bit, the others zero.  The tally (tier ORACLE_TALLY_VJP,
 * cap p) holds the six tensors' accumulators in gdn_grad_id order; v[0]
 * is -1; failed_head is the failing item's index. */
int oracle_vjp_part(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                    const unsigned char *items, gdn_grads *out, oracle_tally *tally, gdn_error *e);
int oracle_tally_vjp_certificate(const oracle_tally *t, const oracle_vjp_config *cfg,
                                 oracle_vjp_certificate *cert, gdn_error *e);
/* oracle_vjp_dd likewise (tier ORACLE_TALLY_VJP_DD, cap ORACLE_DD_BITS,
 * the six sampled accumulators; empty with no sample); s the shape. */
int oracle_vjp_dd_part(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                       const unsigned char *items, gdn_grads *out, oracle_tally *tally, gdn_error *e);
int oracle_tally_vjp_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_vjp_dd_config *cfg,
                                    oracle_vjp_dd_certificate *cert, gdn_error *e);

#endif
