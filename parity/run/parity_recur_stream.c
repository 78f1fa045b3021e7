/* A recurrence row's sweep streamed by key-head group (parity_recur_stream.h). */
#include "parity_recur_stream.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern_config.h"
#include "parity_oracle.h"
#include "parity_recur_mode_band.h"
#include "oracle_kda.h"
#include "oracle_kda_vjp.h"
#include "parity_recur_grad.h"
#include "parity_recur_other_head.h"
#include "parity_dist.h"
#include "parity_kappa_ch.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* An MPFR number of p bits: its struct and its limbs. */
static uint64_t mpfr_bytes(int p) { return 32u + 8u * (uint64_t)((p + 63) / 64); }

int parity_recur_stream_bytes(const gdn_shape *whole, int64_t g, int h0, int with_grad, int oracle_bits,
                              uint64_t *bytes, gdn_error *e) {
  gdn_shape gs = *whole;
  const int64_t r = whole->Hv / whole->Hk;
  gs.Hk = g;
  gs.Hv = g * r;
  uint64_t in = 0, out = 0;
  int rc = gdn_shape_bytes(&gs, h0, &in, &out, e);
  if (rc) return rc;
  const uint64_t gate = 4u * (uint64_t)gdn_chgate_numel(&gs), threads = (uint64_t)gdn_threads_get();
  const int bits = oracle_bits > 0 ? oracle_bits : 128;
  const uint64_t num = mpfr_bytes(bits) + mpfr_bytes(bits + 64); /* at p and at the check's p + 64 */
  /* the MPFR oracle's working set: per thread a state block of Dk x (<= 64) columns and its
   * preparation, counted four times over */
  const uint64_t cols = (uint64_t)(gs.Dv < 64 ? gs.Dv : 64), items = (uint64_t)(gs.B * gs.Hv);
  *bytes = in + gate + 3 * out + (items < threads ? items : threads) * 4 * (uint64_t)gs.Dk * cols * num;
  if (with_grad) {
    /* three gradient sets of the inputs and gate in binary64, the cotangents, and the VJP oracle's
     * checkpoints per thread: (ceil(T / K) + K + 2) G Dk Dv numbers, K = ceil(sqrt(T))
     * (oracle_kda_vjp.h), over the group's (b, key head) items */
    int64_t K = 1;
    while (K * K < gs.T) K++;
    const uint64_t vitems = (uint64_t)(gs.B * gs.Hk), ck = (uint64_t)((gs.T + K - 1) / K + K + 2);
    *bytes += 6 * (in + gate) + out / 2 +
              (vitems < threads ? vitems : threads) * ck * (uint64_t)(r * gs.Dk * gs.Dv) * num;
  }
  return GDN_OK;
}

static uint64_t run_part(uint64_t resident) {
  return resident + PARITY_STREAM_SLACK + (uint64_t)gdn_threads_get() * PARITY_STREAM_THREAD;
}

/* A group of g key heads at its peak; under the mutant gate-other-head a
 * group of the run holds one key head more while its kernels run
 * (parity_recur_other_head.h): counted as a group of g + 1. */
static int group_peak(const parity_recur_opts *o, int with_grad, int64_t g, uint64_t resident, uint64_t *peak,
                      gdn_error *e) {
  const int ext = g < o->shape.Hk && !strcmp(o->rec->mutants[o->mutant], "gate-other-head");
  const int rc = parity_recur_stream_bytes(&o->shape, g + ext, o->h0, with_grad, o->oracle_bits, peak, e);
  *peak += run_part(resident);
  return rc;
}

typedef struct peak_ctx {
  const parity_recur_opts *o;
  int with_grad;
  uint64_t resident;
} peak_ctx;

static int peak_of(void *ctx, int64_t g, uint64_t *peak, gdn_error *e) {
  const peak_ctx *c = ctx;
  return group_peak(c->o, c->with_grad, g, c->resident, peak, e);
}

