/* parity_docstate: an output's per-document final states (final_state
 * per_document: ht of shape (N, Hv, Dk, Dv), as flash-linear-attention's
 * cu_seqlens returns them) judged against the oracle's state at each
 * document's end, by every rule that judges ht.
 * End to end through `gdn-parity check --fixture` on one fixture (B 2,
 * T 96, Hv 2, Dk = Dv = 16, 3 documents per row, packing reset, h0, slow
 * gates; outputs the MPFR oracle rounded to float32).  The expected states
 * are computed here independently of parity_docstate's construction: each
 * document's row cut after its last token (the row's tokens before it
 * included, packing and h0 as the fixture's), through the oracle.
 *   per_doc      those states rounded to float32: PASS, attrs and log say
 *                "per_document (N documents)"
 *   per_doc_head one document's state, one head, times (1 + 1e-4): FAIL on
 *                ht (negative control: 1e-4 is ~50x the block rule's floor
 *                2 x 32u = 3.8e-6 and ~1600x float32's rounding)
 *   per_doc_o    o off by 1e-3 of max |o| inside a document: FAIL on o
 *   the row-end states declared per_document (N entries wrong): refused
 *   by the loader (exit 2 in the CLI), naming the dataset and both shapes. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "fix_regen.h"
#include "gdn_alloc.h"
#include "gdn_documents.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "parity_oracle.h"
#include "parity_docstate.h"
#include "report.h"
#include "../check_runner.h"
#include "../test_util_alloc.h"
#include "../reports/test_util.h"
#include "synth_fixture.h"

/* The oracle's state after token `last` of row b: the row cut there. */
static void state_at(const gdn_inputs *in, int64_t b, int64_t last, double *dst) {
  gdn_error e;
  gdn_error_init(&e);
  const gdn_shape *s = &in->shape;
  gdn_shape c = *s;
  c.B = 1, c.T = last + 1;
  gdn_inputs x;
  gdn_inputs_init(&x);
  ck_assert_int_eq(gdn_inputs_alloc(&x, &c, in->h0 != NULL, &e), GDN_OK);
  ck_assert_int_eq(gdn_inputs_alloc_seg(&x, &e), GDN_OK);
  x.packing = in->packing;
  x.l2norm_in_kernel = in->l2norm_in_kernel;
  x.has_scale = in->has_scale;
  x.scale = in->scale;
  const size_t qk = (size_t)(s->Hk * s->Dk), v = (size_t)(s->Hv * s->Dv), g = (size_t)s->Hv,
               st = (size_t)(s->Hv * s->Dk * s->Dv), n = (size_t)(last + 1), o = (size_t)(b * s->T);
  memcpy(x.q, in->q + o * qk, n * qk * sizeof(float));
  memcpy(x.k, in->k + o * qk, n * qk * sizeof(float));
  memcpy(x.v, in->v + o * v, n * v * sizeof(float));
  memcpy(x.g, in->g + o * g, n * g * sizeof(float));
  memcpy(x.beta, in->beta + o * g, n * g * sizeof(float));
  memcpy(x.seg, in->seg + o, n * sizeof(int32_t));
  if (in->h0) memcpy(x.h0, in->h0 + (size_t)b * st, st * sizeof(float));
  parity_reference r;
  parity_reference_init(&r);
  ck_assert_msg(parity_reference_compute(&r, &x, PARITY_ORACLE_MPFR, 128, &e) == GDN_OK, "%s", e.msg);
  memcpy(dst, r.out.ht, st * sizeof(double));
  parity_reference_clear(&r);
  gdn_inputs_clear(&x);
}

/* An output: o the oracle's rounded to float32 (`o_bug`: one element
 * inside a document off by 1e-3 of max |o|), ht the n states of `docs`
 * rounded to float32, declared per_document. */
