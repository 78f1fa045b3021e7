/* oracle_kda_internal: the KDA oracle's step (private to oracle/). */
#ifndef ORACLE_KDA_INTERNAL_H
#define ORACLE_KDA_INTERNAL_H

#include "gdn_chgate.h"
#include "oracle_internal.h"

/* Token t of the item w was begun on (orc_tok_begin): updates the state
 * with per-row decays, leaves o_t's columns in w->o.  a: Dk numbers at w's
 * precision (scratch). */
void orc_kda_step(orc_tok *w, mpfr_t *a, const gdn_inputs *in, const gdn_chgate *gate, int64_t t);

/* The KDA oracle's checks of its inputs (oracle_kda.h): GDN's
 * (orc_check_inputs), then the form (cfg NULL: the dd tier, no form), the
 * segment ids and the gate (present, of shape (B, T, Hv, Dk), finite). */
int orc_kda_check(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_error *e);

#endif
