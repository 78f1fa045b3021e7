/* check of a KDA fixture read by key-head group (parity_recur_check_stream.h). */
#include "parity_recur_check_stream.h"

#include <inttypes.h>
#include <string.h>

#include <sys/stat.h>

#include "fix_grads.h"
#include "fix_isolate.h"
#include "fix_kda_group.h"
#include "fix_regen_meter.h"
#include "gdn_alloc.h"
#include "gdn_chgate.h"
#include "gdn_threads.h"
#include "kern_config.h"
#include "oracle_kda.h"
#include "oracle_kda_vjp.h"
#include "oracle_part.h"
#include "parity_dist.h"
#include "parity_kappa_ch.h"
#include "parity_recur_check_grad.h"
#include "parity_recur_step.h"
#include "parity_recur_stream.h"
#include "parity_stream.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* One case of the document, in the whole check's order, and what the
 * groups have folded into it so far. */
typedef struct chk_case {
  int64_t C, D;    /* the kernel's (C <= 0: token kernel); an output: C 0, D its devices */
  int64_t kc, kd;  /* kappa_G's chunk and devices (kc <= 0: none) */
  int out;         /* -1: a kernel; else the output's index */
  int has_ht, bf16;
  parity_recur_err eo, eh;
  parity_kappa_ch_acc ka;
  parity_kappa_ch kc_done;         /* ka finished (assemble): an output's gradients take its band */
  parity_recur_err eg[GDN_GRADS_N]; /* an output with gradients: each folded over the groups */
} chk_case;

typedef struct chk_stream {
  const parity_recur_check_opts *o;
  const char *path;
  parity_stream_plan p;
  int h0, has_oracle, has_cot;
  int64_t n_outputs;
  chk_case *cs;
  int nc;
  oracle_config oc;
  oracle_tally tally;
  int grads;               /* the file has /cotangents and an output has gradients: judged by group */
  oracle_vjp_config vc;    /* their VJP oracle's, */
  oracle_tally vtally;     /* its certificate merged over the groups */
  char gh[FIX_SHA256_HEX]; /* the file's grad_problem_sha256 (by blocks) */
  parity_recur_grad_stored sg; /* the stored /oracle/grads taken as the VJP's reference, or why not */
  parity_recur_trust t;
  fix_fixture head; /* group 0 without its arrays' data kept: chunk_size, outputs' names, /oracle's attributes */
  char ih[FIX_SHA256_HEX], ph[FIX_SHA256_HEX];
  fix_regen_meter meter; /* the progress line over this rank's groups' oracle runs (off: no line) */
  int fwd_runs;          /* the forward oracle runs here (not trusted); the VJP's: grads && !sg.taken */
  oracle_progress up;    /* the meter's way to the line */
  int lined;             /* a step was begun (an oracle runs here) */
} chk_stream;

/* What a group of g key heads holds at its peak, the run's part included. */
static int group_bytes(const chk_stream *st, int64_t g, uint64_t *bytes, gdn_error *e) {
  const gdn_shape *w = &st->p.whole;
  int rc = parity_recur_stream_bytes(w, g, st->h0, st->has_cot, st->o->oracle_bits, bytes, e);
  gdn_shape gs = *w;
  gs.Hk = g;
  gs.Hv = g * (w->Hv / w->Hk);
  const uint64_t set = 8u * (uint64_t)(gdn_shape_numel_v(&gs) + gdn_shape_numel_state(&gs));
  uint64_t grads = 0; /* with /cotangents: them (float32) and each output's gradients (binary64) */
  for (int id = 0; st->has_cot && id < GDN_GRADS_N; id++)
    grads += 8u * (uint64_t)gdn_chgrads_numel(&gs, (gdn_grad_id)id) * (uint64_t)st->n_outputs;
  if (st->has_cot) grads += 4u * (uint64_t)(gdn_shape_numel_v(&gs) + gdn_shape_numel_state(&gs));
  *bytes += (uint64_t)(st->n_outputs + st->has_oracle) * set + grads + st->p.resident + PARITY_STREAM_SLACK +
            (uint64_t)gdn_threads_get() * PARITY_STREAM_THREAD;
  return rc;
}

