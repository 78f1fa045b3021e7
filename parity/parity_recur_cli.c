/* gdn-parity --recurrence NAME (parity_recur_cli.h). */
#include "parity_recur_cli.h"

#include <string.h>

#include "gdn_chgate.h"
#include "gdn_shape.h"
#include "gdn_threads.h"
#include "parity_dist.h"
#include "parity_output.h"
#include "parity_recur_grad.h"
#include "parity_recur_mode_band.h"
#include "parity_recur_stream.h"
#include "parity_recur_sweep.h"

/* The options a non-GDN recurrence takes today; any other given option is
 * refused by name. */
static const char *const supported[] = {"recurrence", "shape", "key-heads", "dv", "chunk", "seed", "h0",
                                        "oracle-bits", "json", "threads", "quiet", "verbose", "reproducible",
                                        "mutant", "devices", "oracle", "grad", "report", "junit", "summary",
                                        "prefix", "shard", "dtype", "matmul-precision", "ftz", "no-ftz",
                                        "max-bytes", "group-heads", "backend", "solve", NULL};

static int is_supported(const char *name) {
  for (int i = 0; supported[i]; i++)
    if (!strcmp(name, supported[i])) return 1;
  return 0;
}

/* The index of a backward mutant's name (--grad --mutant NAME), 0 if none. */
static int vjp_mutant_index(const parity_recurrence *rec, const char *name) {
  for (int i = 1; rec->vjp_mutants && rec->vjp_mutants[i]; i++)
    if (!strcmp(name, rec->vjp_mutants[i])) return i;
  return 0;
}

static int parse(const parity_recurrence *rec, const gdn_cli_opt *table, const gdn_cli_args *a, parity_recur_opts *o,
                 gdn_error *e) {
#define GET(n) gdn_cli_get(table, a, n)
  const char *v;
  int64_t x;
  parity_recur_opts_init(o, rec);
  if (!(v = GET("shape")))
    return gdn_error_set(e, GDN_ERR_INPUT, "--recurrence %s: give --shape B,T,H,D", rec->name);
  if (gdn_shape_parse(&o->shape, v, "--shape", e)) return -1;
  if ((v = GET("key-heads"))) {
    if (gdn_cli_int64(v, "--key-heads", 1, o->shape.Hv, &x, e)) return -1;
    o->shape.Hk = x;
  }
  if ((v = GET("dv"))) {
    if (gdn_cli_int64(v, "--dv", 1, 1 << 16, &x, e)) return -1;
    o->shape.Dv = x;
  }
  if (gdn_shape_validate(&o->shape, e)) return gdn_error_prefix(e, "--shape / --key-heads: ");
  size_t n = 1;
  if ((v = GET("chunk")) &&
      gdn_cli_int64_list(v, "--chunk", 1, 1 << 20, o->chunks, PARITY_RECUR_MAX_CHUNKS, &n, e))
    return -1;
  o->n_chunks = (int)n;
  if ((v = GET("devices"))) {
    if (gdn_cli_int64_list(v, "--devices", 1, 1 << 20, o->devices, PARITY_RECUR_MAX_CHUNKS, &n, e)) return -1;
    o->n_devices = (int)n;
  }
  if ((v = GET("prefix")) && strchr(v, ','))
    return gdn_error_set(e, GDN_ERR_INPUT, "--prefix %s: --recurrence %s takes one schedule per run", v, rec->name);
  if (v && kern_prefix_parse(v, &o->prefix, e)) return -1;
  if ((v = GET("shard")) && kern_shard_parse(v, &o->shard, e)) return -1;
  if ((v = GET("dtype")) && gdn_dtype_parse(v, &o->dtype, "--dtype", e)) return -1;
  if ((v = GET("matmul-precision")) && kern_matmul_parse(v, &o->matmul, e)) return -1;
  if (GET("ftz") && GET("no-ftz"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--ftz and --no-ftz contradict each other");
  o->ftz = GET("ftz") != NULL;
  if ((v = GET("solve")) && kern_solve_parse(v, &o->solve, e)) return -1;
  for (int i = 0; i < o->n_devices && o->shard == KERN_SHARD_TOKENS; i++)
    if (o->shape.T % o->devices[i])
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "--devices %lld does not divide T = %lld: the affine-prefix shards the sequence by tokens "
                           "(T/D each); give --devices that divide T",
                           (long long)o->devices[i], (long long)o->shape.T);
  if ((v = GET("seed")) && gdn_cli_uint64(v, "--seed", &o->seed, e)) return -1;
  o->h0 = GET("h0") != NULL;
  if ((v = GET("oracle-bits"))) {
    if (gdn_cli_int64(v, "--oracle-bits", 53, 4096, &x, e)) return -1;
    o->oracle_bits = (int)x;
  }
  if ((v = GET("threads"))) {
    if (gdn_cli_int64(v, "--threads", 1, 4096, &x, e)) return -1;
    gdn_threads_set((int)x);
  }
  if ((v = GET("oracle"))) {
    if (!strcmp(v, "dd")) o->dd = 1;
    else if (!strcmp(v, "auto")) o->oracle_auto = 1;
    else if (strcmp(v, "mpfr"))
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "--oracle %s: --recurrence %s takes mpfr, dd or auto (= mpfr; with --grad the VJP is dd "
                           "when its MPFR run would be long)",
                           v, rec->name);
  }
  if ((v = GET("mutant")) && !(GET("grad") && (o->vjp_mutant = vjp_mutant_index(rec, v)) > 0) &&
      (o->mutant = parity_recurrence_mutant(rec, v, e)) < 0)
    return -1;
#undef GET
  return GDN_OK;
}

