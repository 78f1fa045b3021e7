/* Body of kern_solve_xla for one compute type (see kern_solve_xla.h,
 * kern_real.h). */
#include "kern_real.h"

#undef KSPLIT
#define KSPLIT KR(kern_split)

/* View of the split s from element `off` on (one row of the matrix). */
static inline KSPLIT KR(solve_xla_view)(const KSPLIT *s, int64_t off) {
  KSPLIT v = *s;
  if (v.x) v.x += off;
  for (int i = 0; i < 3; i++)
    if (v.part[i]) v.part[i] += off;
  return v;
}

void KR(kern_solve_xla)(int64_t n, kreal *L, kreal *X, KSPLIT *sl, KSPLIT *sx, kreal *row, kreal *ws) {
  const kern_matmul mm = KERN_MATMUL_HIGHEST; /* the expander's precision */
  for (int64_t i = 0; i < n; i++) {
    L[i * n + i] = 1;
    for (int64_t j = 0; j < n; j++) X[i * n + j] = i == j ? (i ? -1 : 1) : -KC(0.0);
  }
  KR(kern_split_fill)(sl, mm, L, (size_t)(n * n));
  KR(kern_split_fill)(sx, mm, X, (size_t)(n * n));
  for (int64_t i = 1; i < n; i++) {
    const KSPLIT r = KR(solve_xla_view)(sl, i * n);
    KR(kern_mm)(mm, 1, n, n, &r, n, 1, sx, n, 1, row, n, ws);
    kreal *xi = X + i * n;
    for (int64_t j = 0; j < n; j++) xi[j] = -row[j];
    KSPLIT v = KR(solve_xla_view)(sx, i * n); /* the new row's parts */
    KR(kern_split_fill)(&v, mm, xi, (size_t)n);
    sx->nz |= v.nz;
  }
}