static int refuse_budget(const chk_stream *st, uint64_t one, gdn_error *e) {
  const uint64_t named = parity_stream_named_bytes(one, st->p.resident);
  const parity_stream_plan *p = &st->p;
  char lab[160];
  gdn_shape_format(&p->whole, lab, sizeof lab);
  if (p->forced)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: --group-heads %" PRId64 ": the check of shape %s in groups of %" PRId64
                         " key heads holds %.3g GiB at its peak, over the limit of %.3g GiB (--max-bytes %" PRIu64
                         "); the smallest --max-bytes that runs one key head per group is %" PRIu64,
                         st->path, p->group, lab, p->group, p->peak / GIB, p->max_bytes / GIB, p->max_bytes, named);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "%s: the check of shape %s does not fit the limit of %.3g GiB (--max-bytes %" PRIu64
                       "): the whole check holds %.3g GiB, and by key-head group one key head (its inputs, gate, "
                       "the file's %" PRId64 " output set%s%s, the reference, a kernel's outputs and the oracle's "
                       "working set, and %.3g MiB of the process's own) needs about %" PRIu64
                       " bytes; the smallest --max-bytes that runs is %" PRIu64,
                       st->path, lab, p->max_bytes / GIB, p->max_bytes, p->whole_bytes / GIB, st->n_outputs,
                       st->n_outputs == 1 ? "" : "s", st->has_oracle ? " and /oracle" : "", p->resident / 1048576.0,
                       one, named);
}

static int peak_of(void *ctx, int64_t g, uint64_t *peak, gdn_error *e) { return group_bytes(ctx, g, peak, e); }

/* The plan: *streamed 0 when the whole check fits and no group is asked. */
static int plan(chk_stream *st, uint64_t max_bytes, int64_t force, int *streamed, gdn_error *e) {
  parity_stream_plan *p = &st->p;
  const int64_t Hk = p->whole.Hk;
  p->max_bytes = max_bytes;
  p->forced = force > 0;
  p->resident = parity_stream_resident();
  const int size = parity_dist_size();
  /* under mpirun every rank plans alike (the groups it deals must agree): rank 0's count */
  int rc = size > 1 ? parity_dist_bcast(&p->resident, sizeof p->resident, 0, e) : GDN_OK;
  uint64_t one;
  if (!rc) rc = group_bytes(st, Hk, &p->whole_bytes, e);
  if (!rc) rc = group_bytes(st, 1, &one, e);
  if (rc) return rc;
  const int over = max_bytes && p->whole_bytes > max_bytes;
  *streamed = p->forced || over || size > 1; /* under mpirun: the groups dealt over the ranks */
  if (!*streamed) return GDN_OK;
  if (force > Hk)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: --group-heads %" PRId64 ": the fixture has %" PRId64 " key heads",
                         st->path, force, Hk);
  int fits; /* under mpirun dealt over the ranks */
  if ((rc = parity_stream_plan_groups(p, force, size, peak_of, st, &fits, e))) return rc;
  if (!fits) return refuse_budget(st, one, e);
  if (st->o->rec->oracle != oracle_kda_run)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: a %s fixture's check is not streamed by key-head group", st->path,
                         st->o->rec->name);
  return GDN_OK;
}

/* Group i read by hyperslab, its /oracle's freshness set from the whole
 * file's hashes (its /oracle/grads' too once the gradients' hash is
 * known: st->gh). */
