#include "parity_cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fix.h"
#include "fix_isolate.h"
#include "gdn_atomic.h"
#include "gdn_config.h"
#include "gdn_inputs.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "parity_external.h"
#include "parity_grid.h"
#include "parity_oracle.h"
#include "parity_output.h"
#include "parity_policy.h"
#include "parity_sweep.h"
#include "report.h"

/* One table for every command: the parser and --help both read it. */
static const gdn_cli_opt options[] = {
    {"shape", "B,T,H,D", "batch, sequence length, value heads, head dim (Dk = Dv = D)"},
    {"key-heads", "Hk", "key heads (default H); H must be a multiple of Hk"},
    {"dv", "Dv", "value head dim (default D)"},
    {"chunk", "C[,C...]", "chunk sizes (default 64)"},
    {"devices", "D[,D...]", "context-parallel device counts for affine-prefix (default 1,2,4,8)"},
    {"prefix", "NAME[,NAME...]",
     "exclusive-prefix schedules: sequential, associative-scan, hillis-steele (default sequential)"},
    {"shard", "MODE",
     "how affine-prefix splits the sequence: tokens (T/D tokens per device, each padded to whole "
     "chunks on its own, as upstream's shard_map; default) or chunks (whole chunks, array_split)"},
    {"solve", "NAME",
     "the in-chunk triangular solve of both kernels: substitution (fma forward substitution, the "
     "order of the reference BLAS trsm JAX calls on CPU; default) or xla-expander (XLA's "
     "TriangularSolveExpander as on TPU: row by row, HIGHEST dots)"},
    {"prelude", "KIND",
     "synthetic inputs: none (the kernel called with float32 inputs, as MaxText's unit tests; "
     "default) or bfloat16 (the layer's prelude: q, k, v L2-normalised and g, beta computed in "
     "bfloat16 from the layer's activations, as the real layer calls the kernel)"},
    {"documents", "N", "synthetic inputs: N packed documents per row (segment ids; boundaries drawn "
                       "from the seed: on a seam, on a chunk edge, inside a chunk; default 1)"},
    {"packing", "MODE", "state at a document boundary: leak (carried, as MaxText; default) or reset "
                        "(restarted, as flash-linear-attention's cu_seqlens)"},
    {"dtype", "TYPE", "kernel compute dtype: float32, bfloat16, float64 (default float32)"},
    {"matmul-precision", "MODE",
     "default (1 bf16 pass), high (3), highest (6), ieee (plain float32 fma) (default highest)"},
    {"ftz", NULL, "flush subnormals to zero, as TPU does (default: on in the bf16 modes)"},
    {"no-ftz", NULL, "keep subnormals even in the bf16 modes"},
    {"oracle", "TIER",
     "reference: auto (default: mpfr while it takes minutes, else dd), mpfr (every element certified), "
     "dd (double-double, certified on sampled columns), or none (affine-prefix judged against scan only)"},
    {"oracle-bits", "N", "MPFR working precision in bits (default 128)"},
    {"grad", NULL,
     "also judge gradients: both kernels' backward (dq dk dv dg dbeta dh0) for cotangents do, dht "
     "drawn from the seed, against the oracle's VJP (the --oracle tier); float32 / float64 compute"},
    {"seed", "N", "synthetic input seed (default 0)"},
    {"h0", NULL, "synthetic inputs get a random initial state h0"},
    {"gates", "KIND", "synthetic decay gates: init (as the model initialises them; default) or slow "
                      "(long memory: per-token decay 0.9..0.9999)"},
    {"qk-norm", "WHERE", "in-kernel (the kernel L2-normalises q, k; default) or pre (inputs normalised)"},
    {"input-dtype", "TYPE", "synthetic input storage: float32 (default) or bfloat16"},
    {"grid", "GRID.json", "sweep: the grid of cases to run"},
    {"fixture", "FILE.h5", "check: the fixture to judge (more may follow as arguments)"},
    {"policy", "FILE", "tolerance policy (JSON; default: the built-in policy)"},
    {"print-policy", NULL, "print the built-in tolerance policy and exit"},
    {"json", "FILE", "write the results document (JSON)"},
    {"junit", "FILE", "write JUnit XML, one testcase per case"},
    {"report", "FILE.html", "write the HTML tolerance report"},
    {"summary", "FILE.md", "write a Markdown summary (for a CI job summary)"},
    {"output", "FILE.html", "report: the HTML file to write (also -o)"},
    {"reproducible", NULL, "omit timestamps and timings from the outputs (byte-identical reruns)"},
    {"max-bytes", "SIZE", "refuse inputs larger than SIZE bytes (K/M/G suffixes; default 16G)"},
    {"threads", "N", "worker threads (default: all cores); results do not depend on it"},
    {"quiet", NULL, "print only the verdict"},
    {"verbose", NULL, "print every check of every case"},
    {"version", NULL, "print the version and exit"},
    {"help", NULL, "print this help and exit"},
    {NULL, NULL, NULL},
};

