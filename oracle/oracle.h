/* oracle: the Gated DeltaNet recurrence in MPFR, the ground truth.
 *
 * Inputs are read exactly (every float32 is an MPFR number at any precision
 * >= 24).  Every operation is an MPFR operation at the working precision p,
 * rounded to nearest (MPFR_RNDN); the only roundings are those of p-bit
 * arithmetic, listed step by step below, and the final rounding of o and ht
 * from p bits to binary64 (nearest; a double rounding exact -> p -> 53 bits).
 *
 * Constants:
 *   scale = Dk^-1/2 = mpfr_rec_sqrt(Dk), correctly rounded to p bits; or, when
 *           gdn_inputs.has_scale, the binary64 gdn_inputs.scale (exact for
 *           p >= 53, rounded to p bits below that);
 *   eps   = the binary64 nearest 1e-6 (the Python literal), exact for p >= 53,
 *           rounded to p bits below that.
 *
 * Per-token preparation, shared by both forms (key head kh = j / (Hv / Hk)):
 *   with l2norm_in_kernel:  n = sum_i x_i^2 (each square rounded, summed left
 *     to right from i = 0, each sum rounded); r = mpfr_rec_sqrt(n + eps) (the
 *     sum rounded, then r rounded); K_i = k_i * r_k (rounded);
 *     Q_i = q_i * (r_q * scale) (the factor rounded, then each product).
 *   without:  K_i = k_i (exact), Q_i = q_i * scale (one rounding).
 *   v, beta, g and h0 are used as read (exact).
 *
 * "dot(x, y)" below is sum_i x_i y_i with every product rounded and the sum
 * taken left to right from i = 0 (first term the rounded first product), every
 * partial sum rounded.  No fused operations are used.
 *
 * ORACLE_FORM_TOKEN, the token-level recurrence (algorithm.md), per (b, j) and
 * per column c of the Dk x Dv state h (columns evolve independently):
 *   a = exp(g_t); h_ic = h_ic * a; kv = dot(h_:c, K);
 *   delta = beta_t * (v_tc - kv)                    (two roundings);
 *   h_ic = h_ic + K_i * delta                       (two roundings);
 *   o_tc = dot(h_:c, Q)                             (with the updated h).
 *   Streamed: memory is O(Dk x column block) MPFR numbers per thread whatever
 *   T.  Work: 3 multiply-adds and 1 multiply per state element per token.
 *   A work item is (b, j, block of Dv columns); the block size never changes
 *   a result (every per-token quantity is computed identically in each block).
 *
 * ORACLE_FORM_CHUNKED, MaxText's chunked form with chunk size C, per (b, j)
 * and chunk (rows i, j in [0, n), n = C except the last chunk):
 *   G_0 = g_0, G_i = G_{i-1} + g_i (cumsum, restarting per chunk);
 *   E_ij = exp(G_i - G_j) for i > j (difference rounded, exp rounded; never
 *     evaluated above the diagonal: the mask is applied before exp); E_ii = 1;
 *   Kb_i = beta_i * K_i;  L_ij = dot(Kb_i, K_j) * E_ij for i > j;
 *   A = (I + L)^-1 by forward substitution: A_ii = 1,
 *     A_ij = -(sum_{m=j}^{i-1} L_im A_mj) (left to right) for i > j;
 *   U_i = sum_{m=0}^{i} A_im (beta_m V_m);  W_i = sum_{m=0}^{i} A_im ((Kb_m) * exp(G_m));
 *   scan, carry h (Dk x Dv):
 *     o_inter_i = dot(Q_i * exp(G_i), h_:c);   v_new_i = U_i - dot(W_i, h_:c);
 *     P_ij = dot(Q_i, K_j) * E_ij for j <= i;   O_i = o_inter_i + sum_{j<=i} P_ij v_new_j;
 *     h_kc = exp(G_{n-1}) h_kc + sum_j (K_jk * E_{n-1,j}) v_new_jc.
 *   T is zero-padded to a multiple of C.  Padded rows have k = q = v = beta =
 *   g = 0; they contribute exact zeros to every sum and leave G_{C-1} equal to
 *   G_{n-1}, so the last chunk is computed on its n real rows only, with the
 *   same values as the padded computation (signs of zero aside).  Memory:
 *   O(C^2 + C (Dk + Dv) + Dk Dv) MPFR numbers per thread, C = min(chunk, T).
 *   A work item is (b, j).
 *
 * Packed documents (gdn_inputs.seg, gdn_inputs_token_kind): both tiers of
 * the token form compute a padding token (segment id 0) as the step with
 * k = v = 0 and g = 0 (a = 1 exactly; the state passes through unchanged),
 * and, with packing = reset, a boundary token with a = 0 (the state is
 * exactly zero before its update).  The chunked form refuses segment ids.
 *
 * Range: MPFR's default exponent range (about 2^(+-2^30)) is used.  A value
 * overflowing it (reachable only with |g| or a cumulative |G| beyond ~7e8)
 * makes oracle_run fail with GDN_ERR_INPUT naming (b, head, t); a value
 * underflowing it becomes zero, as MPFR rounds it (such a value lies far
 * below the smallest binary64 subnormal, and only gates beyond ~7e8 in
 * magnitude could scale it back into view).  An output
 * finite in MPFR but outside binary64's range rounds to +-inf, or to zero or
 * a subnormal, as binary64 rounding does.
 *
 * Threads: OpenMP over independent work items (gdn_threads_get() threads at
 * most); results are bit-identical for any thread count.  gdn-side buffers
 * come from gdn_alloc (so failures can be injected); MPFR's limbs come from
 * GMP's allocator (whose failure GMP itself treats as fatal).
 */
