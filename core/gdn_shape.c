#include "gdn_shape.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const field_names[4] = {"B (batch)", "T (sequence length)",
                                           "H (value heads)", "D (head dim)"};

int gdn_shape_parse(gdn_shape *s, const char *str, const char *what, gdn_error *e) {
  if (!what) what = "--shape";
  if (!str || !*str)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: empty; expected B,T,H,D such as 1,4096,4,128", what);
  int64_t v[4];
  int n = 0;
  const char *p = str;
  for (;;) {
    if (n == 4)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s '%s': more than 4 fields; expected B,T,H,D", what, str);
    if (!isdigit((unsigned char)*p))
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s '%s': field %d (%s) is not a positive decimal integer "
                           "(at character %d)",
                           what, str, n + 1, field_names[n], (int)(p - str) + 1);
    int64_t x = 0;
    while (isdigit((unsigned char)*p)) {
      int d = *p - '0';
      if (x > (INT64_MAX - d) / 10)
        return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': field %d (%s) is too large", what,
                             str, n + 1, field_names[n]);
      x = x * 10 + d;
      p++;
    }
    /* The field's end first: "0x10" is not a decimal integer, not a zero. */
    if (*p != '\0' && *p != ',')
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s '%s': field %d (%s) is not a decimal integer: unexpected character '%c' at "
                           "position %d",
                           what, str, n + 1, field_names[n], *p, (int)(p - str) + 1);
    if (x == 0)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': field %d (%s) must be at least 1",
                           what, str, n + 1, field_names[n]);
    v[n++] = x;
    if (*p == '\0') break;
    p++;
  }
  if (n != 4)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s '%s': %d field%s; expected 4 (B,T,H,D)", what, str, n,
                         n == 1 ? "" : "s");
  s->B = v[0];
  s->T = v[1];
  s->Hk = s->Hv = v[2];
  s->Dk = s->Dv = v[3];
  return GDN_OK;
}

/* Product of up to four positive factors, or -1 on overflow of int64. */
static int prod4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *out) {
  int64_t f[4] = {a, b, c, d}, r = 1;
  for (int i = 0; i < 4; i++) {
    if (f[i] <= 0) return -1;
    if (r > INT64_MAX / f[i]) return -1;
    r *= f[i];
  }
  *out = r;
  return 0;
}

int gdn_shape_validate(const gdn_shape *s, gdn_error *e) {
  const struct { const char *name; int64_t v; } dims[] = {
      {"B (batch)", s->B}, {"T (sequence length)", s->T}, {"Hk (key heads)", s->Hk},
      {"Hv (value heads)", s->Hv}, {"Dk (key head dim)", s->Dk}, {"Dv (value head dim)", s->Dv}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    if (dims[i].v < 1)
      return gdn_error_set(e, GDN_ERR_INPUT, "shape: %s is %" PRId64 "; it must be at least 1",
                           dims[i].name, dims[i].v);
  if (s->Hv % s->Hk != 0)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "shape: Hv = %" PRId64 " value heads is not a multiple of Hk = %" PRId64
                         " key heads",
                         s->Hv, s->Hk);
  uint64_t in, out;
  return gdn_shape_bytes(s, 1, &in, &out, e);
}

static int add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a > UINT64_MAX - b) return -1;
  *out = a + b;
  return 0;
}

int gdn_shape_bytes(const gdn_shape *s, int with_h0, uint64_t *input_bytes,
                    uint64_t *output_bytes, gdn_error *e) {
  int64_t nqk, nv, ng, nh;
  char lab[160];
  gdn_shape_format(s, lab, sizeof lab);
  if (prod4(s->B, s->T, s->Hk, s->Dk, &nqk) || prod4(s->B, s->T, s->Hv, s->Dv, &nv) ||
      prod4(s->B, s->T, s->Hv, 1, &ng) || prod4(s->B, s->Hv, s->Dk, s->Dv, &nh))
    return gdn_error_set(e, GDN_ERR_INPUT, "shape %s: element count overflows 64 bits", lab);
  /* Bytes: inputs float32, outputs float64.  Limits keep every product in range. */
  const uint64_t lim = UINT64_MAX / 16;
  if ((uint64_t)nqk > lim || (uint64_t)nv > lim || (uint64_t)nh > lim)
    return gdn_error_set(e, GDN_ERR_INPUT, "shape %s: byte size overflows 64 bits", lab);
  uint64_t in = 0, out = 0;
  if (add_u64(2 * 4 * (uint64_t)nqk, 4 * (uint64_t)nv, &in) ||
      add_u64(in, 2 * 4 * (uint64_t)ng, &in) ||
      (with_h0 && add_u64(in, 4 * (uint64_t)nh, &in)) ||
      add_u64(8 * (uint64_t)nv, 8 * (uint64_t)nh, &out))
    return gdn_error_set(e, GDN_ERR_INPUT, "shape %s: byte size overflows 64 bits", lab);
  *input_bytes = in;
  *output_bytes = out;
  return GDN_OK;
}

int gdn_shape_check_limit(const gdn_shape *s, int with_h0, int n_outputs, uint64_t max_bytes,
                          gdn_error *e) {
  uint64_t in, out;
  int rc = gdn_shape_bytes(s, with_h0, &in, &out, e);
  if (rc) return rc;
  if (max_bytes == 0) return GDN_OK;
  uint64_t total = in;
  for (int i = 0; i < n_outputs; i++)
    if (add_u64(total, out, &total)) total = UINT64_MAX;
  if (total > max_bytes) {
    char lab[160];
    gdn_shape_format(s, lab, sizeof lab);
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "shape %s needs %.3g GiB (inputs %.3g GiB + %d output set%s of %.3g GiB), "
                         "more than the limit of %.3g GiB (--max-bytes %" PRIu64 ")",
                         lab, total / 1073741824.0, in / 1073741824.0, n_outputs,
                         n_outputs == 1 ? "" : "s", out / 1073741824.0,
                         max_bytes / 1073741824.0, max_bytes);
  }
  return GDN_OK;
}

void gdn_shape_format(const gdn_shape *s, char *buf, size_t n) {
  snprintf(buf, n, "B%" PRId64 "-T%" PRId64 "-Hk%" PRId64 "-Hv%" PRId64 "-Dk%" PRId64 "-Dv%" PRId64,
           s->B, s->T, s->Hk, s->Hv, s->Dk, s->Dv);
}
