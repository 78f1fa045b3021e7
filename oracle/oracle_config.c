#include "oracle.h"

void oracle_config_init(oracle_config *cfg) {
  cfg->prec = 128;
  cfg->form = ORACLE_FORM_TOKEN;
  cfg->chunk = 64;
  cfg->check_prec = 0;
}
