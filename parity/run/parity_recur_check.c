/* check of a non-GDN fixture against its recurrence's oracle (parity_recur_check.h). */
#include "parity_recur_check.h"

#include <math.h>
#include <string.h>

#include "kern_config.h"
#include "parity_recur_check_grad.h"
#include "parity_recur_step.h"


/* The index of flat position `at` in dims (4 axes) as an object of names. */
static json_t *where_json(size_t at, const int64_t dims[4], const char *const names[4]) {
  int64_t ix[4];
  for (int a = 3; a >= 0; a--) {
    ix[a] = (int64_t)(at % (size_t)dims[a]);
    at /= (size_t)dims[a];
  }
  return json_pack("{s:I, s:I, s:I, s:I}", names[0], (json_int_t)ix[0], names[1], (json_int_t)ix[1], names[2],
                   (json_int_t)ix[2], names[3], (json_int_t)ix[3]);
}

static json_t *err_json(parity_recur_err m, const int64_t dims[4], const char *const names[4]) {
  return json_pack("{s:f, s:f, s:f, s:o}", "err", isfinite(m.err) ? m.err : 1e308, "max_abs_err",
                   isfinite(m.max_abs) ? m.max_abs : 1e308, "max_ref", m.max_ref, "worst", where_json(m.at, dims, names));
}

int parity_recur_check_judge(const parity_recur_check_opts *o, const char *subject, int64_t C, int64_t D,
                             const gdn_shape *s, parity_recur_err eo, parity_recur_err eh, int has_ht, double band,
                             double band_ht, json_t *kj, json_t *cases, int *failed, gdn_error *e) {
  static const char *const on[4] = {"b", "t", "h", "d"}, *const hn[4] = {"b", "h", "dk", "dv"};
  const int64_t od[4] = {s->B, s->T, s->Hv, s->Dv}, hd[4] = {s->B, s->Hv, s->Dk, s->Dv};
  const int pass = eo.err <= band && eh.err <= band_ht;
  json_t *c = json_pack("{s:s, s:o, s:o, s:f, s:o, s:o, s:b}", "subject", subject, "chunk",
                        C > 0 ? json_integer(C) : json_null(), "devices", D > 0 ? json_integer(D) : json_null(),
                        "band", isfinite(band) ? band : 0, "o", err_json(eo, od, on), "ht", has_ht ? err_json(eh, hd, hn) : json_null(),
                        "pass", pass);
  if (c && band_ht != band && json_object_set_new(c, "band_ht", json_real(isfinite(band_ht) ? band_ht : 0)))
    c = (json_decref(c), NULL);
  if (c && kj && json_object_set_new(c, "kappa_g", kj)) c = (json_decref(c), NULL);
  else if (!c)
    json_decref(kj);
  if (!c || json_array_append_new(cases, c)) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  if (!pass) ++*failed;
  if (o->log) {
    char at[160] = "";
    if (!pass) {
      const int oh = !(eo.err <= band);
      size_t i = oh ? eo.at : eh.at;
      int64_t ix[4];
      for (int a = 3; a >= 0; a--) {
        ix[a] = (int64_t)(i % (size_t)(oh ? od[a] : hd[a]));
        i /= (size_t)(oh ? od[a] : hd[a]);
      }
      if (oh)
        snprintf(at, sizeof at, "; worst o at head %lld, token %lld (b=%lld, d=%lld)", (long long)ix[2],
                 (long long)ix[1], (long long)ix[0], (long long)ix[3]);
      else
        snprintf(at, sizeof at, "; worst ht at head %lld (b=%lld, dk=%lld, dv=%lld)", (long long)ix[1],
                 (long long)ix[0], (long long)ix[2], (long long)ix[3]);
    }
    char cd[48] = "";
    if (C > 0) snprintf(cd, sizeof cd, D > 0 ? " C=%lld D=%lld" : " C=%lld", (long long)C, (long long)D);
    char kap[80] = "";
    if (json_is_object(kj))
      snprintf(kap, sizeof kap, ", kappa_G %.3g (channel %lld)", json_real_value(json_object_get(kj, "value")),
               (long long)json_integer_value(json_object_get(kj, "worst_channel")));
    fprintf(o->log, "  %-4s %s%s: o err %.3e, ht err %s%.3e (band %.3e)%s%s\n", pass ? "PASS" : "FAIL", subject, cd,
            eo.err, has_ht ? "" : "(not stored) ", eh.err, band, kap, at);
  }
  return GDN_OK;
}

/* One judged output set: x (ht NULL: not stored) against ref. */
static int judge(const parity_recur_check_opts *o, const char *subject, int64_t C, int64_t D, const gdn_outputs *x,
                 double band, double band_ht, json_t *kj, const gdn_outputs *ref, json_t *cases, int *failed,
                 gdn_error *e) {
  const gdn_shape *s = &ref->shape;
  const parity_recur_err eo = parity_recur_measure(x->o, ref->o, gdn_shape_numel_v(s));
  const parity_recur_err eh =
      x->ht ? parity_recur_measure(x->ht, ref->ht, gdn_shape_numel_state(s)) : (parity_recur_err){0, 0, 0, 0};
  return parity_recur_check_judge(o, subject, C, D, s, eo, eh, x->ht != NULL, band, band_ht, kj, cases, failed, e);
}

