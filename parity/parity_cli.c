#include "parity_cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fix.h"
#include "fix_group.h"
#include "fix_isolate.h"
#include "fix_oracle_check.h"
#include "gdn_atomic.h"
#include "gdn_config.h"
#include "gdn_inputs.h"
#include "gdn_path.h"
#include "gdn_prelude.h"
#include "gdn_synth.h"
#include "gdn_text.h"
#include "gdn_threads.h"
#include "gdn_alloc.h"
#include "parity_audit.h"
#include "parity_budget.h"
#include "parity_coverage.h"
#include "parity_coverage_stream.h"
#include "parity_synth_group.h"
#include "parity_datafile.h"
#include "parity_check_shard.h"
#include "parity_dist.h"
#include "parity_external.h"
#include "parity_packing.h"
#include "parity_padding.h"
#include "parity_docstate.h"
#include "parity_grid.h"
#include "parity_oracle.h"
#include "parity_output.h"
#include "parity_policy.h"
#include "parity_sweep.h"
#include "parity_trust.h"
#include "parity_worst.h"
#include "parity_spill.h"
#include "parity_stored_grads.h"
#include "gdn_clock.h"
#include "parity_stream_oracle.h"
#include "parity_stream_outputs.h"
#include "parity_sweep_stream.h"
#include "parity_kappa_model.h"
#include "parity_recur_check_cli.h"
#include "parity_recur_grid_cli.h"
#include "parity_recur_cli.h"
#include "parity_recurrence.h"
#include "report.h"
#include "report_audit.h"
#include "report_coverage.h"
#include "report_doc.h"
#include "report_recur.h"

/* The commands, by their bit in gdn_cli_opt.cmds (names for messages). */
enum { CMD_RUN, CMD_SWEEP, CMD_CHECK, CMD_REPORT, CMD_COVERAGE };
static const char *const cmd_names[] = {"--shape", "sweep", "check", "report", "coverage", NULL};
#define C_RUN (1u << CMD_RUN)
#define C_SWEEP (1u << CMD_SWEEP)
#define C_CHECK (1u << CMD_CHECK)
#define C_REPORT (1u << CMD_REPORT)
#define C_COVERAGE (1u << CMD_COVERAGE)
#define C_SYN (C_RUN | C_SWEEP | C_COVERAGE)             /* synthetic inputs: not check's fixtures */
#define C_CASES (C_RUN | C_SWEEP | C_CHECK | C_COVERAGE) /* what runs cases; report only rebuilds */
#define C_JUDGE (C_CASES & ~C_COVERAGE) /* coverage runs the mutants itself (gradients: a grid entry's "grad") */

/* One table for every command: the parser and --help both read it, and it
 * says which commands take each option (gdn_cli_parse_cmd refuses the
 * others). */
static const gdn_cli_opt options[] = {
    {"shape", "B,T,H,D", "batch, sequence length, value heads, head dim (Dk = Dv = D)", C_RUN},
    {"key-heads", "Hk", "key heads (default H); H must be a multiple of Hk", C_SYN},
    {"dv", "Dv", "value head dim (default D)", C_SYN},
    {"chunk", "C[,C...]", "chunk sizes (default 64)", C_CASES},
    {"devices", "D[,D...]", "context-parallel device counts for affine-prefix (default 1,2,4,8)", C_CASES},
    {"prefix", "NAME[,NAME...]",
     "exclusive-prefix schedules: sequential, associative-scan, hillis-steele (default sequential; "
     "--recurrence kda: one per run)", C_CASES},
    {"backend", "NAME",
     "where affine-prefix's devices run: simulated (one process; default) or mpi (mpirun -np D: "
     "rank r is device r; adds the subject affine-prefix-mpi; --devices must be D)", C_JUDGE & C_SYN},
    {"shard", "MODE",
     "how affine-prefix splits the sequence: tokens (T/D tokens per device, each padded to whole "
     "chunks on its own, as upstream's shard_map; default) or chunks (whole chunks, array_split)", C_CASES},
    {"solve", "NAME",
     "the in-chunk triangular solve of both kernels: substitution (fma forward substitution, the "
     "order of the reference BLAS trsm JAX calls on CPU; default) or xla-expander (XLA's "
     "TriangularSolveExpander as on TPU: row by row, HIGHEST dots)", C_CASES},
    {"prelude", "KIND",
     "synthetic inputs: none (the kernel called with float32 inputs, as MaxText's unit tests; "
     "default) or bfloat16 (the layer's prelude: q, k, v L2-normalised and g, beta computed in "
     "bfloat16 from the layer's activations, as the real layer calls the kernel)", C_SYN},
    {"documents", "N", "synthetic inputs: N packed documents per row (segment ids; boundaries drawn "
                       "from the seed: on a seam, on a chunk edge, inside a chunk; default 1)", C_SYN},
    {"packing", "MODE", "state at a document boundary: leak (carried, as MaxText; default) or reset "
                        "(restarted, as flash-linear-attention's cu_seqlens)", C_SYN},
    {"recurrence", "NAME",
     "the recurrence judged: gdn (Gated DeltaNet; default) or kda (Kimi Delta Attention, per-channel gates; "
     "--report, --junit and --summary write its own reports; the options it does not take are refused, --grad in "
     "every numerics mode; check reads it from the fixture; sweep and coverage take a grid of its own)", C_CASES},
    {"mutant", "NAME", "testing only: affine-prefix with one catalogued bug (kern_mutant.h: "
                       "compose-order, carry-zero, ...; default none), to see which checks catch it", C_JUDGE},
    {"dtype", "TYPE", "kernel compute dtype: float32, bfloat16, float64 (default float32)", C_CASES},
    {"matmul-precision", "MODE",
     "default (1 bf16 pass), high (3), highest (6), ieee (plain float32 fma) (default highest)", C_CASES},
    {"ftz", NULL, "flush subnormals to zero, as TPU does (default: on in the bf16 modes)", C_CASES},
    {"no-ftz", NULL, "keep subnormals even in the bf16 modes", C_CASES},
    {"oracle", "TIER",
     "reference: auto (default: mpfr while it takes minutes, else dd), mpfr (every element certified), "
     "dd (double-double, certified on sampled columns), or none (affine-prefix judged against scan only)", C_CASES},
    {"oracle-bits", "N", "MPFR working precision in bits (default 128)", C_CASES},
    {"grad", NULL,
     "also judge gradients: both kernels' backward (dq dk dv dg dbeta dh0) for cotangents do, dht "
     "drawn from the seed, against the oracle's VJP (the --oracle tier); float32 / float64 compute", C_JUDGE},
    {"seed", "N", "synthetic input seed (default 0)", C_SYN},
    {"h0", NULL, "synthetic inputs get a random initial state h0", C_SYN},
    {"gates", "KIND", "synthetic decay gates: init (as the model initialises them; default) or slow "
                      "(long memory: per-token decay 0.9..0.9999)", C_SYN},
    {"qk-norm", "WHERE", "in-kernel (the kernel L2-normalises q, k; default) or pre (inputs normalised)", C_SYN},
    {"input-dtype", "TYPE", "synthetic input storage: float32 (default) or bfloat16", C_SYN},
    {"grid", "GRID.json", "sweep, coverage: the grid of cases to run (coverage default: grids/upstream-pr.json)",
     C_SWEEP | C_COVERAGE},
    {"mutants", "all|NAME[,NAME...]",
     "coverage: the catalogued mutants to run against the grid (kernels/kern_mutant.h; default all)", C_COVERAGE},
    {"readme", "FILE",
     "coverage: the README whose section \"What a test must cover first\" has the table | mutant | why it "
     "cannot be killed | (one row per unkillable mutant; default README.md, when present)", C_COVERAGE},
    {"fixture", "FILE.h5", "check: the fixture to judge (more may follow as arguments)", C_CHECK},
    {"policy", "FILE", "tolerance policy (JSON; default: the built-in policy)", C_CASES},
    {"audit", "AUDIT.json",
     "the audit gdn-parity-jax audit --json wrote (schema gdn-parity-audit 1): embedded in the results "
     "document and shown in every report; its FAIL fails the run (exit 1)", C_JUDGE | C_REPORT},
    {"print-policy", NULL, "print the built-in tolerance policy and exit", 0},
    {"json", "FILE", "write the results document (JSON)", C_CASES},
    {"junit", "FILE", "write JUnit XML, one testcase per case (coverage: per mutant; a survivor fails)", 0},
    {"report", "FILE.html", "write the HTML tolerance report", 0},
    {"summary", "FILE.md", "write a Markdown summary (for a CI job summary)", 0},
    {"output", "FILE.html", "report: the HTML file to write (also -o)", C_REPORT},
    {"reproducible", NULL, "omit timestamps and timings from the outputs (byte-identical reruns)", C_CASES},
    {"max-bytes", "SIZE", "refuse inputs larger than SIZE bytes (K/M/G suffixes; default 16G)", C_CASES},
    {"group-heads", "N",
     "run N key heads at a time, what later passes read kept in scratch files in TMPDIR (default: so when "
     "the whole run is over --max-bytes, the most key heads it allows; coverage: every entry so); the results "
     "are the whole run's",
     C_RUN | C_CHECK | C_COVERAGE},
    {"threads", "N", "worker threads (default: all cores); results do not depend on it", 0},
    {"quiet", NULL, "print only the verdict", 0},
    {"verbose", NULL, "print every check of every case", 0},
    {"version", NULL, "print the version and exit", 0},
    {"help", NULL, "print this help and exit", 0},
    {NULL, NULL, NULL, 0},
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
          "  gdn-parity coverage [--grid GRID.json] [--mutants all|NAME,...] [options]\n"
          "                                                which grid case kills which catalogued mutant\n"
          "  gdn-parity trust [options]                    false FAILs of correct reformulations (trust --help)\n"
          "  gdn-parity regen FILE.h5 [options]            a fixture's /oracle, dealt over mpirun's ranks (regen --help)\n"
          "  gdn-parity --print-policy                     the built-in tolerance policy\n\n"
          "options:\n",
          GDN_VERSION);
  gdn_cli_print_options_cmd(options, cmd_names, f);
  fprintf(f,
          "\nexit status: 0 every case within tolerance, 1 at least one case out of tolerance,\n"
          "2 bad usage or bad input (the message says what and where), 3 internal error.\n"
          "--audit: an audit whose verdict is FAIL makes the run FAIL (exit 1) however the cases did.\n"
          "coverage: 0 every selected mutant killed or explained by the README as unkillable (and the\n"
          "correct kernels pass every case), 1 some other mutant survives or the correct kernels fail\n"
          "a case, 2 and 3 as above.\n");
}

