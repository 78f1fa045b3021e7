#include "gdn_normal.h"

#include <math.h>

#include "gdn_bf16.h"
#include "gdn_rng.h"

/* The vector pass: every element's fast value, and whether its float32 is
 * certain (gdn_normal.h); the uncertain ones are drawn again after it, one
 * by one, as gdn_rng_normal_k draws them. */
size_t gdn_normal_fill(float *dst, size_t n, uint64_t key, uint64_t first, double sd, int bf16) {
  unsigned char sure[GDN_NORMAL_BATCH];
  size_t unsure = 0;
#pragma omp simd reduction(+ : unsure)
  for (size_t i = 0; i < n; i++) {
    const double u1 = gdn_rng_uniform_k(key, 2 * (first + i)), u2 = gdn_rng_uniform_k(key, 2 * (first + i) + 1);
    const double x = sd * (sqrt(-2.0 * gdn_normal_log(u1)) * gdn_normal_cos(6.283185307179586476925 * u2));
    const int ok = gdn_normal_sure(x);
    sure[i] = (unsigned char)ok;
    unsure += !ok;
    dst[i] = (float)x;
  }
  for (size_t i = 0; unsure && i < n; i++)
    if (!sure[i]) dst[i] = (float)(sd * gdn_rng_normal_k(key, first + i));
  if (bf16)
    for (size_t i = 0; i < n; i++) dst[i] = gdn_bf16_round(dst[i]);
  return unsure;
}
