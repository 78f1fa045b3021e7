#include "parity_oracle.h"

#include <string.h>
#include <time.h>

#include "oracle.h"

const char *parity_oracle_tier_name(parity_oracle_tier t) {
  return t == PARITY_ORACLE_MPFR ? "mpfr" : "none";
}

int parity_oracle_tier_parse(const char *s, parity_oracle_tier *t, gdn_error *e) {
  if (!strcmp(s, "mpfr")) *t = PARITY_ORACLE_MPFR;
  else if (!strcmp(s, "none")) *t = PARITY_ORACLE_NONE;
  else
    return gdn_error_set(e, GDN_ERR_INPUT, "--oracle '%s': unknown tier; expected mpfr or none", s);
  return GDN_OK;
}

void parity_reference_init(parity_reference *r) {
  memset(r, 0, sizeof *r);
  gdn_outputs_init(&r->out);
}

void parity_reference_clear(parity_reference *r) {
  gdn_outputs_clear(&r->out);
  parity_reference_init(r);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int parity_reference_compute(parity_reference *r, const gdn_inputs *in, parity_oracle_tier tier,
                             int bits, gdn_error *e) {
  parity_reference_clear(r);
  r->tier = tier;
  if (tier == PARITY_ORACLE_NONE) return GDN_OK;
  double t0 = now();
  oracle_config cfg;
  oracle_config_init(&cfg);
  cfg.prec = bits;
  oracle_certificate cert;
  int rc = oracle_run_certified(in, &cfg, &r->out, &cert, e);
  if (rc) return rc;
  r->form = "token";
  r->precision_bits = cert.precision_bits;
  r->check_bits = cert.check_bits;
  r->certified_bits = cert.certified_bits;
  r->seconds = now() - t0;
  return GDN_OK;
}
