/* oracle_dd_rows: the double-word row loops the dd forward tier
 * (oracle_dd.c) and the dd VJP tier (oracle_vjp_dd_item.c) both run on a
 * state row h = (rh, rl) of n columns: the decay h *= a, and the product
 * sum x (+)= h k.  One copy, so the two tiers cannot drift apart in the
 * operations or their order; each is an `omp simd` loop whose iterations
 * are independent columns (the same bits vectorised or not: see
 * oracle_dd_arith.h).  Each dd operation is a chain some 10 operations
 * deep, so the decay and the product sum are separate loops over the row
 * (the row is in L1 for the second): one loop holding both keeps too few
 * columns in flight. */
#ifndef ORACLE_DD_ROWS_H
#define ORACLE_DD_ROWS_H

#include <stdint.h>

#include "oracle_dd_arith.h"

/* h = a h, in place. */
static inline void orc_dd_rows_scale(double *restrict rh, double *restrict rl, orc_dd a, int64_t n) {
#pragma omp simd
  for (int64_t c = 0; c < n; c++) {
    orc_dd h = orc_dd_mul((orc_dd){rh[c], rl[c]}, a);
    rh[c] = h.hi, rl[c] = h.lo;
  }
}

/* x = h k (first) or x = x + h k: one term of x = h^T K over the rows. */
static inline void orc_dd_rows_dot(const double *restrict rh, const double *restrict rl, orc_dd k, int first,
                                   double *restrict xh, double *restrict xl, int64_t n) {
  if (first) {
#pragma omp simd
    for (int64_t c = 0; c < n; c++) {
      orc_dd p = orc_dd_mul((orc_dd){rh[c], rl[c]}, k);
      xh[c] = p.hi, xl[c] = p.lo;
    }
  } else {
#pragma omp simd
    for (int64_t c = 0; c < n; c++) {
      orc_dd x = orc_dd_add((orc_dd){xh[c], xl[c]}, orc_dd_mul((orc_dd){rh[c], rl[c]}, k));
      xh[c] = x.hi, xl[c] = x.lo;
    }
  }
}

#endif