#define GET(name) gdn_cli_get(options, &a, name)

/* Options that never change a result: left out of the recorded command, so
 * the results document is byte-identical whatever the thread count, the
 * output file names, the verbosity or the head groups a run is streamed
 * in. */
static int is_incidental(const char *arg, int *takes_value) {
  static const char *const with_value[] = {"--threads", "--json", "--junit", "--report", "--summary", "--group-heads",
                                           NULL};
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
  if ((v = GET("mutant")) && (rc = kern_mutant_parse(v, &o->mutant, e)))
    return gdn_error_prefix(e, "--mutant: "), rc;
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
  int64_t group_heads; /* --group-heads: 0 automatic */
  int grad; /* --grad */
  json_t *audit; /* --audit: its document (parity_audit.h), or NULL */
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
  if ((rc = parity_reference_compute_grads(ref, in, ct, st->tier, st->oracle_bits, e))) return rc;
  o->ct = ct;
  return GDN_OK;
}

/* A fixture's stored /oracle/grads as the gradients' reference when it may
 * be trusted (parity_stored_grads.h; only beside its stored forward, ref
 * from the fixture): *taken 1, the data moved out of fx; otherwise why not,
 * on the log and in ref->grad_note, and the data freed. */
static int stored_grads_try(const run_state *st, fix_fixture *fx, parity_reference *ref, parity_sweep_opts *o,
                            FILE *out, int *taken, gdn_error *e) {
  char why[200] = "";
  *taken = 0;
  if (st->tier != PARITY_ORACLE_NONE && parity_stored_grads_usable(&fx->oracle, why, sizeof why) && !ref->from_fixture)
    snprintf(why, sizeof why, "%s", PARITY_STORED_GRADS_NO_FORWARD);
  if (st->tier == PARITY_ORACLE_NONE || why[0] || !fx->oracle.has_grads) {
    gdn_grads_clear(&fx->oracle.grads); /* not used: not held beside the VJP */
    if (why[0] && o->verbosity >= 1)
      fprintf(out, "note: the stored /oracle/grads is not used (%s); computing the oracle's VJP\n", why);
    if (why[0]) parity_stored_grads_note(ref->grad_note, sizeof ref->grad_note, why);
    return GDN_OK;
  }
  double rel = 0, t0 = gdn_clock_seconds();
  parity_progress_add(o->progress, 1);
  parity_progress_begin(o->progress, "spot check of the stored /oracle/grads (one key head's VJP)");
  int rc = parity_stored_grads_spot(&fx->inputs, NULL, &fx->cot, &fx->oracle.grads, 0, &rel, e);
  parity_progress_end(o->progress);
  parity_progress_clear(o->progress);
  if (rc) return rc;
  if (!(rel <= PARITY_STORED_GRADS_SPOT)) {
    snprintf(why, sizeof why, "spot check: key head 0's VJP recomputed differs from it by %.3g, normwise", rel);
    if (o->verbosity >= 1)
      fprintf(out, "warning: the stored /oracle/grads is not trusted (%s); computing the oracle's VJP\n", why);
    parity_stored_grads_note(ref->grad_note, sizeof ref->grad_note, why);
    gdn_grads_clear(&fx->oracle.grads);
    return GDN_OK;
  }
  gdn_grads_clear(&ref->grads);
  ref->grads = fx->oracle.grads; /* moved: fx keeps nothing to free twice */
  gdn_grads_init(&fx->oracle.grads);
  parity_stored_grads_take(&fx->oracle, ref);
  ref->grad_spot_rel = rel;
  ref->grad_seconds = gdn_clock_seconds() - t0;
  *taken = 1;
  return GDN_OK;
}

/* A fixture with /cotangents (schema v3): the oracle's VJP for them (its
 * stored /oracle/grads when taken, stored_grads_try; else computed, the
 * tier by parity_oracle_resolve_grads: AUTO counts the VJP's cost), and
 * the sweep told to run our kernels' backward with them, so that every
 * output's stored gradients are judged by the same rules as --grad's
 * (normwise, per token, against the stock scan's own error, floors).
 * --grad changes nothing here: the fixture's cotangents are the ones. */
static int fixture_grads_setup(const run_state *st, fix_fixture *fx, parity_reference *ref,
                               parity_sweep_opts *o, FILE *out, gdn_error *e) {
  if (fx->inputs.seg)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "/cotangents: packed documents (segment ids) have no backward yet; their gradients "
                         "cannot be judged");
  int rc = grads_check_limit(st, &fx->inputs.shape, e);
  if (rc) return rc;
  if (st->grad && o->verbosity >= 1)
    fprintf(out, "note: --grad uses the fixture's /cotangents (grad_problem_sha256 %s)\n", fx->grad_problem_sha256);
  int taken = 0;
  if ((rc = stored_grads_try(st, fx, ref, o, out, &taken, e))) return rc;
  if (taken) {
    o->ct = &fx->cot;
    return GDN_OK;
  }
  /* one step of the progress line: minutes at a layer's length, before the
   * sweep's first (no stored gradients to use) */
  parity_progress_add(o->progress, 1);
  parity_progress_begin(o->progress, "oracle VJP of the fixture's /cotangents");
  rc = parity_reference_compute_grads(ref, &fx->inputs, &fx->cot, st->tier, st->oracle_bits, e);
  parity_progress_end(o->progress);
  parity_progress_clear(o->progress);
  if (rc) return rc;
  o->ct = &fx->cot;
  memcpy(ref->grad_sha256, fx->grad_problem_sha256, sizeof ref->grad_sha256);
  return GDN_OK;
}

/* Why this synthetic run cannot be streamed by head group ("": it can). */
static void synth_stream_refusal(const parity_synth_spec *sp, const parity_sweep_opts *o, char *why, size_t n) {
  gdn_inputs probe;
  gdn_inputs_init(&probe);
  probe.seg = sp->documents > 1 ? (int32_t *)why : NULL; /* only tested for presence */
  probe.prelude = (sp->synth.flags & GDN_SYNTH_PRELUDE_BF16) ? (gdn_prelude *)why : NULL;
  parity_sweep_stream_refusal(&probe, o, why, n);
}

/* The whole run's refusal over --max-bytes (parity_budget_check's words:
 * what is too large), and what one key head alone would need streamed. */
static int stream_refusal_note(const gdn_shape *s, int flags, const parity_sweep_opts *o, uint64_t limit,
                               gdn_error *e) {
  int rc = parity_budget_check(s, flags & PARITY_STREAM_H0, 3, o, limit, e);
  parity_stream_plan one; /* one key head at a time, everything the streamed run holds counted */
  uint64_t b = parity_stream_plan_make(s, flags, 3, o, 0, 1, &one, NULL) ? UINT64_MAX : one.peak;
  const double gib = (double)b / 1073741824.0;
  if (!rc) { /* the forward fits whole, its gradients do not, nor one key head's */
    char lab[160];
    gdn_shape_format(s, lab, sizeof lab);
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--grad: shape %s does not fit the limit of %.3g GiB (--max-bytes %" PRIu64
                         ") with its gradient sets, and streamed by head group one key head alone would need "
                         "%.3g GiB with them (--max-bytes %" PRIu64 ")",
                         lab, (double)limit / 1073741824.0, limit, gib, b);
  }
  if (e) {
    size_t n = strlen(e->msg);
    snprintf(e->msg + n, sizeof e->msg - n,
             "; streamed by head group, one key head alone would need %.3g GiB%s (--max-bytes %" PRIu64 ")", gib,
             flags & PARITY_STREAM_GRADS ? " with its gradient sets (--grad)" : "", b);
  }
  return rc;
}

/* The stream plan's flags for the run's oracle (the tier AUTO resolves to
 * on the whole shape, with --grad the VJP's) and the process's resident
 * memory (parity_stream.h: the run's peak RSS obeys --max-bytes). */
static int stream_oracle_flags(const run_state *st, const gdn_shape *s, int grads) {
  const parity_oracle_tier t = grads ? parity_oracle_resolve_grads(st->tier, s, st->oracle_bits)
                                     : parity_oracle_resolve(st->tier, s, st->oracle_bits);
  if (st->tier == PARITY_ORACLE_NONE) return PARITY_STREAM_RESIDENT;
  return PARITY_STREAM_RESIDENT | (t == PARITY_ORACLE_DD ? PARITY_STREAM_DD : PARITY_STREAM_MPFR) |
         PARITY_STREAM_BITS(st->oracle_bits);
}

/* Under mpirun, a case every rank runs (run, check) would otherwise run
 * whole on every rank: its oracle dealt by head, its kernels and its
 * measurement repeated on each.  Streamed instead, its key heads split
 * over the ranks (groups of ceil(Hk / ranks), group g on rank g mod N:
 * parity_sweep_stream.h), each rank computes and measures its own, and the
 * document is the whole run's byte for byte.  The group size for that (0:
 * not under mpirun, or fewer key heads than ranks, where the whole run's
 * oracle dealt by value head keeps every rank busier). */
static int64_t dealt_group(const gdn_shape *s) {
  const int64_t n = parity_dist_size();
  return parity_dist_collective() && n > 1 && s->Hk >= n ? parity_stream_share(s->Hk, (int)n) : 0;
}

/* A plan of groups larger than the ranks' share (dg > 0) planned again at
 * that share: every rank gets a group (smaller groups fit where larger
 * ones did). */
static int dealt_replan(const gdn_shape *s, int flags, int sets, const parity_sweep_opts *o, uint64_t limit,
                        int64_t dg, parity_stream_plan *plan, gdn_error *e) {
  if (!dg || plan->group <= dg) return GDN_OK;
  const int rc = parity_stream_plan_make(s, flags, sets, o, limit, dg, plan, e);
  plan->forced = 0; /* chosen for the ranks, not asked for */
  return rc;
}

static int scratch_room(const parity_stream_plan *plan, const parity_sweep_opts *o, int grads, size_t extra_sets,
                        gdn_error *e);

/* Whether every rank's scratch folder has room for the dealt run (each
 * rank's answer sent to all, so that they decide alike: a rank streaming
 * while another runs whole would wait forever). */
