/* kern_prefix: affine maps h -> A h + B of the chunked recurrence, their
 * composition, and the exclusive-prefix schedules of context parallelism.
 *
 * A pair (A, B) is A (Dk x Dk) and B (Dk x Dv), row-major, in F.
 *
 * compose   (A2, B2) o (A1, B1) = (A2 A1, A2 B1 + B2)   ("later o earlier")
 *           A2 A1 and A2 B1 through kern_gemm (p ascending, fma, from the
 *           first product); then + B2 elementwise (a separate rounding, as
 *           jnp's `A2 @ B1 + B2`).
 * apply     h = A h0 + B: the product, then the add; h0 == NULL means 0
 *           (then h = B exactly, the product of zeros being +-0).
 *
 * Inclusive prefix of one head over its D device pairs, in place: on entry
 * A[r], B[r] are device r's local fold (A_loc[r], B_loc[r]); on return
 * (A_cum[r], B_cum[r]) = (A_loc[r], B_loc[r]) o (A_cum[r-1], B_cum[r-1])
 * with (A_cum[0], B_cum[0]) = (A_loc[0], B_loc[0]).  Device r > 0 then starts
 * from A_cum[r-1] h0 + B_cum[r-1], and the final state is
 * A_cum[D-1] h0 + B_cum[D-1].
 *
 * Schedules (the order of composition is part of what is verified, since
 * floating-point composition is associative only up to rounding):
 *   SEQUENTIAL        the left fold r = 1 .. D-1 above.  Implemented.
 *   ASSOCIATIVE_SCAN  jax.lax.associative_scan's tree.   Not yet.
 *   HILLIS_STEELE     log2 D rounds over ppermute.       Not yet.
 * `broken` (testing only, kern_config.broken_compose) composes in the
 * wrong order, (A_cum[r-1], B_cum[r-1]) o (A_loc[r], B_loc[r]); a correct
 * gate must reject the result for D >= 3 (for D = 2 only the final state is
 * wrong: device 1 starts from A_cum[0] h0 + B_cum[0] whatever the order).
 *
 * Memory: `work` has kern_prefix_work_elems(schedule, D, Dk, Dv) elements
 * (one pair for SEQUENTIAL), `gws` kern_gemm_ws_elems(mode).  No allocation.
 * Cost: SEQUENTIAL does D - 1 compositions, 2 (D-1) Dk^2 (Dk + Dv) flops.
 */
#ifndef KERN_PREFIX_H
#define KERN_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "kern_config.h"

/* GDN_OK for an implemented schedule, else GDN_ERR_INPUT naming it. */
int kern_prefix_supported(kern_prefix schedule, gdn_error *e);
size_t kern_prefix_work_elems(kern_prefix schedule, int64_t devices, int64_t dk, int64_t dv);

/* (Aout, Bout) = (A2, B2) o (A1, B1); outputs must not overlap inputs. */
void kern_affine_compose_f32(kern_matmul mode, int64_t dk, int64_t dv, const float *A2,
                             const float *B2, const float *A1, const float *B1, float *Aout,
                             float *Bout, float *gws);
void kern_affine_compose_f64(kern_matmul mode, int64_t dk, int64_t dv, const double *A2,
                             const double *B2, const double *A1, const double *B1, double *Aout,
                             double *Bout, double *gws);

/* h (Dk x Dv) = A h0 + B; h must not overlap the inputs. */
void kern_affine_apply_f32(kern_matmul mode, int64_t dk, int64_t dv, const float *A,
                           const float *B, const float *h0, float *h, float *gws);
void kern_affine_apply_f64(kern_matmul mode, int64_t dk, int64_t dv, const double *A,
                           const double *B, const double *h0, double *h, double *gws);

/* A: D blocks of Dk x Dk, B: D blocks of Dk x Dv, contiguous; in place.
 * The schedule must be supported (kern_prefix_supported). */
void kern_prefix_inclusive_f32(kern_prefix schedule, int broken, kern_matmul mode,
                               int64_t devices, int64_t dk, int64_t dv, float *A, float *B,
                               float *work, float *gws);
void kern_prefix_inclusive_f64(kern_prefix schedule, int broken, kern_matmul mode,
                               int64_t devices, int64_t dk, int64_t dv, double *A, double *B,
                               double *work, double *gws);

#endif
