/* Stored gradients of a non-GDN fixture against the row's VJP oracle
 * (parity_recur_check_grad.h). */
#include "parity_recur_check_grad.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_chgrads.h"
#include "parity_recur_step.h"
#include "parity_stored_grads.h"

/* The dims and axis names of gradient id (dg per channel when pc). */
static int grad_axes(const gdn_shape *s, int pc, gdn_grad_id id, int64_t d[4], const char *n[4]) {
  static const char *const qk[4] = {"b", "t", "h", "dk"}, *const v[4] = {"b", "t", "h", "dv"},
                           *const bt[4] = {"b", "t", "h", NULL}, *const st[4] = {"b", "h", "dk", "dv"};
  const char *const *nm = id == GDN_GRAD_DV ? v : id == GDN_GRAD_DH0 ? st : id == GDN_GRAD_DBETA ? bt : qk;
  memcpy(n, nm, 4 * sizeof *n);
  switch (id) {
  case GDN_GRAD_DQ:
  case GDN_GRAD_DK: d[0] = s->B, d[1] = s->T, d[2] = s->Hk, d[3] = s->Dk; return 4;
  case GDN_GRAD_DV: d[0] = s->B, d[1] = s->T, d[2] = s->Hv, d[3] = s->Dv; return 4;
  case GDN_GRAD_DG: d[0] = s->B, d[1] = s->T, d[2] = s->Hv, d[3] = pc ? s->Dk : 1; return pc ? 4 : 3;
  case GDN_GRAD_DBETA: d[0] = s->B, d[1] = s->T, d[2] = s->Hv, d[3] = 1; return 3;
  default: d[0] = s->B, d[1] = s->Hv, d[2] = s->Dk, d[3] = s->Dv; return 4;
  }
}

/* {"err", "max_abs_err", "max_ref", "worst": {axis: index}} of one gradient. */
static json_t *grad_json(parity_recur_err m, const int64_t d[4], const char *const n[4], int rank) {
  json_t *w = json_object();
  size_t at = m.at;
  for (int a = rank - 1; w && a >= 0; a--) {
    if (json_object_set_new(w, n[a], json_integer((json_int_t)(at % (size_t)d[a])))) w = (json_decref(w), NULL);
    at /= (size_t)d[a];
  }
  return w ? json_pack("{s:f, s:f, s:f, s:o}", "err", isfinite(m.err) ? m.err : 1e308, "max_abs_err",
                       isfinite(m.max_abs) ? m.max_abs : 1e308, "max_ref", m.max_ref, "worst", w)
           : NULL;
}

int parity_recur_check_grad_judge(const parity_recur_check_opts *o, const gdn_shape *s, const fix_output *x,
                                  const parity_recur_err m[GDN_GRADS_N], double band, json_t *kj, json_t *cases,
                                  int *failed, gdn_error *e) {
  const int pc = o->rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL;
  if (x->grads.dtype == GDN_DTYPE_BF16) band = parity_recur_band_bf16(band);
  /* "chunk" null as for the forward output cases: an external output's chunking is its own. */
  json_t *c = json_pack("{s:s+, s:n, s:o, s:f, s:[]}", "subject", "output:", x->name, "chunk", "devices",
                        x->devices > 0 ? json_integer(x->devices) : json_null(), "band", isfinite(band) ? band : 0,
                        "failed");
  if (c && json_object_set_new(c, "kappa_g", kj ? kj : json_null())) c = (json_decref(c), NULL);
  else if (!c)
    json_decref(kj);
  char line[640] = "", bad[256] = "";
  size_t at = 0, bt = 0;
  int pass = 1;
  for (int id = 0; c && id < GDN_GRADS_N; id++) {
    const gdn_grad_id g = (gdn_grad_id)id;
    const char *nm = gdn_grads_name(g), *an[4];
    if (!(x->grads_present & (1u << id))) {
      if (json_object_set_new(c, nm, json_null())) c = (json_decref(c), NULL);
      continue;
    }
    int64_t d[4];
    const int rank = grad_axes(s, pc, g, d, an);
    const int ok = m[id].err <= band;
    if (json_object_set_new(c, nm, grad_json(m[id], d, an, rank)) ||
        (!ok && json_array_append_new(json_object_get(c, "failed"), json_string(nm))))
      c = (json_decref(c), NULL);
    if (at < sizeof line)
      at += (size_t)snprintf(line + at, sizeof line - at, "%s %s %.3e", at ? "," : "", nm, m[id].err);
    if (!ok && bt < sizeof bad) bt += (size_t)snprintf(bad + bt, sizeof bad - bt, "%s%s", bt ? ", " : "", nm);
    pass &= ok;
  }
  if (!c || json_object_set_new(c, "pass", json_boolean(pass)) || json_array_append_new(cases, c))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  if (!pass) ++*failed;
  if (o->log)
    fprintf(o->log, "  %-4s output:%s D=%lld backward:%s (band %.3e)%s%s\n", pass ? "PASS" : "FAIL", x->name,
            (long long)(x->devices > 0 ? x->devices : 1), line, band, pass ? "" : "; over the band: ", bad);
  return GDN_OK;
}