static fix_output *add_output(fix_fixture *fx, const char *name, const parity_reference *ref, const double *docs,
                              int64_t n, int o_bug) {
  gdn_error e;
  gdn_error_init(&e);
  const gdn_shape *s = &fx->inputs.shape;
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(fx, name, &o, &e), GDN_OK);
  ck_assert_int_eq(gdn_outputs_alloc(&o->out, s, GDN_DTYPE_F32, &e), GDN_OK);
  double mo = 0;
  for (size_t i = 0; i < gdn_shape_numel_v(s); i++) {
    o->out.o[i] = (float)ref->out.o[i];
    mo = fmax(mo, fabs(ref->out.o[i]));
  }
  const size_t row = (size_t)(s->Hv * s->Dv), planted = (size_t)40 * row + 3; /* row 0, t = 40 */
  ck_assert_int_ne(fx->inputs.seg[planted / row], 0);
  if (o_bug) o->out.o[planted] = (float)(o->out.o[planted] + 1e-3 * mo);
  gdn_free(o->out.ht);
  o->out.ht = NULL;
  o->has_ht = 0;
  const size_t nh = (size_t)n * (size_t)(s->Hv * s->Dk * s->Dv);
  o->ht_docs = gdn_malloc(nh * sizeof(double), "test ht", &e);
  ck_assert_ptr_nonnull(o->ht_docs);
  for (size_t i = 0; i < nh; i++) o->ht_docs[i] = (float)docs[i];
  o->n_docs = n;
  sfx_output_attrs(o, "test", NULL, 1);
  ck_assert_int_eq(fix_set_string(&o->packing, "reset", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&o->final_state, "per_document", &e), GDN_OK);
  return o;
}

static json_t *impl(json_t *doc, const char *name) {
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  json_t *x = json_object_get(json_object_get(c, "impls"), name);
  ck_assert_msg(x != NULL, "no impl %s", name);
  return x;
}

static int passes(json_t *doc, const char *name) { return json_is_true(json_object_get(impl(doc, name), "pass")); }

/* The fixture, its oracle and the documents' states (row-major order). */
typedef struct setup {
  fix_fixture fx;
  parity_reference ref;
  double *docs;
  int64_t n;
} setup;

static void setup_make_shape(setup *u, gdn_shape shape) {
  gdn_error e;
  gdn_error_init(&e);
  sfx_make(&u->fx, shape, 3, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 32);
  ck_assert_int_eq(gdn_synth_segments(&u->fx.inputs, 3, 3, &e), GDN_OK);
  u->fx.inputs.packing = GDN_PACKING_RESET;
  gdn_document *d = NULL;
  ck_assert_int_eq(gdn_documents_list(&u->fx.inputs, &d, &u->n, &e), GDN_OK);
  ck_assert_int_ge(u->n, 4); /* 3 per row, fewer where drawn boundaries coincide */
  const size_t st = (size_t)(u->fx.inputs.shape.Hv * 16 * 16);
  u->docs = malloc((size_t)u->n * st * sizeof(double));
  for (int64_t j = 0; j < u->n; j++) state_at(&u->fx.inputs, d[j].row, d[j].last, u->docs + (size_t)j * st);
  /* each row's documents are its own: a reset row's states differ from each other */
  ck_assert(fabs(u->docs[0] - u->docs[st]) > 0);
  gdn_free(d);
  parity_reference_init(&u->ref);
  ck_assert(parity_reference_compute(&u->ref, &u->fx.inputs, PARITY_ORACLE_MPFR, 128, &e) == GDN_OK);
}

static void setup_make(setup *u) { setup_make_shape(u, (gdn_shape){2, 96, 1, 2, 16, 16}); }

static void setup_clear(setup *u) {
  parity_reference_clear(&u->ref);
  free(u->docs);
  fix_fixture_clear(&u->fx);
}

