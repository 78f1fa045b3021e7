/* `gdn-parity trust`: its option table, parsing and outputs (parity_trust.h). */
#include <stdlib.h>
#include <string.h>

#include "gdn_cli.h"
#include "gdn_text.h"
#include "gdn_threads.h"
#include "parity_trust.h"
#include "gdn_atomic.h"

static const gdn_cli_opt options[] = {
    {"shape", "B,T,H,D[/B,T,H,D...]", "the shapes to run, '/' between them (default 1,256,2,32; --campaign: its own)", 0},
    {"key-heads", "Hk", "key heads of every shape (default H; H must be a multiple of Hk)", 0},
    {"dv", "Dv", "value head dim of every shape (default D)", 0},
    {"chunk", "C", "chunk size (default 64)", 0},
    {"devices", "D[,D...]", "device counts of the affine-prefix kernel (default 1; --campaign: 1,8)", 0},
    {"regimes", "NAME[,NAME...]",
     "gate regimes: slow, init (the model's initial gates), spike-10, spike-40, spike-80 (slow gates, g = -10, "
     "-40, -80 on 5 % of tokens) (default all five)", 0},
    {"reforms", "all|NAME[,NAME...]",
     "the reformulations judged (kernels/kern_reform.h: solve-dot, cumsum-hillis-steele, ...; default all: every row "
     "but plain, the stock order itself)", 0},
    {"h0", "MODE", "with, without or both (default both)", 0},
    {"seeds", "N", "seeds 0 .. N-1 per shape, h0 mode and regime (default 4; --campaign: 50)", 0},
    {"first-seed", "S", "start at seed S: seeds S .. S+N-1 (default 0; a campaign split over several runs)", 0},
    {"grad", NULL, "also judge gradients (scan, affine-prefix, and the reformulations that have a backward)", 0},
    {"campaign", NULL,
     "the full campaign: shapes 1,1024,4,64; 1,1024,4,64 with 2 key heads; 2,512,4,32; 1,4096,4,128 with 2 key "
     "heads; 50 seeds; devices 1,8 (options given explicitly still apply; hours on 2 cores)", 0},
    {"oracle", "TIER", "reference: dd (default), mpfr or auto", 0},
    {"oracle-bits", "N", "MPFR working precision in bits (default 128)", 0},
    {"policy", "FILE", "tolerance policy (JSON; default: the built-in policy)", 0},
    {"json", "FILE", "write the trust document (docs/trust-json.md)", 0},
    {"reproducible", NULL, "omit the timing from the document (byte-identical reruns)", 0},
    {"expect-pass", NULL, "exit 1 when any correct subject FAILs any check (default: report only)", 0},
    {"threads", "N", "worker threads (default: all cores); results do not depend on it", 0},
    {"quiet", NULL, "print only the verdict line", 0},
    {"verbose", NULL, "also print a line per run on stderr", 0},
    {"help", NULL, "print this help and exit", 0},
    {NULL, NULL, NULL, 0},
};

static void print_help(FILE *f) {
  fprintf(f,
          "usage: gdn-parity trust [options]\n\n"
          "Runs correct reformulations of the stock chunked algorithm (kernels/kern_reform.h), the stock\n"
          "scan and the affine-prefix kernel over seeds and gate regimes, judges each with the policy\n"
          "and prints per rule the false-FAIL count and the distribution of value/limit.\n\n"
          "options:\n");
  gdn_cli_print_options(options, f);
  fprintf(f, "\nexit status: 0 done (with --expect-pass: and no false FAIL), 1 a false FAIL with\n"
             "--expect-pass, 2 bad usage or bad input, 3 internal error.\n");
}

#define GET(name) gdn_cli_get(options, a, name)

/* The campaign's shapes (B, T, Hk, Hv, Dk, Dv). */
static const gdn_shape campaign_shapes[] = {
    {1, 1024, 4, 4, 64, 64}, {1, 1024, 2, 4, 64, 64}, {2, 512, 4, 4, 32, 32}, {1, 4096, 2, 4, 128, 128}};

