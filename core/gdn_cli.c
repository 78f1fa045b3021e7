#include "gdn_cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

int gdn_cli_index(const gdn_cli_opt *table, const char *name) {
  for (int i = 0; table[i].name; i++)
    if (!strcmp(table[i].name, name)) return i;
  return -1;
}

const char *gdn_cli_get(const gdn_cli_opt *table, const gdn_cli_args *a, const char *name) {
  int i = gdn_cli_index(table, name);
  return i < 0 ? NULL : a->value[i];
}

/* A separate value that is really the next option: "--x" or "-x", but not
 * "-" (stdin by convention) or a negative number. */
static int looks_like_option(const char *v) {
  return v[0] == '-' && v[1] != '\0' && !(v[1] >= '0' && v[1] <= '9') && v[1] != '.';
}

/* argv[*i] is "--name[=value]": stores it in out, advancing *i past a
 * separate value. */
static int foreign(const gdn_cli_opt *o, const char *const *cmd_names, int cmd, gdn_error *e) {
  char all[256] = "";
  for (int c = 0; cmd_names[c]; c++)
    if (o->cmds & (1u << c)) {
      size_t l = strlen(all);
      snprintf(all + l, sizeof all - l, "%s%s", l ? ", " : "", cmd_names[c]);
    }
  return gdn_error_set(e, GDN_ERR_INPUT, "option '--%s' does not apply to %s (it is for: %s)", o->name,
                       cmd_names[cmd], all);
}

static int parse_one(const gdn_cli_opt *table, int n_opts, const char *const *cmd_names, int cmd, int argc,
                     char **argv, int *i, gdn_cli_args *out, gdn_error *e) {
  const char *name = argv[*i] + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  int k = -1;
  for (int j = 0; j < n_opts; j++)
    if (strlen(table[j].name) == len && !strncmp(table[j].name, name, len)) k = j;
  if (k < 0)
    return gdn_error_set(e, GDN_ERR_INPUT, "unknown option '--%.*s' (see --help)", (int)len, name);
  if (cmd_names && table[k].cmds && !(table[k].cmds & (1u << cmd))) return foreign(&table[k], cmd_names, cmd, e);
  const char *v;
  if (!table[k].metavar) {
    if (eq)
      return gdn_error_set(e, GDN_ERR_INPUT, "option '--%s' takes no value (got '%s')", table[k].name, eq + 1);
    v = "1";
  } else if (eq) {
    v = eq + 1;
  } else {
    if (*i + 1 >= argc)
      return gdn_error_set(e, GDN_ERR_INPUT, "option '--%s' needs a value (%s)", table[k].name,
                           table[k].metavar);
    v = argv[++*i];
    if (looks_like_option(v))
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "option '--%s' needs a value (%s) but is followed by the option '%s' "
                           "(write --%s=%s if that is really the value)",
                           table[k].name, table[k].metavar, v, table[k].name, v);
  }
  if (!v[0])
    return gdn_error_set(e, GDN_ERR_INPUT, "option '--%s': empty value; expected %s", table[k].name,
                         table[k].metavar);
  if (out->value[k])
    return gdn_error_set(e, GDN_ERR_INPUT, "option '--%s' is given twice ('%s', then '%s'); give it once",
                         table[k].name, table[k].metavar ? out->value[k] : "", table[k].metavar ? v : "");
  out->value[k] = v;
  return GDN_OK;
}

int gdn_cli_parse_cmd(const gdn_cli_opt *table, const char *const *cmd_names, int cmd, int argc,
                      char **argv, int first, gdn_cli_args *out, gdn_error *e) {
  memset(out, 0, sizeof *out);
  int n_opts = 0;
  while (table[n_opts].name) n_opts++;
  if (n_opts > GDN_CLI_MAX_OPTS)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "option table has %d entries, more than %d", n_opts,
                         GDN_CLI_MAX_OPTS);
  int only_pos = 0, rc;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (only_pos || a[0] != '-' || a[1] == '\0') {
      if (out->n_pos == GDN_CLI_MAX_POS)
        return gdn_error_set(e, GDN_ERR_INPUT, "too many arguments (at '%s')", a);
      out->pos[out->n_pos++] = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      only_pos = 1;
      continue;
    }
    if (a[1] != '-')
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "unknown option '%s': options are spelled --name (see --help)", a);
    if ((rc = parse_one(table, n_opts, cmd_names, cmd, argc, argv, &i, out, e))) return rc;
  }
  return GDN_OK;
}

int gdn_cli_parse(const gdn_cli_opt *table, int argc, char **argv, int first, gdn_cli_args *out,
                  gdn_error *e) {
  return gdn_cli_parse_cmd(table, NULL, 0, argc, argv, first, out, e);
}

void gdn_cli_print_options_cmd(const gdn_cli_opt *table, const char *const *cmd_names, FILE *f) {
  size_t w = 0;
  unsigned all = 0;
  for (int c = 0; cmd_names && cmd_names[c]; c++) all |= 1u << c;
  for (int i = 0; table[i].name; i++) {
    size_t l = strlen(table[i].name) + (table[i].metavar ? strlen(table[i].metavar) + 1 : 0);
    if (l > w) w = l;
  }
  for (int i = 0; table[i].name; i++) {
    char buf[160], cmds[200] = "";
    snprintf(buf, sizeof buf, "%s%s%s", table[i].name, table[i].metavar ? " " : "",
             table[i].metavar ? table[i].metavar : "");
    if (cmd_names && table[i].cmds && (table[i].cmds & all) != all) {
      snprintf(cmds, sizeof cmds, " (for:");
      for (int c = 0; cmd_names[c]; c++)
        if (table[i].cmds & (1u << c)) {
          size_t l = strlen(cmds);
          snprintf(cmds + l, sizeof cmds - l, "%s %s", cmds[l - 1] == ':' ? "" : ",", cmd_names[c]);
        }
      strncat(cmds, ")", sizeof cmds - strlen(cmds) - 1);
    }
    fprintf(f, "  --%-*s  %s%s\n", (int)w, buf, table[i].help, cmds);
  }
}