START_TEST(per_document_states_judged) {
  gdn_error e;
  gdn_error_init(&e);
  setup u;
  setup_make(&u);
  const size_t st = (size_t)(u.fx.inputs.shape.Hv * 16 * 16), blk = 16 * 16;
  add_output(&u.fx, "per_doc", &u.ref, u.docs, u.n, 0);
  fix_output *h = add_output(&u.fx, "per_doc_head", &u.ref, u.docs, u.n, 0);
  for (size_t i = 0; i < blk; i++) { /* document 1, head 1 */
    const size_t at = st + blk + i;
    h->ht_docs[i + st + blk] = (float)(u.docs[at] * (1 + 1e-4));
  }
  add_output(&u.fx, "per_doc_o", &u.ref, u.docs, u.n, 1);
  char path[] = "/tmp/gdn-docstate-XXXXXX.h5", js[] = "/tmp/gdn-docstate-XXXXXX.json",
       log[] = "/tmp/gdn-docstate-XXXXXX.log";
  close(mkstemps(path, 3));
  close(mkstemps(js, 5));
  close(mkstemps(log, 4));
  ck_assert_msg(fix_write(&u.fx, path, &e) == GDN_OK, "%s", e.msg);
  /* the per-document ht survives the file */
  fix_fixture back;
  sfx_load(&back, path);
  const fix_output *b = fix_fixture_find_output(&back, "per_doc");
  ck_assert(b && b->ht_docs && !b->has_ht && b->n_docs == u.n);
  ck_assert(b->ht_docs[st + 5] == (double)(float)u.docs[st + 5]);
  fix_fixture_clear(&back);
  char *av[] = {"gdn-parity", "check", "--fixture", path, "--devices", "1", "--oracle", "mpfr",
                "--json", js, "--reproducible", NULL};
  FILE *out = fopen(log, "w");
  int st_cli = parity_cli_main(11, av, out, out, &e);
  fclose(out);
  ck_assert_msg(st_cli >= 0, "%s", e.msg);
  ck_assert_int_eq(st_cli, 1);
  json_t *doc = NULL;
  ck_assert_msg(report_json_read(js, &doc, &e) == GDN_OK, "%s", e.msg);
  char want[64];
  snprintf(want, sizeof want, "per_document (%lld documents)", (long long)u.n);
  const char *fs =
      json_string_value(json_object_get(json_object_get(impl(doc, "per_doc"), "attrs"), "final_state_judged"));
  ck_assert_msg(fs && strstr(fs, want), "%s", fs ? fs : "(none)");
  ck_assert_msg(passes(doc, "per_doc"), "per_doc: expected PASS");
  json_t *ht = json_object_get(impl(doc, "per_doc"), "ht");
  ck_assert_msg(ht && json_real_value(json_object_get(ht, "rel_fro")) < 1e-7, "per_doc: ht rel_fro");
  ck_assert_msg(!passes(doc, "per_doc_head"), "per_doc_head: expected FAIL");
  ck_assert_msg(!passes(doc, "per_doc_o"), "per_doc_o: expected FAIL");
  json_t *hh = json_object_get(impl(doc, "per_doc_head"), "ht");
  /* the planted head's block error is 1e-4 (blocks are one head of one document) */
  const double br = json_real_value(json_object_get(hh, "block_rel"));
  ck_assert_msg(br > 0.9e-4 && br < 1.1e-4, "block_rel %g", br);
  json_decref(doc);
  /* the log names the convention, and the failing tensor of per_doc_head */
  FILE *f = fopen(log, "r");
  char buf[1 << 16];
  size_t nr = fread(buf, 1, sizeof buf - 1, f);
  buf[nr] = 0;
  fclose(f);
  ck_assert_msg(strstr(buf, "note: output per_doc: ht judged per_document"), "%s", buf);
  char *fl = strstr(buf, "FAILED: per_doc_head ht ");
  ck_assert_msg(fl, "%s", buf);
  *strchr(fl, '\n') = 0; /* the per-document states' own error model judged it too (parity_docstate.h) */
  ck_assert_msg(strstr(fl, "x the model's normwise error"), "%s", fl);
  fl[strlen(fl)] = '\n';
  ck_assert_msg(strstr(buf, "FAILED: per_doc_o o "), "%s", buf);
  setup_clear(&u);
  unlink(path);
  unlink(js);
  unlink(log);
}
END_TEST

/* `gdn-parity check` of path (--reproducible, --json js), more args after;
 * its status (1: FAIL). */
