/* A recurrence row's backward judged against its VJP oracle
 * (parity_recur_grad.h). */
#include "parity_recur_grad.h"

#include <math.h>
#include <string.h>

#include "gdn_chgrads.h"
#include "gdn_synth.h"
#include "kern_config.h"
#include "parity_oracle.h"
#include "parity_recur_mode_band.h"

static size_t numel(const gdn_shape *s, int per_channel, gdn_grad_id id) {
  return per_channel ? gdn_chgrads_numel(s, id) : gdn_grads_numel(s, id);
}


int parity_recur_grad_judge(const gdn_grads *x, const gdn_grads *r, const gdn_shape *s, int per_channel, double band,
                            double err[GDN_GRADS_N]) {
  int pass = 1;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    err[id] = parity_recur_measure(gdn_grads_tensor_c(x, (gdn_grad_id)id), gdn_grads_tensor_c(r, (gdn_grad_id)id),
                                   numel(s, per_channel, (gdn_grad_id)id)).err;
    if (!(err[id] <= band)) pass = 0;
  }
  return pass;
}

static json_t *err_json(parity_recur_err m) {
  return json_pack("{s:f, s:f, s:f}", "err", isfinite(m.err) ? m.err : 1e308, "max_abs_err",
                   isfinite(m.max_abs) ? m.max_abs : 1e308, "max_ref", m.max_ref);
}

/* One kernel backward judged: the token loop's (C <= 0), the chunked
 * kernel's at chunk C (D <= 0) or the affine-prefix's at (C, D); a case
 * object appended to cases. */
static int run_case(const parity_recur_opts *o, int vjp_mutant, const gdn_inputs *in, const gdn_chgate *gate,
                    const gdn_cotangents *ct, const gdn_grads *ref, int64_t C, int64_t D, json_t *cases, int *failed,
                    gdn_error *e) {
  kern_config cfg;
  parity_recur_kern_config(o, C, D, &cfg);
  gdn_grads x;
  gdn_grads_init(&x);
  const parity_recurrence *rec = o->rec;
  const parity_rec_kernel_vjp k = C <= 0 ? rec->kern_token_vjp : D > 0 ? rec->kern_affine_vjp : rec->kern_chunked_vjp;
  double band; /* the forward's float32 band for the case (parity_recur_case_band), then the mode's */
  json_t *kj = NULL;
  parity_kappa_ch kc;
  int rc = parity_recur_case_band(rec, in, gate, C, parity_recur_kappa_devices(o, D), o->band, &band, &kj, &kc, e);
  if (!rc && (rc = k(in, gate, ct, &cfg, vjp_mutant, &x, e))) json_decref(kj);
  if (rc) return rc;
  band = parity_recur_mode_band_grad(o->dtype, o->matmul, band);
  const int pc = rec->gate_shape == PARITY_GATE_HEAD_TOKEN_CHANNEL;
  parity_recur_err m[GDN_GRADS_N];
  for (int id = 0; id < GDN_GRADS_N; id++)
    m[id] = parity_recur_measure(gdn_grads_tensor_c(&x, (gdn_grad_id)id), gdn_grads_tensor_c(ref, (gdn_grad_id)id),
                                 numel(&in->shape, pc, (gdn_grad_id)id));
  gdn_grads_clear(&x);
  return parity_recur_grad_case_record(o, C, D, m, band, kj, cases, failed, e);
}

int parity_recur_grad_case_record(const parity_recur_opts *o, int64_t C, int64_t D,
                                  const parity_recur_err m[GDN_GRADS_N], double band, json_t *kj, json_t *cases,
                                  int *failed, gdn_error *e) {
  const parity_recurrence *rec = o->rec;
  const char *subject = C <= 0 ? rec->token_subject : D > 0 ? rec->affine_subject : rec->chunked_subject;
  json_t *c = json_pack("{s:s, s:o, s:o}", "subject", subject, "chunk", C > 0 ? json_integer(C) : json_null(),
                        "devices", D > 0 ? json_integer(D) : json_null());
  if (c && kj &&
      (json_object_set_new(c, "kappa_g", kj) || json_object_set_new(c, "band", json_real(isfinite(band) ? band : 0))))
    c = (json_decref(c), NULL);
  else if (!c)
    json_decref(kj);
  int pass = 1;
  char line[512];
  size_t at = 0;
  line[0] = 0;
  for (int id = 0; c && id < GDN_GRADS_N; id++) {
    if (!(m[id].err <= band)) pass = 0;
    json_object_set_new(c, gdn_grads_name((gdn_grad_id)id), err_json(m[id]));
    if (at < sizeof line)
      at += (size_t)snprintf(line + at, sizeof line - at, "%s %s %.3e", id ? "," : "", gdn_grads_name((gdn_grad_id)id),
                             m[id].err);
  }
  if (!c || json_object_set_new(c, "pass", json_boolean(pass)) || json_array_append_new(cases, c))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  if (!pass) ++*failed;
  if (o->log) {
    char where[48] = "";
    if (C > 0) snprintf(where, sizeof where, D > 0 ? " C=%lld D=%lld" : " C=%lld", (long long)C, (long long)D);
    fprintf(o->log, "  %-4s %s%s backward:%s (band %.3e)\n", pass ? "PASS" : "FAIL", subject, where, line, band);
  }
  return GDN_OK;
}