static int load_group(chk_stream *st, int64_t i, fix_fixture *gx, int64_t *k0, gdn_error *e) {
  int64_t k1;
  gdn_shape gs;
  parity_stream_group(&st->p, i, k0, &k1, &gs);
  const int rc = fix_kda_load_group(gx, st->path, *k0, k1, 0, e);
  if (rc) return rc;
  memcpy(gx->inputs_sha256, st->ih, FIX_SHA256_HEX);
  memcpy(gx->problem_sha256, st->ph, FIX_SHA256_HEX);
  memcpy(gx->grad_problem_sha256, st->gh, FIX_SHA256_HEX);
  fix_oracle *s = &gx->oracle;
  s->fresh = !strcmp(s->inputs_sha256, st->ih);
  s->problem_fresh = !s->problem_sha256[0] ? -1 : !strcmp(s->problem_sha256, st->ph);
  fix_grads_oracle_freshness(gx);
  return GDN_OK;
}

/* Whether the stored /oracle/grads stands for the VJP, as the whole check
 * decides (parity_recur_grad_stored_decide): on the first group, which
 * holds key head 0, its freshness the whole file's hash's.  Every rank
 * decides alike (the same bytes, the same arithmetic). */
static int stored_grads_pass(chk_stream *st, gdn_error *e) {
  memset(&st->sg, 0, sizeof st->sg);
  if (!st->head.oracle.has_grads) return GDN_OK;
  fix_fixture gx;
  fix_fixture_init(&gx);
  int64_t k0;
  int rc = load_group(st, 0, &gx, &k0, e);
  if (!rc)
    rc = parity_recur_grad_stored_decide(&gx.oracle, st->t.trusted, &gx.inputs, &gx.chgate, &gx.cot, &st->sg, e);
  fix_fixture_clear(&gx);
  return rc;
}

/* The first pass: whether the stored /oracle stands, as parity_recur_oracle_trust decides on the whole. */
static int trust_pass(chk_stream *st, gdn_error *e) {
  parity_recur_trust *t = &st->t;
  memset(t, 0, sizeof *t);
  if (!st->has_oracle) return GDN_OK;
  double acc[4] = {0, 0, 0, 0};
  int64_t ncols = 0;
  int rc = GDN_OK, ok = 1;
  for (int64_t i = 0; !rc && ok && i < st->p.n_groups; i++) {
    fix_fixture gx;
    fix_fixture_init(&gx);
    int64_t k0;
    rc = load_group(st, i, &gx, &k0, e);
    if (!rc && !(ok = parity_recur_trust_gate(&gx, t->why, sizeof t->why))) t->spot_columns = 0;
    if (!rc && ok) rc = parity_recur_spot_fold(st->o, &gx, acc, &ncols, e);
    fix_fixture_clear(&gx);
  }
  if (!rc && ok) parity_recur_trust_finish(t, acc, ncols);
  return rc;
}

/* The cases in the whole check's order (parity_recur_check.c run_cases). */
static int make_cases(chk_stream *st, gdn_error *e) {
  const parity_recur_check_opts *o = st->o;
  const fix_fixture *h = &st->head;
  int64_t chunks[PARITY_RECUR_MAX_CHUNKS] = {h->chunk_size}, devs[PARITY_RECUR_MAX_CHUNKS];
  int nch = 1, nd = 0;
  if (o->n_chunks) memcpy(chunks, o->chunks, sizeof chunks), nch = o->n_chunks;
  for (int i = 0; i < 4; i++)
    if (st->p.whole.T % ((int64_t)1 << i) == 0) devs[nd++] = (int64_t)1 << i;
  const int64_t *dv = o->n_devices ? o->devices : devs;
  if (o->n_devices) nd = o->n_devices;
  st->nc = 1 + nch * (1 + nd) + (int)h->n_outputs;
  st->cs = gdn_calloc((size_t)st->nc, sizeof *st->cs, "the streamed check's cases", e);
  if (!st->cs) return GDN_ERR_NOMEM;
  int n = 0;
  st->cs[n++] = (chk_case){.out = -1, .has_ht = 1};
  for (int i = 0; i < nch; i++) {
    st->cs[n++] = (chk_case){.C = chunks[i], .kc = chunks[i], .kd = 1, .out = -1, .has_ht = 1};
    for (int j = 0; j < nd; j++)
      st->cs[n++] = (chk_case){.C = chunks[i], .D = dv[j], .kc = chunks[i], .kd = dv[j], .out = -1, .has_ht = 1};
  }
  for (size_t i = 0; i < h->n_outputs; i++) {
    const fix_output *x = &h->outputs[i];
    st->cs[n++] = (chk_case){.D = x->devices, .kc = h->chunk_size, .kd = x->devices > 0 ? x->devices : 1,
                             .out = (int)i, .has_ht = x->out.ht != NULL, .bf16 = x->out.dtype == GDN_DTYPE_BF16};
  }
  for (int i = 0; i < st->nc; i++) parity_kappa_ch_acc_init(&st->cs[i].ka);
  return GDN_OK;
}

