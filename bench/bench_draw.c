/* bench_draw: the synthetic normals, gdn_normal_fill against the draw it
 * replaces (glibc's log and cos per element, gdn_rng_normal_k), one thread,
 * in the same run, alternating, best of --reps; and the two compared
 * element for element (the fill must give the same bits).
 *
 *   build/bench/bench_draw [N (default 16777216)] [REPS (default 3)]
 *
 * Prints ns per normal of each, the ratio, and how many elements the fill
 * drew again with the C library (gdn_normal.h).  Exit 1 on any differing
 * element. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_clock.h"
#include "gdn_normal.h"
#include "gdn_rng.h"

static void draw_libm(float *x, size_t n, uint64_t key) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(1.0 * gdn_rng_normal_k(key, i));
}

static size_t draw_fast(float *x, size_t n, uint64_t key) {
  size_t redrawn = 0;
  for (size_t b = 0; b < n; b += GDN_NORMAL_BATCH)
    redrawn += gdn_normal_fill(x + b, n - b < GDN_NORMAL_BATCH ? n - b : GDN_NORMAL_BATCH, key, b, 1.0, 0);
  return redrawn;
}

int main(int argc, char **argv) {
  const size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)1 << 24;
  const int reps = argc > 2 ? atoi(argv[2]) : 3;
  if (n == 0 || reps < 1) {
    fprintf(stderr, "usage: bench_draw [N > 0] [REPS > 0]\n");
    return 2;
  }
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  if (!a || !b) return 2;
  const uint64_t key = gdn_rng_key(0, 3);
  double t_libm = 1e300, t_fast = 1e300;
  size_t redrawn = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = gdn_clock_seconds();
    draw_libm(a, n, key);
    double t1 = gdn_clock_seconds();
    redrawn = draw_fast(b, n, key);
    double t2 = gdn_clock_seconds();
    t_libm = t1 - t0 < t_libm ? t1 - t0 : t_libm;
    t_fast = t2 - t1 < t_fast ? t2 - t1 : t_fast;
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof *a) != 0;
  printf("bench_draw: %zu normals, one thread, best of %d: glibc log+cos %.2f ns each, gdn_normal_fill %.2f ns "
         "each: %.2fx faster; %zu drawn again with glibc (%.1e); %zu differing elements\n",
         n, reps, 1e9 * t_libm / (double)n, 1e9 * t_fast / (double)n, t_libm / t_fast, redrawn,
         (double)redrawn / (double)n, bad);
  free(a);
  free(b);
  return bad ? 1 : 0;
}