#ifndef ORACLE_H
#define ORACLE_H

#include <stdint.h>

#include <mpfr.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"

#define ORACLE_PREC_MIN 24          /* every float32 input is exact */
#define ORACLE_PREC_MAX 4096
#define ORACLE_CHECK_PREC_MAX 8192
#define ORACLE_TAU_BITS 64          /* tau = 2^-ORACLE_TAU_BITS * max |r| */

/* Progress of a long run (optional, both tiers): fn(arg, done, total) is
 * called now and then -- about every thousandth of the work, and once at
 * the end with done == total -- with the work done so far in units of
 * token-columns, an MPFR column counted as ORACLE_PROGRESS_MPFR_WEIGHT dd
 * columns in the dd tier (what each costs, so that done / total tracks the
 * time; the weight is a guide and changes nothing else).  Calls come from
 * the run's worker threads but never two at once; fn must not call the
 * oracle.  A progress callback never changes a result. */
#define ORACLE_PROGRESS_MPFR_WEIGHT 64
typedef struct oracle_progress {
  void (*fn)(void *arg, int64_t done, int64_t total);
  void *arg;
} oracle_progress;

typedef enum oracle_form {
  ORACLE_FORM_TOKEN = 0,
  ORACLE_FORM_CHUNKED = 1,
} oracle_form;

typedef struct oracle_config {
  mpfr_prec_t prec;       /* working precision p, bits, in [ORACLE_PREC_MIN,
                             ORACLE_PREC_MAX] (default 128) */
  oracle_form form;
  int64_t chunk;          /* for ORACLE_FORM_CHUNKED: C >= 1 (checked only
                             for that form) */
  mpfr_prec_t check_prec; /* for oracle_run_certified: the higher precision,
                             in (p, ORACLE_CHECK_PREC_MAX]; 0 means p + 64.
                             Ignored by oracle_run. */
  int64_t column_block;   /* token form: Dv columns per work item; 0 = chosen
                             from Dv and the thread count.  Speed only: never
                             changes a result. */
  const oracle_progress *progress; /* NULL (default): none */
} oracle_config;

void oracle_config_init(oracle_config *cfg); /* p = 128, token form, C = 64,
                                                check_prec 0, column_block 0,
                                                no progress */

/* GDN_OK, or GDN_ERR_INPUT with a message naming the field (prec, form,
 * chunk, check_prec, column_block) and its value; GDN_ERR_INTERNAL for a
 * NULL cfg.  `certified` also checks check_prec. */
int oracle_config_validate(const oracle_config *cfg, int certified, gdn_error *e);

/* o and ht of the recurrence at precision p, rounded to binary64.
 * `out` is initialised by the caller and allocated here (dtype float64; what
 * it held before is freed).  The inputs are checked first as
 * gdn_inputs_check_values checks them (finite, beta in [0, 2]) and
 * has_scale's scale must be finite: GDN_ERR_INPUT otherwise.  On any error
 * `out` is left cleared.  Time O(B Hv T Dk Dv) (token form) or
 * O(B Hv T (C (Dk + Dv) + C^2 + Dk Dv)) (chunked). */