/* Case c on group gx (value heads from v0) against ref: measured and
 * folded (mine: the group's owner), its kappa_G added (rank 0, every group
 * in order: the sums' order is the whole check's). */
static int fold_case(chk_stream *st, chk_case *c, const fix_fixture *gx, const gdn_outputs *ref, int64_t v0, int mine,
                     gdn_error *e) {
  const parity_recur_check_opts *o = st->o;
  const gdn_shape *s = &gx->inputs.shape, *w = &st->p.whole;
  gdn_outputs out;
  gdn_outputs_init(&out);
  const gdn_outputs *x = c->out >= 0 ? &gx->outputs[c->out].out : &out;
  int rc = GDN_OK;
  if (mine && c->out < 0) {
    kern_config cfg;
    kern_config_init(&cfg);
    cfg.matmul = KERN_MATMUL_IEEE;
    if (c->C > 0) cfg.chunk = c->C;
    if (c->D > 0) cfg.devices = c->D;
    const parity_recurrence *r = o->rec;
    const parity_rec_kernel k = c->C <= 0 ? r->kern_token : c->D > 0 ? r->kern_affine : r->kern_chunked;
    rc = k(&gx->inputs, &gx->chgate, &cfg, 0, &out, e);
    if (!rc) c->bf16 = out.dtype == GDN_DTYPE_BF16;
  }
  if (!rc && mine) {
    parity_recur_err_fold(&c->eo, parity_recur_measure(x->o, ref->o, gdn_shape_numel_v(s)), v0, s->Hv, w->Hv,
                          (size_t)s->Dv);
    if (x->ht)
      parity_recur_err_fold(&c->eh, parity_recur_measure(x->ht, ref->ht, gdn_shape_numel_state(s)), v0, s->Hv,
                            w->Hv, (size_t)(s->Dk * s->Dv));
  }
  gdn_outputs_clear(&out);
  if (!rc && parity_dist_rank() == 0 && c->kc > 0 && o->rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL)
    rc = parity_kappa_ch_acc_add(&c->ka, &gx->inputs, &gx->chgate, c->kc, c->kd, e);
  return rc;
}

/* Group gx's gradients (from key head k0): the VJP oracle on its
 * cotangents, tallied, and each output's stored gradients folded. */
