/* The oracle tiers' names (parity_oracle.h), apart from the runs: the
 * documents and logs that name a tier sit below the oracle runner. */
#include "parity_oracle.h"

#include <string.h>

const char *parity_oracle_tier_name(parity_oracle_tier t) {
  switch (t) {
  case PARITY_ORACLE_MPFR: return "mpfr";
  case PARITY_ORACLE_DD: return "dd";
  case PARITY_ORACLE_AUTO: return "auto";
  default: return "none";
  }
}

int parity_oracle_tier_parse(const char *s, parity_oracle_tier *t, gdn_error *e) {
  if (!strcmp(s, "mpfr")) *t = PARITY_ORACLE_MPFR;
  else if (!strcmp(s, "dd")) *t = PARITY_ORACLE_DD;
  else if (!strcmp(s, "auto")) *t = PARITY_ORACLE_AUTO;
  else if (!strcmp(s, "none")) *t = PARITY_ORACLE_NONE;
  else
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--oracle '%s': unknown tier; expected mpfr, dd, auto or none", s);
  return GDN_OK;
}