static int refuse(const parity_recur_opts *o, const parity_stream_plan *p, uint64_t one, gdn_error *e) {
  const uint64_t named = parity_stream_named_bytes(one, p->resident);
  char lab[160];
  gdn_shape_format(&o->shape, lab, sizeof lab);
  if (p->forced)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--group-heads %" PRId64 ": --recurrence %s shape %s in groups of %" PRId64
                         " key heads holds %.3g GiB at its peak, over the limit of %.3g GiB (--max-bytes %" PRIu64
                         "); the smallest --max-bytes that runs one key head per group is %" PRIu64,
                         p->group, o->rec->name, lab, p->group, p->peak / GIB, p->max_bytes / GIB, p->max_bytes, named);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--recurrence %s shape %s does not fit the limit of %.3g GiB (--max-bytes %" PRIu64
                       "): the whole run holds %.3g GiB, and streamed by key-head group one key head (%" PRId64
                       " value head%s: its inputs, gate, three output sets and the oracle's working set, and %.3g "
                       "MiB of the process's own) needs about %" PRIu64
                       " bytes; the smallest --max-bytes that runs is %" PRIu64
                       " (with room for the process's own memory, which moves from run to run)",
                       o->rec->name, lab, p->max_bytes / GIB, p->max_bytes, p->whole_bytes / GIB,
                       o->shape.Hv / o->shape.Hk, o->shape.Hv / o->shape.Hk == 1 ? "" : "s", p->resident / 1048576.0,
                       one, named);
}

int parity_recur_stream_plan(const parity_recur_opts *o, int with_grad, uint64_t max_bytes, int64_t force_group,
                             parity_stream_plan *p, gdn_error *e) {
  memset(p, 0, sizeof *p);
  const gdn_shape *s = &o->shape;
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  p->whole = *s;
  p->max_bytes = max_bytes;
  p->forced = force_group > 0;
  p->resident = parity_stream_resident();
  /* under mpirun every rank plans alike (the groups it deals must agree): rank 0's count */
  if (parity_dist_size() > 1 && (rc = parity_dist_bcast(&p->resident, sizeof p->resident, 0, e))) return rc;
  uint64_t one;
  if ((rc = group_peak(o, with_grad, s->Hk, p->resident, &p->whole_bytes, e)) ||
      (rc = group_peak(o, with_grad, 1, p->resident, &one, e)))
    return rc;
  if (force_group > s->Hk)
    return gdn_error_set(e, GDN_ERR_INPUT, "--group-heads %" PRId64 ": --recurrence %s shape has %" PRId64
                         " key heads", force_group, o->rec->name, s->Hk);
  peak_ctx pc = {o, with_grad, p->resident};
  int fits; /* under mpirun dealt over the ranks */
  if ((rc = parity_stream_plan_groups(p, force_group, parity_dist_size(), peak_of, &pc, &fits, e))) return rc;
  if (!fits) return refuse(o, p, one, e);
  if (p->n_groups > 1 || p->forced) {
    if (o->rec->oracle != oracle_kda_run)
      return gdn_error_set(e, GDN_ERR_INPUT, "--recurrence %s is not streamed by key-head group", o->rec->name);
  }
  return GDN_OK;
}

void parity_recur_err_fold(parity_recur_err *acc, parity_recur_err g, int64_t v0, int64_t hg, int64_t whole_h,
                           size_t inner) {
  const size_t outer = g.at / ((size_t)hg * inner), h = g.at / inner % (size_t)hg, in = g.at % inner;
  const size_t at = (outer * (size_t)whole_h + (size_t)v0 + h) * inner + in;
  if (g.max_abs > acc->max_abs || (g.max_abs == acc->max_abs && g.max_abs > 0 && at < acc->at)) {
    acc->max_abs = g.max_abs;
    acc->at = at;
  }
  if (g.max_ref > acc->max_ref) acc->max_ref = g.max_ref;
}

void parity_recur_err_finish(parity_recur_err *m) {
  m->err = m->max_ref > 0 ? m->max_abs / m->max_ref : m->max_abs > 0 ? INFINITY : 0;
}

/* One case of the sweep (parity_recur_sweep's order) and what it has
 * gathered over the groups so far. */
typedef struct recur_case {
  int64_t C, D; /* C <= 0: the token kernel; D <= 0: not the affine-prefix */
  parity_recur_err eo, eh;
  parity_kappa_ch_acc ka;
} recur_case;

typedef struct recur_stream {
  const parity_recur_opts *o;
  const parity_stream_plan *p;
  recur_case *cs;
  int nc;
  oracle_config oc;
  oracle_dd_config dc; /* --oracle dd: each group's sample placed in the whole run (run_group) */
  oracle_tally tally;  /* merged over the groups run so far (tier 0: none yet) */
} recur_stream;

static int per_channel(const parity_recur_opts *o) { return o->rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL; }

/* Whether the planted mutant reads a value head of the next group
 * (gate-other-head, several groups): its kernels then run on the extended
 * group (parity_recur_other_head.h). */
static int other_head(const recur_stream *st) {
  return st->p->n_groups > 1 && !strcmp(st->o->rec->mutants[st->o->mutant], "gate-other-head");
}

