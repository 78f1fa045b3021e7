/* A recurrence row's forward sweep (parity_recur_sweep.h). */
#include "parity_recur_sweep.h"

#include <math.h>
#include <string.h>

#include "gdn_synth.h"
#include "kern_config.h"
#include "parity_recur_mode_band.h"
#include "parity_kappa_ch.h"

void parity_recur_opts_init(parity_recur_opts *o, const parity_recurrence *rec) {
  memset(o, 0, sizeof *o);
  o->rec = rec;
  o->chunks[0] = 64;
  o->n_chunks = 1;
  for (int i = 0; i < 4; i++) o->devices[i] = (int64_t)1 << i;
  o->n_devices = 4;
  o->oracle_bits = 128;
  o->band = PARITY_RECUR_BAND_F32;
  o->dtype = GDN_DTYPE_F32;
  o->matmul = KERN_MATMUL_IEEE;
}

parity_recur_err parity_recur_measure(const double *x, const double *r, size_t n) {
  parity_recur_err m = {0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    const double d = fabs(x[i] - r[i]);
    if (!(d == d)) {
      if (m.max_abs != INFINITY) m.at = i;
      m.max_abs = INFINITY;
    } else if (d > m.max_abs) {
      m.max_abs = d;
      m.at = i;
    }
    if (fabs(r[i]) > m.max_ref) m.max_ref = fabs(r[i]);
  }
  m.err = m.max_ref > 0 ? m.max_abs / m.max_ref : m.max_abs > 0 ? INFINITY : 0;
  return m;
}

static json_t *err_json(parity_recur_err m) {
  return json_pack("{s:f, s:f, s:f}", "err", isfinite(m.err) ? m.err : 1e308, "max_abs_err",
                   isfinite(m.max_abs) ? m.max_abs : 1e308, "max_ref", m.max_ref);
}

int parity_recur_case_band(const parity_recurrence *rec, const gdn_inputs *in, const gdn_chgate *gate, int64_t C,
                           int64_t D, double fixed, double *band, json_t **kj, parity_kappa_ch *kc, gdn_error *e) {
  *kc = (parity_kappa_ch){0, 0, 0, 0, 0};
  if (rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL && C > 0) {
    const int rc = parity_kappa_channels(in, gate, C, D > 0 ? D : 1, kc, e);
    if (rc) return (*kj = NULL, *band = fixed, rc);
  }
  return parity_recur_band_of(rec, C, kc, fixed, band, kj, e);
}

int parity_recur_band_of(const parity_recurrence *rec, int64_t C, const parity_kappa_ch *kc, double fixed,
                         double *band, json_t **kj, gdn_error *e) {
  *kj = NULL;
  *band = fixed;
  if (rec->gate_shape != PARITY_GATE_HEAD_TOKEN_CHANNEL) return GDN_OK;
  if (C > 0)
    *kj = json_pack("{s:I, s:f, s:f, s:f, s:f}", "worst_channel", (json_int_t)kc->worst_d, "value",
                    isfinite(kc->worst) ? kc->worst : 1e308, "o", isfinite(kc->worst_o) ? kc->worst_o : 1e308, "ht",
                    isfinite(kc->worst_ht) ? kc->worst_ht : 1e308, "median_channel",
                    isfinite(kc->median) ? kc->median : 1e308);
  else
    *kj = json_null();
  if (!*kj) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  *band = 0x1p-24 * (PARITY_RECUR_KAPPA_C * (C > 0 ? kc->worst : 0) + PARITY_RECUR_KAPPA_F);
  return GDN_OK;
}

void parity_recur_kern_config(const parity_recur_opts *o, int64_t C, int64_t D, kern_config *cfg) {
  kern_config_init(cfg);
  if (C > 0) cfg->chunk = C;
  if (D > 0) cfg->devices = D;
  cfg->prefix = o->prefix;
  cfg->shard = o->shard;
  cfg->dtype = o->dtype;
  cfg->matmul = o->matmul;
  cfg->ftz = o->ftz;
  cfg->solve = o->solve;
}

int64_t parity_recur_kappa_devices(const parity_recur_opts *o, int64_t D) {
  return o->shard == KERN_SHARD_CHUNKS ? 0 : D;
}

/* One case: the token kernel (C <= 0), the chunked kernel at chunk C
 * (D <= 0) or the affine-prefix at (C, D), judged. */
