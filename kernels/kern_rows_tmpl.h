/* Template (see kern_real.h): step 1 of every kernel, the preparation of one
 * token's rows in the compute type F, shared by kern_scan, kern_affine_prefix
 * and kern_recurrent so that all three see the same q, k, v, g, beta.
 *
 * Rounding points, in order:
 *   x -> F           exact (float32 inputs, F = float32 or float64); with
 *                    ftz a subnormal input reads as a signed zero
 *                    (kern_num_in_f32)
 *   L2 norm          ss = x_0*x_0; ss = ss + x_i*x_i for i = 1 .. n-1 (each
 *                    square rounded, then the add rounded: jnp.sum(x*x) left
 *                    to right); inv = 1 / sqrt(ss + eps) with eps = (F)1e-6
 *                    (three roundings: add, sqrt, divide; XLA on CPU lowers
 *                    rsqrt as 1/sqrt); x_i = x_i * inv (one rounding)
 *   cast             KERN_RP_INPUT: to bfloat16 for compute dtype bfloat16,
 *                    after the norm (MaxText normalises in the input dtype,
 *                    then casts); identity otherwise.  Also v and beta.
 *   scale            has_scale ? (F)scale : 1 / sqrt((F)Dk)  (sqrt, divide),
 *                    then KERN_RP_Q_SCALE
 *   q * scale        one rounding, after the norm and the cast; then
 *                    KERN_RP_Q_SCALE
 * The KERN_RP_* hooks are kern_num.h's.
 */
#include <string.h>

#include "kern_real.h"
#include "kern_size.h"

#undef KROUND
#undef KIN
#if KERN_REAL == 32
#define KROUND(num, rp, x, n) kern_num_round_f32((num), (rp), (x), (n))
#define KIN(num, x) kern_num_in_f32((num), (x))
#else
#define KROUND(num, rp, x, n) ((void)(num), (void)(x), (void)(n))
#define KIN(num, x) ((void)(num), (double)(x))
#endif

/* The functions once per real type and translation unit (a file that
 * includes two templates which both include this one). */
#if (KERN_REAL == 32 && !defined(KERN_ROWS_TMPL_32)) || (KERN_REAL == 64 && !defined(KERN_ROWS_TMPL_64))
#if KERN_REAL == 32
#define KERN_ROWS_TMPL_32
#else
#define KERN_ROWS_TMPL_64
#endif

/* The query scale in F. */
KTMPL kreal KR(rows_scale)(const gdn_inputs *in, const kern_num *num) {
  kreal s = in->has_scale ? KC(in->scale) : KC(1) / KSQRT(KC(in->shape.Dk));
  KROUND(num, KERN_RP_Q_SCALE, &s, 1);
  return s;
}

/* y[0 .. n) = the prepared q or k row x (scale applied when is_q). */
KTMPL void KR(rows_qk)(const float *x, int64_t n, int l2norm, int is_q, kreal scale,
                        const kern_num *num, kreal *restrict y) {
  for (int64_t i = 0; i < n; i++) y[i] = (kreal)KIN(num, x[i]);
  if (l2norm) {
    kreal ss = y[0] * y[0];
    for (int64_t i = 1; i < n; i++) ss = ss + y[i] * y[i];
    kreal inv = KC(1) / KSQRT(ss + KC(1e-6));
    KSIMD for (int64_t i = 0; i < n; i++) y[i] = y[i] * inv;
  }
  KROUND(num, KERN_RP_INPUT, y, n);
  if (is_q) {
    KSIMD for (int64_t i = 0; i < n; i++) y[i] = y[i] * scale;
    KROUND(num, KERN_RP_Q_SCALE, y, n);
  }
}

/* A chunk's rows, the same steps as rows_qk / rows_v in another loop order.
 * rows_in: y[0 .. n) = x as read (the conversion to F; rows_v without the
 * cast).  rows_qk_finish: the rest of rows_qk on `rows` rows of length n
 * stored at stride n -- the L2 norm (each row's sum of squares in its own
 * order, i ascending, eight rows' sums carried side by side so that the
 * additions overlap instead of waiting on one another), the cast, the
 * scale. */
