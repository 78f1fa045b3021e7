/* parity_oracle: the reference a sweep measures against, by tier.
 *
 *   PARITY_ORACLE_MPFR  oracle_run_certified at --oracle-bits (token form)
 *   PARITY_ORACLE_NONE  no reference: only affine-prefix vs scan is judged
 * The result always says which tier produced it, so a report can.
 */
#ifndef PARITY_ORACLE_H
#define PARITY_ORACLE_H

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"

typedef enum parity_oracle_tier {
  PARITY_ORACLE_NONE = 0,
  PARITY_ORACLE_MPFR = 1,
} parity_oracle_tier;

typedef struct parity_reference {
  parity_oracle_tier tier;
  const char *form;   /* "token" */
  int precision_bits, check_bits, certified_bits;
  int from_fixture;   /* 1: read from a fixture's fresh /oracle */
  gdn_outputs out;
  double seconds;
} parity_reference;

const char *parity_oracle_tier_name(parity_oracle_tier t);
int parity_oracle_tier_parse(const char *s, parity_oracle_tier *t, gdn_error *e);

void parity_reference_init(parity_reference *r);
void parity_reference_clear(parity_reference *r);
/* Computes the reference of `in` with the given tier and precision. */
int parity_reference_compute(parity_reference *r, const gdn_inputs *in, parity_oracle_tier tier,
                             int bits, gdn_error *e);

#endif
