/* gdn_ocode: a float32 tensor held as 8-bit codes against binary64 base
 * values, exactly.
 *
 * A float32 kernel's o differs from the reference by a few float32 ULPs
 * almost everywhere (median about 2, over 127 for about 1 % of the
 * elements at T = 16384, all of them where the reference passes near
 * zero).  Held as the signed distance, in float32 steps, from a pivot
 * derived from the reference value, one byte per element holds it whole;
 * the rest are exceptions kept as (index, float32) pairs.  At T = 2^20,
 * Dv = 128 that is 128 MiB (plus about 25 MiB of exceptions) instead of
 * the 512 MiB of a float32 o: what lets the long case hold its inputs, the
 * reference and two outputs in under 3 GiB.
 *
 * Exact: ord() numbers the 2^32 float32 bit patterns in value order
 * (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN), a bijection, so
 * code = ord(y) - pivot(r) and y = ord^-1(pivot(r) + code) give back y's
 * bits, -0, subnormals, infinities and NaN payloads included.  The pivot
 * is ord of r truncated to float32 by integer operations on r's bits (no
 * floating-point conversion, so the x86 MXCSR's FTZ/DAZ bits that the
 * kernels' ftz mode sets cannot make the encoder and decoder differ); r
 * below float32's normal range pivots at +-0, beyond it (or inf, NaN) at
 * +-inf: such elements are merely likelier to be exceptions.
 *
 * Writers (the kernels' threads) put codes with gdn_ocode_put, collecting
 * exceptions in a local buffer that gdn_ocode_flush appends under a lock
 * (their order is the threads'); gdn_ocode_finish then sorts them by
 * index, so the held form does not depend on the thread count.  Every
 * element must be written exactly once (finish refuses a repeated index).
 * Readers call gdn_ocode_value (a binary search within a page for
 * exceptions).
 *
 * Bounded: a list of more than n / 8 exceptions (16 bytes each) would cost
 * more than a float32 o.  Past that many (a kernel far from its reference:
 * a bug, or numerics the caller should not have coded), the exceptions go
 * to a float32 side array of n values instead (code GDN_OCODE_SIDE), and
 * finish moves the list there too, so the held form is again the same for
 * any thread count (whether the limit is passed depends only on how many
 * exceptions there are).  The worst case is then 1 + 4 bytes per element
 * plus the list's 2 while it is moved: never the 16 of an unbounded list.
 */
#ifndef GDN_OCODE_H
#define GDN_OCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gdn_error.h"

#define GDN_OCODE_EXC ((int8_t)-128)  /* the code of an element held in the exception list */
#define GDN_OCODE_SIDE ((int8_t)-127) /* the code of an element held in the side array */
#define GDN_OCODE_LOCAL 64
#define GDN_OCODE_PAGE 4096 /* elements per entry of the exceptions' page index */

typedef struct gdn_ocode_exc {
  uint64_t i; /* flat index */
  float v;    /* the value */
} gdn_ocode_exc;

typedef struct gdn_ocode {
  int8_t *c;          /* n codes (owned); NULL: not held as codes */
  const double *base; /* n base values (borrowed: the reference's o) */
  gdn_ocode_exc *exc; /* n_exc exceptions, sorted by i after finish (owned) */
  size_t n_exc, cap_exc;
  size_t n;     /* elements */
  size_t n_far; /* after finish: elements held as exceptions (list or side) */
  float *side;  /* past the list's limit: n values, read where the code is SIDE (owned) */
  size_t *page; /* after finish: page[p] = the first exception at or after
                   element p * GDN_OCODE_PAGE, p = 0 .. n / GDN_OCODE_PAGE + 1 (owned) */
  int nomem; /* an append failed: finish reports it */
} gdn_ocode;

/* A writer's exceptions not yet appended. */
typedef struct gdn_ocode_local {
  size_t n;
  gdn_ocode_exc e[GDN_OCODE_LOCAL];
} gdn_ocode_local;

static inline uint32_t gdn_ocode_ord(uint32_t bits) { return bits & 0x80000000u ? ~bits : bits | 0x80000000u; }
static inline uint32_t gdn_ocode_unord(uint32_t o) { return o & 0x80000000u ? o & 0x7fffffffu : ~o; }

/* ord of r truncated to float32 (see above). */
static inline uint32_t gdn_ocode_pivot(double r) {
  uint64_t b;
  memcpy(&b, &r, sizeof b);
  const uint32_t sign = (uint32_t)(b >> 32) & 0x80000000u;
  const int ex = (int)((b >> 52) & 0x7ff) - 1023 + 127; /* float32's biased exponent */
  uint32_t mag;
  if (ex >= 0xff) mag = 0x7f800000u; /* beyond float32, inf, NaN */
  else if (ex <= 0) mag = 0;         /* below float32's normal range, or zero */
  else mag = ((uint32_t)ex << 23) | (uint32_t)((b >> 29) & 0x7fffffu);
  return gdn_ocode_ord(sign | mag);
}

void gdn_ocode_init(gdn_ocode *oc);
void gdn_ocode_clear(gdn_ocode *oc);
/* n codes against base (borrowed, n values), no exceptions yet. */
int gdn_ocode_alloc(gdn_ocode *oc, size_t n, const double *base, gdn_error *e);
/* Ready for writing again (the codes are kept: every one is rewritten). */
void gdn_ocode_restart(gdn_ocode *oc, const double *base);

/* Appends a writer's exceptions (thread-safe) and empties `loc`. */
void gdn_ocode_flush(gdn_ocode *oc, gdn_ocode_local *loc);

/* Element i := y. */
static inline void gdn_ocode_put(gdn_ocode *oc, size_t i, float y, gdn_ocode_local *loc) {
  uint32_t yb;
  memcpy(&yb, &y, sizeof yb);
  const int64_t d = (int64_t)gdn_ocode_ord(yb) - (int64_t)gdn_ocode_pivot(oc->base[i]);
  if (d > -127 && d < 128) {
    oc->c[i] = (int8_t)d;
    return;
  }
  oc->c[i] = GDN_OCODE_EXC;
  if (loc->n == GDN_OCODE_LOCAL) gdn_ocode_flush(oc, loc);
  loc->e[loc->n++] = (gdn_ocode_exc){(uint64_t)i, y};
}

/* After every element was put: the exceptions sorted by index (or all in
 * the side array, past the limit).  Refuses (GDN_ERR_INTERNAL) an index put
 * twice into the list, and reports a failed append (GDN_ERR_NOMEM).  A
 * no-op when oc holds no codes. */
int gdn_ocode_finish(gdn_ocode *oc, gdn_error *e);

/* Element i's value when it is an exception (a search within its page). */
float gdn_ocode_exc_value(const gdn_ocode *oc, size_t i);
/* Element i's value from a finished oc: exact. */
static inline float gdn_ocode_value(const gdn_ocode *oc, size_t i) {
  const int8_t code = oc->c[i];
  if (code == GDN_OCODE_EXC) return gdn_ocode_exc_value(oc, i);
  if (code == GDN_OCODE_SIDE) return oc->side[i];
  const uint32_t bits = gdn_ocode_unord(gdn_ocode_pivot(oc->base[i]) + (uint32_t)(int32_t)code);
  float y;
  memcpy(&y, &bits, sizeof y);
  return y;
}

#endif