/* The token loop's backward, then at each chunk size the chunked kernel's
 * and the affine-prefix's at each device count (the forward sweep's cases;
 * a row without a chunked backward: the token loop's only). */
static int run_cases(const parity_recur_opts *o, int vjp_mutant, const gdn_inputs *in, const gdn_chgate *gate,
                     const gdn_cotangents *ct, const gdn_grads *ref, json_t *cases, int *failed, gdn_error *e) {
  int rc = run_case(o, vjp_mutant, in, gate, ct, ref, 0, 0, cases, failed, e);
  for (int i = 0; !rc && o->rec->kern_chunked_vjp && i < o->n_chunks; i++) {
    rc = run_case(o, vjp_mutant, in, gate, ct, ref, o->chunks[i], 0, cases, failed, e);
    for (int j = 0; !rc && o->rec->kern_affine_vjp && j < o->n_devices; j++)
      rc = run_case(o, vjp_mutant, in, gate, ct, ref, o->chunks[i], o->devices[j], cases, failed, e);
  }
  return rc;
}

/* The VJP oracle's tier and certificate, for the document and the log. */
typedef struct grad_cert {
  int dd;
  oracle_vjp_certificate mp;
  oracle_vjp_dd_certificate d;
} grad_cert;

/* The reference gradients: the row's VJP oracle in the tier asked for
 * (--oracle dd; auto: parity_oracle_resolve_grads, dd where the MPFR VJP's
 * cost is over the threshold), certified. */
static int run_vjp_oracle(const parity_recur_opts *o, const gdn_inputs *in, const gdn_chgate *gate,
                          const gdn_cotangents *ct, gdn_grads *ref, grad_cert *c, gdn_error *e) {
  memset(c, 0, sizeof *c);
  const parity_oracle_tier asked = o->dd ? PARITY_ORACLE_DD : o->oracle_auto ? PARITY_ORACLE_AUTO : PARITY_ORACLE_MPFR;
  c->dd = o->rec->oracle_vjp_dd && parity_oracle_resolve_grads(asked, &in->shape, o->oracle_bits) == PARITY_ORACLE_DD;
  if (c->dd) {
    oracle_vjp_dd_config dc;
    oracle_vjp_dd_config_init(&dc);
    dc.sample_prec = o->oracle_bits;
    dc.sample_columns = PARITY_ORACLE_DD_SAMPLE;
    return o->rec->oracle_vjp_dd(in, gate, ct, &dc, ref, &c->d, e);
  }
  oracle_vjp_config vc;
  oracle_vjp_config_init(&vc);
  vc.prec = o->oracle_bits;
  return o->rec->oracle_vjp(in, gate, ct, &vc, ref, &c->mp, e);
}

static json_t *grad_oracle_json(const grad_cert *c) {
  const int *per = c->dd ? c->d.certified : c->mp.certified;
  json_t *bits = json_object();
  for (int id = 0; bits && id < GDN_GRADS_N; id++)
    json_object_set_new(bits, gdn_grads_name((gdn_grad_id)id), json_integer(per[id]));
  if (!c->dd)
    return json_pack("{s:s, s:i, s:i, s:i, s:o}", "tier", "mpfr", "precision_bits", c->mp.precision_bits,
                     "check_bits", c->mp.check_bits, "certified_bits", c->mp.certified_bits, "certified", bits);
  return json_pack("{s:s, s:i, s:i, s:i, s:o, s:i, s:I, s:I}", "tier", "dd", "precision_bits", c->d.precision_bits,
                   "check_bits", c->d.check_bits, "certified_bits", c->d.certified_bits, "certified", bits,
                   "normwise_bits", c->d.normwise_bits, "sampled_columns", (json_int_t)c->d.sampled_columns,
                   "total_columns", (json_int_t)c->d.total_columns);
}