static int run_case(const parity_recur_opts *o, const gdn_inputs *in, const gdn_chgate *gate,
                    const gdn_outputs *ref, int64_t C, int64_t D, json_t *cases, int *failed, gdn_error *e) {
  kern_config cfg;
  parity_recur_kern_config(o, C, D, &cfg);
  gdn_outputs out;
  gdn_outputs_init(&out);
  const parity_rec_kernel k = C <= 0 ? o->rec->kern_token : D > 0 ? o->rec->kern_affine : o->rec->kern_chunked;
  int rc = k(in, gate, &cfg, o->mutant, &out, e);
  if (rc) return rc;
  const gdn_shape *s = &in->shape;
  const parity_recur_err eo = parity_recur_measure(out.o, ref->o, gdn_shape_numel_v(s));
  const parity_recur_err eh = parity_recur_measure(out.ht, ref->ht, gdn_shape_numel_state(s));
  gdn_outputs_clear(&out);
  json_t *kj = NULL;
  parity_kappa_ch kc = {0, 0, 0, 0, 0};
  double band;
  if ((rc = parity_recur_case_band(o->rec, in, gate, C, parity_recur_kappa_devices(o, D), o->band, &band, &kj, &kc,
                                   e)))
    return rc;
  band = parity_recur_mode_band(o->dtype, o->matmul, band);
  return parity_recur_case_record(o, C, D, eo, eh, band, kj, &kc, cases, failed, e);
}

int parity_recur_case_record(const parity_recur_opts *o, int64_t C, int64_t D, parity_recur_err eo,
                             parity_recur_err eh, double band, json_t *kj, const parity_kappa_ch *kcp, json_t *cases,
                             int *failed, gdn_error *e) {
  const parity_kappa_ch kc = *kcp;
  const int per_channel = kj != NULL;
  const int pass = eo.err <= band && eh.err <= band; /* a NaN kappa: a NaN band, and the case fails */
  const char *subject = C <= 0 ? o->rec->token_subject : D > 0 ? o->rec->affine_subject : o->rec->chunked_subject;
  json_t *c = json_pack("{s:s, s:o, s:o, s:o, s:o, s:b}", "subject", subject, "chunk",
                        C > 0 ? json_integer(C) : json_null(), "devices", D > 0 ? json_integer(D) : json_null(),
                        "o", err_json(eo), "ht", err_json(eh), "pass", pass);
  if (c && per_channel &&
      (json_object_set_new(c, "kappa_g", kj) || json_object_set_new(c, "band", json_real(isfinite(band) ? band : 0))))
    c = (json_decref(c), NULL);
  else if (!c)
    json_decref(kj);
  if (!c || json_array_append_new(cases, c)) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  if (!pass) ++*failed;
  if (o->log) {
    char chunk[48] = "";
    if (C > 0) snprintf(chunk, sizeof chunk, D > 0 ? " C=%lld D=%lld" : " C=%lld", (long long)C, (long long)D);
    char kap[80] = "";
    if (C > 0 && per_channel)
      snprintf(kap, sizeof kap, ", kappa_G %.3g (channel %lld)", kc.worst, (long long)kc.worst_d);
    fprintf(o->log, "  %-4s %s%s: o err %.3e, ht err %.3e (band %.3e)%s\n", pass ? "PASS" : "FAIL", subject, chunk,
            eo.err, eh.err, band, kap);
  }
  return GDN_OK;
}

json_t *parity_recur_doc_head(const parity_recur_opts *o, const parity_recur_cert *c) {
  const gdn_shape *s = &o->shape;
  json_t *oracle = json_pack("{s:s, s:i, s:i, s:i}", "tier", c->tier, "precision_bits", c->precision_bits,
                             "check_bits", c->check_bits, "certified_bits", c->certified_bits);
  if (oracle && o->dd) {
    json_object_set_new(oracle, "normwise_bits", json_integer(c->normwise_bits));
    json_object_set_new(oracle, "sampled_columns", json_integer((json_int_t)c->sampled_columns));
  }
  return json_pack("{s:s, s:i, s:s, s:s, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:I, s:b, s:s, s:o, s:f, s:[]}",
                   "schema", "gdn-parity-recurrence", "version", 1, "recurrence", o->rec->name, "gate_shape",
                   parity_gate_shape_name(o->rec->gate_shape), "shape", "B", (json_int_t)s->B, "T",
                   (json_int_t)s->T, "Hk", (json_int_t)s->Hk, "Hv", (json_int_t)s->Hv, "Dk", (json_int_t)s->Dk,
                   "Dv", (json_int_t)s->Dv, "seed", (json_int_t)o->seed, "h0", o->h0, "mutant",
                   o->rec->mutants[o->mutant], "oracle", oracle, "band", o->band, "cases");
}