/* Case c on group `in` (its reference ref, value heads from v0), its
 * kernel run on (kin, kgate) -- the group and its gate, or the extended
 * group cut back to it --: measured, folded. */
static int fold_case(recur_stream *st, recur_case *c, const gdn_inputs *in, const gdn_outputs *ref, int64_t v0,
                     const gdn_inputs *kin, const gdn_chgate *kgate, gdn_error *e) {
  const parity_recur_opts *o = st->o;
  kern_config cfg;
  parity_recur_kern_config(o, c->C, c->D, &cfg);
  gdn_outputs out, ext;
  gdn_outputs_init(&out);
  gdn_outputs_init(&ext);
  const parity_rec_kernel k = c->C <= 0 ? o->rec->kern_token : c->D > 0 ? o->rec->kern_affine : o->rec->kern_chunked;
  int rc = k(kin, kgate, &cfg, o->mutant, kin == in ? &out : &ext, e);
  if (!rc && kin != in) rc = parity_recur_other_head_cut(&ext, &in->shape, &out, e);
  gdn_outputs_clear(&ext);
  if (rc) return gdn_outputs_clear(&out), rc;
  const gdn_shape *s = &in->shape, *w = &st->p->whole;
  /* testing (GDN_TEST_MPI_DIE=R:kda-plant): rank R's kernel o off by one in
   * the middle of each of its groups, which only its measurements see */
  if (parity_dist_test_fault("kda-plant")) out.o[gdn_shape_numel_v(s) / 2] += 1.0;
  const parity_recur_err eo = parity_recur_measure(out.o, ref->o, gdn_shape_numel_v(s));
  const parity_recur_err eh = parity_recur_measure(out.ht, ref->ht, gdn_shape_numel_state(s));
  gdn_outputs_clear(&out);
  parity_recur_err_fold(&c->eo, eo, v0, s->Hv, w->Hv, (size_t)s->Dv);
  parity_recur_err_fold(&c->eh, eh, v0, s->Hv, w->Hv, (size_t)(s->Dk * s->Dv));
  return GDN_OK;
}

/* Every case's kappa_G sums over group (in, gate), on the rank that
 * assembles (rank 0), for every group in head order. */
static int kappa_group(const parity_recur_opts *o, parity_kappa_ch_acc *const *ka, const int64_t *C,
                       const int64_t *D, int nc, const gdn_inputs *in, const gdn_chgate *gate, gdn_error *e) {
  int rc = GDN_OK;
  for (int c = 0; !rc && per_channel(o) && c < nc; c++)
    if (C[c] > 0) {
      const int64_t d = parity_recur_kappa_devices(o, D[c]);
      rc = parity_kappa_ch_acc_add(ka[c], in, gate, C[c], d > 0 ? d : 1, e);
    }
  return rc;
}

/* Group i's inputs (q, k, v, beta, h0: only when with_data) and gate. */
static int group_draw(const parity_recur_opts *o, const parity_stream_plan *p, int64_t i, int with_data,
                      gdn_inputs *in, gdn_chgate *gate, int64_t *k0, gdn_error *e) {
  int64_t k1;
  gdn_shape gs;
  parity_stream_group(p, i, k0, &k1, &gs);
  const int64_t r = o->shape.Hv / o->shape.Hk;
  gdn_synth_opts so = {o->seed, o->h0 ? GDN_SYNTH_H0 : 0u, 0};
  int rc = with_data || !per_channel(o) ? gdn_synth_generate_heads(in, &o->shape, *k0, k1, &so, e)
                                        : (in->shape = gs, GDN_OK);
  if (!rc)
    rc = per_channel(o) ? gdn_chgate_draw_kimi_heads(gate, &o->shape, *k0 * r, k1 * r, o->seed, e)
                        : o->rec->draw_gate(in, o->seed, gate, e);
  return rc;
}

int parity_recur_tally_take(oracle_tally *run, oracle_tally *t, gdn_error *e) {
  if (run->tier != 0) return oracle_tally_merge(run, t, e);
  *run = *t;
  oracle_tally_init(t);
  return GDN_OK;
}

/* Group i: its inputs, gate and reference, then every case, on the rank
 * that owns it (mine); rank 0 also adds every group's kappa_G. */