static int fold_grads(chk_stream *st, const fix_fixture *gx, int64_t k0, gdn_error *e) {
  gdn_grads ref;
  gdn_grads_init(&ref);
  oracle_tally t;
  oracle_tally_init(&t);
  const int pc = st->o->rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL;
  int rc = GDN_OK;
  if (!st->sg.taken) {
    oracle_vjp_config vc = st->vc; /* the VJP's share follows the forward's, when that runs */
    vc.progress = fix_regen_meter_run(&st->meter, gx->inputs.shape.Hk, st->fwd_runs);
    rc = oracle_kda_vjp_part(&gx->inputs, &gx->chgate, &gx->cot, &vc, &ref, &t, e);
    if (!rc) rc = parity_recur_tally_take(&st->vtally, &t, e);
  } else if (!gx->oracle.has_grads) {
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s: key heads from %" PRId64 ": no /oracle/grads read", st->path, k0);
  }
  const gdn_grads *rf = st->sg.taken ? &gx->oracle.grads : &ref; /* the stored slab: the same values */
  for (int c = 0; !rc && c < st->nc; c++) {
    const int i = st->cs[c].out;
    if (i < 0 || !st->head.outputs[i].has_grads) continue;
    const fix_output *x = &gx->outputs[i];
    if (!x->has_grads || x->grads_present != st->head.outputs[i].grads_present)
      rc = gdn_error_set(e, GDN_ERR_INPUT, "%s: key heads from %" PRId64 ": /outputs/%s/grads hold other gradients "
                         "than the first group's", st->path, k0, x->name);
    else
      parity_recur_grads_fold(st->cs[c].eg, &x->grads, rf, &st->p.whole, k0, pc, x->grads_present);
  }
  oracle_tally_clear(&t);
  gdn_grads_clear(&ref);
  return rc;
}

/* Group i: its reference (the stored /oracle when trusted, else the
 * oracle's, tallied), then every case, on its owner (mine); rank 0 reads
 * every group for kappa_G. */
static int run_group(chk_stream *st, int64_t i, int mine, gdn_error *e) {
  fix_fixture gx;
  fix_fixture_init(&gx);
  gdn_outputs ref;
  gdn_outputs_init(&ref);
  oracle_tally t;
  oracle_tally_init(&t);
  int64_t k0;
  int rc = load_group(st, i, &gx, &k0, e);
  if (!st->sg.taken) gdn_grads_clear(&gx.oracle.grads); /* not the reference: not held beside the VJP */
  const int64_t heads = gx.inputs.shape.Hk;
  if (!rc && mine && !st->t.trusted) {
    oracle_config oc = st->oc;
    oc.progress = fix_regen_meter_run(&st->meter, heads, 0);
    rc = oracle_kda_run_part(&gx.inputs, &gx.chgate, &oc, &ref, &t, e);
    if (!rc) rc = parity_recur_tally_take(&st->tally, &t, e);
  }
  const gdn_outputs *rf = st->t.trusted ? &gx.oracle.out : &ref;
  const int64_t r = st->p.whole.Hv / st->p.whole.Hk;
  if (!rc && (size_t)st->head.n_outputs != gx.n_outputs)
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s: key heads from %" PRId64 " hold %zu outputs, the first group %zu",
                       st->path, k0, gx.n_outputs, st->head.n_outputs);
  for (int c = 0; !rc && c < st->nc; c++) rc = fold_case(st, &st->cs[c], &gx, rf, k0 * r, mine, e);
  if (!rc && mine && st->grads) rc = fold_grads(st, &gx, k0, e);
  if (mine) fix_regen_meter_next(&st->meter, heads);
  oracle_tally_clear(&t);
  gdn_outputs_clear(&ref);
  fix_fixture_clear(&gx);
  return rc;
}

/* The "grad" object from the folded gradients, as parity_recur_check_grads
 * writes it: the certificate of the merged tallies, each output's band
 * from its forward case's kappa_G (the same chunk and devices). */
static int assemble_grads(chk_stream *st, json_t *d, int *pass, gdn_error *e) {
  const parity_recur_check_opts *o = st->o;
  oracle_vjp_certificate cert;
  memset(&cert, 0, sizeof cert);
  int rc = st->sg.taken ? GDN_OK : oracle_tally_vjp_certificate(&st->vtally, &st->vc, &cert, e);
  if (rc) return rc;
  json_t *g = parity_recur_check_grad_begin(o, st->head.cot.dht != NULL, st->gh, &cert, &st->head.oracle, &st->sg);
  if (!g) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  int failed = 0;
  for (int i = 0; !rc && i < st->nc; i++) {
    chk_case *c = &st->cs[i];
    if (c->out < 0 || !st->head.outputs[c->out].has_grads) continue;
    for (int id = 0; id < GDN_GRADS_N; id++) parity_recur_err_finish(&c->eg[id]);
    double band;
    json_t *kj = NULL;
    if (!(rc = parity_recur_band_of(o->rec, c->kc, &c->kc_done, PARITY_RECUR_BAND_F32, &band, &kj, e)))
      rc = parity_recur_check_grad_judge(o, &st->p.whole, &st->head.outputs[c->out], c->eg, band, kj,
                                         json_object_get(g, "cases"), &failed, e);
  }
  if (rc) return json_decref(g), rc;
  return parity_recur_check_grad_end(d, g, failed, pass, e);
}

