/* oracle_vjp: the exact gradients of the token recurrence in MPFR, the
 * ground truth of the backward pass (gdn_grads.h says what is computed).
 *
 * The forward is the token form of oracle.h, operation for operation, at the
 * working precision p (round to nearest everywhere).  The backward is the
 * reverse sweep of that recurrence.  With h' = a h_{t-1}, kv = h'^T K,
 * delta = beta (v - kv), h_t = h' + K delta^T, o_t = h_t^T Q, and the
 * adjoint S of h_t (S = dht, or 0, after the last token), token t does, per
 * value head and state column c (each product and sum rounded to p bits;
 * sums over i left to right from i = 0, over columns c in order, over the
 * value heads of a key head in order):
 *   S_ic += Q_i do_tc                  (the output's cotangent enters)
 *   dQ_i += h_t,ic do_tc               (h_t recomputed from h_{t-1})
 *   dd_c  = sum_i K_i S_ic;   dK_i += S_ic delta_c
 *   dbeta = sum_c dd_c (v_tc - kv_c);   dv_tc = beta dd_c
 *   e_c   = -(beta dd_c);   dK_i += h'_ic e_c;   S'_ic = S_ic + K_i e_c
 *   dg    = sum_c sum_i S'_ic h'_ic     (d/dg of a = exp(g) is a)
 *   S_ic  = a S'_ic                    (the adjoint of h_{t-1})
 * so the adjoint is itself an affine recurrence, S_{t-1} = a_t (I - beta_t
 * K_t K_t^T)(S_t + Q_t do_t^T), the transposed factor of the forward's; dh0
 * is S after token 0.  dK and dQ are summed over the value heads that share
 * the key head (GQA), then taken through the preparation (oracle.h): with
 * the preparation's factor r (K = r k, or Q = r q with r = scale (ss)^-1/2
 * or scale) and ss = sum x^2 + eps,
 *   with the L2 norm   dx = r (dX - ((x . dX) / ss) x)
 *                      (x . dX a dot as above; the quotient, the product
 *                      by x_i, the difference and the product by r each
 *                      rounded)
 *   without            dk = dK (exact),  dq = scale dQ (one rounding).
 * Every gradient is rounded once from p bits to binary64 (nearest).
 *
 * Memory (checkpointing): a work item is (b, key head), holding the G =
 * Hv / Hk value heads' states and adjoints.  A first forward sweep stores the
 * state before token mK for every m (ceil(T / K) checkpoints); the reverse
 * sweep takes the segments [mK, mK + K) from the last, recomputes the states
 * of the segment from its checkpoint (K states), and steps back through it.
 * MPFR numbers per thread: (ceil(T / K) + K + 3) G Dk Dv + O(Dk + G Dv);
 * with the default K = ceil(sqrt(T)) that is about 2 sqrt(T) G Dk Dv -- the
 * only growth with T, and beside the inputs and the gradients.  Work: the
 * forward state update three times (first sweep, segment, reverse step)
 * and the adjoint once, about 5x the forward oracle's multiply-adds.
 *
 * Certificate: as oracle_run_certified, the same sweep at P = check_prec
 * (0: p + 64) in lockstep, token by token; every gradient element's p-bit
 * value is compared with its P-bit value by oracle.h's rule (relative, with
 * the floor tau = 2^-64 max |r| per tensor); certified[i] per tensor,
 * certified_bits the minimum.
 *
 * Inputs are checked as oracle_run checks them; the cotangents must have the
 * inputs' shape and be finite (the message names the tensor and the first
 * bad flat index).  Range as oracle.h: a non-finite value fails the run with
 * GDN_ERR_INPUT naming (b, key head, t).  Threads: items in parallel, each
 * item's sums in the fixed order above, so results are bit-identical for
 * any thread count.  On any error `out` is left cleared.
 */
#ifndef ORACLE_VJP_H
#define ORACLE_VJP_H

#include <stdint.h>

#include <mpfr.h>

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "oracle.h" /* oracle_progress */

typedef struct oracle_vjp_config {
  mpfr_prec_t prec;       /* p in [ORACLE_PREC_MIN, ORACLE_PREC_MAX], default 128 */
  mpfr_prec_t check_prec; /* certified only: in (p, ORACLE_CHECK_PREC_MAX]; 0 = p + 64 */
  int64_t checkpoint;     /* K >= 0 tokens between stored states; 0 = ceil(sqrt(T)).
                             Memory only: never changes a result. */
  const oracle_progress *progress; /* NULL (default): none.  The work is
                             counted in reverse-step token-heads: each (b,
                             key head) item adds T x (its value heads) as
                             its reverse sweep runs, so a part counts its
                             selected items only; as oracle.h's, calls are
                             serialised and never change a result. */
} oracle_vjp_config;

void oracle_vjp_config_init(oracle_vjp_config *cfg); /* 128 bits, check 0, K 0, no progress */
int oracle_vjp_config_validate(const oracle_vjp_config *cfg, int certified, gdn_error *e);

typedef struct oracle_vjp_certificate {
  int precision_bits, check_bits;
  int certified_bits;                /* min over the six tensors */
  int certified[GDN_GRADS_N];        /* per tensor, gdn_grad_id order */
  double floor[GDN_GRADS_N];         /* tau of each tensor, as binary64 */
} oracle_vjp_certificate;

