#include "report_num.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int report_num_get(const json_t *v, double *out) {
  if (!v) return 0;
  if (json_is_integer(v)) {
    *out = (double)json_integer_value(v);
    return 1;
  }
  if (json_is_real(v)) {
    *out = json_real_value(v);
    return 1;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "inf")) *out = INFINITY;
    else if (!strcmp(s, "-inf")) *out = -INFINITY;
    else if (!strcmp(s, "nan")) *out = NAN;
    else return 0;
    return 1;
  }
  return 0;
}

json_t *report_num_to_json(double v) {
  if (isnan(v)) return json_string("nan");
  if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
  return json_real(v);
}

void report_num_format(char out[REPORT_NUM_CHARS], double v, int sig) {
  if (isnan(v)) {
    strcpy(out, "nan");
    return;
  }
  if (isinf(v)) {
    strcpy(out, v > 0 ? "inf" : "-inf");
    return;
  }
  if (v == 0) {
    strcpy(out, "0");
    return;
  }
  if (sig < 1) sig = 1;
  if (sig > 17) sig = 17;
  char t[REPORT_NUM_CHARS];
  snprintf(t, sizeof t, "%.*g", sig, v);
  /* Compact the exponent: "e-07" -> "e-7", "e+12" -> "e12". */
  char *e = strchr(t, 'e');
  if (!e) {
    strcpy(out, t);
    return;
  }
  size_t k = (size_t)(e - t);
  memcpy(out, t, k);
  out[k++] = 'e';
  const char *p = e + 1;
  if (*p == '+') p++;
  else if (*p == '-') out[k++] = *p++;
  while (*p == '0' && p[1]) p++;
  strcpy(out + k, p);
}
