/* kern_kda_vjp: the backward of Kimi Delta Attention's token loop
 * (kern_kda.h's kern_kda_recurrent), what reverse-mode autodiff of that loop
 * computes, derived by hand, in the compute dtype.  The loss, cotangents
 * and gradients are gdn_grads.h's with dg per channel (gdn_chgrads.h:
 * (B, T, Hv, Dk)); dq and dk are summed over the value heads of a key head.
 *
 * Per item (b, key head) the forward is run storing the state before every
 * K-th token (K = ceil(sqrt(T))), then segments are recomputed from their
 * checkpoint and taken backwards.  Token t, value head jj, with the state h
 * before t, a_i = exp(g_ti), h'_ic = a_i h_ic (rounded), kv_c = sum_i h'_ic
 * K_i, vm_c = v_c - kv_c, delta_c = beta vm_c, h_t = h' + K delta^T, and S
 * the adjoint of h_t (dht after the last token), every operation rounded in
 * F, sums over i ascending and over columns c ascending:
 *   dQ_i += sum_c h_t,ic do_c;   S_ic += Q_i do_c
 *   dd_c = sum_i K_i S_ic;       dbeta = sum_c dd_c vm_c;   dv_c = beta dd_c
 *   dK_i += sum_c (S_ic delta_c - h'_ic dv_c)   (one sum over c)
 *   S'_ic = S_ic - K_i dv_c
 *   dg_i = sum_c S'_ic h'_ic;    S_ic = a_i S'_ic
 * then dK, dQ through the preparation (kern_rows_tmpl.h's, backwards: with
 * the L2 norm dx = r (dX - ((x . dX) / (ss + eps)) x), r = 1 / sqrt(ss +
 * eps) (times the scale for q); without it dk = dK, dq = scale dQ).  dh0 is
 * S after token 0.  Gradients are rounded to float32 for float32 compute
 * (dtype FLOAT32) and held as float64 for float64.
 *
 * Modes: kern_kda_recurrent's (no forward mutant): compute dtype float32,
 * bfloat16 or float64, every matmul mode (float64 ignores it), ftz, as
 * kern_vjp.h's GDN backward takes them:
 *   matmul   IEEE is the loop above (its bits as before the modes); a pass
 *            mode recomputes the step as kern_kda_recurrent does (k^T h'
 *            and the outer product k delta^T by kern_mm, then the add) and
 *            takes every product of the transpose by kern_mm in the mode
 *            (JAX's transposed dots keep the forward dot's precision):
 *            dQ_h = h_t do, S += (q do^T), dd = k^T S, dK_h = (S delta) -
 *            (h' dv), S' = S - (k dv^T), each product formed completely,
 *            then added; dbeta, dg and S = a S' are elementwise, as above
 *   bfloat16 the forward's rounding points (q, k, v, beta, the scale:
 *            kern_num.h's KERN_RP_INPUT, KERN_RP_Q_SCALE) and, at the
 *            casts' transposes, the cotangents of the bfloat16 values
 *            rounded to bfloat16 (gdn_bf16_round): dv and dbeta per token
 *            and value head; dk per value head, the heads then summed in
 *            float32; dq per value head, then rn(dq * scale) (the bfloat16
 *            multiply by the scale) before the heads are summed in
 *            float32 -- kern_vjp.h's vj_store; the L2 norm's backward in
 *            float32 (the norm is before the cast); g, the state and every
 *            adjoint in between float32
 *   ftz      as the forward (kern_num.h), dO and dht read as inputs
 * Float32 with IEEE products and float64 are the bits they were before
 * the modes (tests/kernels/test_kda_grad_modes.c).  The chunked kernel's
 * and the affine-prefix's backward are kern_kda_chunk_vjp.h's (they share
 * this file's reverse step).
 *
 * Backward mutants (testing only):
 *   dg-value-axis  the gate's gradient summed along the value axis of the
 *                  state: dg_d = sum_i S'_(i, d mod Dv) h'_(i, d mod Dv)
 *                  instead of dg_i = sum_c S'_ic h'_ic.
 *   dh-seam-dropped the affine-prefix backward (kern_kda_affine_vjp) drops
 *                  the state's adjoint at each device boundary (dh zeroed
 *                  at the seam instead of carried to the device before);
 *                  the token loop and the chunked backward have no seam
 *                  and compute the correct gradients under it.
 * Threads: items in parallel, each item's sums in the order above:
 * bit-identical for any thread count.
 */
#ifndef KERN_KDA_VJP_H
#define KERN_KDA_VJP_H

#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "kern_config.h"

typedef enum kern_kda_vjp_mutant {
  KERN_KDA_VJP_MUTANT_NONE = 0,
  KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS = 1,
  KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED = 2,
  KERN_KDA_VJP_MUTANT_COUNT
} kern_kda_vjp_mutant;

/* "none", "dg-value-axis", "dh-seam-dropped"; NULL out of range. */
const char *kern_kda_vjp_mutant_name(kern_kda_vjp_mutant m);

/* The gradients of the token loop at (in, gate) for ct, into out
 * (initialised; allocated here by gdn_chgrads_alloc). */
int kern_kda_recurrent_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                           const kern_config *cfg, kern_kda_vjp_mutant mutant, gdn_grads *out, gdn_error *e);

#endif
