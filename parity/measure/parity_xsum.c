#include "parity_xsum.h"

#include <math.h>

void parity_xsum_init(parity_xsum *a) { memset(a, 0, sizeof *a); }

void parity_xsum_merge(parity_xsum *a, const parity_xsum *b) {
  for (int i = 0; i < PARITY_XSUM_BINS; i++) a->bin[i] += b->bin[i];
  a->n_inf += b->n_inf;
  a->n_nan += b->n_nan;
}

/* The sum as an integer N in units of 2^-1074 (bin e >= 1 weighs
 * 2^(e - 1075), i.e. N gains bin[e] << (e - 1)), little-endian 64-bit
 * limbs: 2047 - 1 + 128 bits, and room for the carries. */
#define LIMBS 36

static void limbs_add_shifted(uint64_t *n, unsigned __int128 v, unsigned shift) {
  unsigned w = shift / 64, s = shift % 64;
  /* v << s spans up to three limbs */
  uint64_t lo = (uint64_t)v, hi = (uint64_t)(v >> 64);
  uint64_t p0 = lo << s, p1 = s ? (hi << s) | (lo >> (64 - s)) : hi, p2 = s ? hi >> (64 - s) : 0;
  uint64_t parts[3] = {p0, p1, p2}, carry = 0;
  for (unsigned i = 0; w + i < LIMBS && (i < 3 || carry); i++) {
    unsigned __int128 t = (unsigned __int128)n[w + i] + (i < 3 ? parts[i] : 0) + carry;
    n[w + i] = (uint64_t)t;
    carry = (uint64_t)(t >> 64);
  }
}

static int bit_at(const uint64_t *n, int i) { return i >= 0 && (int)(n[i / 64] >> (i % 64)) & 1; }

/* Any bit below position i set. */
static int sticky_below(const uint64_t *n, int i) {
  for (int w = 0; w < LIMBS && w * 64 < i; w++) {
    uint64_t mask = (w + 1) * 64 <= i ? ~0ull : (1ull << (i - w * 64)) - 1;
    if (n[w] & mask) return 1;
  }
  return 0;
}

double parity_xsum_value(const parity_xsum *a) {
  if (a->n_nan) return NAN;
  if (a->n_inf) return INFINITY;
  uint64_t n[LIMBS] = {0};
  for (unsigned e = 1; e < PARITY_XSUM_BINS; e++)
    if (a->bin[e]) limbs_add_shifted(n, a->bin[e], e - 1);
  int top = -1;
  for (int w = LIMBS - 1; w >= 0 && top < 0; w--)
    if (n[w]) top = w * 64 + 63 - __builtin_clzll(n[w]);
  if (top < 0) return 0.0;
  if (top < 53) return ldexp((double)n[0], -1074); /* below 2^-1021: exact */
  /* the 53 bits from top down, rounded to nearest, ties to even */
  uint64_t mant = 0;
  for (int i = top; i > top - 53; i--) mant = mant << 1 | (uint64_t)bit_at(n, i);
  const int lsb = top - 52, guard = bit_at(n, lsb - 1), sticky = sticky_below(n, lsb - 1);
  if (guard && (sticky || (mant & 1))) mant++; /* 2^53 after a carry: still exact in a double */
  return ldexp((double)mant, lsb - 1074);
}