static int dealt_room(const parity_stream_plan *plan, const parity_sweep_opts *o, int grads, size_t extra_sets) {
  const unsigned char mine = !scratch_room(plan, o, grads, extra_sets, NULL);
  int all = 1;
  for (int r = 0; r < parity_dist_size(); r++) {
    unsigned char v = mine;
    if (parity_dist_bcast(&v, 1, r, NULL)) return 0; /* (a failed message: MPI's error ends the run) */
    all = all && v;
  }
  return all;
}

/* The plan for a synthetic run: *plan->n_groups 1 (and no --group-heads):
 * run it whole; otherwise streamed.  A run over the budget that cannot be
 * streamed keeps the whole run's refusal.  Under mpirun, dealt over the
 * ranks (dealt_group). */
static int synth_stream_plan(const run_state *st, const parity_synth_spec *sp, const parity_sweep_opts *o,
                             uint64_t limit, parity_stream_plan *plan, gdn_error *e) {
  const int h0 = (sp->synth.flags & GDN_SYNTH_H0) != 0, grads = st->grad || sp->grad;
  const int flags = (h0 ? PARITY_STREAM_H0 : 0) | (grads ? PARITY_STREAM_GRADS : 0) |
                    stream_oracle_flags(st, &sp->shape, grads);
  char why[160];
  synth_stream_refusal(sp, o, why, sizeof why);
  if (st->group_heads && why[0]) return gdn_error_set(e, GDN_ERR_INPUT, "--group-heads: %s", why);
  memset(plan, 0, sizeof *plan);
  plan->n_groups = 1;
  const int64_t dg = why[0] ? 0 : dealt_group(&sp->shape);
  const int fits = !parity_budget_check(&sp->shape, h0, 3, o, limit, NULL) &&
                   !(grads && grads_check_limit(st, &sp->shape, NULL));
  /* whole when the forward and, with --grad, the gradients fit whole (and the ranks are not dealt groups) */
  if (!st->group_heads && (why[0] || (!dg && fits))) return GDN_OK;
  gdn_error quiet;
  gdn_error_init(&quiet);
  int rc =
      parity_stream_plan_make(&sp->shape, flags, 3, o, limit, st->group_heads, plan, st->group_heads ? e : &quiet);
  if (rc && !st->group_heads) /* not even one key head fits: the whole run's refusal says why */
    return stream_refusal_note(&sp->shape, flags, o, limit, e);
  if (!rc && !st->group_heads) rc = dealt_replan(&sp->shape, flags, 3, o, limit, dg, plan, e);
  if (!rc && !st->group_heads && fits && !dealt_room(plan, o, grads, 0)) {
    memset(plan, 0, sizeof *plan); /* dealt for the ranks only, without room for its scratch: whole, as before */
    plan->n_groups = 1;
    return GDN_OK;
  }
  if (rc || !(st->grad || sp->grad)) return rc;
  gdn_shape gs;
  int64_t k0, k1;
  parity_stream_group(plan, 0, &k0, &k1, &gs);
  return grads_check_limit(st, &gs, e); /* --grad: the group's gradient sets too */
}

/* The scratch folder has room for what a streamed run writes. */
/* extra_sets: a fixture's outputs, kept in scratch too (as binary64: a bound). */
static int scratch_room(const parity_stream_plan *plan, const parity_sweep_opts *o, int grads, size_t extra_sets,
                        gdn_error *e) {
  int rc = parity_spill_check(e); /* before any work: a bad TMPDIR is not noticed after an oracle */
  if (rc) return rc;
  double need = parity_sweep_stream_scratch_bytes(plan, o, grads);
  for (int t = 0; t < PARITY_T_N; t++)
    if (!parity_tensors[t].grad || grads)
      need += 8.0 * (double)extra_sets * (double)parity_tensor_numel(&parity_tensors[t], &plan->whole);
  const uint64_t avail = parity_spill_free_bytes();
  if (avail && need > (double)avail)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "a run streamed by head group writes up to %.3g GiB of scratch files to %s (TMPDIR), "
                         "which has %.3g GiB free; set TMPDIR to a folder with room",
                         need / 1073741824.0, parity_spill_dir(), (double)avail / 1073741824.0);
  return GDN_OK;
}

static int run_synthetic_streamed(run_state *st, const parity_synth_spec *sp, const parity_sweep_opts *o,
                                  const parity_stream_plan *plan, gdn_error *e) {
  if (o->verbosity >= 1 && o->log) {
    char line[400];
    parity_stream_describe(plan, line, sizeof line);
    fprintf(o->log, "note: %s; scratch files in %s\n", line, parity_spill_dir());
  }
  int rc = scratch_room(plan, o, st->grad || sp->grad, 0, e);
  if (rc) return rc;
  char name[96], sha[FIX_SHA256_HEX] = "";
  snprintf(name, sizeof name, "synthetic seed %" PRIu64 "%s", sp->synth.seed,
           (sp->synth.flags & GDN_SYNTH_PRELUDE_BF16) ? " (bfloat16 layer prelude)" : "");
  /* the document's inputs_sha256, drawn and hashed a range at a time (rank 0 records), with the (B, T)
   * segment ids drawn whole */
  gdn_inputs ids;
  gdn_inputs_init(&ids);
  ids.shape = sp->shape;
  if (parity_dist_rank() == 0 && !(rc = gdn_synth_segments(&ids, sp->synth.seed, sp->documents, e)))
    rc = fix_synth_inputs_sha256(&sp->shape, &sp->synth, ids.seg, sp->packing, sha, e);
  gdn_inputs_clear(&ids);
  if (rc) return rc;
  const parity_stream_run sr = {plan, {parity_synth_group_load, (void *)sp}, name, "synthetic", NULL, sha, NULL,
                                st->tier, st->oracle_bits, st->grad || sp->grad, NULL};
  parity_progress_add(o->progress, parity_sweep_stream_steps(plan, o));
  return parity_sweep_run_streamed(&st->doc, &sr, o, e);
}