/* The gradients of sum(do .* o) + sum(dht .* ht), rounded to binary64.
 * `out` initialised by the caller, allocated here (dtype float64). */
int oracle_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
               gdn_grads *out, gdn_error *e);
/* The same values, bit for bit, with the certificate. */
int oracle_vjp_certified(const gdn_inputs *in, const gdn_cotangents *ct,
                         const oracle_vjp_config *cfg, gdn_grads *out,
                         oracle_vjp_certificate *cert, gdn_error *e);


/* ------------------------------------------------------------------------
 * The double-double ("dd") tier of the VJP, for long sequences: the same
 * sweep (operations, order, checkpoints) in double-word arithmetic
 * (oracle_dd_arith.h: products DWTimesDW3 / DWTimesFP3, sums
 * AccurateDWPlusDW / DWPlusFP, about 2^-104 per operation), as oracle.h's
 * dd tier does the forward.  Per-token scalars in MPFR at
 * ORACLE_DD_PREP_PREC = 128 bits, rounded to double-word: the prepared rows
 * K and Q (oracle.h's preparation at 128 bits, each element rounded),
 * a = exp(g), and for the preparation's backward r and 1 / ss; beta, v, h0,
 * do and dht are binary64 as read (exact).  The backward of the preparation
 * is dx = r (dX - ((x . dX) (1 / ss)) x) in double-word operations.  Each
 * gradient is the hi word of its double-word value (its rounding to
 * binary64, hi = RN(hi + lo)).
 *
 * Sums over state columns: each value head's sampled columns (below) are
 * summed into their own accumulators (dK, dQ over the value heads of the
 * key head in order and the sampled columns ascending; dg, dbeta per head),
 * the other columns ascending into the main ones; the two are added at the
 * end of the token (main + sample).  So the sample's partial sums exist on
 * their own and are what the certificate checks.
 *
 * Certificate (sampled, as oracle_run_dd's): per item (b, key head),
 * sample_columns contiguous state columns starting at
 * oracle_dd_sample_start(s, n, b, kh G) (the same columns in each of the G
 * value heads) are also run by oracle_vjp's MPFR sweep at sample_prec bits
 * in lockstep, token by token.  Compared, dd value (held exactly) against
 * MPFR value by oracle.h's rule, capped at ORACLE_DD_BITS: dv and dh0 on the
 * sampled columns; and the sampled columns' partial sums of dQ and dK (the
 * adjoints of the prepared rows, before the preparation's backward; counted
 * under dq and dk), dg and dbeta.  What is not covered: the other columns
 * (the same operations on their own data), the final main + sample
 * additions and the preparation's backward (a few double-word operations
 * per element, ~2^-100 relative).  normwise_bits: floor(log2(max|r| /
 * max|x - r|)) over the sampled elements, min over tensors.  No running
 * error bound is carried (the forward's guaranteed_bits has no counterpart
 * here yet).
 *
 * Range: binary64's; exp(g) or a value overflowing it fails the run with
 * GDN_ERR_INPUT naming (b, key head, t).  Memory per thread: (ceil(T / K) +
 * K + 2) G Dk Dv + 4 Dk Dv double-words (16 bytes each: the states, and the
 * per-(i, c) terms of the sums over columns) plus the MPFR sample's
 * (ceil(T / K) + K + 3) G Dk n numbers.  The per-column steps run as omp
 * simd loops over the columns (state by rows), each column's sequence of
 * operations the scalar one, so the vector width changes no bit.  Work: the dd forward's ~5x, plus
 * the sample.  Threads: items in parallel; bit-identical for any count.
 */
typedef struct oracle_vjp_dd_config {
  mpfr_prec_t sample_prec; /* [ORACLE_PREC_MIN, ORACLE_PREC_MAX], default 128 */
  int64_t sample_columns;  /* >= 0, default 2 (more than Dv: all); 0 = no sample */
  int64_t checkpoint;      /* as oracle_vjp_config's */
  int64_t head0, whole_hv; /* placement, as oracle_dd_config's (0, 0: the whole run) */
  const oracle_progress *progress; /* as oracle_vjp_config's (a sampled
                             column's MPFR steps are not weighted apart) */
} oracle_vjp_dd_config;

void oracle_vjp_dd_config_init(oracle_vjp_dd_config *cfg);

typedef struct oracle_vjp_dd_certificate {
  int precision_bits;          /* ORACLE_DD_BITS */
  int check_bits;              /* sample_prec */
  int certified_bits;          /* min over the tensors; 0 with no sample */
  int certified[GDN_GRADS_N];
  int normwise_bits;
  int64_t sample_columns, sampled_columns, total_columns;
} oracle_vjp_dd_certificate;

/* `out` as oracle_vjp's; cert required.  On error `out` cleared, `*cert`
 * zeroed. */
int oracle_vjp_dd(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                  gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e);

/* Testing hook (not thread-safe; set between runs): every later dd run adds
 * rel * hi to adjoint element (0, col) of value head jj of item (b, kh)
 * right after token t's reverse step, until called with col < 0.  For the
 * certificate's negative control only. */
void oracle_vjp_dd_test_plant(int64_t b, int64_t kh, int64_t jj, int64_t col, int64_t t, double rel);

#endif