static int run_group(recur_stream *st, int64_t i, int mine, gdn_error *e) {
  const parity_recur_opts *o = st->o;
  const int64_t r = o->shape.Hv / o->shape.Hk;
  int64_t k0;
  gdn_inputs in, xin;
  gdn_chgate gate, xgate;
  gdn_outputs ref;
  oracle_tally t;
  gdn_inputs_init(&in), gdn_inputs_init(&xin);
  gdn_chgate_init(&gate), gdn_chgate_init(&xgate);
  gdn_outputs_init(&ref);
  oracle_tally_init(&t);
  int rc = group_draw(o, st->p, i, mine, &in, &gate, &k0, e);
  const int ext = mine && other_head(st);
  if (!rc && ext) {
    const gdn_synth_opts so = {o->seed, o->h0 ? GDN_SYNTH_H0 : 0u, 0};
    rc = parity_recur_other_head_draw(&o->shape, &so, o->seed, k0, k0 + in.shape.Hk, &xin, &xgate, e);
  }
  if (!rc && mine && o->dd) {
    oracle_dd_config dc = st->dc;
    dc.head0 = k0 * r, dc.whole_hv = o->shape.Hv;
    rc = oracle_kda_run_dd_part(&in, &gate, &dc, &ref, &t, e);
  } else if (!rc && mine) {
    rc = oracle_kda_run_part(&in, &gate, &st->oc, &ref, &t, e);
  }
  if (!rc && mine) rc = parity_recur_tally_take(&st->tally, &t, e);
  for (int c = 0; !rc && mine && c < st->nc; c++)
    rc = fold_case(st, &st->cs[c], &in, &ref, k0 * r, ext ? &xin : &in, ext ? &xgate : &gate, e);
  if (!rc && parity_dist_rank() == 0) {
    parity_kappa_ch_acc *ka[3 * PARITY_RECUR_MAX_CHUNKS * (PARITY_RECUR_MAX_CHUNKS + 1) + 1];
    int64_t C[sizeof ka / sizeof ka[0]], D[sizeof ka / sizeof ka[0]];
    for (int c = 0; c < st->nc; c++) ka[c] = &st->cs[c].ka, C[c] = st->cs[c].C, D[c] = st->cs[c].D;
    rc = kappa_group(o, ka, C, D, st->nc, &in, &gate, e);
  }
  oracle_tally_clear(&t);
  gdn_outputs_clear(&ref);
  gdn_chgate_clear(&gate), gdn_chgate_clear(&xgate);
  gdn_inputs_clear(&in), gdn_inputs_clear(&xin);
  return rc;
}

int parity_recur_dist_merge(oracle_tally *tally, int tier, int cap, parity_recur_err *m, size_t n_err, int failed,
                      gdn_error *e) {
  const int size = parity_dist_size(), rank = parity_dist_rank();
  if (size <= 1) return failed ? (e ? e->code : GDN_ERR_INTERNAL) : GDN_OK;
  int rc = !failed && tally->tier == 0 ? oracle_tally_alloc(tally, tier, cap, -1, e) : GDN_OK;
  if (rc) failed = 1;
  const size_t nt = oracle_tally_size(tier, cap), n = 1 + nt + 3 * n_err;
  double *buf = gdn_calloc(n, sizeof *buf, "the ranks' measurements", e);
  if (!buf) return GDN_ERR_NOMEM; /* (the other ranks then wait: as any rank lost before its exchange) */
  int any_failed = 0;
  oracle_tally in;
  oracle_tally_init(&in);
  parity_recur_err *mine = failed ? NULL : gdn_calloc(n_err ? n_err : 1, sizeof *mine, "measurements", e);
  if (mine) memcpy(mine, m, n_err * sizeof *m);
  for (int r = 0; r < size; r++) {
    if (r == rank) {
      buf[0] = failed || !mine;
      for (size_t j = 0; !buf[0] && j < nt; j++) buf[1 + j] = tally->v[j];
      for (size_t j = 0; !buf[0] && j < n_err; j++) {
        buf[1 + nt + 3 * j] = mine[j].max_abs;
        buf[2 + nt + 3 * j] = (double)mine[j].at;
        buf[3 + nt + 3 * j] = mine[j].max_ref;
      }
    }
    if ((rc = parity_dist_bcast(buf, n * sizeof *buf, r, e))) break;
    if (buf[0]) any_failed = 1;
    if (any_failed || r == rank || failed || !mine) continue;
    if ((rc = oracle_tally_alloc(&in, tier, cap, -1, e))) break;
    memcpy(in.v, buf + 1, nt * sizeof *buf);
    if ((rc = oracle_tally_merge(tally, &in, e))) break;
    oracle_tally_clear(&in);
    for (size_t j = 0; j < n_err; j++)
      parity_recur_err_fold(&m[j], (parity_recur_err){0, buf[1 + nt + 3 * j], buf[3 + nt + 3 * j],
                                                      (size_t)buf[2 + nt + 3 * j]}, 0, 1, 1, 1);
  }
  oracle_tally_clear(&in);
  gdn_free(buf);
  gdn_free(mine);
  if (!rc && (failed || any_failed))
    rc = failed ? (e ? e->code : GDN_ERR_INTERNAL)
                : gdn_error_set(e, GDN_ERR_INTERNAL, "another rank failed its head groups (its message above)");
  return rc;
}