json_t *parity_recur_grad_head(const parity_recur_opts *o, int vjp_mutant, const oracle_vjp_certificate *mp,
                               const oracle_vjp_dd_certificate *dd) {
  grad_cert c = {dd != NULL, {0}, {0}};
  if (dd) c.d = *dd;
  else c.mp = *mp;
  const grad_cert *cert = &c;
  const char *why = parity_recur_mode_band_reason(o->dtype, o->matmul, 1);
  json_t *h = json_pack("{s:o, s:{s:I, s:b}, s:f, s:s, s:s?, s:[]}", "oracle", grad_oracle_json(cert), "cotangents",
                        "seed", (json_int_t)o->seed, "dht", 1, "band", o->band, "vjp_mutant",
                        o->rec->vjp_mutants[vjp_mutant], "chunked_backward",
                        o->rec->kern_chunked_vjp ? o->rec->chunked_vjp_form : o->rec->chunked_vjp_absent, "cases");
  if (h && why && json_object_set_new(h, "band_reason", json_string(why))) /* the mode moved the band: why */
    h = (json_decref(h), NULL);
  return h;
}

/* g attached to doc (which takes it) and doc's counts updated with the
 * backward's. */
int parity_recur_grad_counts(json_t *doc, json_t *g, int gfailed, int *pass, gdn_error *e) {
  const json_int_t nc = json_integer_value(json_object_get(doc, "n_cases")),
                   nf = json_integer_value(json_object_get(doc, "n_failed"));
  const size_t gn = json_array_size(json_object_get(g, "cases"));
  *pass = *pass && gfailed == 0;
  if (json_object_set_new(doc, "grad", g) || /* doc owns g from here, even on failure */
      json_object_set_new(g, "n_cases", json_integer((json_int_t)gn)) ||
      json_object_set_new(g, "n_failed", json_integer(gfailed)) ||
      json_object_set_new(g, "pass", json_boolean(gfailed == 0)) ||
      json_object_set_new(doc, "n_cases", json_integer(nc + (json_int_t)gn)) ||
      json_object_set_new(doc, "n_failed", json_integer(nf + gfailed)) ||
      json_object_set_new(doc, "pass", json_boolean(*pass)))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  return GDN_OK;
}

int parity_recur_grad_attach(const parity_recur_opts *o, int vjp_mutant, json_t *doc, int *pass, gdn_error *e) {
  const parity_recurrence *rec = o->rec;
  if (!rec->oracle_vjp || !rec->kern_token_vjp)
    return gdn_error_set(e, GDN_ERR_INPUT, "--grad: --recurrence %s has no token-loop backward in this sweep",
                         rec->name);
  gdn_inputs in;
  gdn_chgate gate;
  gdn_cotangents ct;
  gdn_grads ref;
  gdn_inputs_init(&in);
  gdn_chgate_init(&gate);
  gdn_cotangents_init(&ct);
  gdn_grads_init(&ref);
  json_t *g = NULL;
  gdn_synth_opts so = {o->seed, o->h0 ? GDN_SYNTH_H0 : 0u, 0};
  grad_cert cert;
  int rc, failed = 0;
  if ((rc = gdn_synth_generate(&in, &o->shape, &so, e)) || (rc = rec->draw_gate(&in, o->seed, &gate, e)) ||
      (rc = gdn_cotangents_alloc(&ct, &in.shape, 1, e)))
    goto done;
  gdn_cotangents_synth(&ct, o->seed);
  if ((rc = run_vjp_oracle(o, &in, &gate, &ct, &ref, &cert, e))) goto done;
  if (o->log)
    fprintf(o->log, "recurrence %s backward: oracle VJP %s %d bits, certified %d bits%s%s\n", rec->name,
            cert.dd ? "dd" : "mpfr", cert.dd ? cert.d.precision_bits : cert.mp.precision_bits,
            cert.dd ? cert.d.certified_bits : cert.mp.certified_bits,
            rec->kern_chunked_vjp ? (rec->chunked_vjp_form ? "; chunked backward: " : "") : "; ",
            rec->kern_chunked_vjp ? (rec->chunked_vjp_form ? rec->chunked_vjp_form : "") : rec->chunked_vjp_absent);
  if (!(g = parity_recur_grad_head(o, vjp_mutant, cert.dd ? NULL : &cert.mp, cert.dd ? &cert.d : NULL))) {
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
    goto done;
  }
  if ((rc = run_cases(o, vjp_mutant, &in, &gate, &ct, &ref, json_object_get(g, "cases"), &failed, e))) goto done;
  rc = parity_recur_grad_counts(doc, g, failed, pass, e);
  g = NULL; /* doc holds it (or merge failed after taking it) */
done:
  json_decref(g);
  gdn_grads_clear(&ref);
  gdn_cotangents_clear(&ct);
  gdn_chgate_clear(&gate);
  gdn_inputs_clear(&in);
  return rc;
}
