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
} oracle_config;

void oracle_config_init(oracle_config *cfg); /* p = 128, token form, C = 64,
                                                check_prec 0, column_block 0 */

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

#endif