/* The reference's certificate from the merged tally, as parity_recur_sweep
 * records it. */
static int stream_cert(const recur_stream *st, parity_recur_cert *c, gdn_error *e) {
  int rc;
  if (st->o->dd) {
    oracle_dd_certificate d;
    if ((rc = oracle_kda_tally_dd_certificate(&st->tally, &st->o->shape, &st->dc, &d, e))) return rc;
    *c = (parity_recur_cert){"dd", d.precision_bits, d.check_bits, d.certified_bits, d.normwise_bits,
                             d.sampled_columns};
    return GDN_OK;
  }
  oracle_certificate cert;
  if ((rc = oracle_tally_certificate(&st->tally, &st->oc, &cert, e))) return rc;
  *c = (parity_recur_cert){"mpfr", cert.precision_bits, cert.check_bits, cert.certified_bits, 0, 0};
  return GDN_OK;
}

/* The document from the merged accumulators, as parity_recur_sweep makes it. */
static int assemble(recur_stream *st, json_t **doc, int *pass, gdn_error *e) {
  const parity_recur_opts *o = st->o;
  parity_recur_cert c;
  int rc = stream_cert(st, &c, e);
  if (rc) return rc;
  if (o->log)
    fprintf(o->log, "recurrence %s (gate %s): oracle %s %d bits, certified %d bits\n", o->rec->name,
            parity_gate_shape_name(o->rec->gate_shape), c.tier, c.precision_bits, c.certified_bits);
  json_t *d = parity_recur_doc_head(o, &c);
  if (!d) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  json_t *cases = json_object_get(d, "cases");
  int failed = 0;
  for (int i = 0; !rc && i < st->nc; i++) {
    recur_case *cs = &st->cs[i];
    parity_recur_err_finish(&cs->eo);
    parity_recur_err_finish(&cs->eh);
    parity_kappa_ch kc = {0, 0, 0, 0, 0};
    json_t *kj = NULL;
    double band;
    if (per_channel(o) && cs->C > 0) rc = parity_kappa_ch_acc_finish(&cs->ka, &kc, e);
    if (!rc) rc = parity_recur_band_of(o->rec, cs->C, &kc, o->band, &band, &kj, e);
    if (!rc) band = parity_recur_mode_band(o->dtype, o->matmul, band);
    if (!rc) rc = parity_recur_case_record(o, cs->C, cs->D, cs->eo, cs->eh, band, kj, &kc, cases, &failed, e);
  }
  if (!rc) rc = parity_recur_doc_finish(d, failed, pass, e);
  if (rc) return json_decref(d), rc;
  *doc = d;
  return GDN_OK;
}