/* One output's gradients measured against ref and judged. */
static int judge_output(const parity_recur_check_opts *o, const fix_fixture *fx, const fix_output *x,
                        const gdn_grads *ref, json_t *cases, int *failed, gdn_error *e) {
  const gdn_shape *s = &fx->inputs.shape;
  const int pc = o->rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL;
  double band;
  json_t *kj = NULL;
  parity_kappa_ch kc;
  int rc = parity_recur_case_band(o->rec, &fx->inputs, &fx->chgate, fx->chunk_size, x->devices,
                                  PARITY_RECUR_BAND_F32, &band, &kj, &kc, e);
  if (rc) return rc;
  parity_recur_err m[GDN_GRADS_N];
  memset(m, 0, sizeof m);
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (x->grads_present & (1u << id)) {
      const gdn_grad_id g = (gdn_grad_id)id;
      const size_t n = pc ? gdn_chgrads_numel(s, g) : gdn_grads_numel(s, g);
      m[id] = parity_recur_measure(gdn_grads_tensor_c(&x->grads, g), gdn_grads_tensor_c(ref, g), n);
    }
  return parity_recur_check_grad_judge(o, s, x, m, band, kj, cases, failed, e);
}

int parity_recur_grad_stored_decide(const fix_oracle *orc, int forward_trusted, const gdn_inputs *in,
                                    const gdn_chgate *gate, const gdn_cotangents *ct, parity_recur_grad_stored *sg,
                                    gdn_error *e) {
  memset(sg, 0, sizeof *sg);
  if (!orc->has_grads) return GDN_OK;
  if (parity_stored_grads_usable(orc, sg->why, sizeof sg->why) && !forward_trusted)
    snprintf(sg->why, sizeof sg->why, "%s", PARITY_STORED_GRADS_NO_FORWARD);
  else if (!sg->why[0] && !orc->grads_per_channel) /* never from fix_kda_load: a guard, not a rule */
    snprintf(sg->why, sizeof sg->why, "its dg is not per channel, as this recurrence's gate is");
  if (sg->why[0]) return GDN_OK;
  const int rc = parity_stored_grads_spot(in, gate, ct, &orc->grads, 0, &sg->spot_rel, e);
  if (rc) return rc;
  sg->taken = sg->spot_rel <= PARITY_STORED_GRADS_SPOT;
  if (!sg->taken) {
    sg->spot_failed = 1;
    snprintf(sg->why, sizeof sg->why, "spot check: key head 0's VJP recomputed differs from it by %.3g, normwise",
             sg->spot_rel);
  }
  return GDN_OK;
}

/* The stored gradients' verdict on the log: taken (with its spot check),
 * or why not (GDN's check's words, parity_cli.c). */