void gdn_cli_print_options(const gdn_cli_opt *table, FILE *f) { gdn_cli_print_options_cmd(table, NULL, f); }

int gdn_cli_int64(const char *s, const char *opt, int64_t min, int64_t max, int64_t *out,
                  gdn_error *e) {
  const char *p = s;
  int neg = 0;
  if (*p == '-' && min < 0) {
    neg = 1;
    p++;
  } else if (*p == '-' && isdigit((unsigned char)p[1])) {
    /* a negative integer where none is allowed: a range error, not a
     * "not an integer" */
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': out of range [%" PRId64 ", %" PRId64 "]", opt, s, min, max);
  }
  if (!isdigit((unsigned char)*p))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': not an integer", opt, s);
  uint64_t x = 0;
  for (; isdigit((unsigned char)*p); p++) {
    if (x > (UINT64_MAX - 9) / 10)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': out of range [%" PRId64 ", %" PRId64 "]",
                           opt, s, min, max);
    x = x * 10 + (uint64_t)(*p - '0');
  }
  if (*p)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': unexpected '%c' after the number", opt, s, *p);
  if (x > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': out of range [%" PRId64 ", %" PRId64 "]", opt,
                         s, min, max);
  int64_t v = neg ? (int64_t)(0 - x) : (int64_t)x;
  if (v < min || v > max)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': out of range [%" PRId64 ", %" PRId64 "]", opt,
                         s, min, max);
  *out = v;
  return GDN_OK;
}

int gdn_cli_uint64(const char *s, const char *opt, uint64_t *out, gdn_error *e) {
  const char *p = s;
  if (!isdigit((unsigned char)*p))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': not a non-negative integer", opt, s);
  uint64_t x = 0;
  for (; isdigit((unsigned char)*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (x > (UINT64_MAX - d) / 10)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': larger than 2^64 - 1", opt, s);
    x = x * 10 + d;
  }
  if (*p)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': unexpected '%c' after the number", opt, s, *p);
  *out = x;
  return GDN_OK;
}

int gdn_cli_bytes(const char *s, const char *opt, uint64_t *out, gdn_error *e) {
  char buf[64];
  size_t n = strlen(s);
  if (n == 0 || n >= sizeof buf)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': not a byte size", opt, s);
  memcpy(buf, s, n + 1);
  unsigned shift = 0;
  char c = (char)toupper((unsigned char)buf[n - 1]);
  if (c == 'K' || c == 'M' || c == 'G' || c == 'T') {
    shift = c == 'K' ? 10 : c == 'M' ? 20 : c == 'G' ? 30 : 40;
    buf[n - 1] = '\0';
  }
  uint64_t x;
  gdn_error sub;
  gdn_error_init(&sub);
  /* Messages quote the whole value ('K', not the '' left of the suffix). */
  if (!buf[0] || gdn_cli_uint64(buf, opt, &x, &sub))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': not a byte size (an integer with an optional K, M, G or T)",
                         opt, s);
  if (shift && x > (UINT64_MAX >> shift))
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': larger than 2^64 - 1 bytes", opt, s);
  *out = x << shift;
  return GDN_OK;
}

int gdn_cli_int64_list(const char *s, const char *opt, int64_t min, int64_t max, int64_t *out,
                       size_t cap, size_t *n, gdn_error *e) {
  *n = 0;
  const char *p = s;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': item %zu is %s", opt, s, *n + 1,
                           len ? "too long" : "empty");
    memcpy(item, p, len);
    item[len] = '\0';
    if (*n == cap)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': more than %zu values", opt, s, cap);
    int64_t v;
    gdn_error sub;
    gdn_error_init(&sub);
    if (gdn_cli_int64(item, opt, min, max, &v, &sub))
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': item %zu: %s", opt, s, *n + 1,
                           sub.msg + strlen(opt) + 1);
    for (size_t i = 0; i < *n; i++)
      if (out[i] == v)
        return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': %" PRId64 " is listed twice", opt, s, v);
    out[(*n)++] = v;
    if (!end) break;
    p = end + 1;
  }
  return GDN_OK;
}

int gdn_cli_name_list(const char *s, const char *opt, const char *const *choices, int *out,
                      size_t cap, size_t *n, gdn_error *e) {
  *n = 0;
  const char *p = s;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    int k = -1;
    for (int i = 0; choices[i]; i++)
      if (strlen(choices[i]) == len && !strncmp(choices[i], p, len)) k = i;
    if (k < 0) {
      char all[256] = "";
      for (int i = 0; choices[i]; i++) {
        strncat(all, i ? ", " : "", sizeof all - strlen(all) - 1);
        strncat(all, choices[i], sizeof all - strlen(all) - 1);
      }
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': unknown name '%.*s'; expected one of %s", opt,
                           s, (int)len, p, all);
    }
    for (size_t i = 0; i < *n; i++)
      if (out[i] == k)
        return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': '%s' is listed twice", opt, s, choices[k]);
    if (*n == cap)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': more than %zu names", opt, s, cap);
    out[(*n)++] = k;
    if (!end) break;
    p = end + 1;
  }
  return GDN_OK;
}