int oracle_run(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out, gdn_error *e);

/* The oracle's check of itself.
 *
 * The same form is run at p and at P = check_prec > p in lockstep (per work
 * item, per token or chunk, so memory stays independent of T); every element
 * x (the p-bit value, before rounding to binary64) of o and ht is compared
 * with r, its P-bit value:
 *   bits(x) = p                                          when x == r,
 *   bits(x) = clamp(floor(log2(max(|r|, tau) / |x - r|)), 0, p) otherwise,
 * where tau = 2^-64 * max |r| over the same tensor (o or ht): relative
 * agreement is meaningless at a zero, so elements below tau are judged
 * against that floor instead (r == 0, x != 0 is judged against tau alone;
 * a tensor whose every r is zero has tau = 0 and gives 0 bits for any x != 0).
 * certified_o / certified_ht are the minimum over each tensor (p for an empty
 * or exactly equal tensor), certified_bits the minimum of both.
 *
 * Exactness: |x - r| is computed at P bits rounded away from zero, exact
 * whenever x and r agree to at least 1 bit (both are multiples of ulp_P and
 * the difference is below 2^EXP(r)); floor(log2(|r| / |x - r|)) is then exact
 * (exponents and a significand comparison).  The tau branch compares max |r|
 * rounded down and |x - r| rounded up to 53 bits, so it can only understate,
 * by at most 1 bit and only when tau / |x - r| lies within 2^-52 (relative)
 * of a power of two.  Whatever the case the certificate never overstates.
 *
 * The outputs returned are the precision-p values rounded to binary64, bit
 * for bit those of oracle_run with the same cfg.  floor_o / floor_ht are tau
 * rounded to binary64 (nearest; 0 if it underflows).  On error `out` is left
 * cleared and `*cert` zeroed. */
typedef struct oracle_certificate {
  int precision_bits;  /* p */
  int check_bits;      /* the higher precision */
  int certified_bits;  /* min over o and ht */
  int certified_o, certified_ht;
  double floor_o, floor_ht; /* tau of each tensor, as binary64 */
} oracle_certificate;

int oracle_run_certified(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                         oracle_certificate *cert, gdn_error *e);

/* Number of bits two binary64 results x and r (r the reference) agree to,
 * by the rule above with p = cap_bits (53 for results rounded to binary64:
 * equal values give 53, values 1 ulp apart give 52), tau taken per tensor
 * over the finite |r|, minimum over o and ht.  Evaluated exactly (the
 * difference of two binary64 numbers is exact in binary64 under Sterbenz's
 * condition, otherwise it is formed in MPFR at 2200 bits, which holds any
 * such difference exactly).  A NaN in x or r, or an infinity where the other
 * differs, gives 0 bits; equal infinities count as equal.  Returns -1 when
 * the output shapes differ (B, T, Hv, Dk, Dv; Hk does not enter the
 * outputs), a tensor is missing or cap_bits < 0. */
int oracle_bits_agreed(const gdn_outputs *x, const gdn_outputs *r, int cap_bits);


