/* orc_exp_flt (oracle_exp.h): exp of a binary32 number, table and
 * polynomial at 192 bits with a rounding test, mpfr_exp as the fallback. */
#include "oracle_exp.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "oracle_dd_arith.h"

#define EXPF_W 192
enum { EXPF_Q = 2048 };

static mpfr_t tab0[2 * EXPF_Q + 1]; /* exp(q 2^-5), q = -EXPF_Q .. EXPF_Q */
static mpfr_t tabd[4][32];          /* exp(d 2^-(10 + 5 l)) */
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_build(void) {
  for (int i = 0; i <= 2 * EXPF_Q; i++) {
    mpfr_init2(tab0[i], EXPF_W);
    mpfr_set_si_2exp(tab0[i], i - EXPF_Q, -5, MPFR_RNDN); /* exact */
    mpfr_exp(tab0[i], tab0[i], MPFR_RNDN);
  }
  for (int l = 0; l < 4; l++)
    for (int d = 0; d < 32; d++) {
      mpfr_init2(tabd[l][d], EXPF_W);
      mpfr_set_ui_2exp(tabd[l][d], (unsigned long)d, -(10 + 5 * l), MPFR_RNDN);
      mpfr_exp(tabd[l][d], tabd[l][d], MPFR_RNDN);
    }
}

/* t = exp(r) - 1 - r for |r| <= 2^-26, absolute error < 2^-150. */
static orc_dd tail(double r) {
  static const orc_dd sixth = {0x1.5555555555555p-3, 0x1.5555555555555p-57};
  const double r2 = r * r;
  const double s = r2 / 24 + r2 * r / 120 + r2 * r2 / 720; /* < 2^-56: its roundings ~2^-109 */
  const orc_dd c = orc_dd_add_d(orc_dd_add_d(orc_dd_mul_d(sixth, r), 0.5), s);
  return orc_dd_mul(orc_dd_two_prod(r, r), c);
}

static void fallback(mpfr_ptr a, float g) {
  mpfr_set_flt(a, g, MPFR_RNDN); /* exact */
  mpfr_exp(a, a, MPFR_RNDN);
}

void orc_exp_flt(mpfr_ptr a, float g) {
  const double x = (double)g;
  if (mpfr_get_prec(a) > 128 || !(fabs(x) <= 64) || x == 0) {
    fallback(a, g);
    return;
  }
  pthread_once(&tab_once, tab_build);
  const int64_t k = (int64_t)nearbyint(x * 0x1p25); /* |k| <= 2^31 */
  const double r = x - (double)k * 0x1p-25;          /* exact, |r| <= 2^-26 */
  const uint64_t u = (uint64_t)(k + ((int64_t)EXPF_Q << 20));
  const uint64_t q = u >> 20, rem = u & 0xFFFFFu;
  MPFR_DECL_INIT(P, EXPF_W);
  mpfr_set(P, tab0[q], MPFR_RNDN);
  for (int l = 0; l < 4; l++) {
    const unsigned d = (unsigned)(rem >> (15 - 5 * l)) & 31u;
    if (d) mpfr_mul(P, P, tabd[l][d], MPFR_RNDN);
  }
  int err = 183;
  if (r != 0) {
    MPFR_DECL_INIT(y, EXPF_W);
    MPFR_DECL_INIT(s, EXPF_W);
    const orc_dd t = tail(r);
    mpfr_mul_d(y, P, r, MPFR_RNDN);
    mpfr_add(s, P, y, MPFR_RNDN);
    mpfr_mul_d(y, P, t.hi, MPFR_RNDN);
    mpfr_add(s, s, y, MPFR_RNDN);
    mpfr_mul_d(y, P, t.lo, MPFR_RNDN);
    mpfr_add(P, s, y, MPFR_RNDN);
    err = 144;
  }
  if (mpfr_can_round(P, err, MPFR_RNDN, MPFR_RNDZ, mpfr_get_prec(a) + 1)) mpfr_set(a, P, MPFR_RNDN);
  else fallback(a, g);
}
