#include <inttypes.h>

#include "oracle.h"

void oracle_config_init(oracle_config *cfg) {
  cfg->prec = 128;
  cfg->form = ORACLE_FORM_TOKEN;
  cfg->chunk = 64;
  cfg->check_prec = 0;
  cfg->column_block = 0;
  cfg->progress = NULL;
}

int oracle_config_validate(const oracle_config *cfg, int certified, gdn_error *e) {
  if (!cfg) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle config: missing (NULL)");
  if (cfg->prec < ORACLE_PREC_MIN || cfg->prec > ORACLE_PREC_MAX)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle config: prec = %ld bits; it must be in [%d, %d] (float32 "
                         "inputs are exact only from %d bits)",
                         (long)cfg->prec, ORACLE_PREC_MIN, ORACLE_PREC_MAX, ORACLE_PREC_MIN);
  if (cfg->form != ORACLE_FORM_TOKEN && cfg->form != ORACLE_FORM_CHUNKED)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle config: form = %d; expected %d (token) or %d (chunked)",
                         (int)cfg->form, ORACLE_FORM_TOKEN, ORACLE_FORM_CHUNKED);
  if (cfg->form == ORACLE_FORM_CHUNKED && cfg->chunk < 1)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle config: chunk = %" PRId64 "; the chunked form needs C >= 1",
                         cfg->chunk);
  if (cfg->column_block < 0)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle config: column_block = %" PRId64 "; it must be >= 0 (0 = automatic)",
                         cfg->column_block);
  if (certified && cfg->check_prec != 0 &&
      (cfg->check_prec <= cfg->prec || cfg->check_prec > ORACLE_CHECK_PREC_MAX))
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle config: check_prec = %ld bits; it must exceed prec = %ld and be "
                         "at most %d (0 means prec + 64)",
                         (long)cfg->check_prec, (long)cfg->prec, ORACLE_CHECK_PREC_MAX);
  return GDN_OK;
}
