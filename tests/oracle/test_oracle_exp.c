/* orc_exp_flt (oracle_exp.h) gives mpfr_exp's value bit for bit: at
 * precisions 24 to 128 on binary32 numbers drawn over the whole fast range
 * (uniform bit patterns with |g| <= 64, Kimi-like gates in [-20, 0], tiny
 * and subnormal numbers, the table's seams: multiples of 2^-25 and 2^-5,
 * |g| near 2^-2 where r becomes 0, +-64 and just beyond) and on the
 * fallbacks (0, |g| > 64, p > 128).  Negative control: the comparison
 * sees a result moved by one ulp. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../check_runner.h"
#include "oracle_exp.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* 1 when orc_exp_flt and mpfr_exp agree on g at precision p. */
static int same(float g, mpfr_prec_t p, mpfr_ptr a, mpfr_ptr r) {
  mpfr_set_prec(a, p), mpfr_set_prec(r, p);
  orc_exp_flt(a, g);
  mpfr_set_flt(r, g, MPFR_RNDN);
  mpfr_exp(r, r, MPFR_RNDN);
  return mpfr_equal_p(a, r);
}

static float draw(int kind) {
  switch (kind) {
  case 0: { /* any bit pattern with |g| <= 64 */
    float f;
    do f = from_bits(next32()); while (!(fabsf(f) <= 64));
    return f;
  }
  case 1: return -20.0f * (float)(next32() >> 8) * 0x1p-24f; /* gates in [-20, 0] */
  case 2: return from_bits((next32() % 0x33000000u) | (next32() & 0x80000000u)); /* |g| < 2^-25, subnormals too */
  case 3: return (float)((int32_t)(next32() % 0x40000000u) - 0x20000000) * 0x1p-25f; /* multiples of 2^-25 */
  case 4: return nextafterf(0.25f * (next32() & 1 ? 1 : -1), (next32() & 1) ? 1.0f : 0.0f); /* near 2^-2 */
  default: return (float)((int32_t)(next32() % 4097u) - 2048) * 0x1p-5f; /* table 0's points */
  }
}

START_TEST(test_equals_mpfr_exp) {
  mpfr_t a, r;
  mpfr_init2(a, 128), mpfr_init2(r, 128);
  const mpfr_prec_t precs[] = {24, 53, 64, 100, 113, 127, 128};
  long n = 0;
  for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++)
    for (int kind = 0; kind < 6; kind++)
      for (int i = 0; i < (precs[pi] == 128 ? 6000 : 1500); i++, n++) {
        const float g = draw(kind);
        ck_assert_msg(same(g, precs[pi], a, r), "g = %a at %ld bits", (double)g, (long)precs[pi]);
      }
  const float edge[] = {0.0f, -0.0f, 64.0f, -64.0f, nextafterf(64.0f, 100.0f), -65.0f, 88.0f, -103.0f,
                        0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1p-26f, -0x1p-26f, 0x1p-25f, 0.25f, -0.25f,
                        nextafterf(0.25f, 0.0f), 1e-7f, -1e-7f, 3.0e-5f};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
    for (mpfr_prec_t p = 24; p <= 200; p += 44) ck_assert_msg(same(edge[i], p, a, r), "edge g = %a at %ld bits", (double)edge[i], (long)p);
  fprintf(stderr, "orc_exp_flt equals mpfr_exp on %ld draws and %zu edges\n", n, sizeof edge / sizeof edge[0]);
  /* negative control: one ulp off is seen */
  mpfr_set_prec(a, 128), mpfr_set_prec(r, 128);
  orc_exp_flt(a, -0.3f);
  mpfr_nextabove(a);
  mpfr_set_flt(r, -0.3f, MPFR_RNDN);
  mpfr_exp(r, r, MPFR_RNDN);
  ck_assert(!mpfr_equal_p(a, r));
  mpfr_clear(a), mpfr_clear(r);
  mpfr_free_cache();
}
END_TEST

CKR_MAIN("oracle", "exp", 120, test_equals_mpfr_exp)