static int check_to(const char *path, const char *tier, const char *js, const char *more) {
  gdn_error e;
  gdn_error_init(&e);
  char *av[16] = {"gdn-parity", "check", "--fixture", (char *)path, "--devices", "1", "--oracle", (char *)tier,
                  "--json", (char *)js, "--reproducible", NULL};
  int n = 11;
  if (more) av[n++] = "--group-heads", av[n++] = (char *)more;
  av[n] = NULL;
  FILE *out = fopen("/dev/null", "w");
  const int st = parity_cli_main(n, av, out, out, &e);
  fclose(out);
  ck_assert_msg(st >= 0, "%s", e.msg);
  return st;
}

static char *slurp(const char *path) {
  char *b = test_read_file(path, NULL);
  ck_assert_msg(b != NULL, "%s: unreadable", path);
  return b;
}

/* Streamed by head group (--group-heads 1: Hk 2, Hv 4, two groups) the
 * per-document states are judged as the whole run judges them
 * (parity_stream_docstate.h): the same results document byte for byte
 * (--reproducible), with the MPFR oracle and the dd tier (its sampled
 * columns placed by whole head, its certificate merged over the groups).
 * A stored /oracle (regen) too: the states at its tier.  An output that
 * declares per_document and gives no ht is judged on o alone, both ways.
 * Negative controls: per_doc_head, one document's state wrong at head 3
 * (the second group's), FAILs streamed on ht with block_rel 1e-4; and the
 * streamed document of a fixture whose correct output is that wrong one
 * differs from the correct fixture's (the comparison can fail). */
