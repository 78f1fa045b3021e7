#include <inttypes.h>

#include "oracle.h"
#include "oracle_internal.h"

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
  int rc = orc_config_nonneg("oracle", "column_block", cfg->column_block, " (0 = automatic)", e);
  return rc ? rc : orc_config_check_prec("oracle", (long)cfg->prec, (long)cfg->check_prec, certified, e);
}

int orc_config_nonneg(const char *who, const char *field, int64_t v, const char *note, gdn_error *e) {
  if (v >= 0) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT, "%s config: %s = %" PRId64 "; it must be >= 0%s", who, field, v, note);
}

int orc_config_placement(const char *who, int64_t head0, int64_t whole_hv, gdn_error *e) {
  if (head0 >= 0 && whole_hv >= 0 && (whole_hv > 0 || head0 == 0)) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "%s config: placement head0 = %" PRId64 " of whole_hv = %" PRId64
                       "; both >= 0, and head0 = 0 without a whole run",
                       who, head0, whole_hv);
}

int orc_config_bits(const char *who, const char *field, long bits, gdn_error *e) {
  if (bits >= ORACLE_PREC_MIN && bits <= ORACLE_PREC_MAX) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT, "%s config: %s = %ld bits; it must be in [%d, %d]", who, field, bits,
                       ORACLE_PREC_MIN, ORACLE_PREC_MAX);
}

int orc_config_check_prec(const char *who, long prec, long check_prec, int certified, gdn_error *e) {
  if (!certified || check_prec == 0 || (check_prec > prec && check_prec <= ORACLE_CHECK_PREC_MAX)) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "%s config: check_prec = %ld bits; it must exceed prec = %ld and be at most %d (0 means "
                       "prec + 64)",
                       who, check_prec, prec, ORACLE_CHECK_PREC_MAX);
}
