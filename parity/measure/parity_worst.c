#include "parity_worst.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A document number: the C side writes a non-finite one as a string. */
static double doc_num(const json_t *v) {
  if (json_is_number(v)) return json_number_value(v);
  const char *s = json_string_value(v);
  if (!s) return NAN;
  if (!strcmp(s, "inf") || !strcmp(s, "+inf")) return INFINITY;
  if (!strcmp(s, "-inf")) return -INFINITY;
  return NAN;
}

/* value / limit, NaN ranked above every number. */
static double ratio(const json_t *check) {
  double v = doc_num(json_object_get(check, "value")), l = doc_num(json_object_get(check, "limit"));
  double r = v / l;
  return isnan(r) ? INFINITY : r;
}

static void fmt_num(char *b, size_t n, double x) {
  if (isnan(x)) snprintf(b, n, "nan");
  else snprintf(b, n, "%.3g", x);
}

/* " at k=v ... (device r, token i of its shard)" of impls.<subject>.<tensor>.worst. */
static void where(const json_t *c, const char *subject, const char *tensor, char *buf, size_t n) {
  const json_t *imp = json_object_get(json_object_get(c, "impls"), subject);
  const json_t *worst = json_object_get(json_object_get(imp, tensor), "worst");
  if (!json_is_object(worst) || !json_object_size(worst) || !n) return;
  size_t k = strlen(buf);
  snprintf(buf + k, n - k, " at");
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)worst, key, v) {
    k = strlen(buf);
    snprintf(buf + k, n - k, " %s=%lld", key, (long long)json_integer_value(v));
  }
  json_int_t D = json_integer_value(json_object_get(json_object_get(imp, "attrs"), "devices"));
  if (D < 1) D = json_integer_value(json_object_get(c, "devices"));
  json_int_t T = json_integer_value(json_object_get(json_object_get(c, "shape"), "T"));
  const json_t *t = json_object_get(worst, "t");
  const char *shard = json_string_value(json_object_get(c, "shard"));
  if (D > 1 && T > 0 && T % D == 0 && json_is_integer(t) && (!shard || !strcmp(shard, "tokens"))) {
    json_int_t per = T / D, tt = json_integer_value(t);
    k = strlen(buf);
    snprintf(buf + k, n - k, " (device %lld, token %lld of its shard)", (long long)(tt / per),
             (long long)(tt % per));
  }
}

int parity_worst_failure(const json_t *root, char *buf, size_t n) {
  if (n) buf[0] = '\0';
  const json_t *cases = json_object_get(root, "cases"), *wc = NULL, *wk = NULL;
  double wr = -INFINITY;
  for (size_t c = 0; c < json_array_size(cases); c++) {
    const json_t *cs = json_array_get(cases, c);
    const json_t *checks = json_object_get(json_object_get(cs, "tolerance"), "checks");
    for (size_t i = 0; i < json_array_size(checks); i++) {
      const json_t *k = json_array_get(checks, i);
      if (!json_is_false(json_object_get(k, "pass"))) continue;
      double r = ratio(k);
      if (!wk || r > wr) wr = r, wk = k, wc = cs;
    }
  }
  if (!wk || !n) return 0;
  const char *subject = json_string_value(json_object_get(wk, "subject"));
  const char *tensor = json_string_value(json_object_get(wk, "tensor"));
  const char *metric = json_string_value(json_object_get(wk, "metric"));
  char v[32], l[32];
  fmt_num(v, sizeof v, doc_num(json_object_get(wk, "value")));
  fmt_num(l, sizeof l, doc_num(json_object_get(wk, "limit")));
  snprintf(buf, n, "%s %s %s %s (limit %s)", subject ? subject : "?", tensor ? tensor : "?", metric ? metric : "?",
           v, l);
  if (subject && tensor) where(wc, subject, tensor, buf, n);
  const char *id = json_string_value(json_object_get(wc, "id"));
  size_t k = strlen(buf);
  if (id && k < n) snprintf(buf + k, n - k, ", case %s", id);
  return 1;
}