/* --max-bytes (default 16 GiB) and --group-heads: the run's plan
 * (parity_recur_stream.h); a shape over the budget streams by key-head
 * group. */
static int parity_recur_cli_plan(const parity_recur_opts *o, const gdn_cli_opt *table, const gdn_cli_args *a,
                                 int grad, parity_stream_plan *p, gdn_error *e) {
  const char *b = gdn_cli_get(table, a, "backend");
  if (b && strcmp(b, "simulated") && strcmp(b, "mpi"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--backend: unknown '%s' (simulated or mpi)", b), -1;
  if (b && !strcmp(b, "mpi") && !parity_dist_have_mpi())
    return gdn_error_set(e, GDN_ERR_INPUT, "--backend mpi: this gdn-parity was built without MPI (meson setup "
                         "-Dmpi=enabled)"), -1;
  uint64_t max_bytes = 16ull << 30;
  int64_t force = 0;
  const char *v;
  if ((v = gdn_cli_get(table, a, "max-bytes")) && gdn_cli_bytes(v, "--max-bytes", &max_bytes, e)) return -1;
  if ((v = gdn_cli_get(table, a, "group-heads")) && gdn_cli_int64(v, "--group-heads", 1, INT64_MAX, &force, e))
    return -1;
  if (parity_recur_stream_plan(o, grad, max_bytes, force, p, e)) return -1;
  return GDN_OK;
}

int parity_recur_cli_main(const parity_recurrence *rec, const gdn_cli_opt *table, const gdn_cli_args *a,
                          int command_is_run, FILE *out, gdn_error *e) {
  if (!command_is_run)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--recurrence %s: only the default command (--shape) is supported yet; sweep, check and "
                         "coverage are not",
                         rec->name), -1;
  for (int i = 0; table[i].name; i++)
    if (a->value[i] && !is_supported(table[i].name))
      return gdn_error_set(e, GDN_ERR_INPUT, "--recurrence %s does not support --%s yet (see docs/errors.md)",
                           rec->name, table[i].name), -1;
  parity_recur_opts o;
  /* the outputs (report_recur.h), their folders checked before any work */
  const parity_output_opts oo = {gdn_cli_get(table, a, "json"), gdn_cli_get(table, a, "report"),
                                 gdn_cli_get(table, a, "junit"), gdn_cli_get(table, a, "summary"), 0};
  if (parse(rec, table, a, &o, e) || parity_output_check_paths(&oo, e)) return -1;
  const int quiet = gdn_cli_get(table, a, "quiet") != NULL;
  o.log = quiet ? NULL : out;
  json_t *doc = NULL;
  int pass = 0;
  const int grad = gdn_cli_get(table, a, "grad") != NULL;
  if (grad && o.mutant)
    return gdn_error_set(e, GDN_ERR_INPUT, "--grad with --mutant %s: the backward of --recurrence %s implements no "
                         "forward mutant; drop one of them", rec->mutants[o.mutant], rec->name), -1;
  parity_stream_plan plan;
  if (parity_recur_cli_plan(&o, table, a, grad, &plan, e)) return -1;
  const char *why = parity_recur_mode_band_reason(o.dtype, o.matmul, 0),
             *gwhy = parity_recur_mode_band_reason(o.dtype, o.matmul, 1);
  if (o.log && why) fprintf(o.log, "band follows the numerics mode: %s\n", why);
  if (o.log && grad && gwhy) fprintf(o.log, "backward band follows the numerics mode: %s\n", gwhy);
  if (parity_recur_sweep_streamed(&o, &plan, &doc, &pass, e)) return -1;
  if (json_object_set_new(doc, "prefix", json_string(kern_prefix_name(o.prefix))) ||
      json_object_set_new(doc, "shard", json_string(kern_shard_name(o.shard))) ||
      json_object_set_new(doc, "dtype", json_string(gdn_dtype_name(o.dtype))) ||
      json_object_set_new(doc, "matmul", json_string(kern_matmul_name(o.matmul))) ||
      json_object_set_new(doc, "ftz", json_boolean(o.ftz)) ||
      json_object_set_new(doc, "solve", json_string(kern_solve_name(o.solve))) ||
      (why && json_object_set_new(doc, "band_reason", json_string(why))))
    return json_decref(doc), gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)"), -1;
  if (grad && parity_recur_grad_streamed(&o, &plan, o.vjp_mutant, doc, &pass, e)) return json_decref(doc), -1;
  if (parity_dist_rank() != 0) return json_decref(doc), pass ? 0 : 1; /* rank 0 writes and prints */
  if (parity_output_write_all(&oo, doc, e)) return json_decref(doc), -1;
  const json_int_t nc = json_integer_value(json_object_get(doc, "n_cases")),
                   nf = json_integer_value(json_object_get(doc, "n_failed"));
  fprintf(out, "%s: %lld case%s, %lld failed (recurrence %s%s%s%s)\n", pass ? "PASS" : "FAIL", (long long)nc,
          nc == 1 ? "" : "s", (long long)nf, rec->name, o.solve ? ", solve xla-expander" : "",
          o.mutant || o.vjp_mutant ? ", PLANTED MUTANT " : "",
          o.mutant ? rec->mutants[o.mutant] : o.vjp_mutant ? rec->vjp_mutants[o.vjp_mutant] : "");
  json_decref(doc);
  return pass ? 0 : 1;
}