int parity_recur_sweep_streamed(const parity_recur_opts *o, const parity_stream_plan *p, json_t **doc, int *pass,
                                gdn_error *e) {
  *doc = NULL;
  *pass = 0;
  if (p->n_groups <= 1 && !p->forced && parity_dist_size() <= 1) return parity_recur_sweep(o, doc, pass, e);
  recur_stream st = {o, p, NULL, 1 + o->n_chunks * (1 + o->n_devices), {0}, {0}, {0}};
  oracle_tally_init(&st.tally);
  oracle_config_init(&st.oc);
  st.oc.prec = o->oracle_bits;
  oracle_dd_config_init(&st.dc); /* parity_recur_sweep's dd configuration */
  st.dc.sample_prec = o->oracle_bits;
  st.cs = gdn_calloc((size_t)st.nc, sizeof *st.cs, "streamed sweep cases", e);
  if (!st.cs) return GDN_ERR_NOMEM;
  int n = 0;
  st.cs[n++] = (recur_case){.C = 0, .D = 0};
  for (int i = 0; i < o->n_chunks; i++) {
    st.cs[n++] = (recur_case){.C = o->chunks[i], .D = 0};
    for (int j = 0; j < o->n_devices; j++) st.cs[n++] = (recur_case){.C = o->chunks[i], .D = o->devices[j]};
  }
  for (int i = 0; i < st.nc; i++) parity_kappa_ch_acc_init(&st.cs[i].ka);
  if (o->log) {
    char line[512];
    parity_stream_describe(p, line, sizeof line);
    fprintf(o->log, "%s\n", line);
  }
  int rc = GDN_OK;
  const int size = parity_dist_size(), rank = parity_dist_rank();
  for (int64_t i = 0; !rc && i < p->n_groups; i++)
    if (rank == 0 || parity_stream_owner(i, size) == rank)
      rc = run_group(&st, i, parity_stream_owner(i, size) == rank, e);
  if (size > 1) {
    parity_recur_err *m = gdn_calloc((size_t)st.nc * 2, sizeof *m, "measurements", e);
    for (int c = 0; m && c < st.nc; c++) m[2 * c] = st.cs[c].eo, m[2 * c + 1] = st.cs[c].eh;
    rc = parity_recur_dist_merge(&st.tally, o->dd ? ORACLE_TALLY_DD : ORACLE_TALLY_MPFR,
                                 o->dd ? ORACLE_DD_BITS : (int)o->oracle_bits, m, m ? (size_t)st.nc * 2 : 0, rc || !m, e);
    for (int c = 0; !rc && c < st.nc; c++) st.cs[c].eo = m[2 * c], st.cs[c].eh = m[2 * c + 1];
    gdn_free(m);
  }
  if (!rc) rc = assemble(&st, doc, pass, e);
  for (int i = 0; i < st.nc; i++) parity_kappa_ch_acc_clear(&st.cs[i].ka);
  gdn_free(st.cs);
  oracle_tally_clear(&st.tally);
  return rc;
}

/* ---- the backward (--grad), streamed alike ---- */

typedef struct recur_gcase {
  int64_t C, D;
  parity_recur_err m[GDN_GRADS_N];
  parity_kappa_ch_acc ka;
} recur_gcase;

typedef struct recur_gstream {
  const parity_recur_opts *o;
  const parity_stream_plan *p;
  int vjp_mutant;
  recur_gcase *cs;
  int nc;
  oracle_vjp_config vc;
  int dd;                 /* the VJP's dd tier (--oracle dd, or auto's choice at the whole shape) */
  oracle_vjp_dd_config vdc; /* its configuration, each group's sample placed in the whole run */
  oracle_tally tally;
} recur_gstream;

/* Gradient id's layout (outer, heads, inner) over the whole shape w: dq
 * and dk by key head, the rest by value head; dg per channel. */
static void grad_layout(const gdn_shape *w, gdn_grad_id id, int64_t *whole_h, size_t *inner) {
  const int key = id == GDN_GRAD_DQ || id == GDN_GRAD_DK;
  *whole_h = key ? w->Hk : w->Hv;
  *inner = id == GDN_GRAD_DV ? (size_t)w->Dv : id == GDN_GRAD_DBETA ? 1 : id == GDN_GRAD_DH0 ? (size_t)(w->Dk * w->Dv)
                                                                                             : (size_t)w->Dk;
}

void parity_recur_grads_fold(parity_recur_err m[GDN_GRADS_N], const gdn_grads *x, const gdn_grads *ref,
                             const gdn_shape *w, int64_t k0, int pc, unsigned present) {
  const gdn_shape *s = &x->shape;
  const int64_t r = s->Hv / s->Hk;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    if (!(present & (1u << id))) continue;
    const gdn_grad_id g = (gdn_grad_id)id;
    const parity_recur_err gm = parity_recur_measure(gdn_grads_tensor_c(x, g), gdn_grads_tensor_c(ref, g),
                                                     pc ? gdn_chgrads_numel(s, g) : gdn_grads_numel(s, g));
    int64_t wh;
    size_t inner;
    grad_layout(w, g, &wh, &inner);
    const int key = g == GDN_GRAD_DQ || g == GDN_GRAD_DK;
    parity_recur_err_fold(&m[id], gm, key ? k0 : k0 * r, key ? s->Hk : s->Hv, wh, inner);
  }
}

static int fold_gcase(recur_gstream *st, recur_gcase *c, const gdn_inputs *in, const gdn_chgate *gate,
                      const gdn_cotangents *ct, const gdn_grads *ref, int64_t k0, gdn_error *e) {
  const parity_recurrence *rec = st->o->rec;
  kern_config cfg;
  parity_recur_kern_config(st->o, c->C, c->D, &cfg);
  gdn_grads x;
  gdn_grads_init(&x);
  const parity_rec_kernel_vjp k =
      c->C <= 0 ? rec->kern_token_vjp : c->D > 0 ? rec->kern_affine_vjp : rec->kern_chunked_vjp;
  int rc = k(in, gate, ct, &cfg, st->vjp_mutant, &x, e);
  if (rc) return rc;
  parity_recur_grads_fold(c->m, &x, ref, &st->p->whole, k0, per_channel(st->o), (1u << GDN_GRADS_N) - 1);
  gdn_grads_clear(&x);
  return GDN_OK;
}

