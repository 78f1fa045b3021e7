/* parity_xsum: the exact sum of non-negative binary64 terms, mergeable.
 *
 * A metric streamed by head group (parity_stream.h) meets its elements in
 * another order than the whole-tensor pass (group by group, not in the
 * tensor's memory order), so a floating-point running sum would round
 * differently.  This accumulator keeps the sum exactly -- each term's 53-bit
 * significand added into the 128-bit counter of its binary exponent (a
 * Kulisch accumulator, 2^75 terms before a counter could overflow) -- so
 * the result, rounded once to nearest (ties to even) at the end, is the
 * same for any order of the terms, any split into partial accumulators and
 * any order of merging them: the correctly rounded value of the exact sum.
 *
 * Terms must be >= +0 or +inf (sums of squares, of norms); an infinite term
 * makes the sum +inf, a NaN term NaN (counted, not added).  Zero-initialise
 * (or parity_xsum_init) before use; 32 KiB each.
 */
#ifndef PARITY_XSUM_H
#define PARITY_XSUM_H

#include <stdint.h>
#include <string.h>

#define PARITY_XSUM_BINS 2048 /* one per biased exponent (0: subnormals) */

typedef struct parity_xsum {
  unsigned __int128 bin[PARITY_XSUM_BINS];
  int64_t n_inf, n_nan;
} parity_xsum;

void parity_xsum_init(parity_xsum *a);

/* Adds x (>= +0, +inf or NaN; see above). */
static inline void parity_xsum_add(parity_xsum *a, double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  const unsigned e = (unsigned)(b >> 52) & 0x7ffu;
  if (e == 0x7ffu) {
    if (b & 0xfffffffffffffull) a->n_nan++;
    else a->n_inf++;
    return;
  }
  const uint64_t m = (b & 0xfffffffffffffull) | (e ? 1ull << 52 : 0);
  a->bin[e ? e : 1] += m; /* a subnormal's weight is that of exponent 1 */
}

/* a += b (exact). */
void parity_xsum_merge(parity_xsum *a, const parity_xsum *b);

/* The exact sum rounded once to the nearest binary64 (ties to even; +inf
 * beyond the range); NaN if any term was NaN, +inf if any was +inf. */
double parity_xsum_value(const parity_xsum *a);

#endif