static int parse_shapes(const gdn_cli_args *a, parity_trust_opts *o, gdn_error *e) {
  const char *v = GET("shape");
  if (!v) {
    if (o->campaign) {
      o->n_shapes = sizeof campaign_shapes / sizeof campaign_shapes[0];
      memcpy(o->shapes, campaign_shapes, sizeof campaign_shapes);
      return GDN_OK;
    }
    v = "1,256,2,32";
  }
  o->n_shapes = 0;
  for (const char *p = v; *p;) {
    const char *c = strchr(p, '/');
    const size_t len = c ? (size_t)(c - p) : strlen(p);
    char one[128];
    if (o->n_shapes == PARITY_TRUST_MAX_SHAPES || len >= sizeof one)
      return gdn_error_set(e, GDN_ERR_INPUT, "--shape '%s': at most %d shapes", gdn_text_show(v),
                           PARITY_TRUST_MAX_SHAPES);
    snprintf(one, sizeof one, "%.*s", (int)len, p);
    gdn_shape *s = &o->shapes[o->n_shapes++];
    if (gdn_shape_parse(s, one, "--shape", e)) return e->code;
    int64_t x;
    if (GET("key-heads")) {
      if (gdn_cli_int64(GET("key-heads"), "--key-heads", 1, s->Hv, &x, e)) return e->code;
      s->Hk = x;
    }
    if (GET("dv")) {
      if (gdn_cli_int64(GET("dv"), "--dv", 1, 1 << 20, &x, e)) return e->code;
      s->Dv = x;
    }
    if (gdn_shape_validate(s, e)) return gdn_error_prefix(e, "--shape '%s': ", gdn_text_show(one)), e->code;
    p += len + (c != NULL);
    if (c && !*p) return gdn_error_set(e, GDN_ERR_INPUT, "--shape '%s' ends with '/'", gdn_text_show(v));
  }
  return GDN_OK;
}

static int parse_lists(const gdn_cli_args *a, parity_trust_opts *o, gdn_error *e) {
  const char *v;
  int idx[PARITY_TRUST_REGIMES];
  if (gdn_cli_name_list((v = GET("regimes")) ? v : "slow,init,spike-10,spike-40,spike-80", "--regimes",
                        parity_trust_regime_names, idx, PARITY_TRUST_REGIMES, &o->n_regimes, e))
    return e->code;
  memcpy(o->regimes, idx, sizeof idx);
  if (parity_trust_parse_reforms((v = GET("reforms")) ? v : "all", o->reforms, &o->n_reforms, e)) return e->code;
  if (gdn_cli_int64_list((v = GET("devices")) ? v : o->campaign ? "1,8" : "1", "--devices", 1, 4096, o->devices, 8,
                         &o->n_devices, e))
    return e->code;
  v = GET("h0") ? GET("h0") : "both";
  o->n_h0 = 0;
  if (!strcmp(v, "without") || !strcmp(v, "both")) o->h0[o->n_h0++] = 0;
  if (!strcmp(v, "with") || !strcmp(v, "both")) o->h0[o->n_h0++] = 1;
  if (!o->n_h0) return gdn_error_set(e, GDN_ERR_INPUT, "--h0 '%s': expected with, without or both", gdn_text_show(v));
  return GDN_OK;
}