static int run_ggroup(recur_gstream *st, int64_t i, int mine, gdn_error *e) {
  const parity_recur_opts *o = st->o;
  const int64_t r = o->shape.Hv / o->shape.Hk;
  int64_t k0;
  gdn_inputs in;
  gdn_chgate gate;
  gdn_cotangents ct;
  gdn_grads ref;
  oracle_tally t;
  gdn_inputs_init(&in);
  gdn_chgate_init(&gate);
  gdn_cotangents_init(&ct);
  gdn_grads_init(&ref);
  oracle_tally_init(&t);
  int rc = group_draw(o, st->p, i, mine, &in, &gate, &k0, e);
  if (!rc && mine && !(rc = gdn_cotangents_alloc(&ct, &in.shape, 1, e)))
    gdn_cotangents_synth_heads(&ct, o->shape.Hv, k0 * r, o->seed);
  if (!rc && mine && st->dd) {
    oracle_vjp_dd_config dc = st->vdc;
    dc.head0 = k0 * r, dc.whole_hv = o->shape.Hv;
    rc = oracle_kda_vjp_dd_part(&in, &gate, &ct, &dc, &ref, &t, e);
  } else if (!rc && mine) {
    rc = oracle_kda_vjp_part(&in, &gate, &ct, &st->vc, &ref, &t, e);
  }
  if (!rc && mine) rc = parity_recur_tally_take(&st->tally, &t, e);
  for (int c = 0; !rc && mine && c < st->nc; c++) rc = fold_gcase(st, &st->cs[c], &in, &gate, &ct, &ref, k0, e);
  if (!rc && parity_dist_rank() == 0) {
    parity_kappa_ch_acc *ka[3 * PARITY_RECUR_MAX_CHUNKS * (PARITY_RECUR_MAX_CHUNKS + 1) + 1];
    int64_t C[sizeof ka / sizeof ka[0]], D[sizeof ka / sizeof ka[0]];
    for (int c = 0; c < st->nc; c++) ka[c] = &st->cs[c].ka, C[c] = st->cs[c].C, D[c] = st->cs[c].D;
    rc = kappa_group(o, ka, C, D, st->nc, &in, &gate, e);
  }
  oracle_tally_clear(&t);
  gdn_grads_clear(&ref);
  gdn_cotangents_clear(&ct);
  gdn_chgate_clear(&gate);
  gdn_inputs_clear(&in);
  return rc;
}

static int gassemble(recur_gstream *st, json_t *doc, int *pass, gdn_error *e) {
  const parity_recur_opts *o = st->o;
  oracle_vjp_certificate cert;
  oracle_vjp_dd_certificate dcert;
  int rc = st->dd ? oracle_tally_vjp_dd_certificate(&st->tally, &o->shape, &st->vdc, &dcert, e)
                  : oracle_tally_vjp_certificate(&st->tally, &st->vc, &cert, e);
  if (rc) return rc;
  const parity_recurrence *rec = o->rec;
  if (o->log)
    fprintf(o->log, "recurrence %s backward: oracle VJP %s %d bits, certified %d bits%s%s\n", rec->name,
            st->dd ? "dd" : "mpfr", st->dd ? dcert.precision_bits : cert.precision_bits,
            st->dd ? dcert.certified_bits : cert.certified_bits,
            rec->kern_chunked_vjp ? (rec->chunked_vjp_form ? "; chunked backward: " : "") : "; ",
            rec->kern_chunked_vjp ? (rec->chunked_vjp_form ? rec->chunked_vjp_form : "") : rec->chunked_vjp_absent);
  json_t *g = parity_recur_grad_head(o, st->vjp_mutant, st->dd ? NULL : &cert, st->dd ? &dcert : NULL);
  if (!g) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  json_t *cases = json_object_get(g, "cases");
  int failed = 0;
  for (int i = 0; !rc && i < st->nc; i++) {
    recur_gcase *c = &st->cs[i];
    for (int id = 0; id < GDN_GRADS_N; id++) parity_recur_err_finish(&c->m[id]);
    parity_kappa_ch kc = {0, 0, 0, 0, 0};
    json_t *kj = NULL;
    double band;
    if (per_channel(o) && c->C > 0) rc = parity_kappa_ch_acc_finish(&c->ka, &kc, e);
    if (!rc) rc = parity_recur_band_of(rec, c->C, &kc, o->band, &band, &kj, e);
    if (!rc) band = parity_recur_mode_band_grad(o->dtype, o->matmul, band);
    if (!rc) rc = parity_recur_grad_case_record(o, c->C, c->D, c->m, band, kj, cases, &failed, e);
  }
  if (rc) return json_decref(g), rc;
  return parity_recur_grad_counts(doc, g, failed, pass, e);
}