/* The row's kernel: token (C <= 0), chunked at C (D <= 0), affine at (C, D). */
static int run_kernel(const parity_recur_check_opts *o, const fix_fixture *fx, const gdn_outputs *ref, int64_t C,
                      int64_t D, json_t *cases, int *failed, gdn_error *e) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  if (C > 0) cfg.chunk = C;
  if (D > 0) cfg.devices = D;
  const parity_recurrence *r = o->rec;
  const parity_rec_kernel k = C <= 0 ? r->kern_token : D > 0 ? r->kern_affine : r->kern_chunked;
  const char *subject = C <= 0 ? r->token_subject : D > 0 ? r->affine_subject : r->chunked_subject;
  gdn_outputs out;
  gdn_outputs_init(&out);
  double band;
  json_t *kj = NULL;
  parity_kappa_ch kc;
  int rc = parity_recur_case_band(r, &fx->inputs, &fx->chgate, C, D, PARITY_RECUR_BAND_F32, &band, &kj, &kc, e);
  if (!rc) rc = k(&fx->inputs, &fx->chgate, &cfg, 0, &out, e);
  /* on bfloat16 inputs the kernels store o in bfloat16 (kern_output_dtype): its band; ht stays float32 */
  const double band_o = !rc && out.dtype == GDN_DTYPE_BF16 ? parity_recur_band_bf16(band) : band;
  if (!rc) rc = judge(o, subject, C, D, &out, band_o, band, kj, ref, cases, failed, e), kj = NULL;
  json_decref(kj);
  gdn_outputs_clear(&out);
  return rc;
}

/* The document's "oracle": the certificate, and where the reference came
 * from (a trusted dd /oracle: tier "dd" and the certificate it stored, as
 * GDN's check reports one). */
static json_t *oracle_json(const oracle_certificate *c, const parity_recur_trust *t, const fix_oracle *fo) {
  const int dd = t->trusted && fo->tier_dd;
  json_t *j = json_pack("{s:s, s:i, s:o, s:i, s:b}", "tier", dd ? "dd" : "mpfr", "precision_bits", c->precision_bits,
                        "check_bits", dd ? json_integer(fo->check_bits) : t->trusted ? json_null()
                                                                          : json_integer(c->check_bits),
                        "certified_bits", c->certified_bits, "from_fixture", t->trusted);
  if (j && dd &&
      (json_object_set_new(j, "normwise_bits", json_integer(fo->normwise_bits)) ||
       json_object_set_new(j, "guaranteed_bits", json_integer(fo->guaranteed_bits)) ||
       json_object_set_new(j, "sampled_columns", json_integer((json_int_t)fo->sampled_columns))))
    json_decref(j), j = NULL;
  if (j && t->trusted &&
      json_object_set_new(j, "spot_check", json_pack("{s:I, s:f}", "columns", (json_int_t)t->spot_columns, "rel",
                                                     t->spot_rel)))
    json_decref(j), j = NULL;
  if (j && !t->trusted && t->why[0] && json_object_set_new(j, "note", json_sprintf("stored /oracle not used: %s; "
                                                                                    "recomputed", t->why)))
    json_decref(j), j = NULL;
  return j;
}

json_t *parity_recur_check_doc_head(const parity_recur_check_opts *o, const gdn_shape *s, const char *inputs_sha256,
                                    int64_t chunk_size, const fix_oracle *fo, const oracle_certificate *c,
                                    const parity_recur_trust *t) {
  return json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:I, "
                   "s:o, s:[]}",
                   "schema", "gdn-parity-recurrence-check", "version", 1, "recurrence", o->rec->name, "gate_shape",
                   parity_gate_shape_name(o->rec->gate_shape), "fixture", o->name, "inputs_sha256", inputs_sha256,
                   "shape", "B", (json_int_t)s->B, "T", (json_int_t)s->T, "Hk", (json_int_t)s->Hk, "Hv",
                   (json_int_t)s->Hv, "Dk", (json_int_t)s->Dk, "Dv", (json_int_t)s->Dv, "chunk_size",
                   (json_int_t)chunk_size, "oracle", oracle_json(c, t, fo), "cases");
}