KTMPL void KR(rows_in)(const float *x, int64_t n, const kern_num *num, kreal *restrict y) {
#if KERN_REAL == 32
  if (!num->ftz) {
    memcpy(y, x, (size_t)n * sizeof *y);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) y[i] = (kreal)KIN(num, x[i]);
}

KTMPL void KR(rows_qk_finish)(kreal *y, int64_t rows, int64_t n, int l2norm, int is_q, kreal scale,
                               const kern_num *num) {
  if (rows <= 0) return;
  if (l2norm) {
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) {
      kreal *const b = y + r * n;
      kreal ss[8], inv[8];
      for (int u = 0; u < 8; u++) ss[u] = b[u * n] * b[u * n];
      for (int64_t i = 1; i < n; i++)
        for (int u = 0; u < 8; u++) {
          const kreal x = b[u * n + i];
          ss[u] = ss[u] + x * x;
        }
      for (int u = 0; u < 8; u++) inv[u] = KC(1) / KSQRT(ss[u] + KC(1e-6));
      for (int u = 0; u < 8; u++) {
        kreal *const yu = b + u * n;
        const kreal iu = inv[u];
        KSIMD for (int64_t i = 0; i < n; i++) yu[i] = yu[i] * iu;
      }
    }
    for (; r < rows; r++) {
      kreal *const yr = y + r * n;
      kreal ss = yr[0] * yr[0];
      for (int64_t i = 1; i < n; i++) ss = ss + yr[i] * yr[i];
      const kreal inv = KC(1) / KSQRT(ss + KC(1e-6));
      KSIMD for (int64_t i = 0; i < n; i++) yr[i] = yr[i] * inv;
    }
  }
  KROUND(num, KERN_RP_INPUT, y, rows * n);
  if (is_q) {
    KSIMD for (int64_t i = 0; i < rows * n; i++) y[i] = y[i] * scale;
    KROUND(num, KERN_RP_Q_SCALE, y, rows * n);
  }
}

KTMPL void KR(rows_v)(const float *x, int64_t n, const kern_num *num, kreal *restrict y) {
  for (int64_t i = 0; i < n; i++) y[i] = (kreal)KIN(num, x[i]);
  KROUND(num, KERN_RP_INPUT, y, n);
}

/* beta as read and cast (KERN_RP_INPUT); g as read (float32: not rounded). */
KTMPL kreal KR(rows_beta)(float x, const kern_num *num) {
  kreal b = (kreal)KIN(num, x);
  KROUND(num, KERN_RP_INPUT, &b, 1);
  return b;
}
KTMPL kreal KR(rows_g)(float x, const kern_num *num) { return (kreal)KIN(num, x); }

/* o as stored: F = float32 rounds to the output dtype (bfloat16 when q was
 * stored as bfloat16, kern_output_dtype); float64 stays float64. */
KTMPL inline double KR(rows_out)(kreal x, int out_bf16) {
#if KERN_REAL == 32
  return out_bf16 ? (double)gdn_bf16_round(x) : (double)x;
#else
  (void)out_bf16;
  return x;
#endif
}

/* Carving one per-thread scratch block into 64-byte aligned buffers. */
/* n rounded up to whole cache lines; saturates (kern_size.h) so that an
 * impossible size reaches gdn_malloc as SIZE_MAX and is refused. */
KTMPL inline size_t KR(rows_pad)(size_t n) {
  const size_t per_line = 64 / sizeof(kreal);
  return n > SIZE_MAX - per_line ? SIZE_MAX : (n + per_line - 1) / per_line * per_line;
}
static inline kreal *KR(rows_carve)(kreal **p, size_t n) {
  kreal *r = *p;
  *p += KR(rows_pad)(n);
  return r;
}

#endif /* once per real type */
