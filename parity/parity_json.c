#include "parity_json.h"

#include <math.h>
#include <string.h>

json_t *parity_json_real(double x) {
  if (isnan(x)) return json_string("nan");
  if (isinf(x)) return json_string(x > 0 ? "inf" : "-inf");
  return json_real(x);
}

int parity_json_set(json_t *obj, const char *key, json_t *v) {
  if (!v) return -1;
  return json_object_set_new(obj, key, v);
}

json_t *parity_json_shape(const gdn_shape *s) {
  return json_pack("{sIsIsIsIsIsI}", "B", (json_int_t)s->B, "T", (json_int_t)s->T, "Hk",
                   (json_int_t)s->Hk, "Hv", (json_int_t)s->Hv, "Dk", (json_int_t)s->Dk, "Dv",
                   (json_int_t)s->Dv);
}

json_t *parity_json_metrics(const parity_metrics *m, int o_like) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= parity_json_set(o, "max_abs", parity_json_real(m->max_abs));
  bad |= parity_json_set(o, "rel_fro", parity_json_real(m->rel_fro));
  bad |= parity_json_set(o, "max_ulp", parity_json_real(m->max_ulp));
  bad |= parity_json_set(o, "median_ulp", parity_json_real(m->median_ulp));
  bad |= parity_json_set(o, "max_rel", parity_json_real(m->max_rel));
  bad |= parity_json_set(o, "rel_floor", parity_json_real(m->rel_floor));
  bad |= parity_json_set(o, "ref_max_abs", parity_json_real(m->ref_max_abs));
  bad |= parity_json_set(o, "zero_ref", json_integer(m->zero_ref));
  bad |= parity_json_set(o, "nonfinite", json_integer(m->nonfinite));
  bad |= parity_json_set(o, "n", json_integer(m->n));
  json_t *w = o_like ? json_pack("{sIsIsIsI}", "b", (json_int_t)m->worst[0], "t",
                                 (json_int_t)m->worst[1], "h", (json_int_t)m->worst[2], "d",
                                 (json_int_t)m->worst[3])
                     : json_pack("{sIsIsIsI}", "b", (json_int_t)m->worst[0], "h",
                                 (json_int_t)m->worst[1], "dk", (json_int_t)m->worst[2], "dv",
                                 (json_int_t)m->worst[3]);
  bad |= parity_json_set(o, "worst", w);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int parity_json_check_keys(const json_t *obj, const char *const *allowed, const char *where,
                           const char *kind, gdn_error *e) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    int ok = 0;
    for (int i = 0; allowed[i] && !ok; i++) ok = !strcmp(k, allowed[i]);
    if (!ok) return gdn_error_set(e, GDN_ERR_INPUT, "%s: unknown %skey \"%s\"", where, kind, k);
  }
  return GDN_OK;
}
