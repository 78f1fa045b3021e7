/* kern_prefix: affine maps h -> A h + B of the chunked recurrence, their
 * composition, and the exclusive-prefix schedules of context parallelism.
 *
 * A pair (A, B) is A (Dk x Dk) and B (Dk x Dv), row-major, in F.
 *
 * compose   (A2, B2) o (A1, B1) = (A2 A1, A2 B1 + B2)   ("later o earlier")
 *           A2 A1 and A2 B1 through kern_mm in the matmul mode (A2 split
 *           once for both); then + B2 elementwise (a separate rounding, as
 *           jnp's `A2 @ B1 + B2`).
 * apply     h = A h0 + B: the product (kern_mm), then the add; h0 == NULL
 *           means 0 (then h = B exactly, the product of zeros being +-0).
 *
 * Inclusive prefix of one head over its D device pairs, in place: on entry
 * x[r] = (A[r], B[r]) is device r's local fold; on return x[r] = x[r] o
 * ... o x[0] (the composition of devices 0 .. r), in the order the schedule
 * composes.  Device r > 0 then starts from A_cum[r-1] h0 + B_cum[r-1], and
 * the final state is A_cum[D-1] h0 + B_cum[D-1].  Floating-point composition
 * is associative only up to rounding, so the schedule is part of what is
 * verified.  Write e.l for "combine earlier e with later l" = l o e (JAX's
 * fn(a, b) with a the earlier element: associative_scan returns
 * [x0, fn(x0, x1), fn(fn(x0, x1), x2), ...]).
 *
 *   SEQUENTIAL        the left fold: x[r] = x[r-1].x[r] for r = 1 .. D-1.
 *                     D - 1 compositions in D - 1 rounds.
 *
 *   ASSOCIATIVE_SCAN  jax.lax.associative_scan's recursion (jax/_src/lax/
 *                     control_flow/loops.py, `_scan`, read 2025), on level j
 *                     of the virtual array y_j (y_0 = x; m_j = floor(D / 2^j)
 *                     elements, y_j[t] stored in place at x[2^j - 1 + t 2^j]):
 *                       reduce   y_j[2i+1] = y_j[2i].y_j[2i+1],
 *                                i < floor(m_j / 2)   (combine(elems[0:-1:2],
 *                                elems[1::2]); for odd m_j the last element
 *                                is left out)
 *                       recurse  on y_{j+1} = those odd positions
 *                                (m_{j+1} = floor(m_j / 2); stops below 2)
 *                       even     y_j[2i+2] = y_j[2i+1].y_j[2i+2],
 *                                i < ceil(m_j / 2) - 1 (combine(odd[0:-1],
 *                                elems[2::2]) for even m_j, combine(odd,
 *                                elems[2::2]) for odd m_j); y_j[0] kept
 *                     then JAX interleaves even and odd elements, which in
 *                     place is where they already are.  Execution order:
 *                     reduce 0, reduce 1, ..., reduce L-1, even L-1, ...,
 *                     even 0 (L = floor(log2 D) levels with m_j >= 2).
 *                     D = 8 (a.b = b o a; round = one batched combine):
 *                       round 1  reduce 0: x1=x0.x1  x3=x2.x3  x5=x4.x5  x7=x6.x7
 *                       round 2  reduce 1: x3=x1.x3  x7=x5.x7
 *                       round 3  reduce 2: x7=x3.x7
 *                       round 4  even 1:   x5=x3.x5
 *                       round 5  even 0:   x2=x1.x2  x4=x3.x4  x6=x5.x6
 *                                                 (11 compositions, 5 rounds)
 *                     D = 5:
 *                       round 1  reduce 0: x1=x0.x1  x3=x2.x3     (x4 left out)
 *                       round 2  reduce 1: x3=x1.x3
 *                       round 3  even 0:   x2=x1.x2  x4=x3.x4
 *                                                 (5 compositions, 3 rounds)
 *                     Compositions: c(D) = sum_{j<L} (m_j - 1)
 *                     = 2D - popcount(D) - 1 - floor(log2 D) (using
 *                     sum_j floor(D/2^j) = 2D - popcount(D)).  Rounds (non-
 *                     empty combines): each level has its reduce, and an even
 *                     step unless m_j = 2: 2L - 1 when m_{L-1} = 2 (D's two
 *                     leading bits are 10), else 2L.
 *
 *   HILLIS_STEELE     ceil(log2 D) rounds; in round k (k = 0, 1, ...) every
 *                     r >= 2^k becomes x[r] o x[r - 2^k] using the previous
 *                     round's values (computed in place for r descending).
 *                     sum_k (D - 2^k) compositions.
 *
 * `broken` (testing only, kern_mutant.h) is a set of KERN_PREFIX_BROKEN_*
 * bits.  ROUNDS runs Hillis-Steele's strides largest first (hs-reversed;
 * other schedules ignore it); TWO_ROUNDS stops Hillis-Steele after the
 * strides 1 and 2 (hs-two-rounds: exact for D <= 4).  ORDER (compose-order) composes every pair in
 * the wrong order, e o l instead of l o e, in every schedule; a correct gate
 * must reject the result for D >= 3 (for D = 2 only the final state is
 * wrong: device 1 starts from A_cum[0] h0 + B_cum[0] whatever the order).
 *
 * Stats: the prefix counts what it does -- compositions and rounds -- and,
 * when a trace buffer is given, records each composition as (round, later
 * index, earlier index) (the position written, and the one composed into it)
 * in execution order, so tests can check the pairing itself.
 *
 * Memory: `work` has kern_prefix_work_elems(schedule, D, Dk, Dv, mode)
 * elements (one pair plus kern_affine_work_elems) for every schedule; compose
 * and apply take kern_affine_work_elems(mode, Dk, Dv) (kern_gemm's workspace
 * and the splits of A2, A1, B1).  No allocation.
 * Cost: one composition is 2 Dk^2 (Dk + Dv) flops per pass.
 */