const gdn_cli_opt *parity_cli_options(void) { return options; }

void parity_cli_print_help(FILE *f) {
  fprintf(f,
          "gdn-parity %s: does the context-parallel (affine-prefix) Gated DeltaNet compute\n"
          "the same thing as the stock sequential scan, and how far is each from the truth?\n\n"
          "usage:\n"
          "  gdn-parity --shape B,T,H,D [options]          synthetic case(s): the main job\n"
          "  gdn-parity sweep --grid GRID.json [options]   a grid of cases\n"
          "  gdn-parity check --fixture FILE.h5 [FILE.h5 ...] [options]\n"
          "                                                judge a fixture's /outputs/* and our kernels\n"
          "  gdn-parity report RESULTS.json [--report|-o FILE.html] [--junit F] [--summary F]\n"
          "                                                rebuild reports from a saved results document\n"
          "  gdn-parity --print-policy                     the built-in tolerance policy\n\n"
          "options:\n",
          GDN_VERSION);
  gdn_cli_print_options(options, f);
  fprintf(f,
          "\nexit status: 0 every case within tolerance, 1 at least one case out of tolerance,\n"
          "2 bad usage or bad input (the message says what and where), 3 internal error.\n");
}

#define GET(name) gdn_cli_get(options, &a, name)

/* Options that never change a result: left out of the recorded command, so
 * the results document is byte-identical whatever the thread count, the
 * output file names or the verbosity. */
static int is_incidental(const char *arg, int *takes_value) {
  static const char *const with_value[] = {"--threads", "--json", "--junit", "--report", "--summary", NULL};
  static const char *const flags[] = {"--quiet", "--verbose", NULL};
  *takes_value = 0;
  for (int i = 0; with_value[i]; i++) {
    size_t n = strlen(with_value[i]);
    if (!strncmp(arg, with_value[i], n) && (arg[n] == '\0' || arg[n] == '=')) {
      *takes_value = arg[n] == '\0';
      return 1;
    }
  }
  for (int i = 0; flags[i]; i++)
    if (!strcmp(arg, flags[i])) return 1;
  return 0;
}

static char *join_args(int argc, char **argv) {
  size_t n = 1;
  for (int i = 0; i < argc; i++) n += strlen(argv[i]) * 4 + 3;
  char *s = malloc(n), *p = s;
  if (!s) return NULL;
  /* The program is recorded by name, not by the path it was run from. */
  memcpy(p, "gdn-parity", 10);
  p += 10;
  for (int i = 1; i < argc; i++) {
    int tv;
    if (is_incidental(argv[i], &tv)) {
      i += tv;
      continue;
    }
    int quote = strpbrk(argv[i], " \t\"'$\\") != NULL || !argv[i][0];
    if (p != s) *p++ = ' ';
    if (quote) *p++ = '\'';
    for (const char *c = argv[i]; *c; c++) {
      if (quote && *c == '\'') {
        memcpy(p, "'\\''", 4);
        p += 4;
      } else {
        *p++ = *c;
      }
    }
    if (quote) *p++ = '\'';
  }
  *p = '\0';
  return s;
}

