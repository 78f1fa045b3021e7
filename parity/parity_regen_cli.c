/* `gdn-parity regen`: gdn-fixture regen's work, its head groups dealt over
 * mpirun's ranks (parity/run/parity_regen.h).  Its own option table:
 * gdn-fixture regen's, --group-heads' default said for ranks. */
#include <stdint.h>
#include <string.h>

#include "fix_load.h"
#include "gdn_cli.h"
#include "gdn_progress.h"
#include "gdn_text.h"
#include "gdn_threads.h"
#include "parity_cli.h"
#include "parity_dist.h"
#include "parity_regen.h"

static const gdn_cli_opt options[] = {
    {"oracle", "TIER", "mpfr (default: every element certified against N + 64 bits) or dd (double-double, ~40x "
                       "faster, certified on 2 sampled state columns per head against MPFR at N; its certificate "
                       "stored with it)", 0},
    {"oracle-bits", "N", "MPFR working precision (default: 128); the self-check runs at N + 64", 0},
    {"force", NULL, "replace an existing /oracle", 0},
    {"threads", "N", "threads per rank for the oracle (default: all cores; results do not depend on it)", 0},
    {"max-bytes", "SIZE", "refuse fixtures needing more than SIZE per rank (K/M/G/T suffixes; 0: no limit; "
                          "default: 8G)", 0},
    {"quiet", NULL, "print nothing on success, and no progress line (drawn only when stderr is a terminal)", 0},
    {"group-heads", "N", "key heads per group, group g on rank g mod the ranks (default: the most that fit "
                         "--max-bytes, at most ceil(Hk / ranks); one process: as gdn-fixture regen)", 0},
    {"grads", NULL, "also store the oracle's gradients for the file's /cotangents (/oracle/grads, the same tier; "
                    "gdn-parity check then computes no VJP)", 0},
    {"help", NULL, "show this help", 0},
    {NULL, NULL, NULL, 0},
};

#define GET(name) gdn_cli_get(options, a, name)

static void print_help(FILE *f) {
  fprintf(f,
          "usage: [mpirun -np N] gdn-parity regen FILE.h5 [--oracle mpfr|dd] [--oracle-bits N] [--grads] "
          "[--force] [--quiet]\n\n"
          "Computes and stores a fixture's /oracle, as gdn-fixture regen does; under mpirun its key-head\n"
          "groups are dealt over the ranks and rank 0 writes the file, byte for byte the one-process\n"
          "regen's with the same --group-heads.\n\n"
          "options:\n");
  gdn_cli_print_options(options, f);
  fprintf(f, "\nexit status: 0 written, 2 bad usage or bad input (the file unchanged), 3 internal error.\n");
}

static int parse_opts(const gdn_cli_args *a, fix_regen_opts *o, gdn_error *e) {
  fix_regen_opts_init(o);
  int rc;
  const char *v;
  if ((v = GET("oracle-bits")) && (rc = gdn_cli_int64(v, "--oracle-bits", 53, 1 << 20, &o->bits, e))) return rc;
  if ((v = GET("oracle"))) {
    if (strcmp(v, "mpfr") && strcmp(v, "dd"))
      return gdn_error_set(e, GDN_ERR_INPUT, "--oracle: '%s' is not mpfr or dd", gdn_text_show(v));
    o->dd = !strcmp(v, "dd");
  }
  if ((v = GET("threads"))) {
    int64_t n;
    if ((rc = gdn_cli_int64(v, "--threads", 1, 4096, &n, e))) return rc;
    gdn_threads_set((int)n);
  }
  o->force = GET("force") != NULL;
  o->grads = GET("grads") != NULL;
  o->max_bytes = FIX_DEFAULT_MAX_BYTES;
  if ((v = GET("max-bytes")) && (rc = gdn_cli_bytes(v, "--max-bytes", &o->max_bytes, e))) return rc;
  if ((v = GET("group-heads")) && (rc = gdn_cli_int64(v, "--group-heads", 1, INT64_MAX, &o->group_heads, e)))
    return rc;
  return GDN_OK;
}

int parity_regen_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e) {
  gdn_cli_args args, *a = &args;
  if (gdn_cli_parse(options, argc, argv, 2, a, e)) return -1;
  if (GET("help")) return print_help(out), 0;
  if (a->n_pos != 1)
    return gdn_error_set(e, GDN_ERR_INPUT, "regen: expected one fixture file, got %d (see regen --help)",
                         a->n_pos), -1;
  fix_regen_opts o;
  if (parse_opts(a, &o, e)) return -1;
  const char *path = a->pos[0], *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  const int quiet = GET("quiet") != NULL;
  /* rank 0's progress line: its own groups' share (gdn_progress.h) */
  char what[128];
  /* with --grads the forward and the VJP share the step (fix_regen_meter.h) */
  snprintf(what, sizeof what, "oracle%s (%s) of %s", o.grads ? " and VJP" : "", o.dd ? "dd" : "mpfr", base);
  gdn_progress line;
  gdn_progress_init(&line, err, !quiet && parity_dist_rank() == 0);
  gdn_progress_add(&line, 1);
  gdn_progress_begin(&line, what);
  const oracle_progress op = {gdn_progress_oracle, &line};
  o.progress = line.f ? &op : NULL;
  fix_oracle res;
  fix_oracle_init(&res);
  int shared = 0;
  int rc = parity_regen_run(path, &o, &res, &shared, e);
  gdn_progress_end(&line);
  gdn_progress_clear(&line);
  char grads[160];
  fix_regen_grads_line(&res, grads, sizeof grads);
  if (!rc && !quiet)
    fprintf(out, "%s: /oracle written: precision_bits %lld, certified_bits %lld, inputs_sha256 %s%s%s (%d rank%s)\n",
            path, (long long)res.precision_bits, (long long)res.certified_bits, res.inputs_sha256,
            res.tier_dd ? "; tier dd (certified on sampled columns; gdn-fixture info shows its certificate)" : "",
            grads, parity_dist_size(), parity_dist_size() > 1 ? "s" : "");
  fix_oracle_clear(&res);
  if (rc && shared && parity_dist_rank() > 0) {
    /* rank 0's error, which rank 0 reports (and ends every rank with, when
     * it is not bad input): one line, not one per rank */
    gdn_error_init(e);
    return 0;
  }
  return rc ? -1 : 0;
}