#ifndef KERN_PREFIX_H
#define KERN_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "kern_config.h"

typedef struct kern_prefix_stats {
  int64_t compositions; /* compositions performed */
  int64_t rounds;       /* dependent steps (a round's compositions are independent) */
  int64_t *trace;       /* NULL, or 3 * trace_cap entries: round (from 1), later, earlier */
  int64_t trace_cap;    /* compositions the trace can hold; later ones are counted only */
} kern_prefix_stats;

/* GDN_OK for a known schedule, else GDN_ERR_INPUT naming it. */
int kern_prefix_supported(kern_prefix schedule, gdn_error *e);

size_t kern_affine_work_elems_f32(kern_matmul mode, int64_t dk, int64_t dv);
size_t kern_affine_work_elems_f64(kern_matmul mode, int64_t dk, int64_t dv);
size_t kern_prefix_work_elems_f32(kern_prefix schedule, int64_t devices, int64_t dk, int64_t dv,
                                  kern_matmul mode);
size_t kern_prefix_work_elems_f64(kern_prefix schedule, int64_t devices, int64_t dk, int64_t dv,
                                  kern_matmul mode);

/* (Aout, Bout) = (A2, B2) o (A1, B1); outputs must not overlap inputs. */
void kern_affine_compose_f32(kern_matmul mode, int64_t dk, int64_t dv, const float *A2,
                             const float *B2, const float *A1, const float *B1, float *Aout,
                             float *Bout, float *work);
void kern_affine_compose_f64(kern_matmul mode, int64_t dk, int64_t dv, const double *A2,
                             const double *B2, const double *A1, const double *B1, double *Aout,
                             double *Bout, double *work);

/* h (Dk x Dv) = A h0 + B; h must not overlap the inputs. */
void kern_affine_apply_f32(kern_matmul mode, int64_t dk, int64_t dv, const float *A,
                           const float *B, const float *h0, float *h, float *work);
void kern_affine_apply_f64(kern_matmul mode, int64_t dk, int64_t dv, const double *A,
                           const double *B, const double *h0, double *h, double *work);

/* A: D blocks of Dk x Dk, B: D blocks of Dk x Dv, contiguous; in place.
 * `stats` may be NULL; its counters are set (not added to). */
enum { KERN_PREFIX_BROKEN_ORDER = 1, KERN_PREFIX_BROKEN_ROUNDS = 2, KERN_PREFIX_BROKEN_TWO_ROUNDS = 4 };

void kern_prefix_inclusive_f32(kern_prefix schedule, int broken, kern_matmul mode,
                               int64_t devices, int64_t dk, int64_t dv, float *A, float *B,
                               float *work, kern_prefix_stats *stats);
void kern_prefix_inclusive_f64(kern_prefix schedule, int broken, kern_matmul mode,
                               int64_t devices, int64_t dk, int64_t dv, double *A, double *B,
                               double *work, kern_prefix_stats *stats);

#endif