int parity_recur_grad_streamed(const parity_recur_opts *o, const parity_stream_plan *p, int vjp_mutant, json_t *doc,
                               int *pass, gdn_error *e) {
  if (p->n_groups <= 1 && !p->forced && parity_dist_size() <= 1)
    return parity_recur_grad_attach(o, vjp_mutant, doc, pass, e);
  const parity_recurrence *rec = o->rec;
  if (!rec->oracle_vjp || !rec->kern_token_vjp || rec->oracle_vjp != oracle_kda_vjp)
    return gdn_error_set(e, GDN_ERR_INPUT, "--grad: --recurrence %s has no streamed backward", rec->name);
  const parity_oracle_tier asked = o->dd ? PARITY_ORACLE_DD : o->oracle_auto ? PARITY_ORACLE_AUTO : PARITY_ORACLE_MPFR;
  const int nch = rec->kern_chunked_vjp ? o->n_chunks : 0, nd = rec->kern_affine_vjp ? o->n_devices : 0;
  recur_gstream st = {o, p, vjp_mutant, NULL, 1 + nch * (1 + nd), {0}, 0, {0}, {0}};
  oracle_tally_init(&st.tally);
  oracle_vjp_config_init(&st.vc);
  st.vc.prec = o->oracle_bits;
  /* the tier the whole run resolves at the whole shape (parity_recur_grad.c's run_vjp_oracle) */
  st.dd = rec->oracle_vjp_dd && parity_oracle_resolve_grads(asked, &o->shape, o->oracle_bits) == PARITY_ORACLE_DD;
  oracle_vjp_dd_config_init(&st.vdc);
  st.vdc.sample_prec = o->oracle_bits;
  st.vdc.sample_columns = PARITY_ORACLE_DD_SAMPLE;
  st.cs = gdn_calloc((size_t)st.nc, sizeof *st.cs, "streamed backward cases", e);
  if (!st.cs) return GDN_ERR_NOMEM;
  int n = 0;
  st.cs[n++] = (recur_gcase){.C = 0, .D = 0};
  for (int i = 0; i < nch; i++) {
    st.cs[n++] = (recur_gcase){.C = o->chunks[i], .D = 0};
    for (int j = 0; j < nd; j++) st.cs[n++] = (recur_gcase){.C = o->chunks[i], .D = o->devices[j]};
  }
  for (int i = 0; i < st.nc; i++) parity_kappa_ch_acc_init(&st.cs[i].ka);
  int rc = GDN_OK;
  const int size = parity_dist_size(), rank = parity_dist_rank();
  for (int64_t i = 0; !rc && i < p->n_groups; i++)
    if (rank == 0 || parity_stream_owner(i, size) == rank)
      rc = run_ggroup(&st, i, parity_stream_owner(i, size) == rank, e);
  if (size > 1) {
    parity_recur_err *m = gdn_calloc((size_t)st.nc * GDN_GRADS_N, sizeof *m, "measurements", e);
    for (int c = 0; m && c < st.nc; c++) memcpy(m + c * GDN_GRADS_N, st.cs[c].m, sizeof st.cs[c].m);
    rc = parity_recur_dist_merge(&st.tally, st.dd ? ORACLE_TALLY_VJP_DD : ORACLE_TALLY_VJP,
                                 st.dd ? ORACLE_DD_BITS : (int)o->oracle_bits, m, m ? (size_t)st.nc * GDN_GRADS_N : 0,
                                 rc || !m, e);
    for (int c = 0; !rc && c < st.nc; c++) memcpy(st.cs[c].m, m + c * GDN_GRADS_N, sizeof st.cs[c].m);
    gdn_free(m);
  }
  if (!rc) rc = gassemble(&st, doc, pass, e);
  for (int i = 0; i < st.nc; i++) parity_kappa_ch_acc_clear(&st.cs[i].ka);
  gdn_free(st.cs);
  oracle_tally_clear(&st.tally);
  return rc;
}