/* The reference: the row's oracle in the tier asked for, certified. */
static int run_oracle(const parity_recur_opts *o, const gdn_inputs *in, const gdn_chgate *gate, gdn_outputs *ref,
                      parity_recur_cert *c, gdn_error *e) {
  memset(c, 0, sizeof *c);
  int rc;
  if (o->dd) {
    oracle_dd_config dc;
    oracle_dd_config_init(&dc);
    dc.sample_prec = o->oracle_bits;
    oracle_dd_certificate dcert;
    if ((rc = o->rec->oracle_dd(in, gate, &dc, ref, &dcert, e))) return rc;
    *c = (parity_recur_cert){"dd", dcert.precision_bits, dcert.check_bits, dcert.certified_bits, dcert.normwise_bits,
                      dcert.sampled_columns};
    return GDN_OK;
  }
  oracle_config oc;
  oracle_config_init(&oc);
  oc.prec = o->oracle_bits;
  oracle_certificate cert;
  if ((rc = o->rec->oracle(in, gate, &oc, ref, &cert, e))) return rc;
  *c = (parity_recur_cert){"mpfr", cert.precision_bits, cert.check_bits, cert.certified_bits, 0, 0};
  return GDN_OK;
}

int parity_recur_doc_finish(json_t *d, int failed, int *pass, gdn_error *e) {
  const size_t n = json_array_size(json_object_get(d, "cases"));
  *pass = failed == 0;
  if (json_object_set_new(d, "n_cases", json_integer((json_int_t)n)) ||
      json_object_set_new(d, "n_failed", json_integer(failed)) || json_object_set_new(d, "pass", json_boolean(*pass)))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  return GDN_OK;
}

int parity_recur_sweep(const parity_recur_opts *o, json_t **doc, int *pass, gdn_error *e) {
  *doc = NULL;
  *pass = 0;
  gdn_inputs in;
  gdn_chgate gate;
  gdn_outputs ref;
  gdn_inputs_init(&in);
  gdn_chgate_init(&gate);
  gdn_outputs_init(&ref);
  json_t *d = NULL;
  gdn_synth_opts so = {o->seed, o->h0 ? GDN_SYNTH_H0 : 0u, 0};
  parity_recur_cert cert;
  int rc, failed = 0;
  if ((rc = gdn_synth_generate(&in, &o->shape, &so, e)) || (rc = o->rec->draw_gate(&in, o->seed, &gate, e)) ||
      (rc = run_oracle(o, &in, &gate, &ref, &cert, e)))
    goto done;
  if (o->log)
    fprintf(o->log, "recurrence %s (gate %s): oracle %s %d bits, certified %d bits\n", o->rec->name,
            parity_gate_shape_name(o->rec->gate_shape), cert.tier, cert.precision_bits, cert.certified_bits);
  if (!(d = parity_recur_doc_head(o, &cert))) {
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
    goto done;
  }
  json_t *cases = json_object_get(d, "cases");
  if ((rc = run_case(o, &in, &gate, &ref, 0, 0, cases, &failed, e))) goto done;
  for (int i = 0; i < o->n_chunks; i++) {
    if ((rc = run_case(o, &in, &gate, &ref, o->chunks[i], 0, cases, &failed, e))) goto done;
    for (int j = 0; j < o->n_devices; j++)
      if ((rc = run_case(o, &in, &gate, &ref, o->chunks[i], o->devices[j], cases, &failed, e))) goto done;
  }
  rc = parity_recur_doc_finish(d, failed, pass, e);
done:
  gdn_outputs_clear(&ref);
  gdn_chgate_clear(&gate);
  gdn_inputs_clear(&in);
  if (rc) {
    json_decref(d);
    *pass = 0;
    return rc;
  }
  *doc = d;
  return GDN_OK;
}