/* ------------------------------------------------------------------------
 * The double-double ("dd") tier: the token-level recurrence in double-word
 * arithmetic, about 106 bits, some 40x faster per MAC than MPFR at 128 bits,
 * with a sampled MPFR certificate in every run.
 *
 * Arithmetic (oracle_dd_arith.h, with the algorithms and their bounds):
 * every state element, product and partial sum is a double-word number
 * (hi, lo), hi = RN(hi + lo).  With u = 2^-53:
 *   dd * dd   DWTimesDW3 (Joldes-Muller-Popescu 2017, Alg. 12)   < 4u^2
 *   dd + dd   AccurateDWPlusDW (ibid., Alg. 6)            3u^2 / (1 - 4u)
 *   dd + d    DWPlusFP (Alg. 4)  2u^2;   dd * d  DWTimesFP3 (Alg. 9)  2u^2.
 *
 * Per-token preparation (the O(Dk)-per-token quantities; scalars in MPFR
 * at ORACLE_DD_PREP_PREC = 128 bits, rounded to double-word by
 * hi = RN(x), lo = RN(x - hi) (x - hi exact) and Fast2Sum(hi, lo), a
 * relative error <= u^2 = 2^-106):
 *   with l2norm_in_kernel: n = sum_i x_i^2 exactly (every x_i^2 is an
 *     integer multiple of 2^-298 below 2^256: summed as an integer), then
 *     at 128 bits n rounded, n + eps rounded, mpfr_rec_sqrt rounded, for q
 *     times scale rounded; that factor r to double-word; K_i = r * k_i and
 *     Q_i = r_q * q_i by DWTimesFP3.  Relative error <= 3u^2 + 2^-125.
 *   without: K_i = k_i (exact); Q_i = scale * q_i by DWTimesFP3, scale
 *     (Dk^-1/2 correctly rounded to 128 bits, or has_scale's binary64,
 *     exact) to double-word: <= 3u^2 (exact with has_scale).
 *   a = exp(g_t): mpfr_exp at 128 bits, to double-word: <= u^2 + 2^-128.
 *   beta, v and h0 are binary64 as read (exact).
 * This is more accurate than the MPFR token form's own preparation (which
 * rounds every square and partial sum) and costs O(Dk) integer and
 * double-word operations plus ~10 MPFR operations per token and column
 * block, against the block's O(Dk x block) double-word work.
 *
 * Per (b, j) and column c of h, the MPFR token form's steps in its order,
 * each operation the double-word one above:
 *   h_ic = h_ic * a (dd*dd); kv = dot(h_:c, K) (products dd*dd, sums
 *   dd+dd left to right from i = 0); d = (-kv) + v_tc (dd+d);
 *   delta = d * beta_t (dd*d); h_ic = h_ic + K_i * delta (dd*dd, dd+dd);
 *   o_tc = dot(h_:c, Q) with the updated h.
 * Outputs: o and ht are the hi words of the final double-word values,
 * i.e. those values rounded to nearest binary64 (hi = RN(hi + lo)).  Since
 * the dd value lies within far less than half an ulp of the exact one,
 * this is a faithful rounding of the exact result, and the correct
 * rounding except when the exact value lies within the dd error of a
 * binary64 midpoint.
 *
 * Error, a priori (first order in u^2, per column of h and per token, a
 * worst-case estimate): the decay a h, 5u^2 |h| (a itself rounded to dd);
 * the dot kv, at most (3 Dk + 4) u^2 ||h|| ||K|| (Dk products at 4u^2, Dk - 1
 * sums at 3u^2 each, K's own 3u^2); delta, 4u^2 |delta| plus beta times
 * kv's error; the update, 11u^2 |K| |delta| + 3u^2 |h|.  With beta <= 2
 * and |delta| <= 2 (|v| + ||h||) that is L u^2 (||h|| + |v|), L = 6 Dk + 40
 * (~2^-96 for Dk = 128).  The recurrence is contractive (every factor
 * a (I - beta K K^T) has 2-norm <= a when beta |K|^2 is in [0, 2]; |K| <= 1
 * with the L2 norm, 1 +- 2^-24 for pre-normalised float32 k), so the
 * local errors of the last M = min(T, 1 / (1 - max a)) tokens add up and
 * none is amplified: ||error of h_t|| <= M L u^2 max(||h|| + |v|), and
 * o_t's error is |Q| times that plus its own dot, (3 Dk + 4) u^2 ||h|| |Q|.
 * Roundings that do not align (the usual case) grow like sqrt(M L)
 * instead; test_oracle_dd.c asserts both estimates and measures 102-105
 * bits normwise.  The certificate below measures what was reached.
 *
 * Vectorised across the columns of a block (they evolve independently):
 * the loops over columns are `omp simd` loops of correctly rounded binary64
 * operations with explicit fma(), so each column gets the same scalar
 * sequence of operations whatever the block, the vector width or the thread
 * count -- results are bit-identical for any of them.
 *
 * Guaranteed bound (every element of every column, every run): alongside
 * the double-word values each column carries, in binary64, a running
 * a-posteriori bound E on ||computed h_:c - exact h_:c||_2, where "exact"
 * is the recurrence in exact arithmetic on the exactly prepared K, Q and
 * a = exp(g) (the real-number result the tiers approximate):
 *   E' = rho E + SAFE l,  rho = a m,  m = max(1, |1 - beta ||K||^2|) (rho
 *   the factor's 2-norm, a when beta ||K||^2 <= 2),
 *   l = m (EPS_A + 4u^2) ||h'|| + (EPS_KQ + 8u^2) ||K|| |delta|
 *       + beta ||K|| B_kv + 3u^2 ||h_new||,
 *   B_kv = (EPS_KQ + 4u^2) sum_i |K_i h'_i| + 3u^2 sum_k |partial sum k of kv|
 * (h' = a h; EPS_KQ = 3u^2 + 2^-124, EPS_A = u^2 + 2^-128 the preparation's
 * errors), and o_tc is within SAFE (||Q|| E' + (EPS_KQ + 4u^2)
 * sum |Q_i h_i| + 3u^2 sum |partial sums of o|) of the exact o_tc.  Every
 * term is a published bound of the operation it covers (above) applied to
 * the computed operands, so the bound is rigorous to first order; SAFE =
 * 1 + 2^-7 covers the second-order terms (~u^4), the binary64 rounding of
 * the bound's own sums (< 2^-30 relative), and hi words standing for
 * double-word values; subnormal results add 16 Dk 2^-1070 per token.  The
 * bound covers rounding, not faults (a miscompiled lane, a wrong formula):
 * that is the sample's job, and the sample also checks the bound (below).
 * guaranteed_* is the certificate's rule applied with |x| - bound for |r|
 * and the bound for |x - r|, so it can only understate.  It is a
 * worst-case sum over the memory of the head: some 10-20 bits below what
 * is measured (75-88 bits on the test cases, measured 90-96), and an
 * element at or below the floor tau gets only log2(tau / bound), ~36
 * bits.  Cost: six binary64 accumulations per state element and token,
 * ~8 % of the double-word work.
 *
 * Certificate (sampled): in each (b, j), sample_columns contiguous state
 * columns starting at oracle_dd_sample_start() -- a hash of (b, j), the
 * same for any thread count -- are run by one work item that computes them
 * in dd (these are the output values) and, in lockstep, with the MPFR
 * token form at sample_prec bits.  Every sampled element (o_tc for all t,
 * and the sampled columns of ht) is compared, before rounding to binary64,
 * dd value against the MPFR value, by the rule of oracle_run_certified
 * (relative, against the floor tau = 2^-64 max|r| over the sampled elements
 * of that tensor), capped at ORACLE_DD_BITS; the subtraction is exact (the
 * dd value is held exactly in MPFR).  It certifies the sampled columns:
 * agreement of dd and MPFR there.  The other columns are computed by the
 * same operations on their own data and are not checked; a fault confined
 * to them is not seen (the tests check full agreement on shorter cases).
 * The MPFR values carry their own error (~2^-110 to 2^-120 at 128 bits,
 * see oracle_run_certified), far below the dd differences measured.  With
 * sample_prec >= 120 every sampled element is also checked against its
 * guaranteed bound: |dd - MPFR| > (1 + 2^-10) bound counts a violation
 * (MPFR's own error is ~2^-(p - 106) of the bound, far below the
 * allowance); a violation means the bound or the implementation is wrong.
 *
 * Range: binary64's.  A value that overflows (exp(g) > DBL_MAX, i.e.
 * g > 709.78, or a state growing under positive gates) fails the run with
 * GDN_ERR_INPUT naming (b, head, t); the MPFR tier has the exponent range
 * for it.  Values below ~2^-969 lose relative accuracy (absolute error of
 * order 2^-1074), as binary64 would.
 *
 * Memory: per thread, 2 Dk x block doubles of state, O(Dk + block) others,
 * the MPFR sample workspace (sample_columns columns) and O(B Hv Dv / block)
 * work items in all -- nothing grows with T.  Work items are column blocks
 * of one (b, j), the sample items (the slowest) first; threads take them
 * dynamically (gdn_threads_get() threads at most).
 */