/* One synthetic input set through the sweep. */
static int run_synthetic(run_state *st, const parity_synth_spec *sp, const parity_sweep_opts *o,
                         gdn_error *e) {
  int rc = parity_sweep_validate(&sp->shape, o, e);
  if (rc) return rc;
  /* inputs (and the prelude they keep, gdn_prelude.h) + reference + scan +
   * one affine result + the kernels' scratch */
  uint64_t limit = st->max_bytes;
  if (limit && (sp->synth.flags & GDN_SYNTH_PRELUDE_BF16)) {
    const uint64_t pb = gdn_prelude_bytes(&sp->shape);
    if (pb >= limit)
      return gdn_error_set(e, GDN_ERR_INPUT, "--prelude bfloat16: its tensors need %llu bytes, more than the limit "
                           "of %llu (--max-bytes)", (unsigned long long)pb, (unsigned long long)limit);
    limit -= pb;
  }
  parity_stream_plan plan;
  if ((rc = synth_stream_plan(st, sp, o, limit, &plan, e))) return rc;
  if (plan.n_groups > 1 || st->group_heads) return run_synthetic_streamed(st, sp, o, &plan, e);
  if ((rc = parity_budget_check(&sp->shape, (sp->synth.flags & GDN_SYNTH_H0) != 0, 3, o, limit, e)))
    return rc;
  if ((st->grad || sp->grad) && (rc = grads_check_limit(st, &sp->shape, e))) return rc;
  gdn_inputs in;
  gdn_inputs_init(&in);
  parity_reference ref;
  parity_reference_init(&ref);
  parity_progress_add(o->progress, 2 + parity_sweep_steps(o, &sp->shape)); /* inputs, oracle, sweep */
  parity_progress_begin(o->progress, "synthetic inputs");
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  if ((rc = gdn_synth_generate(&in, &sp->shape, &sp->synth, e))) goto done;
  if ((rc = gdn_synth_segments(&in, sp->synth.seed, sp->documents, e))) goto done;
  in.packing = sp->packing;
  parity_progress_end(o->progress);
  parity_progress_begin(o->progress, "oracle");
  const oracle_progress op = {parity_progress_oracle, o->progress}; /* the line advances inside it */
  if ((rc = parity_reference_compute_progress(&ref, &in, st->tier, st->oracle_bits, o->progress ? &op : NULL, e)))
    goto done;
  parity_progress_end(o->progress);
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

/* Every file the run reads and writes, by identity (gdn_path.h), before any
 * work: no output may be an input or share a file with another output. */
static int check_files(const parity_output_opts *oo, const char *const *inputs, int n_inputs,
                       const char *input_role, const char *policy, const char *grid, const char *readme,
                       gdn_error *e) {
  gdn_path_use u[GDN_CLI_MAX_POS + 8];
  size_t n = 0;
  for (int i = 0; i < n_inputs; i++) u[n++] = (gdn_path_use){input_role, inputs[i], 0};
  u[n++] = (gdn_path_use){"the policy", policy, 0};
  u[n++] = (gdn_path_use){"the grid", grid, 0};
  u[n++] = (gdn_path_use){"the README", readme, 0};
  u[n++] = (gdn_path_use){"--json", oo->json, 1};
  u[n++] = (gdn_path_use){"--report", oo->report, 1};
  u[n++] = (gdn_path_use){"--junit", oo->junit, 1};
  u[n++] = (gdn_path_use){"--summary", oo->summary, 1};
  return gdn_path_check_uses(u, n, e);
}

/* sweep under mpirun: entry i on rank i mod N, into a part document that
 * rank 0 merges in entry order (parity_dist.h).  One rank: in place. */
static int run_grid_entry(run_state *st, const parity_grid *g, size_t i, gdn_error *e) {
  const int size = parity_dist_size(), rank = parity_dist_rank(), owner = (int)(i % (size_t)size);
  if (size == 1) return run_synthetic(st, &g->entries[i].spec, &g->entries[i].opts, e);
  if (rank != owner && rank != 0) return GDN_OK;
  run_state part = *st;
  int rc = parity_doc_init(&part.doc, NULL, &st->policy, e);
  if (rc) return rc;
  if (rank == owner) {
    gdn_error mine;
    gdn_error_init(&mine);
    if (parity_dist_test_entry())
      rc = gdn_error_set(&mine, GDN_ERR_INTERNAL, "fault injected by GDN_TEST_MPI_DIE");
    else
      rc = run_synthetic(&part, &g->entries[i].spec, &g->entries[i].opts, &mine);
    if (rank != 0) {
      rc = parity_dist_send_part(&part.doc, (int)i, &mine, e);
    } else if (rc) {
      *e = mine;
    }
  } else {
    rc = parity_dist_recv_part(&part.doc, owner, (int)i, e);
  }
  if (!rc && rank == 0) rc = parity_doc_merge(&st->doc, &part.doc, e);
  parity_doc_clear(&part.doc);
  return rc;
}

/* --backend: simulated, or mpi (the ranks are the devices of the case). */
static int backend_setup(const char *v, int sweep, parity_sweep_opts *so, gdn_error *e) {
  if (!v || !strcmp(v, "simulated")) return GDN_OK;
  if (strcmp(v, "mpi"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--backend: unknown '%s' (simulated or mpi)", v);
  if (!parity_dist_have_mpi())
    return gdn_error_set(e, GDN_ERR_INPUT, "--backend mpi: this gdn-parity was built without MPI (meson setup -Dmpi=enabled)");
  if (sweep)
    return gdn_error_set(e, GDN_ERR_INPUT, "--backend mpi runs one case's devices on the ranks; a sweep deals "
                                           "its cases across the ranks instead: drop --backend");
  const int D = parity_dist_size();
  if (so->devices_default) {
    so->devices[0] = D;
    so->n_devices = 1;
    so->devices_default = 0;
  }
  for (size_t i = 0; i < so->n_devices; i++)
    if (so->devices[i] != D)
      return gdn_error_set(e, GDN_ERR_INPUT, "--backend mpi: --devices %lld but %d ranks run (mpirun -np %lld)",
                           (long long)so->devices[i], D, (long long)so->devices[i]);
  so->extra = &parity_subject_mpi;
  so->n_extra = 1;
  return GDN_OK;
}

/* gdn-parity report RESULTS.json -o report.html: the reports of a saved run.
 * Exit status is the saved run's verdict (0 pass, 1 fail). */
static int report_command(const gdn_cli_args *aa, FILE *out, gdn_error *e) {
  const gdn_cli_args a = *aa;
  if (a.n_pos != 1) {
    gdn_error_set(e, GDN_ERR_INPUT, "report needs exactly one results document: gdn-parity report RESULTS.json -o FILE.html");
    return -1;
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
  if (parity_output_check_paths(&oo, e) || check_files(&oo, &a.pos[0], 1, "the results document", NULL, NULL, NULL, e))
    return -1;
  json_t *doc = NULL, *audit = NULL;
  if ((GET("audit") && parity_audit_load(GET("audit"), &oo, &audit, e)) || report_json_read(a.pos[0], &doc, e)) {
    json_decref(audit);
    return -1;
  }
  const int recur = report_recur_is(doc); /* a --recurrence document (report_recur.h) */
  int rc = audit && recur ? gdn_error_set(e, GDN_ERR_INPUT, "report --audit: %s is a recurrence document; an audit "
                                          "embeds in a GDN results document only", a.pos[0])
           : audit        ? report_audit_embed(doc, audit, e)
                          : GDN_OK;
  json_decref(audit);
  if (!rc) rc = parity_output_write_all(&oo, doc, e);
  int pass = recur ? report_recur_pass(doc) : json_is_true(json_object_get(doc, "pass"));
  if (!rc && !GET("quiet")) {
    parity_audit_print_lines(out, doc);
    fprintf(out, "%s: rebuilt from %s", pass ? "PASS" : "FAIL", a.pos[0]);
    parity_audit_print_suffix(out, doc);
    fputc('\n', out);
  }
  json_decref(doc);
  if (rc) return -1;
  return pass ? 0 : 1;
}

/* One fixture: its outputs against the reference, and our kernels on its
 * inputs with its chunk size (unless --chunk overrides it). */
/* One sweep of the fixture per run of its shard plan (parity_check_shard.h):
 * run r in its mode, judging the outputs the plan gives it (shallow copies
 * of ext, which keeps ownership). */
static int run_fixture_shards(run_state *st, const fix_fixture *fx, const char *path, const parity_external *ext,
                              const parity_input_info *info, const parity_reference *ref,
                              const parity_sweep_opts *o, const parity_shard_plan *plan, FILE *out, gdn_error *e) {
  parity_external *sub = NULL;
  if (fx->n_outputs && !(sub = gdn_malloc(fx->n_outputs * sizeof *sub, "outputs of a shard run", e)))
    return e ? e->code : GDN_ERR_NOMEM;
  int rc = GDN_OK;
  for (int r = 0; r < plan->n && !rc; r++) {
    parity_sweep_opts orun = *o;
    orun.shard = plan->mode[r];
    orun.shard_from = plan->from[r];
    size_t n = 0;
    for (size_t i = 0; i < fx->n_outputs; i++)
      if (plan->run_of[i] == r) sub[n++] = ext[i];
    if (o->verbosity >= 1 && fx->n_outputs)
      fprintf(out, "%s: shard %s (%s), judging %zu of the fixture's %zu outputs\n", gdn_text_show(path),
              kern_shard_name(plan->mode[r]), plan->from[r], n, fx->n_outputs);
    else if (o->verbosity >= 1)
      fprintf(out, "%s: shard %s (%s)\n", gdn_text_show(path), kern_shard_name(plan->mode[r]), plan->from[r]);
    if ((rc = parity_sweep_validate(&fx->inputs.shape, &orun, e))) {
      gdn_error_prefix(e, "%s: shard %s: ", path, kern_shard_name(plan->mode[r]));
      break;
    }
    rc = parity_sweep_run(&st->doc, &fx->inputs, info, ref, sub, n, &orun, e);
  }
  gdn_free(sub);
  return rc;
}

/* The oracle of a fixture's inputs at the run's tier, as a step of the
 * progress line ("oracle (mpfr) of FILE", the tier AUTO resolves to) that
 * advances inside the run; --oracle none: no reference and no step. */
static int fixture_oracle_run(const run_state *st, const fix_fixture *fx, const char *path, parity_progress *p,
                              parity_reference *ref, gdn_error *e) {
  if (st->tier == PARITY_ORACLE_NONE) return parity_reference_compute(ref, &fx->inputs, st->tier, st->oracle_bits, e);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char what[96];
  snprintf(what, sizeof what, "oracle (%s) of %s",
           parity_oracle_tier_name(parity_oracle_resolve(st->tier, &fx->inputs.shape, st->oracle_bits)), base);
  parity_progress_add(p, 1);
  parity_progress_begin(p, what);
  const oracle_progress op = {parity_progress_oracle, p}; /* the line advances inside it */
  int rc = parity_reference_compute_progress(ref, &fx->inputs, st->tier, st->oracle_bits, p ? &op : NULL, e);
  parity_progress_end(p);
  parity_progress_clear(p); /* what the run prints next starts on a clean line */
  return rc;
}

/* Whether a fixture's stored /oracle may stand as the reference: present,
 * fresh for these inputs and attributes (problem_sha256), within the
 * schema's limits for the judged dtype (fix_oracle_check, the same check as
 * gdn-fixture verify), and -- unless --oracle none -- agreeing with a spot
 * check.  *trusted 0: `why` (n bytes) says why not, when it can. */
static int stored_oracle_trusted(const run_state *st, const fix_fixture *fx, gdn_dtype dtype, char *why, size_t n,
                                 double *spot_rel, int64_t *spot_cols, int *trusted, gdn_error *e) {
  if (fx->oracle.present && fx->oracle.fresh && fx->oracle.problem_fresh != 1)
    snprintf(why, n, "%s",
             fx->oracle.problem_fresh == 0
                 ? "stale: an attribute that changes the answer (scale, l2norm_in_kernel, shape, h0, segments) "
                   "changed since it was computed (problem_sha256 differs)"
                 : "freshness unknown: written before problem_sha256, its hash covers the inputs only, not the "
                   "attributes (gdn-fixture regen --force records it)");
  *trusted = fx->oracle.present && fx->oracle.fresh && fx->oracle.problem_fresh == 1 &&
             fix_oracle_check(&fx->oracle.out, fx->oracle.precision_bits, fx->oracle.certified_bits, dtype, why,
                              n) == FIX_ORACLE_OK;
  if (!*trusted || st->tier == PARITY_ORACLE_NONE) return GDN_OK;
  /* Recompute a few columns before trusting it: both round to binary64, so
   * agreement is ~1e-16; 2^-40 leaves room and still sees any forged or
   * mis-scaled oracle (a wrong scale or a 1e-4 edit is >= 1e-5). */
  int rc = parity_reference_spot_check(&fx->inputs, &fx->oracle.out, 4, spot_rel, spot_cols, e);
  if (rc) return rc;
  if (!(*spot_rel <= 0x1p-40)) {
    snprintf(why, n, "spot check failed: %lld recomputed state columns differ from it by %.3g (normwise)",
             (long long)*spot_cols, *spot_rel);
    *trusted = 0;
  }
  return GDN_OK;
}

/* The reference a fixture's outputs are judged against: its stored /oracle
 * when trusted (borrowed; fx keeps ownership), else one computed at the
 * run's tier -- one step of the progress line, which advances inside it --
 * with ref->note saying why the stored one was not used. */
static int fixture_reference(const run_state *st, const fix_fixture *fx, const char *path,
                             const parity_sweep_opts *o, parity_reference *ref, FILE *out, gdn_error *e) {
  char why[256] = "";
  double spot_rel = 0;
  int64_t spot_cols = 0;
  int trusted;
  int rc = stored_oracle_trusted(st, fx, o->dtype, why, sizeof why, &spot_rel, &spot_cols, &trusted, e);
  if (rc) return rc;
  if (trusted && st->tier != PARITY_ORACLE_NONE) {
    parity_stored_oracle_take(&fx->oracle, &fx->inputs.shape, ref);
    ref->spot_columns = spot_cols;
    ref->spot_rel = spot_rel;
    parity_reference_borrow(ref, &fx->oracle.out); /* fx owns it */
    return GDN_OK;
  }
  if (fx->oracle.present && !fx->oracle.fresh && o->verbosity >= 1)
    fprintf(out, "%s: warning: the stored /oracle is stale (inputs changed); computing a fresh one\n", path);
  if (fx->oracle.present && fx->oracle.fresh && !trusted && o->verbosity >= 1)
    fprintf(out, "%s: warning: the stored /oracle is not trusted (%s); computing a fresh one\n", path, why);
  if ((rc = fixture_oracle_run(st, fx, path, o->progress, ref, e))) return rc;
  if (fx->oracle.present && st->tier != PARITY_ORACLE_NONE)
    snprintf(ref->note, sizeof ref->note, "stored /oracle not used: %s; recomputed",
             !fx->oracle.fresh ? "stale (its inputs_sha256 does not match the inputs)" : why);
  return GDN_OK;
}

/* fix_load_opts.extra_bytes: the kernels' scratch of the sweep `arg`
 * (a parity_sweep_opts whose n_chunks 0 means: the fixture's chunk_size). */
static uint64_t fixture_scratch(const gdn_shape *s, int64_t chunk_size, const void *arg) {
  parity_sweep_opts o = *(const parity_sweep_opts *)arg;
  if (!o.n_chunks) {
    o.chunks[0] = chunk_size;
    o.n_chunks = 1;
  }
  const size_t b = parity_budget_scratch(s, &o);
  if (b == SIZE_MAX) return UINT64_MAX / 2;
  /* the error model's heap and binary64 scratch (parity_kappa_model.h; gradients counted: the
   * fixture's cotangents are not known here) */
  const int model = o.dtype != GDN_DTYPE_F64 && (!o.policy || parity_policy_uses_model(o.policy));
  return (uint64_t)b + (model ? (uint64_t)parity_model_bytes(s, 1) + (uint64_t)b : 0);
}

/* A fixture's head group (parity_sweep_stream.h): fix_group_read's slab,
 * its cotangents the file's /cotangents, or (--grad without them) seed 0's
 * as the whole run draws them.  The slab's outputs stay until the next
 * group is read (parity_stream_fixture.slab). */
typedef struct fixture_src {
  fix_group *g;
  int64_t Hv, Hk;
  fix_fixture slab;
} fixture_src;

static int fixture_group_load(void *ctx, int64_t k0, int64_t k1, gdn_inputs *in, gdn_cotangents *ct, gdn_error *e) {
  fixture_src *s = ctx;
  fix_fixture *slab = &s->slab;
  int rc = fix_group_read(s->g, k0, k1, slab, e);
  if (!rc) {
    *in = slab->inputs; /* moved */
    gdn_inputs_init(&slab->inputs);
    if (ct && slab->has_cotangents) {
      *ct = slab->cot;
      gdn_cotangents_init(&slab->cot);
    } else if (ct && !(rc = gdn_cotangents_alloc(ct, &in->shape, 1, e)))
      gdn_cotangents_synth_heads(ct, s->Hv, k0 * (s->Hv / s->Hk), 0);
  }
  if (rc) fix_fixture_clear(slab);
  return rc;
}

static const fix_fixture *fixture_group_slab(void *ctx) { return &((fixture_src *)ctx)->slab; }

/* Why this fixture cannot be streamed ("": it can). */
static void fixture_stream_refusal(const fix_group *g, const parity_sweep_opts *o, char *why, size_t n) {
  const fix_fixture *m = fix_group_meta(g);
  gdn_inputs probe;
  gdn_inputs_init(&probe);
  probe.seg = m->inputs.seg;
  probe.prelude = fix_group_has_prelude(g) ? (gdn_prelude *)why : NULL; /* only tested for presence */
  parity_sweep_stream_refusal(&probe, o, why, n);
}

/* The output sets the outputs' per-document final states hold beside the
 * run (parity_docstate_sets; 0 when no output has them). */
static int fixture_docstate_sets(const fix_fixture *m, int *sets, gdn_error *e) {
  int n = 0;
  *sets = 0;
  for (size_t i = 0; i < m->n_outputs; i++) n += fix_output_docs_ht(&m->outputs[i]);
  return n ? parity_docstate_sets(&m->inputs, n, sets, e) : GDN_OK;
}

/* Without a reference only our two kernels can be compared with each
 * other; an output nobody judged must never count as a pass. */
static int fixture_no_oracle_refusal(const fix_fixture *fx, gdn_error *e) {
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--oracle none cannot judge the fixture's /outputs (%zu, first '%s'): there is nothing to "
                       "hold them against; use an oracle (--oracle dd is fast) or a fixture without /outputs",
                       fx->n_outputs, fx->outputs[0].name);
}

/* Each device count an output of the fixture declares joins the run's
 * (sorted in, once): the output is judged in the case of its own count
 * only (parity_sweep_case_scope), so that case must exist. */
static void fixture_declared_devices(const fix_fixture *fx, parity_sweep_opts *o) {
  for (size_t i = 0; i < fx->n_outputs; i++) {
    const fix_output *fo = &fx->outputs[i];
    if ((fo->missing & FIX_ATTR_DEVICES) || fo->devices < 1) continue;
    size_t k = 0;
    while (k < o->n_devices && o->devices[k] < fo->devices) k++;
    if ((k < o->n_devices && o->devices[k] == fo->devices) || o->n_devices >= PARITY_MAX_LIST) continue;
    memmove(&o->devices[k + 1], &o->devices[k], (o->n_devices - k) * sizeof o->devices[0]);
    o->devices[k] = fo->devices;
    o->n_devices++;
  }
}

/* What a streamed fixture run holds per group (parity_stream_plan_make's
 * flags and output sets) and whether it judges gradients. */
typedef struct stream_shape {
  int flags, sets, grads;
  int64_t dealt; /* dealt_group's share, or 0 */
} stream_shape;

/* Whether the file's /oracle/grads may stand in for the oracle's VJP in a
 * streamed check (the groups then read it: fix_group_read_oracle_grads);
 * why not on the log, as the whole check says it. */
static int stream_grads_usable(const run_state *st, fix_group *g, int grads, const parity_sweep_opts *o, FILE *out,
                               char *why) {
  why[0] = '\0';
  const int use = grads && st->tier != PARITY_ORACLE_NONE &&
                  parity_stored_grads_usable(&fix_group_meta(g)->oracle, why, 200);
  if (grads && why[0] && o->verbosity >= 1 && parity_dist_rank() == 0)
    fprintf(out, "note: the stored /oracle/grads is not used (%s); computing the oracle's VJP\n", why);
  fix_group_read_oracle_grads(g, use);
  return use;
}

/* The fixture streamed by head group, one streamed sweep per run of its
 * shard plan (run_fixture_shards' way): run r in its mode, judging the
 * outputs the plan gives it (shallow copies of ext, which keeps ownership;
 * `index` maps them to the file's).  Each run reads every group again (its
 * oracle, stored or computed, included): the runs hold nothing between
 * them. */
static int stream_fixture_runs(run_state *st, const char *path, fixture_src *src, const parity_external *ext,
                               const parity_shard_plan *plan, const parity_sweep_opts *o, const stream_shape *sh,
                               FILE *out, gdn_error *e) {
  const fix_fixture *m = fix_group_meta(src->g);
  const gdn_shape *s = &m->inputs.shape;
  const size_t no = m->n_outputs ? m->n_outputs : 1;
  parity_external *sub = gdn_malloc(no * sizeof *sub, "outputs of a shard run", e);
  size_t *index = sub ? gdn_malloc(no * sizeof *index, "outputs of a shard run", e) : NULL;
  parity_stored_oracle stored; /* its /oracle, trusted or not as the whole check decides */
  char grads_why[200];         /* why its /oracle/grads is not used ("": it is, or there is none) */
  parity_stored_oracle_init(&stored);
  int rc = index ? GDN_OK : (e ? e->code : GDN_ERR_NOMEM);
  const char *base_name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  for (int r = 0; r < plan->n && !rc; r++) {
    parity_sweep_opts orun = *o;
    orun.shard = plan->mode[r];
    orun.shard_from = plan->from[r];
    size_t n = 0;
    for (size_t i = 0; i < m->n_outputs; i++)
      if (plan->run_of[i] == r) sub[n] = ext[i], index[n++] = i;
    parity_stream_plan sp;
    if ((rc = parity_sweep_validate(s, &orun, e))) {
      gdn_error_prefix(e, "shard %s: ", kern_shard_name(orun.shard));
      break;
    }
    if ((rc = parity_stream_plan_make(s, sh->flags, sh->sets, &orun, st->max_bytes, st->group_heads, &sp, e)) ||
        (rc = dealt_replan(s, sh->flags, sh->sets, &orun, st->max_bytes, sh->dealt, &sp, e)) ||
        (rc = scratch_room(&sp, &orun, sh->grads, n, e)) ||
        (rc = parity_stored_oracle_open(&stored, m, st->tier, orun.dtype, e)))
      break;
    if (orun.verbosity >= 1) {
      char line[400];
      parity_stream_describe(&sp, line, sizeof line);
      if (m->n_outputs)
        fprintf(out, "%s: shard %s (%s), judging %zu of the fixture's %zu outputs\n", gdn_text_show(path),
                kern_shard_name(orun.shard), orun.shard_from, n, m->n_outputs);
      else
        fprintf(out, "%s: shard %s (%s)\n", gdn_text_show(path), kern_shard_name(orun.shard), orun.shard_from);
      fprintf(out, "note: %s; scratch files in %s\n", line, parity_spill_dir());
    }
    const parity_stream_fixture sf = {sub, n, fixture_group_slab, &stored, index, &m->inputs,
                                      stream_grads_usable(st, src->g, sh->grads, &orun, out, grads_why),
                                      grads_why};
    const parity_stream_run sr = {&sp, {fixture_group_load, src}, base_name, "fixture", path,
                                  m->inputs_sha256, m->has_cotangents ? m->grad_problem_sha256 : NULL,
                                  st->tier, st->oracle_bits, sh->grads, &sf};
    parity_progress_add(orun.progress, parity_sweep_stream_steps(&sp, &orun));
    rc = parity_sweep_run_streamed(&st->doc, &sr, &orun, e);
  }
  parity_stored_oracle_clear(&stored);
  gdn_free(index);
  gdn_free(sub);
  return rc;
}

/* check of a fixture by head group: asked for (--group-heads), or when the
 * whole run is over --max-bytes.  *done 0: run it whole instead.  A file
 * under an eighth of --max-bytes is taken to fit whole without opening it,
 * unless `probe` (the whole check found it did not: per-document final
 * states' rows can outgrow a small file). */
static int run_fixture_streamed(run_state *st, const char *path, const parity_sweep_opts *base, int chunk_given,
                                int shard_given, int probe, FILE *out, int *done, uint64_t *one_head, gdn_error *e) {
  *done = 0;
  *one_head = 0;
  struct stat sb;
  if (!probe && !st->group_heads && !(parity_dist_collective() && parity_dist_size() > 1) &&
      (stat(path, &sb) || (uint64_t)sb.st_size < st->max_bytes / 8))
    return GDN_OK;
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  lo.max_bytes = 0; /* a group's slab is counted by the plan below */
  lo.allow_stale_oracle = 1;
  fixture_src src = {NULL, 0, 0, {0}};
  fix_fixture_init(&src.slab);
  parity_external *ext = NULL;
  parity_shard_plan plan;
  parity_shard_plan_init(&plan);
  int rc = fix_group_open_isolated(&src.g, path, &lo, e); /* HDF5 is not memory-safe: probed first */
  if (rc) { /* its messages name the file */
    parity_shard_plan_clear(&plan);
    return rc;
  }
  const fix_fixture *m = fix_group_meta(src.g);
  const gdn_shape *s = &m->inputs.shape;
  src.Hv = s->Hv, src.Hk = s->Hk;
  parity_sweep_opts o = *base;
  char why[160] = "";
  rc = parity_shard_plan_make(m, shard_given, base->shard, path, &plan, e);
  if (!rc) {
    o.shard = plan.mode[0];
    o.shard_from = plan.from[0];
    if (!chunk_given) o.chunks[0] = m->chunk_size, o.n_chunks = 1;
    fixture_declared_devices(m, &o);
    fixture_stream_refusal(src.g, &o, why, sizeof why);
    if (st->group_heads && why[0]) rc = gdn_error_set(e, GDN_ERR_INPUT, "--group-heads: %s", why);
  }
  const int h0 = fix_group_has_h0(src.g), grads = m->has_cotangents || st->grad;
  parity_stream_plan sp;
  if (!rc && !why[0]) rc = parity_sweep_validate(s, &o, e);
  gdn_error quiet;
  gdn_error_init(&quiet);
  const int flags =
      (h0 ? PARITY_STREAM_H0 : 0) | (grads ? PARITY_STREAM_GRADS : 0) | stream_oracle_flags(st, s, grads);
  /* the output sets held: the reference, the scan, one candidate, and the
   * group's slab of each output and of the stored /oracle (as run_fixture counts) */
  int docs = 0; /* and what per-document final states hold (parity_docstate_sets) */
  if (!rc) rc = fixture_docstate_sets(m, &docs, e);
  const int sets = 3 + (int)m->n_outputs + m->oracle.present + docs;
  /* under mpirun dealt over the ranks (dealt_group) */
  const int64_t dg = why[0] ? 0 : dealt_group(s);
  /* streamed when the forward or the gradients do not fit whole */
  const int over = parity_budget_check(s, h0, sets, &o, st->max_bytes, NULL) || (grads && grads_check_limit(st, s, NULL));
  if (!rc && !why[0] && (st->group_heads || dg || over) &&
      /* not even one key head fits: the whole check's refusal says why */
      (st->group_heads || !parity_stream_plan_make(s, flags, sets, &o, st->max_bytes, 0, &sp, &quiet) ||
       /* the whole check's refusal follows: what one key head streamed would need */
       (!parity_stream_plan_make(s, flags, sets, &o, 0, 1, &sp, NULL) && (*one_head = sp.peak, 0)))) {
    if (st->tier == PARITY_ORACLE_NONE && m->n_outputs)
      rc = fixture_no_oracle_refusal(m, e);
    else if (!(rc = parity_stream_plan_make(s, flags, sets, &o, st->max_bytes, st->group_heads, &sp, e)) &&
             !(rc = dealt_replan(s, flags, sets, &o, st->max_bytes, st->group_heads ? 0 : dg, &sp, e)) &&
             /* dealt for the ranks only, without room for its scratch: whole, as before */
             (st->group_heads || over || dealt_room(&sp, &o, grads, m->n_outputs)) &&
             !(rc = parity_externals_from_fixture(m, &ext, e)) &&
             /* padding's attrs and ht (whole); each group's o is masked as it streams */
             !(rc = parity_padding_note(&m->inputs, ext, m->n_outputs, e))) {
      *done = 1;
      for (size_t i = 0; i < m->n_warnings; i++)
        if (o.verbosity >= 1) fprintf(out, "%s: warning: %s\n", gdn_text_show(path), gdn_text_show(m->warnings[i]));
      const stream_shape shp = {flags, sets, grads, st->group_heads ? 0 : dg};
      rc = stream_fixture_runs(st, path, &src, ext, &plan, &o, &shp, out, e);
    }
  }
  if (rc) gdn_error_prefix(e, "%s: ", path);
  parity_shard_plan_clear(&plan);
  parity_externals_free(ext, m->n_outputs);
  fix_fixture_clear(&src.slab);
  fix_group_close(src.g);
  return rc;
}

/* A refusal over --max-bytes says what one key head streamed would need. */
static void one_head_hint(int rc, uint64_t one_head, gdn_error *e) {
  if (rc != GDN_ERR_INPUT || !one_head || !e || !strstr(e->msg, "--max-bytes")) return;
  const size_t n = strlen(e->msg);
  snprintf(e->msg + n, sizeof e->msg - n,
           "; streamed by head group, one key head alone would need %.3g GiB (--max-bytes %" PRIu64 ")",
           (double)one_head / 1073741824.0, one_head);
}

/* check of a fixture whole (one_head: what one key head streamed would
 * need, for a refusal's message; 0: not known).  *again (when not NULL)
 * set where it is refused over --max-bytes and an output has per-document
 * final states, whose rows a small file's size does not show: the caller
 * may stream it instead (run_fixture). */
static int run_fixture_whole(run_state *st, const char *path, const parity_sweep_opts *base, int chunk_given,
                             int shard_given, uint64_t one_head, int *again, FILE *out, gdn_error *e) {
  fix_fixture fx;
  fix_fixture_init(&fx);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  lo.max_bytes = st->max_bytes;
  lo.allow_stale_oracle = 1; /* a stale /oracle is recomputed, not trusted */
  lo.extra_output_sets = 3;  /* reference + scan + one affine result */
  /* counted in the loader's one total (they once were not): the
   * reference's and both kernels' gradient sets (binary64) when gradients
   * are judged, and what the sweep holds per output */
  lo.grad_sets = 3;
  lo.grads_always = st->grad;
  lo.oracle_grads = st->tier != PARITY_ORACLE_NONE; /* a stored /oracle/grads may stand in for the oracle's VJP
                                                       (counted: one set more; freed when not used) */
  lo.per_output_bytes = parity_budget_per_subject(&st->policy);
  parity_sweep_opts sized = *base;
  if (!chunk_given) sized.n_chunks = 0;
  lo.extra_bytes = fixture_scratch;
  lo.extra_arg = &sized;
  parity_reference ref;
  parity_reference_init(&ref);
  parity_external *ext = NULL;
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  parity_shard_plan plan;
  parity_shard_plan_init(&plan);
  /* fix_isolate.h: HDF5 reads the file in a probe process first, so a
   * corrupt fixture is refused (exit 2) instead of crashing the gate. */
  int rc = fix_load_isolated(&fx, path, &lo, e);
  if (rc) { /* the loader's own bound on the per-document states (fix_load.c) */
    if (again && rc == GDN_ERR_INPUT && e && strstr(e->msg, "per-document states need")) *again = 1;
    one_head_hint(rc, one_head, e);
    goto done;
  }
  parity_sweep_opts o = *base;
  if ((rc = parity_shard_plan_make(&fx, shard_given, base->shard, path, &plan, e))) goto done;
  o.shard = plan.mode[0]; /* validated per run below */
  if (!chunk_given) {
    o.chunks[0] = fx.chunk_size;
    o.n_chunks = 1;
  }
  fixture_declared_devices(&fx, &o);
  /* the fixture's data is loaded (counted by the loader); what the run adds:
   * reference + scan + one affine result + the kernels' scratch */
  int docs = 0; /* per-document final states' rows (parity_docstate_sets) */
  if ((rc = parity_sweep_validate(&fx.inputs.shape, &o, e)) || (rc = fixture_docstate_sets(&fx, &docs, e)) ||
      /* the kernels' scratch beside every output set held: the fixture's too */
      (rc = parity_budget_check(&fx.inputs.shape, fx.inputs.h0 != NULL,
                                3 + (int)fx.n_outputs + fx.oracle.present + docs, &o, st->max_bytes, e))) {
    if (again && docs && rc == GDN_ERR_INPUT) *again = 1;
    one_head_hint(rc, one_head, e);
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  for (size_t i = 0; i < fx.n_warnings; i++) /* once the run goes ahead (a retry streamed prints them) */
    if (base->verbosity >= 1) fprintf(out, "%s: warning: %s\n", gdn_text_show(path), gdn_text_show(fx.warnings[i]));
  if (st->tier == PARITY_ORACLE_NONE && fx.n_outputs) {
    rc = fixture_no_oracle_refusal(&fx, e);
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  /* every step of the run counted before the first (the oracle) starts,
   * so the line's total is right from the start */
  parity_progress_add(o.progress, plan.n * parity_sweep_steps(&o, &fx.inputs.shape));
  if ((rc = fixture_reference(st, &fx, path, &o, &ref, out, e))) goto done;
  if ((rc = parity_externals_from_fixture(&fx, &ext, e))) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  if (st->tier != PARITY_ORACLE_NONE &&
      /* the other semantics' reference at the run's tier (auto: dd for long inputs), enough to
       * tell a factor of PARITY_PACKING_DECISIVE apart (parity_packing.h) */
      (rc = parity_packing_match(&fx.inputs, &ref, st->tier, st->oracle_bits, ext, fx.n_outputs, e))) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  /* padding tokens and the final state under packing: judged only as each output declares */
  if (st->tier != PARITY_ORACLE_NONE && (rc = parity_padding_apply(&fx.inputs, &ref, ext, fx.n_outputs, e))) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  /* final_state per_document: the oracle's state at each document's end (parity_docstate.h) */
  if (st->tier != PARITY_ORACLE_NONE &&
      (rc = parity_docstate_apply(&fx.inputs, &ref, st->oracle_bits, ext, fx.n_outputs, e))) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  /* With /cotangents: every output's stored gradients judged.  Without,
   * --grad: our kernels' gradients on the fixture's inputs (cotangents
   * from seed 0); the outputs carry none and are judged forward only. */
  rc = fx.has_cotangents ? fixture_grads_setup(st, &fx, &ref, &o, out, e)
                         : grads_setup(st, st->grad, &fx.inputs, 0, &ref, &ct, &o, e);
  if (rc) {
    gdn_error_prefix(e, "%s: ", path);
    goto done;
  }
  const char *base_name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  parity_input_info info = {base_name, "fixture", path, fx.inputs_sha256};
  rc = run_fixture_shards(st, &fx, path, ext, &info, &ref, &o, &plan, out, e);
done:
  parity_shard_plan_clear(&plan);
  gdn_cotangents_clear(&ct);
  parity_reference_clear(&ref);
  parity_externals_free(ext, fx.n_outputs);
  fix_fixture_clear(&fx);
  return rc;
}

/* A check of a fixture: streamed by head group when asked or over
 * --max-bytes, else whole; a small file found over it whole only for its
 * per-document final states is probed for streaming once more. */
static int run_fixture(run_state *st, const char *path, const parity_sweep_opts *base, int chunk_given,
                       int shard_given, FILE *out, gdn_error *e) {
  int rc = GDN_OK, again = 1;
  for (int probe = 0; probe < 2 && again; probe++) {
    int streamed;
    uint64_t one_head;
    again = 0;
    rc = run_fixture_streamed(st, path, base, chunk_given, shard_given, probe, out, &streamed, &one_head, e);
    if (rc || streamed) return rc;
    rc = run_fixture_whole(st, path, base, chunk_given, shard_given, one_head, probe ? NULL : &again, out, e);
  }
  return rc;
}

/* What every case-running command shares once its options are parsed. */
typedef struct cmd_ctx {
  run_state st;
  const gdn_cli_args *a;
  parity_sweep_opts so;
  parity_synth_spec base;
  const char *files[GDN_CLI_MAX_POS + 1]; /* check: --fixture, then the arguments */
  int nf;
  FILE *out, *err;
  int sweep; /* the sweep command (--backend mpi refuses it) */
  parity_progress progress; /* on err when a terminal and not --quiet */
  const char *command;      /* the recorded command line */
  json_t *coverage;         /* coverage: its document (parity_coverage.h) */
  int coverage_cmd;         /* the coverage command */
} cmd_ctx;

#define CGET(name) gdn_cli_get(options, x->a, name)
#define PGET(name) gdn_cli_get(options, a, name) /* a: const gdn_cli_args * */

static int cmd_check(cmd_ctx *x, gdn_error *e) {
  if (!x->nf) return gdn_error_set(e, GDN_ERR_INPUT, "check needs --fixture FILE.h5");
  parity_dist_set_collective(1); /* every rank runs these cases: the oracle is dealt */
  for (int i = 0; i < x->nf; i++) {
    int rc = run_fixture(&x->st, x->files[i], &x->so, CGET("chunk") != NULL, CGET("shard") != NULL, x->out, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* Every entry is validated (shape, memory, policy coverage) before any runs.
 * n_outputs: the output sets a case holds at once (parity_budget.h): the
 * reference's, the scan's and the affine-prefix's; coverage's mutant sweep
 * holds one mutant's more (parity_sweep.h: one extra row at a time). */
static int grid_validate(const cmd_ctx *x, const parity_grid *g, const char *grid, int n_outputs, gdn_error *e) {
  for (size_t i = 0; i < g->n; i++) {
    const parity_grid_entry *en = &g->entries[i];
    int rc = parity_sweep_validate(&en->spec.shape, &en->opts, e);
    parity_stream_plan plan; /* coverage streams an entry over the budget (parity_coverage_stream.h) */
    plan.n_groups = 1;
    if (!rc && x->coverage_cmd)
      rc = parity_coverage_entry_plan(&en->spec, &en->opts, x->st.max_bytes, x->st.group_heads, &plan, e);
    else if (!rc) rc = parity_budget_check(&en->spec.shape, (en->spec.synth.flags & GDN_SYNTH_H0) != 0, n_outputs,
                                           &en->opts, x->st.max_bytes, e);
    if (!rc && (x->st.grad || en->spec.grad) && plan.n_groups == 1) rc = grads_check_limit(&x->st, &en->spec.shape, e);
    if (!rc) { /* --grad makes every entry a gradient entry: its rows are dry-run too */
      parity_grid_entry g = *en;
      g.spec.grad = en->spec.grad || x->st.grad;
      rc = parity_grid_check_policy(&g, &x->st.policy, x->st.tier != PARITY_ORACLE_NONE, e);
    }
    if (rc) {
      gdn_error_prefix(e, "%s: entry %zu: ", grid, i);
      return rc;
    }
  }
  return GDN_OK;
}

static int cmd_sweep(cmd_ctx *x, gdn_error *e) {
  const char *grid = CGET("grid");
  if (!grid) return gdn_error_set(e, GDN_ERR_INPUT, "sweep needs --grid GRID.json");
  parity_grid g;
  parity_grid_init(&g);
  int rc = parity_grid_load(&g, grid, &x->base, &x->so, e);
  if (!rc) rc = grid_validate(x, &g, grid, 3, e);
  for (size_t i = 0; !rc && i < g.n; i++) rc = run_grid_entry(&x->st, &g, i, e);
  parity_grid_clear(&g);
  return rc;
}

/* The README's text, for "does it say why this mutant cannot be killed":
 * --readme FILE must be readable; the default README.md may be absent
 * (*text NULL: unknown). */
static int coverage_readme(const char *given, char **text, gdn_error *e) {
  const char *path = given ? given : "README.md";
  *text = NULL;
  FILE *f;
  int err = 0, rc = gdn_path_fopen_input("--readme", path, &f, &err, e); /* never blocks: a FIFO is refused */
  if (rc && !given && err) return gdn_error_init(e), GDN_OK; /* the default README may be absent */
  if (rc) return rc;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - 1 - n, f);
    if (n < cap - 1) break;
    char *nb = cap < (64u << 20) ? realloc(buf, cap *= 2) : NULL;
    if (!nb) free(buf);
    buf = nb;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) return gdn_error_set(e, GDN_ERR_INPUT, "%s: too large or out of memory", path);
  buf[n] = '\0';
  if (bad) {
    free(buf);
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: read error", path);
  }
  *text = buf;
  return GDN_OK;
}

/* coverage: every grid entry against the selected mutants (parity_coverage.h);
 * the mutant names are checked before the grid is read. */
static int cmd_coverage(cmd_ctx *x, gdn_error *e) {
  parity_coverage_opts co;
  memset(&co, 0, sizeof co);
  const char *mutants = CGET("mutants") ? CGET("mutants") : "all";
  int rc = parity_coverage_parse_mutants(mutants, co.mutants, &co.n_mutants, e);
  if (rc) return rc;
  if (parity_dist_size() > 1)
    return gdn_error_set(e, GDN_ERR_INPUT, "coverage runs in one process: drop mpirun");
  /* the default grid: the checkout's, else the installed distribution's (parity_datafile.h) */
  char found[4096];
  const int have_default = CGET("grid") || parity_datafile_find("grids/upstream-pr.json", found, sizeof found);
  if (!have_default)
    return gdn_error_set(e, GDN_ERR_INPUT, "the default grid grids/upstream-pr.json: not found (looked in %s); "
                         "give --grid", found);
  const char *grid = CGET("grid") ? CGET("grid") : found;
  parity_grid g;
  parity_grid_init(&g);
  char *readme = NULL;
  rc = parity_grid_load(&g, grid, &x->base, &x->so, e);
  if (rc && !CGET("grid")) gdn_error_prefix(e, "the default grid: ");
  if (!rc) rc = grid_validate(x, &g, grid, 4, e);
  parity_readme_unkillable unk;
  const char *readme_name = CGET("readme") ? CGET("readme") : "README.md";
  if (!rc) rc = coverage_readme(CGET("readme"), &readme, e);
  if (!rc) rc = parity_readme_parse(readme, readme_name, &unk, e);
  if (!rc) {
    co.grid = &g;
    co.grid_name = grid;
    co.command = x->command;
    co.policy = &x->st.policy;
    co.tier = x->st.tier;
    co.oracle_bits = x->st.oracle_bits;
    co.reproducible = x->so.reproducible;
    co.readme_name = readme_name;
    co.unkillable = readme ? &unk : NULL;
    co.progress = &x->progress;
    co.max_bytes = x->st.max_bytes;
    co.group_heads = x->st.group_heads;
    rc = parity_coverage_run(&co, &x->coverage, e);
  }
  free(readme);
  parity_grid_clear(&g);
  return rc;
}

static int cmd_run(cmd_ctx *x, gdn_error *e) {
  if (!CGET("shape")) return gdn_error_set(e, GDN_ERR_INPUT, "nothing to do: give --shape B,T,H,D (or see --help)");
  parity_dist_set_collective(1); /* every rank runs this case: the oracle is dealt */
  return run_synthetic(&x->st, &x->base, &x->so, e);
}

/* The commands: a row each (report rebuilds documents and runs no case). */
typedef struct cmd_row {
  const char *name; /* argv[1], or NULL for the default command (--shape) */
  int id;           /* CMD_*: which options it takes */
  int (*run)(cmd_ctx *x, gdn_error *e);
} cmd_row;

static const cmd_row commands[] = {
    {NULL, CMD_RUN, cmd_run},
    {"sweep", CMD_SWEEP, cmd_sweep},
    {"check", CMD_CHECK, cmd_check},
    {"report", CMD_REPORT, NULL},
    {"coverage", CMD_COVERAGE, cmd_coverage},
};

/* The command row argv names; *first is the index of its first option. */
static const cmd_row *find_command(int argc, char **argv, int *first, gdn_error *e) {
  *first = 1;
  if (argc <= 1 || argv[1][0] == '-') return &commands[0];
  *first = 2;
  for (size_t i = 1; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return &commands[i];
  gdn_error_set(e, GDN_ERR_INPUT,
                "unknown command '%s'; expected sweep, check, report, coverage or trust, or options such as --shape (see --help)",
                argv[1]);
  return NULL;
}

/* --help, --version, --print-policy: answered before anything else. */
static int answer_early(const gdn_cli_args *a, FILE *out) {
  if (PGET("help")) parity_cli_print_help(out);
  else if (PGET("version")) fprintf(out, "gdn-parity %s (git %s)\n", GDN_VERSION, GDN_GIT_COMMIT);
  else if (PGET("print-policy")) fputs(parity_policy_builtin_text(), out);
  else return 0;
  return 1;
}

/* --threads, --quiet / --verbose. */
static int parse_process_opts(const gdn_cli_args *a, int *verbosity, gdn_error *e) {
  const char *v;
  if ((v = PGET("threads"))) {
    int64_t t;
    if (gdn_cli_int64(v, "--threads", 1, 4096, &t, e)) return -1;
    gdn_threads_set((int)t);
  }
  if (PGET("quiet") && PGET("verbose"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--quiet and --verbose contradict each other");
  *verbosity = PGET("quiet") ? 0 : PGET("verbose") ? 2 : 1;
  return GDN_OK;
}

/* --oracle, --oracle-bits, --max-bytes, --grad, --policy. */
static int parse_run_state(const gdn_cli_args *a, run_state *st, gdn_error *e) {
  const char *v;
  st->tier = PARITY_ORACLE_AUTO;
  st->oracle_bits = 128;
  st->max_bytes = 16ull << 30;
  if ((v = PGET("oracle")) && parity_oracle_tier_parse(v, &st->tier, e)) return -1;
  if ((v = PGET("oracle-bits"))) {
    int64_t b;
    if (gdn_cli_int64(v, "--oracle-bits", 53, 4096, &b, e)) return -1;
    st->oracle_bits = (int)b;
  }
  if ((v = PGET("max-bytes")) && gdn_cli_bytes(v, "--max-bytes", &st->max_bytes, e)) return -1;
  if ((v = PGET("group-heads")) && gdn_cli_int64(v, "--group-heads", 1, INT64_MAX, &st->group_heads, e)) return -1;
  st->grad = PGET("grad") != NULL;
  return (v = PGET("policy")) ? parity_policy_load_file(&st->policy, v, e) : parity_policy_load_builtin(&st->policy, e);
}

/* The synthetic input set the options describe (sweep: each grid entry's base). */
static int parse_synth_base(const gdn_cli_args *a, parity_synth_spec *base, gdn_error *e) {
  if (parity_synth_spec_from_cli(base, PGET("shape"), PGET("key-heads"), PGET("dv"), PGET("seed"), PGET("h0") != NULL,
                                 PGET("qk-norm"), PGET("input-dtype"), PGET("gates"), e))
    return -1;
  if (PGET("documents") && gdn_cli_int64(PGET("documents"), "--documents", 1, 1 << 20, &base->documents, e)) return -1;
  if (PGET("packing") && gdn_packing_parse(PGET("packing"), &base->packing, e)) return -1;
  if (PGET("prelude") && parity_parse_prelude(PGET("prelude"), &base->synth.flags, "--prelude", e)) return -1;
  return GDN_OK;
}

/* Options, then every input and output resolved (aliases refused) before
 * anything runs; then the results document. */
static int prepare(cmd_ctx *x, int argc, char **argv, parity_output_opts *oo, char **command, gdn_error *e) {
  const gdn_cli_args *a = x->a;
  int verbosity = 1;
  if (parse_process_opts(a, &verbosity, e) || parse_run_state(a, &x->st, e)) return -1;
  parity_sweep_opts_init(&x->so);
  parity_progress_init(&x->progress, x->err, verbosity >= 1);
  x->so.progress = &x->progress;
  x->so.verbosity = verbosity;
  x->so.log = x->out;
  x->so.policy = &x->st.policy;
  x->so.reproducible = PGET("reproducible") != NULL;
  if (parse_sweep_opts(a, &x->so, e) || backend_setup(PGET("backend"), x->sweep, &x->so, e)) return -1;
  *oo = (parity_output_opts){PGET("json"), PGET("report"), PGET("junit"), PGET("summary"), PGET("reproducible") != NULL};
  if (PGET("fixture")) x->files[x->nf++] = PGET("fixture");
  for (int i = 0; i < a->n_pos; i++) x->files[x->nf++] = a->pos[i];
  if (parity_output_check_paths(oo, e) ||
      check_files(oo, x->files, x->nf, "the fixture", PGET("policy"), PGET("grid"),
                  /* coverage reads the README (by default README.md) */
                  PGET("readme") ? PGET("readme") : x->coverage_cmd ? "README.md" : NULL, e))
    return -1;
  if (PGET("audit") && parity_audit_load(PGET("audit"), oo, &x->st.audit, e)) return -1;
  if (!(*command = join_args(argc, argv))) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  x->command = *command;
  if (parity_doc_init(&x->st.doc, *command, &x->st.policy, e)) return -1;
  x->st.doc_ready = 1;
  return parse_synth_base(a, &x->base, e);
}

/* The document finished, every output written, the verdict line (after a
 * blank line that ends the log; --quiet: the verdict line alone). */
static int finish(run_state *st, const parity_output_opts *oo, int quiet, FILE *out, gdn_error *e) {
  if (parity_doc_finish(&st->doc, oo->reproducible, e)) return -1;
  /* --audit: embedded, its verdict ANDed into the document's pass */
  if (st->audit && report_audit_embed(st->doc.root, st->audit, e)) return -1;
  int pass = json_is_true(json_object_get(st->doc.root, "pass"));
  if (parity_dist_rank() != 0) return 0; /* rank 0 writes and prints the verdict */
  if (parity_output_write_all(oo, st->doc.root, e)) return -1;
  const char *pm = json_string_value(json_object_get(st->doc.root, "planted_mutant"));
  if (!quiet) fputc('\n', out);
  parity_audit_print_lines(out, st->doc.root);
  fprintf(out, "%s: %zu case%s, %zu failed%s", pass ? "PASS" : "FAIL", st->doc.n_cases,
          st->doc.n_cases == 1 ? "" : "s", st->doc.n_failed,
          st->doc.have_oracle ? "" : " (no oracle: affine-prefix judged against scan only)");
  char worst[512];
  if (parity_worst_failure(st->doc.root, worst, sizeof worst)) fprintf(out, "; worst: %s", worst);
  parity_audit_print_suffix(out, st->doc.root);
  char unjudged[256];
  if (parity_doc_ht_unjudged(st->doc.root, unjudged, sizeof unjudged))
    fprintf(out, "; ht NOT JUDGED for %s: no final state returned (a function called without an initial state "
                 "returns none, as MaxText's does; capture with h0 to judge it)", unjudged);
  /* the mutant is killed by the cases alone (an audit's verdict is its own) */
  if (pm)
    fprintf(out, "; PLANTED MUTANT %s%s%s", pm, parity_doc_pass(&st->doc) ? " survived: " : " killed: ",
            REPORT_MUTANT_NOTE);
  fputc('\n', out);
  return pass ? 0 : 1;
}

/* coverage: its outputs, the log (or with --quiet the verdict line) and its
 * exit status (0 every mutant killed, 1 not). */
static int finish_coverage(cmd_ctx *x, const parity_output_opts *oo, gdn_error *e) {
  if (report_coverage_write_all(x->coverage, oo->json, oo->report, oo->junit, oo->summary, e)) return -1;
  int pass = json_is_true(json_object_get(x->coverage, "pass"));
  if (x->so.verbosity >= 1) parity_coverage_log(x->out, x->coverage);
  else fprintf(x->out, "%s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

int parity_cli_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e) {
  if (argc > 1 && !strcmp(argv[1], "trust")) return parity_trust_main(argc, argv, out, err, e); /* its own options */
  if (argc > 1 && !strcmp(argv[1], "regen")) return parity_regen_main(argc, argv, out, err, e); /* its own options */
  int first;
  const cmd_row *cmd = find_command(argc, argv, &first, e);
  if (!cmd) return -1;
  /* `report` takes -o as the usual spelling of its output file. */
  char *av_local[256];
  if (cmd->id == CMD_REPORT && argc <= 256) {
    for (int i = 0; i < argc; i++) av_local[i] = !strcmp(argv[i], "-o") ? "--output" : argv[i];
    argv = av_local;
  }
  gdn_cli_args a;
  if (gdn_cli_parse_cmd(options, cmd_names, cmd->id, argc, argv, first, &a, e)) return -1;
  if (answer_early(&a, out)) return 0;
  if (cmd->id == CMD_REPORT) return report_command(&a, out, e);
  const char *rname = gdn_cli_get(options, &a, "recurrence");
  if (cmd->id == CMD_CHECK) { /* a fixture of another recurrence (parity_recur_check_cli.h) */
    int handled, rc = parity_recur_check_dispatch(options, &a, out, &handled, e);
    if (handled) return rc;
  }
  if (rname && strcmp(rname, "gdn")) { /* another row of the recurrences' table */
    const parity_recurrence *rec = parity_recurrence_find(rname, e);
    if (rec && (cmd->id == CMD_SWEEP || cmd->id == CMD_COVERAGE)) /* parity_recur_grid_cli.h */
      return parity_recur_grid_main(rec, options, &a, cmd->id == CMD_COVERAGE, out, e);
    return rec ? parity_recur_cli_main(rec, options, &a, cmd->id == CMD_RUN, out, e) : -1;
  }
  if (a.n_pos && cmd->id != CMD_CHECK) {
    gdn_error_set(e, GDN_ERR_INPUT, "unexpected argument '%s' (see --help)", a.pos[0]);
    return -1;
  }
  cmd_ctx x;
  memset(&x, 0, sizeof x);
  x.a = &a;
  x.out = out;
  x.err = err;
  x.sweep = cmd->id == CMD_SWEEP;
  x.coverage_cmd = cmd->id == CMD_COVERAGE;
  parity_policy_init(&x.st.policy);
  parity_output_opts oo;
  char *command = NULL;
  int status = -1;
  if (!prepare(&x, argc, argv, &oo, &command, e) && !cmd->run(&x, e)) {
    parity_progress_clear(&x.progress);
    status = cmd->id == CMD_COVERAGE ? finish_coverage(&x, &oo, e) : finish(&x.st, &oo, x.so.verbosity == 0, out, e);
  }
  json_decref(x.coverage);
  json_decref(x.st.audit);
  parity_progress_clear(&x.progress); /* before the caller prints an error */
  free(command);
  if (x.st.doc_ready) parity_doc_clear(&x.st.doc);
  parity_policy_clear(&x.st.policy);
  return status;
}