static int parse_opts(const gdn_cli_args *a, parity_trust_opts *o, gdn_error *e) {
  const char *v;
  int64_t x;
  memset(o, 0, sizeof *o);
  o->campaign = GET("campaign") != NULL;
  o->grad = GET("grad") != NULL;
  o->reproducible = GET("reproducible") != NULL;
  o->chunk = 64;
  o->seeds = o->campaign ? 50 : 4;
  o->tier = PARITY_ORACLE_DD;
  o->oracle_bits = 128;
  if ((v = GET("threads"))) {
    if (gdn_cli_int64(v, "--threads", 1, 4096, &x, e)) return e->code;
    gdn_threads_set((int)x);
  }
  if (GET("quiet") && GET("verbose")) return gdn_error_set(e, GDN_ERR_INPUT, "--quiet and --verbose contradict each other");
  if ((v = GET("chunk")) && gdn_cli_int64(v, "--chunk", 1, 1 << 16, &o->chunk, e)) return e->code;
  if ((v = GET("seeds")) && gdn_cli_int64(v, "--seeds", 1, 1 << 20, &o->seeds, e)) return e->code;
  if ((v = GET("first-seed")) && gdn_cli_int64(v, "--first-seed", 0, INT64_C(1) << 40, &o->first_seed, e))
    return e->code;
  if ((v = GET("oracle"))) {
    if (parity_oracle_tier_parse(v, &o->tier, e)) return e->code;
    if (o->tier == PARITY_ORACLE_NONE)
      return gdn_error_set(e, GDN_ERR_INPUT, "--oracle none: trust judges against a reference; give dd, mpfr or auto");
  }
  if ((v = GET("oracle-bits"))) {
    if (gdn_cli_int64(v, "--oracle-bits", 53, 4096, &x, e)) return e->code;
    o->oracle_bits = (int)x;
  }
  if (parse_shapes(a, o, e)) return e->code;
  return parse_lists(a, o, e);
}

/* The command as recorded: the arguments that change the result (not
 * --threads, --json, --quiet, --verbose). */
static char *record_command(int argc, char **argv) {
  size_t n = 32;
  for (int i = 2; i < argc; i++) n += strlen(argv[i]) + 1;
  char *s = malloc(n);
  if (!s) return NULL;
  strcpy(s, "gdn-parity trust");
  for (int i = 2; i < argc; i++) {
    const char *x = argv[i];
    if (!strcmp(x, "--threads") || !strcmp(x, "--json")) {
      i++;
      continue;
    }
    if (!strncmp(x, "--threads=", 10) || !strncmp(x, "--json=", 7) || !strcmp(x, "--quiet") ||
        !strcmp(x, "--verbose"))
      continue;
    strcat(s, " ");
    strcat(s, x);
  }
  return s;
}

/* The document as indented JSON (keys in the order written, reals with 17
 * digits), replaced atomically. */
static int write_json(const json_t *doc, const char *path, gdn_error *e) {
  char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  if (!s) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (trust JSON)");
  const size_t n = strlen(s);
  s[n] = '\n'; /* json_dumps leaves room: the terminator becomes the newline */
  int rc = gdn_atomic_write_all(path, s, n + 1, e);
  free(s);
  if (rc) gdn_error_prefix(e, "--json: ");
  return rc;
}

int parity_trust_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e) {
  gdn_cli_args args, *a = &args;
  if (gdn_cli_parse(options, argc, argv, 2, a, e)) return -1;
  if (GET("help")) return print_help(out), 0;
  if (a->n_pos) return gdn_error_set(e, GDN_ERR_INPUT, "trust: unexpected argument '%s' (see trust --help)",
                                     gdn_text_show(a->pos[0])), -1;
  parity_trust_opts o;
  if (parse_opts(a, &o, e)) return -1;
  parity_policy pol;
  parity_policy_init(&pol);
  const char *v = GET("policy");
  char *command = record_command(argc, argv);
  json_t *doc = NULL;
  int rc = command ? GDN_OK : gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  if (!rc) rc = v ? parity_policy_load_file(&pol, v, e) : parity_policy_load_builtin(&pol, e);
  if (!rc) {
    o.policy = &pol;
    o.command = command;
    o.progress = GET("verbose") ? err : NULL;
    rc = parity_trust_run(&o, &doc, e);
  }
  if (!rc && GET("json")) rc = write_json(doc, GET("json"), e);
  int status = -1;
  if (!rc) {
    const int pass = json_is_true(json_object_get(doc, "pass"));
    if (GET("quiet"))
      fprintf(out, "trust: %s: %lld false FAIL(s)\n", pass ? "PASS" : "FAIL",
              (long long)json_integer_value(json_object_get(doc, "false_fails")));
    else
      parity_trust_log(out, doc);
    status = GET("expect-pass") && !pass ? 1 : 0;
  }
  json_decref(doc);
  free(command);
  parity_policy_clear(&pol);
  return status;
}
