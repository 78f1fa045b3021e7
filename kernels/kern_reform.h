/* kern_reform: correct reformulations of the stock chunked GDN (testing only).
 *
 * Each row is a correct float32 implementation of the same recurrence as the
 * stock scan (kern_chunk_tmpl.h), differing only in evaluation order: one
 * choice point changed, everything else in the stock order.  They are what
 * a correct implementation written elsewhere may look like (XLA's or
 * torch's cumsum, a BLAS trsm, another blocking of the products), so the
 * tolerance rules must pass every one of them on every seed and gate regime
 * (`gdn-parity trust`, parity_trust.h); unlike the mutants (kern_mutant.h)
 * none of them is wrong.
 *
 * The chunked rows share one plain implementation (kern_reform.c): float32,
 * IEEE products with kern_gemm's order (the first product, then one fma per
 * inner index, ascending), the stock rounding points of kern_chunk_tmpl.h
 * (load and L2 norm as kern_rows_tmpl.h, G, the decays, kb K^T masked,
 * A = (I + S)^-1 by fma forward substitution, U = A vb, W = A (kb eG),
 * qg, attn, Kt, then the body), one head at a time.  KERN_REFORM_PLAIN is
 * that implementation unchanged: bit-identical to kern_scan with float32,
 * IEEE matmuls, no FTZ and the substitution solve (tests/kernels/
 * test_reform.c asserts it), which proves that each other row differs from
 * the stock scan by its one change alone.  The rows:
 *   solve-dot        A by triangular solve in inner-product form: A_ij =
 *                    -(sum_{m=j}^{i-1} S_im A_mj), one dot per element,
 *                    multiply then add, m ascending (no fma)
 *   solve-rhs        no inverse: U and W by forward substitution on their
 *                    right-hand sides, U_i = vb_i - sum_{m<i} S_im U_m (fma,
 *                    m ascending), W likewise on kb eG
 *   wy-assoc         the WY products associated the other way: (A diag(beta))
 *                    V and ((A diag(beta)) diag(eG)) K instead of A (beta V)
 *                    and A ((beta K) eG)
 *   kkt-beta-after   S = diag(beta) (K K^T): beta applied after the product.
 *                    (k (beta k)^T read transposed is bitwise (beta k) k^T:
 *                    a product commutes exactly; the other order is this.)
 *   decay-split      exp(G_i - G_j) as exp(G_i) exp(-G_j), and exp(G_last -
 *                    G_i) as exp(G_last) exp(-G_i), where -G_j <= 80 (exp
 *                    stays below 6e34, no overflow); the difference's exp
 *                    elsewhere
 *   cumsum-pairwise  G_i = the pairwise sum of g_0 .. g_i (halves, recursively)
 *   cumsum-hillis-steele  G by the log-depth inclusive prefix: for s = 1, 2,
 *                    4, ..: G_i += G_{i-s} (i >= s), as XLA's and torch's
 *                    parallel cumsum may evaluate it
 *   cumsum-blelloch  G by the work-efficient prefix (up-sweep, down-sweep over
 *                    the chunk padded to a power of two; exclusive, then + g_i)
 *   gemm-blocked     every product's inner sum in blocks of 8 (an fma chain
 *                    per block, then the blocks' sums added left to right)
 *   token-loop       the token recurrence (kern_recurrent: no chunks)
 *   float64          the stock scan in float64 (kern_scan, binary64 compute),
 *                    o and ht rounded to float32 once
 * Backward: none of the chunked rows has one (the VJP kernels recompute the
 * stock forward, not the row's); float64 has kern_scan_vjp in binary64
 * rounded to float32 (kern_reform_vjp).
 *
 * Packed documents (segment ids) are refused.  Heads run
 * in parallel (OpenMP over batch x value heads, each head on one thread), so
 * the output does not depend on the thread count.  Memory: per thread
 * O(C^2 + C (Dk + Dv) + Dk Dv) floats. */
#ifndef KERN_REFORM_H
#define KERN_REFORM_H

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"

typedef enum kern_reform {
  KERN_REFORM_PLAIN = 0, /* the stock order (control: bit-identical to kern_scan IEEE) */
  KERN_REFORM_SOLVE_DOT,
  KERN_REFORM_SOLVE_RHS,
  KERN_REFORM_WY_ASSOC,
  KERN_REFORM_KKT_BETA_AFTER,
  KERN_REFORM_DECAY_SPLIT,
  KERN_REFORM_CUMSUM_PAIRWISE,
  KERN_REFORM_CUMSUM_HILLIS_STEELE,
  KERN_REFORM_CUMSUM_BLELLOCH,
  KERN_REFORM_GEMM_BLOCKED,
  KERN_REFORM_TOKEN_LOOP,
  KERN_REFORM_FLOAT64,
  KERN_REFORM_COUNT
} kern_reform;

typedef struct kern_reform_row {
  kern_reform id;
  const char *name; /* the CLI spelling */
  const char *doc;  /* what changes against the stock order */
  int has_vjp;      /* kern_reform_vjp gives its gradients */
} kern_reform_row;

const kern_reform_row *kern_reform_row_of(kern_reform r); /* row 0 for out of range */
const char *kern_reform_name(kern_reform r);
/* By name; the message lists the names. */
int kern_reform_parse(const char *s, kern_reform *out, gdn_error *e);

/* The row's forward at chunk size C (ignored by token-loop) on D devices:
 * o (float32 values, held as binary64) and ht into out (allocated here, as
 * gdn_outputs_alloc; cleared on failure).  D > 1 is the context-parallel
 * form with token sharding, as kern_affine_prefix splits the sequence:
 * device r holds tokens [r T/D, (r+1) T/D), chunked from its own start and
 * zero padded; each device's affine map h -> M_r h + Bc_r folded from its
 * chunks' maps (A_n = exp(G_last) I - Kt^T W, B_n = Kt^T U; M = A_n M,
 * Bc = A_n Bc + B_n), the carries by the sequential prefix from h0, each
 * piece replayed from its carry with the row's chunk order, ht the
 * composition; float64 is kern_affine_prefix in binary64; token-loop has no
 * devices (D ignored).  GDN_ERR_INPUT for C < 1, a D that does not divide T,
 * or packed documents. */
int kern_reform_forward(const gdn_inputs *in, int64_t C, int64_t D, kern_reform r, gdn_outputs *out,
                        gdn_error *e);

/* The row's gradients for cotangents ct (rows with has_vjp only; the others
 * GDN_ERR_INPUT), float32 values. */
int kern_reform_vjp(const gdn_inputs *in, const gdn_cotangents *ct, int64_t C, kern_reform r, gdn_grads *g,
                    gdn_error *e);

#endif