/* The document from the folded cases, by the whole check's functions. */
static int assemble(chk_stream *st, json_t **doc, int *pass, gdn_error *e) {
  const parity_recur_check_opts *o = st->o;
  const fix_oracle *fo = &st->head.oracle;
  oracle_certificate cert;
  memset(&cert, 0, sizeof cert);
  int rc = GDN_OK;
  if (st->t.trusted)
    cert.precision_bits = (int)fo->precision_bits, cert.certified_bits = (int)fo->certified_bits;
  else if ((rc = oracle_tally_certificate(&st->tally, &st->oc, &cert, e)))
    return rc;
  if (o->log)
    fprintf(o->log, "%s: recurrence %s (gate %s): oracle %s %d bits, certified %d bits%s\n", o->name, o->rec->name,
            parity_gate_shape_name(o->rec->gate_shape), st->t.trusted && fo->tier_dd ? "dd" : "mpfr",
            cert.precision_bits, cert.certified_bits, st->t.trusted ? " (the fixture's /oracle, spot-checked)" : "");
  json_t *d = parity_recur_check_doc_head(o, &st->p.whole, st->ih, st->head.chunk_size, fo, &cert, &st->t);
  if (!d) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  json_t *cases = json_object_get(d, "cases");
  int failed = 0;
  for (int i = 0; !rc && i < st->nc; i++) {
    chk_case *c = &st->cs[i];
    parity_recur_err_finish(&c->eo);
    parity_recur_err_finish(&c->eh);
    parity_kappa_ch kc = {0, 0, 0, 0, 0};
    json_t *kj = NULL;
    double band;
    if (c->kc > 0 && o->rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL)
      rc = parity_kappa_ch_acc_finish(&c->ka, &kc, e);
    c->kc_done = kc;
    if (!rc) rc = parity_recur_band_of(o->rec, c->kc, &kc, PARITY_RECUR_BAND_F32, &band, &kj, e);
    char subject[512];
    if (c->out >= 0)
      snprintf(subject, sizeof subject, "output:%s", st->head.outputs[c->out].name);
    const char *sub = c->out >= 0 ? subject : c->C <= 0 ? o->rec->token_subject
                                           : c->D > 0   ? o->rec->affine_subject
                                                        : o->rec->chunked_subject;
    if (!rc)
      rc = parity_recur_check_judge(o, sub, c->C, c->D, &st->p.whole, c->eo, c->eh, c->has_ht,
                                    c->bf16 ? parity_recur_band_bf16(band) : band, band, kj, cases, &failed, e);
  }
  *pass = failed == 0;
  if (!rc && (json_object_set_new(d, "n_cases", json_integer((json_int_t)json_array_size(cases))) ||
              json_object_set_new(d, "n_failed", json_integer(failed)) ||
              json_object_set_new(d, "pass", json_boolean(*pass))))
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  if (!rc && st->grads) rc = assemble_grads(st, d, pass, e);
  if (rc) return json_decref(d), rc;
  *doc = d;
  return GDN_OK;
}

/* Several ranks: the tallies (the forward oracle's, the VJP's with
 * gradients) and every case's measurements merged on every rank
 * (parity_recur_dist_merge: maxima, exact in any order); failed: this
 * rank's status, which fails every rank. */