#define ORACLE_DD_BITS 106      /* cap of the dd tier's certificate */
#define ORACLE_DD_PREP_PREC 128 /* MPFR precision of the per-token preparation */

typedef struct oracle_dd_config {
  mpfr_prec_t sample_prec; /* MPFR precision of the sampled check, in
                              [ORACLE_PREC_MIN, ORACLE_PREC_MAX] (default 128) */
  int64_t sample_columns;  /* columns sampled per (b, value head), >= 0
                              (default 2; more than Dv means all of them);
                              0: no sample, certified_bits 0 */
  int64_t column_block;    /* columns per work item; 0 = from Dv and the
                              thread count.  Speed only. */
  const oracle_progress *progress; /* NULL (default): none */
  /* Placement (a run streamed by head group): these inputs' value heads are
   * heads head0, head0 + 1, ... of a run of whole_hv value heads, so the
   * sample columns of head j are those of the whole run's head head0 + j
   * (oracle_dd_sample_start_in) and every group's tally merges into the
   * whole run's certificate bit for bit (oracle_part.h).  0, 0 (default):
   * the inputs are the whole run. */
  int64_t head0, whole_hv;
} oracle_dd_config;

void oracle_dd_config_init(oracle_dd_config *cfg); /* 128 bits, 2 columns, block 0, no progress */
/* GDN_OK, or GDN_ERR_INPUT naming the field (sample_prec, sample_columns,
 * column_block) and its value; GDN_ERR_INTERNAL for NULL. */