START_TEST(per_document_streamed) {
  gdn_error e;
  gdn_error_init(&e);
  setup u;
  setup_make_shape(&u, (gdn_shape){2, 96, 2, 4, 16, 16});
  const size_t st = (size_t)(4 * 16 * 16), blk = 16 * 16;
  add_output(&u.fx, "per_doc", &u.ref, u.docs, u.n, 0);
  fix_output *h = add_output(&u.fx, "per_doc_head", &u.ref, u.docs, u.n, 0);
  for (size_t i = 0; i < blk; i++) h->ht_docs[st + 3 * blk + i] = (float)(u.docs[st + 3 * blk + i] * (1 + 1e-4));
  fix_output *nh = add_output(&u.fx, "no_ht", &u.ref, u.docs, u.n, 0); /* declares per_document, gives no ht */
  gdn_free(nh->ht_docs);
  nh->ht_docs = NULL;
  nh->n_docs = 0;
  char path[] = "/tmp/gdn-docstate-XXXXXX.h5", a[] = "/tmp/gdn-docstate-XXXXXX.json",
       b[] = "/tmp/gdn-docstate-XXXXXX.json";
  close(mkstemps(path, 3));
  close(mkstemps(a, 5));
  close(mkstemps(b, 5));
  ck_assert_msg(fix_write(&u.fx, path, &e) == GDN_OK, "%s", e.msg);
  const char *tiers[] = {"mpfr", "dd"};
  char *first = NULL;
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(check_to(path, tiers[k], a, NULL), 1);
    ck_assert_int_eq(check_to(path, tiers[k], b, "1"), 1);
    char *da = slurp(a), *db = slurp(b);
    ck_assert_msg(!strcmp(da, db), "%s: whole %s and streamed %s differ", tiers[k], a, b);
    json_t *doc = NULL;
    ck_assert_msg(report_json_read(b, &doc, &e) == GDN_OK, "%s", e.msg);
    ck_assert_msg(passes(doc, "per_doc"), "%s: per_doc streamed: expected PASS", tiers[k]);
    ck_assert_msg(!passes(doc, "per_doc_head"), "%s: per_doc_head streamed: expected FAIL", tiers[k]);
    const double br = json_real_value(json_object_get(json_object_get(impl(doc, "per_doc_head"), "ht"), "block_rel"));
    ck_assert_msg(br > 0.9e-4 && br < 1.1e-4, "block_rel %g", br);
    const char *fs =
        json_string_value(json_object_get(json_object_get(impl(doc, "per_doc"), "attrs"), "final_state_judged"));
    ck_assert_msg(fs && strstr(fs, tiers[k]) && strstr(fs, "per_document"), "%s", fs ? fs : "(none)");
    fs = json_string_value(json_object_get(json_object_get(impl(doc, "no_ht"), "attrs"), "final_state_judged"));
    ck_assert_msg(!fs || !strstr(fs, "per_document"), "no_ht: %s", fs); /* nothing judged: nothing claimed */
    ck_assert_msg(passes(doc, "no_ht"), "%s: no_ht (o right, no ht): expected PASS", tiers[k]);
    json_decref(doc);
    if (!k) first = da;
    else free(da);
    free(db);
  }
  /* a stored /oracle (regen, MPFR): the states at its tier, by group as whole */
  fix_regen_opts ro;
  fix_regen_opts_init(&ro);
  ck_assert_msg(fix_regen(path, &ro, NULL, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(check_to(path, "auto", a, NULL), 1);
  ck_assert_int_eq(check_to(path, "auto", b, "1"), 1);
  char *sa = slurp(a), *sb = slurp(b);
  ck_assert_msg(!strcmp(sa, sb), "stored /oracle: whole %s and streamed %s differ", a, b);
  ck_assert_msg(strstr(sb, "\"oracle_from_fixture\": true") && strstr(sb, "ht judged per_document"), "stored /oracle not used");
  free(sa), free(sb);
  /* the negative control of the comparison: per_doc wrong as per_doc_head is */
  fix_output *o = (fix_output *)fix_fixture_find_output(&u.fx, "per_doc");
  o->ht_docs[st + 3 * blk] *= 1 + 1e-3;
  ck_assert_msg(fix_write(&u.fx, path, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(check_to(path, "mpfr", b, "1"), 1);
  char *db = slurp(b);
  ck_assert_msg(strcmp(first, db), "a wrong per_doc gave the correct one's document");
  free(first), free(db);
  setup_clear(&u);
  unlink(path), unlink(a), unlink(b);
}
END_TEST

START_TEST(per_document_count_refused) {
  gdn_error e;
  gdn_error_init(&e);
  setup u;
  setup_make(&u);
  add_output(&u.fx, "x", &u.ref, u.docs, u.n - 1, 0); /* one state short */
  char path[] = "/tmp/gdn-docstate-XXXXXX.h5";
  close(mkstemps(path, 3));
  ck_assert_msg(fix_write(&u.fx, path, &e) == GDN_OK, "%s", e.msg);
  fix_fixture back;
  fix_fixture_init(&back);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  ck_assert_int_eq(fix_load(&back, path, &lo, &e), GDN_ERR_INPUT);
  char want[160];
  snprintf(want, sizeof want, "/outputs/x/ht has shape (%lld, 2, 16, 16)", (long long)(u.n - 1));
  ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
  snprintf(want, sizeof want, "must be (%lld, 2, 16, 16)", (long long)u.n);
  ck_assert_msg(strstr(e.msg, want) && strstr(e.msg, "per_document"), "%s", e.msg);
  fix_fixture_clear(&back);
  char *av[] = {"gdn-parity", "check", "--fixture", path, "--devices", "1", "--oracle", "mpfr", NULL};
  FILE *devnull = fopen("/dev/null", "w");
  int st = parity_cli_main(8, av, devnull, devnull, &e);
  fclose(devnull);
  ck_assert_msg(st < 0 && e.code == GDN_ERR_INPUT && strstr(e.msg, "per_document"), "%d %s", st, e.msg);
  setup_clear(&u);
  unlink(path);
}
END_TEST

/* Many short documents make the per-document states T/2 times ht's size:
 * bounded by --max-bytes on their own (16 bytes per element, theirs and the
 * oracle's), after the fixture's whole-run limit let the file through; the
 * rows' own count in the run's budget (parity_docstate_sets) follows the
 * packing (reset: 8 sets; leak: 384, each row up to its document's end),
 * and the states' copies add 48 sets (short documents: N Dk > B T). */
START_TEST(per_document_bytes_bounded) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  sfx_make(&fx, (gdn_shape){1, 96, 1, 2, 16, 16}, 5, GDN_SYNTH_H0, 32);
  ck_assert_int_eq(gdn_inputs_alloc_seg(&fx.inputs, &e), GDN_OK);
  for (int t = 0; t < 96; t++) fx.inputs.seg[t] = 1 + t / 2;
  fx.inputs.packing = GDN_PACKING_RESET;
  ck_assert_int_eq(gdn_documents_count(&fx.inputs), 48);
  /* what the rows hold beside the run, in its output sets (parity_docstate_sets):
   * 8 x 48 rows of 2 tokens over 96 tokens under reset (of up to 96 under
   * leak), and 1 + 6 copies of the 48 states, 48 x 16 / (96 + 16) sets each */
  int sets = -1;
  ck_assert_int_eq(parity_docstate_sets(&fx.inputs, 1, &sets, &e), GDN_OK);
  ck_assert_int_eq(sets, 8 + 48);
  fx.inputs.packing = GDN_PACKING_LEAK;
  ck_assert_int_eq(parity_docstate_sets(&fx.inputs, 1, &sets, &e), GDN_OK);
  ck_assert_int_eq(sets, 8 * 48 + 48);
  fx.inputs.packing = GDN_PACKING_RESET;
  parity_reference r;
  parity_reference_init(&r);
  ck_assert(parity_reference_compute(&r, &fx.inputs, PARITY_ORACLE_MPFR, 64, &e) == GDN_OK);
  double *zeros = calloc((size_t)48 * 512, sizeof(double));
  add_output(&fx, "many", &r, zeros, 48, 0);
  char path[] = "/tmp/gdn-docstate-XXXXXX.h5";
  close(mkstemps(path, 3));
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  fix_fixture back;
  fix_fixture_init(&back);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  lo.max_bytes = 48 * 512 * 16 - 1; /* one byte short of the states' */
  ck_assert_int_eq(fix_load(&back, path, &lo, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "/outputs/many/ht: 48 per-document states need 393216 bytes"), "%s", e.msg);
  lo.max_bytes = 48 * 512 * 16 + (1 << 20);
  ck_assert_msg(fix_load(&back, path, &lo, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(fix_fixture_find_output(&back, "many")->n_docs, 48);
  fix_fixture_clear(&back);
  free(zeros);
  parity_reference_clear(&r);
  fix_fixture_clear(&fx);
  unlink(path);
}
END_TEST

/* Allocation n of parity_docstate_apply failing, n = 1, 2, ...: GDN_ERR_NOMEM
 * with a message, nothing held afterwards (the reference's states absent,
 * no bytes left live), until the run succeeds with the states it gives
 * undisturbed. */
typedef struct alloc_ctx {
  setup *u;
  parity_reference r;
  parity_external x;
  long long live;
  double first;
} alloc_ctx;

static void alloc_prepare(void *p) {
  alloc_ctx *c = p;
  gdn_free(c->r.ht_docs);
  c->r.ht_docs = NULL;
  c->r.n_docs = 0;
  c->live = gdn_alloc_bytes_live();
}

static int alloc_run(void *p, gdn_error *e) {
  alloc_ctx *c = p;
  return parity_docstate_apply(&c->u->fx.inputs, &c->r, 64, &c->x, 1, e);
}

static void alloc_failed(void *p, long n, int rc, const gdn_error *e) {
  alloc_ctx *c = p;
  ck_assert_msg(rc == GDN_ERR_NOMEM && e->msg[0], "allocation %ld: rc %d %s", n, rc, e->msg);
  ck_assert_ptr_null(c->r.ht_docs);
  ck_assert_int_eq(gdn_alloc_bytes_live(), c->live);
}

static void alloc_succeeded(void *p) {
  alloc_ctx *c = p;
  ck_assert_int_eq(c->r.n_docs, c->u->n);
  ck_assert(c->r.ht_docs[7] == c->first);
}

START_TEST(per_document_alloc_failures) {
  gdn_error e;
  gdn_error_init(&e);
  setup u;
  setup_make(&u);
  alloc_ctx c = {&u, {0}, {0}, 0, 0};
  parity_reference_init(&c.r);
  ck_assert(parity_reference_compute(&c.r, &u.fx.inputs, PARITY_ORACLE_MPFR, 64, &e) == GDN_OK);
  c.x.name = "x";
  c.x.attrs = json_pack("{ss}", "final_state", "per_document");
  c.x.ht_docs = u.docs;
  c.x.n_docs = u.n;
  ck_assert(parity_docstate_apply(&u.fx.inputs, &c.r, 64, &c.x, 1, &e) == GDN_OK);
  c.first = c.r.ht_docs[7];
  const tua_ops ops = {alloc_prepare, alloc_run, alloc_failed, alloc_succeeded, NULL, 10000};
  ck_assert_int_ge(tua_sweep(&ops, &c), 3); /* the list, the rows, the oracle's */
  parity_reference_clear(&c.r);
  json_decref(c.x.attrs);
  setup_clear(&u);
}
END_TEST

/* parity_docstate's states (one oracle run over the documents' spans, a
 * reset document from zero) are the row cut after each document's last
 * token, under both packings: to binary64's last bits (both are the MPFR
 * oracle's at 128 bits, certified to 112 or more, rounded once; 4e-16 of
 * the largest entry allows a last-bit difference). */
START_TEST(per_document_states_exact) {
  gdn_error e;
  gdn_error_init(&e);
  setup u;
  setup_make(&u);
  const size_t st = (size_t)(u.fx.inputs.shape.Hv * 16 * 16);
  for (int p = 0; p < 2; p++) {
    u.fx.inputs.packing = p ? GDN_PACKING_LEAK : GDN_PACKING_RESET;
    gdn_document *d = NULL;
    int64_t n = 0;
    ck_assert_int_eq(gdn_documents_list(&u.fx.inputs, &d, &n, &e), GDN_OK);
    ck_assert_int_eq(n, u.n);
    for (int64_t j = 0; p && j < n; j++) state_at(&u.fx.inputs, d[j].row, d[j].last, u.docs + (size_t)j * st);
    gdn_free(d);
    parity_external x;
    memset(&x, 0, sizeof x);
    x.name = "x";
    x.attrs = json_pack("{ss}", "final_state", "per_document");
    x.ht_docs = u.docs;
    x.n_docs = u.n;
    parity_reference r;
    parity_reference_init(&r);
    ck_assert(parity_reference_compute(&r, &u.fx.inputs, PARITY_ORACLE_MPFR, 128, &e) == GDN_OK);
    ck_assert_msg(parity_docstate_apply(&u.fx.inputs, &r, 128, &x, 1, &e) == GDN_OK, "%s", e.msg);
    ck_assert_int_eq(r.n_docs, u.n);
    ck_assert_int_ge(r.docs_certified_bits, 100);
    double dmax = 0, amax = 0;
    for (size_t i = 0; i < (size_t)u.n * st; i++) {
      dmax = fmax(dmax, fabs(r.ht_docs[i] - u.docs[i]));
      amax = fmax(amax, fabs(u.docs[i]));
    }
    ck_assert_msg(dmax <= 4e-16 * amax, "packing %d: %g of %g", p, dmax, amax);
    /* the last document of each row is the row's end state (no padding after it changes it) */
    ck_assert_msg(fabs(r.ht_docs[(size_t)(u.n - 1) * st] - r.out.ht[st]) <= 4e-16 * amax, "row 1's end");
    ck_assert_str_eq(x.final_note[0] ? "noted" : "", "noted");
    ck_assert(strstr(x.final_note, p ? "packing leak" : "packing reset"));
    parity_reference_clear(&r);
    json_decref(x.attrs);
  }
  setup_clear(&u);
}
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "docstate", "docstate", 300, per_document_states_judged, per_document_streamed,
              per_document_count_refused,
              per_document_states_exact, per_document_bytes_bounded, per_document_alloc_failures)