static const char *const prefix_choices[] = {"sequential", "associative-scan", "hillis-steele", NULL};

/* Options shared by every command: the sweep grid and numerics. */
static int parse_sweep_opts(const gdn_cli_args *aa, parity_sweep_opts *o, gdn_error *e) {
  const gdn_cli_args a = *aa;
  const char *v;
  int rc;
  if ((v = GET("chunk")) &&
      (rc = gdn_cli_int64_list(v, "--chunk", 1, 1 << 20, o->chunks, PARITY_MAX_LIST, &o->n_chunks, e)))
    return rc;
  if ((v = GET("devices"))) {
    if ((rc = gdn_cli_int64_list(v, "--devices", 1, 1 << 20, o->devices, PARITY_MAX_LIST,
                                 &o->n_devices, e)))
      return rc;
    o->devices_default = 0;
  }
  if ((v = GET("prefix"))) {
    int idx[3];
    size_t n;
    if ((rc = gdn_cli_name_list(v, "--prefix", prefix_choices, idx, 3, &n, e))) return rc;
    for (size_t i = 0; i < n; i++) o->prefixes[i] = (kern_prefix)idx[i];
    o->n_prefixes = n;
  }
  if ((v = GET("shard")) && (rc = kern_shard_parse(v, &o->shard, e))) return rc;
  if ((v = GET("solve")) && (rc = kern_solve_parse(v, &o->solve, e))) return rc;
  if ((v = GET("dtype")) && (rc = gdn_dtype_parse(v, &o->dtype, "--dtype", e))) return rc;
  if ((v = GET("matmul-precision")) && (rc = kern_matmul_parse(v, &o->matmul, e))) return rc;
  if (GET("ftz") && GET("no-ftz"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--ftz and --no-ftz contradict each other");
  if (GET("ftz")) o->ftz = 1;
  if (GET("no-ftz")) o->ftz = 0;
  return GDN_OK;
}

typedef struct run_state {
  parity_policy policy;
  parity_doc doc;
  int doc_ready;
  parity_oracle_tier tier;
  int oracle_bits;
  uint64_t max_bytes;
  int grad; /* --grad */
} run_state;

/* --grad's memory, refused before anything is allocated: three gradient
 * sets (the reference's and both kernels', binary64, the size of the inputs
 * with h0 twice over: 2 x input bytes each) and the float32 cotangents (do,
 * dht: half an output set), beside the forward's inputs and 3 output sets. */
static int grads_check_limit(const run_state *st, const gdn_shape *s, gdn_error *e) {
  uint64_t in, out;
  int rc = gdn_shape_bytes(s, 1, &in, &out, e);
  if (rc || st->max_bytes == 0) return rc;
  const double need = (double)in * 7 + (double)out * 3.5;
  if (need <= (double)st->max_bytes) return GDN_OK;
  char lab[160];
  gdn_shape_format(s, lab, sizeof lab);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--grad: shape %s needs about %.3g GiB (inputs, 3 output sets, 3 gradient sets of "
                       "%.3g GiB, cotangents), more than the limit of %.3g GiB (--max-bytes)",
                       lab, need / 1073741824.0, 2.0 * (double)in / 1073741824.0,
                       (double)st->max_bytes / 1073741824.0);
}

/* --grad: cotangents do, dht from `seed` (gdn_cotangents_synth: N(0, 1), a
 * function of (seed, tensor, index)), the reference's gradients for them,
 * and the sweep told to run every kernel's backward with them.  Without
 * --grad nothing happens: no gradient in any output. */
static int grads_setup(const run_state *st, int grad, const gdn_inputs *in, uint64_t seed, parity_reference *ref,
                       gdn_cotangents *ct, parity_sweep_opts *o, gdn_error *e) {
  if (!grad) return GDN_OK;
  if (in->seg) /* neither backward (kernels, oracle VJP) reads segment ids */
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--grad: packed documents (segment ids) have no backward yet; drop --grad or --documents");
  int rc = gdn_cotangents_alloc(ct, &in->shape, 1, e);
  if (rc) return rc;
  gdn_cotangents_synth(ct, seed);
  if ((rc = parity_reference_compute_grads(ref, in, ct, st->oracle_bits, e))) return rc;
  o->ct = ct;
  return GDN_OK;
}

/* One synthetic input set through the sweep. */
static int run_synthetic(run_state *st, const parity_synth_spec *sp, const parity_sweep_opts *o,
                         gdn_error *e) {
  int rc = parity_sweep_validate(&sp->shape, o, e);
  if (rc) return rc;
  /* inputs + reference + scan + one affine result */
  if ((rc = gdn_shape_check_limit(&sp->shape, (sp->synth.flags & GDN_SYNTH_H0) != 0, 3,
                                  st->max_bytes, e)))
    return rc;
  if ((st->grad || sp->grad) && (rc = grads_check_limit(st, &sp->shape, e))) return rc;
  gdn_inputs in;
  gdn_inputs_init(&in);
  parity_reference ref;
  parity_reference_init(&ref);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  if ((rc = gdn_synth_generate(&in, &sp->shape, &sp->synth, e))) goto done;
  if ((rc = gdn_synth_segments(&in, sp->synth.seed, sp->documents, e))) goto done;
  in.packing = sp->packing;
  if ((rc = parity_reference_compute(&ref, &in, st->tier, st->oracle_bits, e))) goto done;
  parity_sweep_opts og = *o;
  if ((rc = grads_setup(st, st->grad || sp->grad, &in, sp->synth.seed, &ref, &ct, &og, e))) goto done;
  char name[96], sha[FIX_SHA256_HEX];
  snprintf(name, sizeof name, "synthetic seed %" PRIu64 "%s", sp->synth.seed,
           (sp->synth.flags & GDN_SYNTH_PRELUDE_BF16) ? " (bfloat16 layer prelude)" : "");
  /* The schema's inputs hash, so synthetic and fixture inputs are named alike. */
  if ((rc = fix_inputs_sha256(&in, sha, e))) goto done;
  parity_input_info info = {name, "synthetic", NULL, sha};
  rc = parity_sweep_run(&st->doc, &in, &info, &ref, NULL, 0, &og, e);
done:
  gdn_cotangents_clear(&ct);
  parity_reference_clear(&ref);
  gdn_inputs_clear(&in);
  return rc;
}

/* gdn-parity report RESULTS.json -o report.html: the reports of a saved run.
 * Exit status is the saved run's verdict (0 pass, 1 fail). */
static int report_command(const gdn_cli_args *aa, FILE *out, gdn_error *e) {
  const gdn_cli_args a = *aa;
  if (a.n_pos != 1) {
    gdn_error_set(e, GDN_ERR_INPUT, "report needs exactly one results document: gdn-parity report RESULTS.json -o FILE.html");
    return -1;
  }
  static const char *const allowed[] = {"report", "output", "junit", "summary", "quiet", "verbose", "threads", NULL};
  for (int i = 0; options[i].name; i++) {
    int ok = 0;
    for (int j = 0; allowed[j]; j++) ok |= !strcmp(allowed[j], options[i].name);
    if (a.value[i] && !ok) {
      gdn_error_set(e, GDN_ERR_INPUT, "report: --%s does not apply to rebuilding reports", options[i].name);
      return -1;
    }
  }
  if (GET("report") && GET("output")) {
    gdn_error_set(e, GDN_ERR_INPUT, "report: give the HTML file once (--report or -o/--output)");
    return -1;
  }
  parity_output_opts oo = {NULL, GET("report") ? GET("report") : GET("output"), GET("junit"),
                           GET("summary"), 0};
  if (!oo.report && !oo.junit && !oo.summary) {
    gdn_error_set(e, GDN_ERR_INPUT, "report: nothing to write; give -o FILE.html (or --junit / --summary)");
    return -1;
  }
  if (parity_output_check_paths(&oo, e)) return -1;
  json_t *doc = NULL;
  if (report_json_read(a.pos[0], &doc, e)) return -1;
  int rc = parity_output_write_all(&oo, doc, e);
  int pass = json_is_true(json_object_get(doc, "pass"));
  json_decref(doc);
  if (rc) return -1;
  if (!GET("quiet")) fprintf(out, "%s: rebuilt from %s\n", pass ? "PASS" : "FAIL", a.pos[0]);
  return pass ? 0 : 1;
}

/* One fixture: its outputs against the reference, and our kernels on its
 * inputs with its chunk size (unless --chunk overrides it). */
static int run_fixture(run_state *st, const char *path, const parity_sweep_opts *base, int chunk_given,
                       FILE *out, gdn_error *e) {
  fix_fixture fx;
  fix_fixture_init(&fx);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  lo.max_bytes = st->max_bytes;
  lo.allow_stale_oracle = 1; /* a stale /oracle is recomputed, not trusted */
  lo.extra_output_sets = 3;  /* reference + scan + one affine result */
  parity_reference ref;
  parity_reference_init(&ref);
  parity_external *ext = NULL;
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  /* fix_isolate.h: HDF5 reads the file in a probe process first, so a
   * corrupt fixture is refused (exit 2) instead of crashing the gate. */
  int rc = fix_load_isolated(&fx, path, &lo, e);
  if (rc) goto done;
  for (size_t i = 0; i < fx.n_warnings; i++)
    if (base->verbosity >= 1) fprintf(out, "%s: warning: %s\n", path, fx.warnings[i]);
  parity_sweep_opts o = *base;
  if (!chunk_given) {
    o.chunks[0] = fx.chunk_size;
    o.n_chunks = 1;
  }
  if ((rc = parity_sweep_validate(&fx.inputs.shape, &o, e))) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  if (fx.oracle.present && fx.oracle.fresh && st->tier != PARITY_ORACLE_NONE) {
    const gdn_shape *fs = &fx.inputs.shape;
    ref.tier = ref.requested = PARITY_ORACLE_MPFR;
    ref.form = "token";
    ref.precision_bits = (int)fx.oracle.precision_bits;
    ref.certified_bits = (int)fx.oracle.certified_bits;
    ref.normwise_bits = ref.guaranteed_bits = -1;
    ref.bound_violations = -1;
    ref.total_columns = ref.sampled_columns = fs->B * fs->Hv * fs->Dv; /* regen certifies all */
    ref.from_fixture = 1;
    parity_reference_borrow(&ref, &fx.oracle.out); /* fx owns it */
  } else {
    if (fx.oracle.present && !fx.oracle.fresh && base->verbosity >= 1)
      fprintf(out, "%s: warning: the stored /oracle is stale (inputs changed); computing a fresh one\n", path);
    if ((rc = parity_reference_compute(&ref, &fx.inputs, st->tier, st->oracle_bits, e))) goto done;
  }
  if ((rc = parity_externals_from_fixture(&fx, &ext, e))) goto done;
  /* --grad: our kernels' gradients on the fixture's inputs (cotangents from
   * seed 0); the fixture's outputs carry none, so they are judged forward only. */
  if ((rc = grads_setup(st, st->grad, &fx.inputs, 0, &ref, &ct, &o, e))) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  const char *base_name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  parity_input_info info = {base_name, "fixture", path, fx.inputs_sha256};
  rc = parity_sweep_run(&st->doc, &fx.inputs, &info, &ref, ext, fx.n_outputs, &o, e);
done:
  gdn_cotangents_clear(&ct);
  parity_reference_clear(&ref);
  parity_externals_free(ext, fx.n_outputs);
  fix_fixture_clear(&fx);
  return rc;
}

int parity_cli_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e) {
  (void)err;
  gdn_cli_args a;
  int first = 1;
  const char *cmd = "run";
  if (argc > 1 && argv[1][0] != '-') {
    cmd = argv[1];
    first = 2;
    if (strcmp(cmd, "sweep") && strcmp(cmd, "check") && strcmp(cmd, "report")) {
      gdn_error_set(e, GDN_ERR_INPUT,
                    "unknown command '%s'; expected sweep, check or report, or options such as --shape (see --help)",
                    cmd);
      return -1;
    }
  }
  /* `report` takes -o as the usual spelling of its output file. */
  char *av_local[256];
  if (!strcmp(cmd, "report") && argc <= 256) {
    for (int i = 0; i < argc; i++) av_local[i] = !strcmp(argv[i], "-o") ? "--output" : argv[i];
    argv = av_local;
  }
  if (gdn_cli_parse(options, argc, argv, first, &a, e)) return -1;
  if (GET("help")) {
    parity_cli_print_help(out);
    return 0;
  }
  if (GET("version")) {
    fprintf(out, "gdn-parity %s (git %s)\n", GDN_VERSION, GDN_GIT_COMMIT);
    return 0;
  }
  if (GET("print-policy")) {
    fputs(parity_policy_builtin_text(), out);
    return 0;
  }
  if (!strcmp(cmd, "report")) return report_command(&a, out, e);
  if (a.n_pos && strcmp(cmd, "check")) {
    gdn_error_set(e, GDN_ERR_INPUT, "unexpected argument '%s' (see --help)", a.pos[0]);
    return -1;
  }
  const char *v;
  int rc;
  if ((v = GET("threads"))) {
    int64_t t;
    if (gdn_cli_int64(v, "--threads", 1, 4096, &t, e)) return -1;
    gdn_threads_set((int)t);
  }
  int verbosity = 1;
  if (GET("quiet") && GET("verbose")) {
    gdn_error_set(e, GDN_ERR_INPUT, "--quiet and --verbose contradict each other");
    return -1;
  }
  if (GET("quiet")) verbosity = 0;
  if (GET("verbose")) verbosity = 2;

  run_state st;
  memset(&st, 0, sizeof st);
  parity_policy_init(&st.policy);
  st.tier = PARITY_ORACLE_AUTO;
  st.oracle_bits = 128;
  st.max_bytes = 16ull << 30;
  int status = -1;
  char *command = NULL;

  if ((v = GET("oracle")) && parity_oracle_tier_parse(v, &st.tier, e)) goto done;
  if ((v = GET("oracle-bits"))) {
    int64_t b;
    if (gdn_cli_int64(v, "--oracle-bits", 53, 4096, &b, e)) goto done;
    st.oracle_bits = (int)b;
  }
  if ((v = GET("max-bytes")) && gdn_cli_bytes(v, "--max-bytes", &st.max_bytes, e)) goto done;
  st.grad = GET("grad") != NULL;
  if ((v = GET("policy")) ? parity_policy_load_file(&st.policy, v, e)
                          : parity_policy_load_builtin(&st.policy, e))
    goto done;

  parity_sweep_opts so;
  parity_sweep_opts_init(&so);
  so.verbosity = verbosity;
  so.log = out;
  so.policy = &st.policy;
  so.reproducible = GET("reproducible") != NULL;
  if (parse_sweep_opts(&a, &so, e)) goto done;

  parity_output_opts oo = {GET("json"), GET("report"), GET("junit"), GET("summary"),
                           GET("reproducible") != NULL};
  if (parity_output_check_paths(&oo, e)) goto done;

  command = join_args(argc, argv);
  if (!command || parity_doc_init(&st.doc, command, &st.policy, e)) {
    if (!command) gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
    goto done;
  }
  st.doc_ready = 1;

  parity_synth_spec base;
  if (parity_synth_spec_from_cli(&base, GET("shape"), GET("key-heads"), GET("dv"), GET("seed"),
                                 GET("h0") != NULL, GET("qk-norm"), GET("input-dtype"), GET("gates"), e))
    goto done;
  if (GET("documents") &&
      gdn_cli_int64(GET("documents"), "--documents", 1, 1 << 20, &base.documents, e))
    goto done;
  if (GET("packing") && gdn_packing_parse(GET("packing"), &base.packing, e)) goto done;
  if (GET("prelude") && parity_parse_prelude(GET("prelude"), &base.synth.flags, "--prelude", e))
    goto done;

  if (!strcmp(cmd, "check")) {
    const char *files[GDN_CLI_MAX_POS + 1];
    int nf = 0;
    if (GET("fixture")) files[nf++] = GET("fixture");
    for (int i = 0; i < a.n_pos; i++) files[nf++] = a.pos[i];
    if (!nf) {
      gdn_error_set(e, GDN_ERR_INPUT, "check needs --fixture FILE.h5");
      goto done;
    }
    if (GET("shape") || GET("grid")) {
      gdn_error_set(e, GDN_ERR_INPUT, "check takes its inputs from the fixture; drop --%s",
                    GET("shape") ? "shape" : "grid");
      goto done;
    }
    for (int i = 0; i < nf; i++)
      if ((rc = run_fixture(&st, files[i], &so, GET("chunk") != NULL, out, e))) goto done;
  } else if (!strcmp(cmd, "sweep")) {
    const char *grid = GET("grid");
    if (!grid) {
      gdn_error_set(e, GDN_ERR_INPUT, "sweep needs --grid GRID.json");
      goto done;
    }
    if (GET("shape")) {
      gdn_error_set(e, GDN_ERR_INPUT, "sweep takes its shapes from --grid; drop --shape");
      goto done;
    }
    parity_grid g;
    parity_grid_init(&g);
    if (parity_grid_load(&g, grid, &base, &so, e)) {
      parity_grid_clear(&g);
      goto done;
    }
    /* Validate the whole grid before running any of it. */
    for (size_t i = 0; i < g.n; i++)
      if ((rc = parity_sweep_validate(&g.entries[i].spec.shape, &g.entries[i].opts, e))) {
        gdn_error_prefix(e, "%s: entry %zu: ", grid, i);
        parity_grid_clear(&g);
        goto done;
      }
    for (size_t i = 0; i < g.n; i++)
      if ((rc = run_synthetic(&st, &g.entries[i].spec, &g.entries[i].opts, e))) {
        parity_grid_clear(&g);
        goto done;
      }
    parity_grid_clear(&g);
  } else {
    if (!GET("shape")) {
      gdn_error_set(e, GDN_ERR_INPUT, "nothing to do: give --shape B,T,H,D (or see --help)");
      goto done;
    }
    if (GET("grid")) {
      gdn_error_set(e, GDN_ERR_INPUT, "--grid belongs to the sweep command: gdn-parity sweep --grid %s",
                    GET("grid"));
      goto done;
    }
    if (GET("fixture")) {
      gdn_error_set(e, GDN_ERR_INPUT, "--fixture belongs to the check command: gdn-parity check --fixture %s",
                    GET("fixture"));
      goto done;
    }
    if ((rc = run_synthetic(&st, &base, &so, e))) goto done;
  }

  if (parity_doc_finish(&st.doc, oo.reproducible, e)) goto done;
  int pass = parity_doc_pass(&st.doc);
  if (parity_output_write_all(&oo, st.doc.root, e)) goto done;
  fprintf(out, "\n%s: %zu case%s, %zu failed%s\n", pass ? "PASS" : "FAIL", st.doc.n_cases,
          st.doc.n_cases == 1 ? "" : "s", st.doc.n_failed,
          st.doc.have_oracle ? "" : " (no oracle: affine-prefix judged against scan only)");
  status = pass ? 0 : 1;
done:
  free(command);
  if (st.doc_ready) parity_doc_clear(&st.doc);
  parity_policy_clear(&st.policy);
  return status;
}