int oracle_dd_config_validate(const oracle_dd_config *cfg, gdn_error *e);

typedef struct oracle_dd_certificate {
  int precision_bits;   /* ORACLE_DD_BITS */
  int check_bits;       /* sample_prec */
  int certified_bits;   /* min(certified_o, certified_ht); 0 with no sample */
  int certified_o, certified_ht;
  int normwise_bits;    /* min over o and ht of floor(log2(max|r| / max|x - r|))
                           over the sampled elements, capped at ORACLE_DD_BITS:
                           the figure that speaks for the unsampled columns
                           (errors normwise are alike across columns) */
  double floor_o, floor_ht; /* tau of the sampled elements of each tensor */
  int guaranteed_bits;      /* min(guaranteed_o, guaranteed_ht): the running
                               bound's figure, every element of every column */
  int guaranteed_o, guaranteed_ht;
  int guaranteed_normwise;  /* min over o and ht of floor(log2(max|x| / max bound)) */
  int64_t bound_violations; /* sampled elements whose MPFR difference exceeded
                               their bound (0, or a bug); -1 when not checked
                               (no sample, or sample_prec < 120) */
  int64_t sample_columns;   /* per (b, value head): min(cfg, Dv) */
  int64_t sampled_columns;  /* B Hv sample_columns */
  int64_t total_columns;    /* B Hv Dv */
} oracle_dd_certificate;

/* o and ht by the dd tier, rounded to binary64 as above, with the sampled
 * certificate.  `out` as for oracle_run; the inputs are checked as
 * oracle_run checks them (same messages).  On any error `out` is left
 * cleared and `*cert` zeroed; cert == NULL is GDN_ERR_INTERNAL.  Time:
 * O(B Hv T Dk Dv) double-word operations plus the MPFR sample,
 * O(B Hv T Dk (sample_columns + 1)) MPFR operations, and the preparation,
 * O(B Hv T) MPFR and O(B Hv T Dk) double-word operations per column
 * block. */
int oracle_run_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
                  oracle_dd_certificate *cert, gdn_error *e);

/* The first sampled column of (b, j) for n sampled columns per head:
 * a hash of (b, j) modulo Dv - n + 1 (0 when n >= Dv).  The sample is
 * [start, start + min(n, Dv)). */
int64_t oracle_dd_sample_start(const gdn_shape *s, int64_t n, int64_t b, int64_t j);
/* The same for head j of inputs placed at head0 of a run of whole_hv value
 * heads (0: s->Hv): the whole run's head head0 + j's start. */
int64_t oracle_dd_sample_start_in(const gdn_shape *s, int64_t n, int64_t b, int64_t j, int64_t head0,
                                  int64_t whole_hv);

/* Testing hook (not thread-safe; set it between runs): every later dd run
 * adds rel * hi to state element (0, col) of (b, j) (hi its high word; the
 * sum taken in double-word arithmetic, so a rel below 2^-53 moves only the
 * low word) right after token t's update, o_t already computed, until
 * called with col < 0.  For tests of the certificate only. */
void oracle_dd_test_plant(int64_t b, int64_t j, int64_t col, int64_t t, double rel);

#endif