static int merge_ranks(chk_stream *st, int failed, gdn_error *e) {
  const size_t per = 2 + GDN_GRADS_N, n = (size_t)st->nc * per;
  parity_recur_err *m = gdn_calloc(n, sizeof *m, "measurements", e);
  for (int c = 0; m && c < st->nc; c++) {
    m[c * per] = st->cs[c].eo, m[c * per + 1] = st->cs[c].eh;
    memcpy(m + c * per + 2, st->cs[c].eg, sizeof st->cs[c].eg);
  }
  int rc = parity_recur_dist_merge(&st->tally, ORACLE_TALLY_MPFR, st->o->oracle_bits, m, m ? n : 0, failed || !m, e);
  if (!rc && st->grads && !st->sg.taken) /* taken: no VJP, no tally (every rank decided alike) */
    rc = parity_recur_dist_merge(&st->vtally, ORACLE_TALLY_VJP, st->o->oracle_bits, NULL, 0, 0, e);
  for (int c = 0; !rc && c < st->nc; c++) {
    st->cs[c].eo = m[c * per], st->cs[c].eh = m[c * per + 1];
    memcpy(st->cs[c].eg, m + c * per + 2, sizeof st->cs[c].eg);
  }
  gdn_free(m);
  return rc;
}

/* One step of the progress line over this rank's groups' oracle runs,
 * each run's share of it fix_regen_meter's (the forward, then the VJP at
 * FIX_REGEN_VJP_WEIGHT times it; either alone when the other is stored);
 * no step when neither runs.  The kernels' cases between the runs leave
 * the line where it is. */
static void line_begin(chk_stream *st, int rank, int size) {
  st->fwd_runs = !st->t.trusted;
  const int vjp_runs = st->grads && !st->sg.taken;
  int64_t heads = 0, k0, k1;
  gdn_shape gs;
  for (int64_t i = 0; i < st->p.n_groups; i++)
    if (parity_stream_owner(i, size) == rank) parity_stream_group(&st->p, i, &k0, &k1, &gs), heads += k1 - k0;
  st->lined = st->fwd_runs || vjp_runs;
  const oracle_progress *up =
      st->lined ? parity_recur_step_begin(st->o->progress, st->o->name, st->fwd_runs && vjp_runs ? "oracle and VJP"
                                                       : vjp_runs               ? "oracle VJP"
                                                                                : "oracle (mpfr)",
                                                ", by key-head group", &st->up)
                : NULL;
  fix_regen_meter_init(&st->meter, up, heads, st->fwd_runs && vjp_runs);
}

static void line_end(chk_stream *st) {
  if (st->lined) parity_recur_step_end(st->o->progress);
}

/* Both passes over the planned groups, then the document. */
static int run_stream(chk_stream *st, json_t **doc, int *pass, gdn_error *e) {
  const parity_recur_check_opts *o = st->o;
  int64_t k0;
  int rc = load_group(st, 0, &st->head, &k0, e); /* the names and attributes the document gives */
  gdn_grads_clear(&st->head.oracle.grads); /* its /oracle/grads' attributes only: each group reads its own */
  for (size_t i = 0; !rc && i < st->head.n_outputs; i++) st->grads |= st->head.outputs[i].has_grads;
  st->grads &= st->head.has_cotangents;
  if (!rc && st->grads && !o->rec->oracle_vjp)
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s: the %s recurrence has no VJP oracle to judge gradients by", o->name,
                       o->rec->name);
  if (!rc && st->grads) rc = fix_kda_grad_problem_sha256(st->path, &st->p.whole, st->ph, (int64_t)1 << 20, st->gh, e);
  if (!rc) rc = make_cases(st, e);
  if (!rc && o->log) {
    char line[512];
    parity_stream_describe(&st->p, line, sizeof line);
    fprintf(o->log, "%s: %s\n", o->name, line);
  }
  if (!rc) rc = trust_pass(st, e);
  if (!rc && o->log && st->t.why[0])
    fprintf(o->log, "%s: warning: the stored /oracle is not used (%s); computing a fresh one\n", o->name, st->t.why);
  if (!rc && st->grads) rc = stored_grads_pass(st, e);
  const int size = parity_dist_size(), rank = parity_dist_rank();
  if (!rc) line_begin(st, rank, size);
  for (int64_t i = 0; !rc && i < st->p.n_groups; i++)
    if (rank == 0 || parity_stream_owner(i, size) == rank) rc = run_group(st, i, parity_stream_owner(i, size) == rank, e);
  line_end(st);
  if (size > 1) rc = merge_ranks(st, rc, e);
  if (!rc && rank == 0) rc = assemble(st, doc, pass, e); /* the other ranks: no document */
  return rc;
}

