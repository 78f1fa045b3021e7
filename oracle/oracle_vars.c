/* orc_vars: a block of MPFR numbers of one precision. */
#include "gdn_alloc.h"
#include "oracle_internal.h"

void orc_vars_init(orc_vars *s) {
  s->v = NULL;
  s->n = 0;
}

int orc_vars_alloc(orc_vars *s, size_t n, mpfr_prec_t p, const char *what, gdn_error *e) {
  orc_vars_clear(s);
  s->v = gdn_calloc(n, sizeof(mpfr_t), what, e);
  if (!s->v) return e ? e->code : GDN_ERR_NOMEM;
  /* mpfr_init2 takes its limbs from GMP, in this order: the numbers of one
   * workspace sit close together in the heap. */
  for (size_t i = 0; i < n; i++) mpfr_init2(s->v[i], p);
  s->n = n;
  return GDN_OK;
}

void orc_vars_clear(orc_vars *s) {
  for (size_t i = 0; i < s->n; i++) mpfr_clear(s->v[i]);
  gdn_free(s->v);
  orc_vars_init(s);
}