/* Every case: the kernels, then the fixture's outputs in file order. */
static int run_cases(const parity_recur_check_opts *o, const fix_fixture *fx, const gdn_outputs *ref, json_t *cases,
                     int *failed, gdn_error *e) {
  int64_t chunks[PARITY_RECUR_MAX_CHUNKS] = {fx->chunk_size}, devs[4];
  int nc = 1, nd = 0, rc;
  if (o->n_chunks) memcpy(chunks, o->chunks, sizeof chunks), nc = o->n_chunks;
  for (int i = 0; i < 4; i++)
    if (fx->inputs.shape.T % ((int64_t)1 << i) == 0) devs[nd++] = (int64_t)1 << i;
  const int64_t *dv = o->n_devices ? o->devices : devs;
  if (o->n_devices) nd = o->n_devices;
  if ((rc = run_kernel(o, fx, ref, 0, 0, cases, failed, e))) return rc;
  for (int i = 0; i < nc; i++) {
    if ((rc = run_kernel(o, fx, ref, chunks[i], 0, cases, failed, e))) return rc;
    for (int j = 0; j < nd; j++)
      if ((rc = run_kernel(o, fx, ref, chunks[i], dv[j], cases, failed, e))) return rc;
  }
  for (size_t i = 0; i < fx->n_outputs; i++) {
    const fix_output *x = &fx->outputs[i];
    char subject[512];
    snprintf(subject, sizeof subject, "output:%s", x->name);
    double band;
    json_t *kj = NULL;
    parity_kappa_ch kc;
    if ((rc = parity_recur_case_band(o->rec, &fx->inputs, &fx->chgate, fx->chunk_size, x->devices,
                                     PARITY_RECUR_BAND_F32, &band, &kj, &kc, e)))
      return rc;
    const double band_o = x->out.dtype == GDN_DTYPE_BF16 ? parity_recur_band_bf16(band) : band;
    if ((rc = judge(o, subject, 0, x->devices, &x->out, band_o, band, kj, ref, cases, failed, e))) return rc;
  }
  return GDN_OK;
}

/* The row's oracle of fx, a step of the progress line advancing inside it
 * (minutes at a layer's length). */
static int oracle_with_line(const parity_recur_check_opts *o, const fix_fixture *fx, oracle_config *oc,
                            gdn_outputs *ref, oracle_certificate *cert, gdn_error *e) {
  oracle_progress op;
  oc->progress = parity_recur_step_begin(o->progress, o->name, "oracle (mpfr)", "", &op);
  const int rc = o->rec->oracle(&fx->inputs, &fx->chgate, oc, ref, cert, e);
  oc->progress = NULL;
  parity_recur_step_end(o->progress);
  return rc;
}

int parity_recur_check(const parity_recur_check_opts *o, fix_fixture *fx, json_t **doc, int *pass,
                       gdn_error *e) {
  *doc = NULL;
  *pass = 0;
  gdn_outputs ref;
  gdn_outputs_init(&ref);
  oracle_config oc;
  oracle_config_init(&oc);
  oc.prec = o->oracle_bits;
  oracle_certificate cert;
  memset(&cert, 0, sizeof cert);
  json_t *d = NULL;
  parity_recur_trust t;
  parity_recur_grad_stored sg; /* decided first: a stored set not taken is freed before anything runs */
  int failed = 0, judged = 0, rc = parity_recur_oracle_trust(o, fx, &t, e);
  if (!rc) rc = parity_recur_check_grads_decide(o, fx, t.trusted, &sg, &judged, e);
  if (rc) goto done;
  if (t.trusted) {
    cert.precision_bits = (int)fx->oracle.precision_bits;
    cert.certified_bits = (int)fx->oracle.certified_bits;
  } else if ((rc = oracle_with_line(o, fx, &oc, &ref, &cert, e))) {
    goto done;
  }
  if (o->log && t.why[0])
    fprintf(o->log, "%s: warning: the stored /oracle is not used (%s); computing a fresh one\n", o->name, t.why);
  if (o->log)
    fprintf(o->log, "%s: recurrence %s (gate %s): oracle %s %d bits, certified %d bits%s\n", o->name,
            o->rec->name, parity_gate_shape_name(o->rec->gate_shape), t.trusted && fx->oracle.tier_dd ? "dd" : "mpfr",
            cert.precision_bits, cert.certified_bits,
            t.trusted ? " (the fixture's /oracle, spot-checked)" : "");
  const gdn_outputs *rf = t.trusted ? &fx->oracle.out : &ref;
  if (!(d = parity_recur_check_doc_head(o, &fx->inputs.shape, fx->inputs_sha256, fx->chunk_size, &fx->oracle, &cert,
                                        &t))) {
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
    goto done;
  }
  json_t *cases = json_object_get(d, "cases");
  if ((rc = run_cases(o, fx, rf, cases, &failed, e))) goto done;
  *pass = failed == 0;
  if (json_object_set_new(d, "n_cases", json_integer((json_int_t)json_array_size(cases))) ||
      json_object_set_new(d, "n_failed", json_integer(failed)) || json_object_set_new(d, "pass", json_boolean(*pass)))
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  if (!rc && judged) rc = parity_recur_check_grads(o, fx, &sg, d, pass, e); /* stored gradients, if any */
done:
  gdn_outputs_clear(&ref);
  if (rc) {
    json_decref(d);
    *pass = 0;
    return rc;
  }
  *doc = d;
  return GDN_OK;
}