/* The metadata fix_kda_peek reads, read first in a child. */
static int probe_peek(void *arg, gdn_error *e) {
  chk_stream *st = arg;
  return fix_kda_peek(st->path, &st->p.whole, &st->h0, &st->n_outputs, &st->has_oracle, &st->has_cot, e);
}

/* What the parent will read, read first in a throw-away child (fix_isolate.h): the hashes' blocks (the
 * cotangents' too) and every group. */
static int probe_groups(void *arg, gdn_error *e) {
  chk_stream *st = arg;
  char ih[FIX_SHA256_HEX], ph[FIX_SHA256_HEX], gh[FIX_SHA256_HEX];
  int rc = fix_kda_hashes(st->path, ih, ph, e);
  if (!rc && st->has_cot) rc = fix_kda_grad_problem_sha256(st->path, &st->p.whole, ph, (int64_t)1 << 20, gh, e);
  for (int64_t i = 0; !rc && i < st->p.n_groups; i++) {
    fix_fixture gx;
    fix_fixture_init(&gx);
    int64_t k0;
    rc = load_group(st, i, &gx, &k0, e);
    fix_fixture_clear(&gx);
  }
  return rc;
}

int parity_recur_check_streamed(const parity_recur_check_opts *o, const char *path, uint64_t max_bytes,
                                int64_t group_heads, int *streamed, json_t **doc, int *pass, gdn_error *e) {
  *streamed = 0;
  *doc = NULL;
  *pass = 0;
  chk_stream st;
  memset(&st, 0, sizeof st);
  st.o = o;
  st.path = path;
  int rc = fix_isolate_probe(path, probe_peek, &st, fix_isolate_default_timeout(0), e);
  if (!rc) rc = probe_peek(&st, e);
  if (!rc) rc = plan(&st, max_bytes, group_heads, streamed, e);
  if (rc || !*streamed) return rc;
  for (int i = 0; i < o->n_devices; i++)
    if (st.p.whole.T % o->devices[i])
      return gdn_error_set(e, GDN_ERR_INPUT, "--devices %lld does not divide T = %lld of %s",
                           (long long)o->devices[i], (long long)st.p.whole.T, path);
  fix_fixture_init(&st.head);
  oracle_tally_init(&st.tally);
  oracle_config_init(&st.oc);
  st.oc.prec = o->oracle_bits;
  oracle_tally_init(&st.vtally);
  oracle_vjp_config_init(&st.vc);
  st.vc.prec = o->oracle_bits;
  struct stat sb;
  rc = fix_isolate_probe(path, probe_groups, &st,
                         fix_isolate_default_timeout(stat(path, &sb) ? 0 : (size_t)sb.st_size), e);
  if (!rc) rc = fix_kda_hashes(path, st.ih, st.ph, e);
  if (!rc) rc = run_stream(&st, doc, pass, e);
  for (int i = 0; st.cs && i < st.nc; i++) parity_kappa_ch_acc_clear(&st.cs[i].ka);
  gdn_free(st.cs);
  oracle_tally_clear(&st.tally);
  oracle_tally_clear(&st.vtally);
  fix_fixture_clear(&st.head);
  return rc;
}