static void log_stored(const parity_recur_check_opts *o, const fix_oracle *orc, const parity_recur_grad_stored *sg) {
  if (!o->log) return;
  if (sg->taken)
    fprintf(o->log,
            "%s: gradients: the fixture's stored %s VJP (/oracle/grads, gdn-fixture regen --grads), certified %lld "
            "bits%s; spot check: key head 0 recomputed in double-double, normwise difference %.2g\n",
            o->name, orc->grads_tier_dd ? "dd" : "mpfr", (long long)orc->grads_certified_bits,
            orc->grads_tier_dd ? " on its sampled columns" : "", sg->spot_rel);
  else if (sg->spot_failed)
    fprintf(o->log, "%s: warning: the stored /oracle/grads is not trusted (%s); computing the oracle's VJP\n",
            o->name, sg->why);
  else if (sg->why[0])
    fprintf(o->log, "%s: note: the stored /oracle/grads is not used (%s); computing the oracle's VJP\n", o->name,
            sg->why);
}

/* {"dq": bits, ...} of n[] (NULL: out of memory). */
static json_t *tensor_bits_json(const int64_t n[GDN_GRADS_N]) {
  json_t *bits = json_object();
  for (int id = 0; bits && id < GDN_GRADS_N; id++)
    if (json_object_set_new(bits, gdn_grads_name((gdn_grad_id)id), json_integer((json_int_t)n[id])))
      bits = (json_decref(bits), NULL);
  return bits;
}

/* The "grad" object's "oracle": the computed VJP's certificate, or the
 * stored one's with where it came from (its check_bits and per-tensor
 * certified null when the file does not store them: as the forward's
 * check_bits for a stored /oracle); a note when a stored one was not
 * taken. */
static json_t *grad_oracle_json(const oracle_vjp_certificate *cert, const fix_oracle *orc,
                                const parity_recur_grad_stored *sg) {
  json_t *j;
  if (sg->taken) {
    const int hc = orc->grads_has_cert;
    j = json_pack("{s:s, s:I, s:o, s:I, s:o, s:b, s:{s:i, s:f}}", "tier", orc->grads_tier_dd ? "dd" : "mpfr",
                  "precision_bits", (json_int_t)orc->grads_precision_bits, "check_bits",
                  hc ? json_integer((json_int_t)orc->grads_check_bits) : json_null(), "certified_bits",
                  (json_int_t)orc->grads_certified_bits, "certified",
                  hc ? tensor_bits_json(orc->grads_tensor_bits) : json_null(), "from_fixture", 1, "spot_check",
                  "key_heads", 1, "rel", sg->spot_rel);
    if (j && orc->grads_tier_dd &&
        json_object_set_new(j, "normwise_bits", json_integer((json_int_t)orc->grads_normwise_bits)))
      j = (json_decref(j), NULL);
    return j;
  }
  int64_t n[GDN_GRADS_N];
  for (int id = 0; id < GDN_GRADS_N; id++) n[id] = cert->certified[id];
  j = json_pack("{s:s, s:i, s:i, s:i, s:o}", "tier", "mpfr", "precision_bits", cert->precision_bits, "check_bits",
                cert->check_bits, "certified_bits", cert->certified_bits, "certified", tensor_bits_json(n));
  char note[320];
  parity_stored_grads_note(note, sizeof note, sg->why);
  if (j && sg->why[0] && json_object_set_new(j, "note", json_string(note))) j = (json_decref(j), NULL);
  return j;
}

json_t *parity_recur_check_grad_begin(const parity_recur_check_opts *o, int dht, const char *grad_problem_sha256,
                                      const oracle_vjp_certificate *cert, const fix_oracle *orc,
                                      const parity_recur_grad_stored *sg) {
  log_stored(o, orc, sg);
  if (o->log && !sg->taken)
    fprintf(o->log, "%s: gradients (the file's /cotangents%s): oracle VJP mpfr %d bits, certified %d bits\n", o->name,
            dht ? ", dht given" : "", cert->precision_bits, cert->certified_bits);
  return json_pack("{s:o, s:{s:b, s:b, s:s}, s:[]}", "oracle", grad_oracle_json(cert, orc, sg), "cotangents",
                   "from_fixture", 1, "dht", dht, "grad_problem_sha256", grad_problem_sha256, "cases");
}

int parity_recur_check_grad_end(json_t *doc, json_t *g, int gfailed, int *pass, gdn_error *e) {
  const json_int_t nc = json_integer_value(json_object_get(doc, "n_cases")),
                   nf = json_integer_value(json_object_get(doc, "n_failed"));
  const size_t gn = json_array_size(json_object_get(g, "cases"));
  *pass = *pass && gfailed == 0;
  if (json_object_set_new(doc, "grad", g) || json_object_set_new(g, "n_cases", json_integer((json_int_t)gn)) ||
      json_object_set_new(g, "n_failed", json_integer(gfailed)) ||
      json_object_set_new(g, "pass", json_boolean(gfailed == 0)) ||
      json_object_set_new(doc, "n_cases", json_integer(nc + (json_int_t)gn)) ||
      json_object_set_new(doc, "n_failed", json_integer(nf + gfailed)) ||
      json_object_set_new(doc, "pass", json_boolean(*pass)))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  return GDN_OK;
}

/* The row's VJP oracle of fx's cotangents, a step of the progress line
 * advancing inside it. */
static int vjp_with_line(const parity_recur_check_opts *o, const fix_fixture *fx, oracle_vjp_config *vc,
                         gdn_grads *ref, oracle_vjp_certificate *cert, gdn_error *e) {
  oracle_progress op;
  vc->progress = parity_recur_step_begin(o->progress, o->name, "oracle VJP", "'s /cotangents", &op);
  const int rc = o->rec->oracle_vjp(&fx->inputs, &fx->chgate, &fx->cot, vc, ref, cert, e);
  vc->progress = NULL;
  parity_recur_step_end(o->progress);
  return rc;
}

int parity_recur_check_grads_decide(const parity_recur_check_opts *o, fix_fixture *fx, int forward_trusted,
                                    parity_recur_grad_stored *sg, int *judged, gdn_error *e) {
  memset(sg, 0, sizeof *sg);
  *judged = 0;
  for (size_t i = 0; i < fx->n_outputs; i++) *judged |= fx->outputs[i].has_grads;
  *judged &= fx->has_cotangents;
  int rc = GDN_OK;
  if (*judged && !o->rec->oracle_vjp)
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s: the %s recurrence has no VJP oracle to judge gradients by", o->name,
                       o->rec->name);
  else if (*judged)
    rc = parity_recur_grad_stored_decide(&fx->oracle, forward_trusted, &fx->inputs, &fx->chgate, &fx->cot, sg, e);
  if (!rc && !sg->taken) gdn_grads_clear(&fx->oracle.grads); /* not the reference: not held (its attributes stay) */
  return rc;
}

int parity_recur_check_grads(const parity_recur_check_opts *o, const fix_fixture *fx,
                             const parity_recur_grad_stored *sg, json_t *doc, int *pass, gdn_error *e) {
  gdn_grads ref;
  gdn_grads_init(&ref);
  oracle_vjp_config vc;
  oracle_vjp_config_init(&vc);
  vc.prec = o->oracle_bits;
  oracle_vjp_certificate cert;
  memset(&cert, 0, sizeof cert);
  json_t *g = NULL;
  int failed = 0, rc = sg->taken ? GDN_OK : vjp_with_line(o, fx, &vc, &ref, &cert, e);
  if (rc) goto done;
  const gdn_grads *rf = sg->taken ? &fx->oracle.grads : &ref;
  if (!(g = parity_recur_check_grad_begin(o, fx->cot.dht != NULL, fx->grad_problem_sha256, &cert, &fx->oracle,
                                          sg))) {
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
    goto done;
  }
  for (size_t i = 0; i < fx->n_outputs && !rc; i++)
    if (fx->outputs[i].has_grads)
      rc = judge_output(o, fx, &fx->outputs[i], rf, json_object_get(g, "cases"), &failed, e);
  if (!rc) rc = parity_recur_check_grad_end(doc, g, failed, pass, e), g = NULL; /* doc holds g from here */
done:
  json_decref(g);
  gdn_grads_clear(&ref);
  return rc;
}
