#include "parity_json.h"

#include <math.h>
#include <string.h>

json_t *parity_json_real(double x) {
  if (isnan(x)) return json_string("nan");
  if (isinf(x)) return json_string(x > 0 ? "inf" : "-inf");
  return json_real(x);
}

int parity_json_set(json_t *obj, const char *key, json_t *v) {
  if (!v) return -1;
  return json_object_set_new(obj, key, v);
}

json_t *parity_json_shape(const gdn_shape *s) {
  return json_pack("{sIsIsIsIsIsI}", "B", (json_int_t)s->B, "T", (json_int_t)s->T, "Hk",
                   (json_int_t)s->Hk, "Hv", (json_int_t)s->Hv, "Dk", (json_int_t)s->Dk, "Dv",
                   (json_int_t)s->Dv);
}

json_t *parity_json_tensor_metrics(const parity_metrics *m, const parity_tensor *t) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= parity_json_set(o, "max_abs", parity_json_real(m->max_abs));
  bad |= parity_json_set(o, "rel_fro", parity_json_real(m->rel_fro));
  bad |= parity_json_set(o, "max_ulp", parity_json_real(m->max_ulp));
  bad |= parity_json_set(o, "median_ulp", parity_json_real(m->median_ulp));
  bad |= parity_json_set(o, "max_rel", parity_json_real(m->max_rel));
  bad |= parity_json_set(o, "rel_floor", parity_json_real(m->rel_floor));
  bad |= parity_json_set(o, "ref_max_abs", parity_json_real(m->ref_max_abs));
  bad |= parity_json_set(o, "zero_ref", json_integer(m->zero_ref));
  bad |= parity_json_set(o, "nonfinite", json_integer(m->nonfinite));
  bad |= parity_json_set(o, "n", json_integer(m->n));
  if (t->grad) { /* gradient rows only: the per-token error (forward keys unchanged) */
    bad |= parity_json_set(o, "row_rel", parity_json_real(m->row_rel));
    bad |= parity_json_set(o, "row_worst", json_integer((json_int_t)m->row_worst));
  }
  json_t *w = json_object();
  for (int k = 0; w && k < 4; k++)
    bad |= parity_json_set(w, t->index_names[k], json_integer((json_int_t)m->worst[k]));
  bad |= parity_json_set(o, "worst", w);
  if (m->nonfinite) { /* NaN or inf in the tensor judged: where the first one is */
    json_t *f = json_object();
    for (int k = 0; f && k < 4; k++)
      bad |= parity_json_set(f, t->index_names[k], json_integer((json_int_t)m->nonfinite_at[k]));
    bad |= parity_json_set(o, "first_nonfinite", f);
  }
  if (m->n_blocks) {
    /* the localized statistic: the worst block's index ranges [lo, hi) per axis */
    bad |= parity_json_set(o, "block_rel", parity_json_real(m->block_rel));
    json_t *wb = json_object();
    for (int k = 0; wb && k < 4; k++)
      bad |= parity_json_set(wb, t->index_names[k], json_pack("[II]", (json_int_t)m->block_lo[k], (json_int_t)m->block_hi[k]));
    bad |= parity_json_set(o, "worst_block", wb);
    bad |= parity_json_set(o, "elem_rel", parity_json_real(m->elem_rel));
    json_t *ea = json_object();
    for (int k = 0; ea && k < 4; k++)
      bad |= parity_json_set(ea, t->index_names[k], json_integer((json_int_t)m->elem_at[k]));
    bad |= parity_json_set(o, "elem_rel_at", ea);
    json_t *ra = json_object();
    for (int k = 0; ra && k < 4; k++)
      bad |= parity_json_set(ra, t->index_names[k], json_integer((json_int_t)m->rel_at[k]));
    bad |= parity_json_set(o, "max_rel_at", ra);
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *parity_json_metrics(const parity_metrics *m, int o_like) {
  return parity_json_tensor_metrics(m, &parity_tensors[o_like ? PARITY_T_O : PARITY_T_HT]);
}

/* [elem(x, 0), ..., elem(x, n - 1)], or NULL (and nothing leaked) when
 * jansson runs out of memory. */
static json_t *array_of(const void *x, size_t n, json_t *(*elem)(const void *x, size_t i)) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, elem(x, i))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

static json_t *real_at(const void *x, size_t i) { return parity_json_real(((const double *)x)[i]); }
static json_t *int_at(const void *x, size_t i) { return json_integer(((const int64_t *)x)[i]); }
static json_t *real_array(const double *x, size_t n) { return array_of(x, n, real_at); }
static json_t *int_array(const int64_t *x, size_t n) { return array_of(x, n, int_at); }

/* {"o": METRICS, "ht": METRICS, ...} over the tensor rows in `mask`. */
static json_t *tensors_json(const parity_metrics *m, unsigned mask) {
  json_t *o = json_object();
  for (int t = 0; o && t < PARITY_T_N; t++)
    if ((mask & (1u << t)) && parity_json_set(o, parity_tensors[t].name, parity_json_tensor_metrics(&m[t], &parity_tensors[t]))) {
      json_decref(o);
      return NULL;
    }
  return o;
}

/* impls: every subject measured against the reference; a judged subject
 * (an external output) adds its own verdict and its attributes. */
static json_t *impls_json(const parity_case_result *r) {
  json_t *impls = json_object();
  int bad = !impls;
  for (size_t i = 0; impls && r->has_ref && i < r->n_subjects; i++) {
    const parity_subject_result *s = &r->subjects[i];
    if (s->other_case) continue; /* judged in the case of its own device count */
    json_t *j = tensors_json(s->vs_ref, s->has_vs_ref);
    if (j && s->role == PARITY_ROLE_JUDGED) {
      bad |= parity_json_set(j, "pass", json_boolean(s->pass));
      if (!(s->has_vs_ref & (1u << PARITY_T_HT))) { /* the verdict says what it rests on */
        /* parity_padding.h: an ht under packing that declares no state is not judged */
        const char *fs = json_string_value(json_object_get(s->attrs, "final_state_judged"));
        bad |= parity_json_set(j, "judged_on",
                               fs && !strncmp(fs, "ht not judged", 13)
                                   ? json_string("o alone: its ht is not judged (attrs final_state_judged)")
                                   : json_string("o alone: the output has no final state"));
      }
      if (s->attrs) bad |= json_object_set(j, "attrs", (json_t *)s->attrs);
    }
    bad |= parity_json_set(impls, s->name, j);
  }
  if (bad) json_decref(impls);
  return bad ? NULL : impls;
}

/* The error model's figures of a check (parity_policy.h): the metric's own
 * value, lambda, and for the deciding item its error in standard errors of
 * the model (sigmas) and as a multiple of its model bound (bound_multiple);
 * a normwise check also the model's bound and whether it set the limit. */
static json_t *model_json(const parity_check *k) {
  json_t *j = json_object();
  if (!j) return NULL;
  int bad = parity_json_set(j, "raw_value", parity_json_real(k->model_raw));
  bad |= parity_json_set(j, "lambda", parity_json_real(k->model_lambda));
  bad |= parity_json_set(j, "sigmas", parity_json_real(k->model_sig));
  bad |= parity_json_set(j, "bound_multiple", parity_json_real(k->model_ratio));
  if (k->rule->metric == PARITY_M_REL_FRO) {
    bad |= parity_json_set(j, "bound", parity_json_real(k->model_bound));
    bad |= parity_json_set(j, "widened", json_boolean(k->model_widened));
  }
  if (bad) json_decref(j);
  return bad ? NULL : j;
}

static json_t *check_json(const parity_check *k) {
  json_t *jc = json_pack("{sssssssssssb}", "name", k->name, "rule", k->rule->id, "subject", k->subject,
                         "tensor", parity_tensors[__builtin_ctz((unsigned)k->tensor)].name, "metric",
                         parity_metric_name(k->rule->metric), "pass", k->pass);
  if (!jc) return NULL;
  int bad = 0;
  bad |= parity_json_set(jc, "value", parity_json_real(k->value));
  bad |= parity_json_set(jc, "limit", parity_json_real(k->limit));
  bad |= parity_json_set(jc, "factor_reached", parity_json_real(k->factor_reached));
  if (k->where[0]) bad |= parity_json_set(jc, "where", json_string(k->where));
  if (k->nonfinite) bad |= parity_json_set(jc, "nonfinite", json_integer((json_int_t)k->nonfinite));
  if (k->kappa_g != 0) bad |= parity_json_set(jc, "kappa_g", parity_json_real(k->kappa_g));
  if (k->has_model) bad |= parity_json_set(jc, "model", model_json(k));
  bad |= parity_json_set(jc, "reason", json_string(k->rule->reason));
  if (bad) json_decref(jc);
  return bad ? NULL : jc;
}

static json_t *tolerance_json(const parity_checks *c) {
  json_t *tol = json_object(), *checks = json_array();
  int bad = !tol || !checks;
  for (size_t i = 0; !bad && i < c->n; i++) bad |= json_array_append_new(checks, check_json(&c->v[i]));
  if (!bad) bad |= parity_json_set(tol, "checks", checks);
  else json_decref(checks);
  if (tol) bad |= parity_json_set(tol, "deciding", json_integer((json_int_t)c->deciding));
  if (bad) json_decref(tol);
  return bad ? NULL : tol;
}

static json_t *upstream_json(const parity_upstream *up) {
  json_t *a = json_array();
  int bad = !a;
  for (int i = 0; a && i < PARITY_UPSTREAM_N; i++) {
    if (!up[i].present) continue; /* the gradient entries: only with --grad */
    json_t *ju = json_pack("{sssbss}", "name", up[i].name, "pass", up[i].pass, "worst_tensor", up[i].worst_tensor);
    if (ju) bad |= parity_json_set(ju, "worst", parity_json_real(up[i].worst));
    bad |= json_array_append_new(a, ju);
  }
  if (bad) json_decref(a);
  return bad ? NULL : a;
}

/* Names of the baseline and the candidate in the profile, seams and
 * histogram ("scan", "affine-prefix"). */
static const char *role_name(const parity_case_result *r, size_t i) {
  return i < r->n_subjects ? r->subjects[i].name : "?";
}

static json_t *profile_json(const parity_case_result *r) {
  const parity_profile *p = &r->profile;
  json_t *prof = json_object(), *t0 = json_array();
  int bad = !prof || !t0;
  for (int64_t k = 0; t0 && k < p->n; k++) bad |= json_array_append_new(t0, json_integer(k * p->block));
  if (!prof) {
    json_decref(t0);
    return NULL;
  }
  bad |= parity_json_set(prof, "block", json_integer(p->block));
  bad |= parity_json_set(prof, "t0", t0);
  if (r->has_ref) {
    bad |= parity_json_set(prof, "ref_max_abs", real_array(p->ref_max_abs, (size_t)p->n));
    bad |= parity_json_set(prof, role_name(r, r->baseline), real_array(p->baseline, (size_t)p->n));
    bad |= parity_json_set(prof, role_name(r, r->candidate), real_array(p->candidate, (size_t)p->n));
    if (r->subject_profile)
      bad |= parity_json_set(prof, role_name(r, r->subject), real_array(r->subject_profile, (size_t)p->n));
  }
  bad |= parity_json_set(prof, "affine_vs_scan", real_array(p->cand_vs_base, (size_t)p->n));
  if (bad) json_decref(prof);
  return bad ? NULL : prof;
}

/* --grad only: {"dq": {"block", "t0", "ref_max_abs", "scan", "affine-prefix"}, ...}
 * for the gradients with a token axis (the o profile's form, per tensor). */
static json_t *grad_profile_json(const parity_case_result *r) {
  const parity_grad_profile *g = &r->grad_profile;
  json_t *all = json_object();
  int bad = !all;
  for (int t = 0; all && t < PARITY_T_N; t++) {
    if (!(g->mask & (1u << t))) continue;
    json_t *p = json_object(), *t0 = json_array();
    bad |= !p || !t0;
    for (int64_t k = 0; t0 && k < g->n; k++) bad |= json_array_append_new(t0, json_integer(k * r->profile.block));
    if (!p) {
      json_decref(t0);
      break;
    }
    bad |= parity_json_set(p, "block", json_integer(r->profile.block));
    bad |= parity_json_set(p, "t0", t0);
    bad |= parity_json_set(p, "ref_max_abs", real_array(g->ref_max_abs[t], (size_t)g->n));
    bad |= parity_json_set(p, role_name(r, r->baseline), real_array(g->baseline[t], (size_t)g->n));
    bad |= parity_json_set(p, role_name(r, r->candidate), real_array(g->candidate[t], (size_t)g->n));
    bad |= parity_json_set(all, parity_tensors[t].name, p);
  }
  if (bad) json_decref(all);
  return bad ? NULL : all;
}

static json_t *seams_json(const parity_case_result *r) {
  json_t *a = json_array();
  int bad = !a;
  for (size_t i = 0; a && i < r->n_seams; i++) {
    const parity_seam_result *sm = &r->seams[i];
    json_t *j = json_pack("{sIsIsIsI}", "device", (json_int_t)sm->device, "chunk", (json_int_t)sm->chunk, "t",
                          (json_int_t)sm->t, "pad_before", (json_int_t)sm->pad_before);
    if (j && sm->has_state) bad |= parity_json_set(j, "state_rel", parity_json_real(sm->state_rel));
    if (j && r->has_ref) {
      bad |= parity_json_set(j, role_name(r, r->baseline), parity_json_real(sm->baseline));
      bad |= parity_json_set(j, role_name(r, r->candidate), parity_json_real(sm->candidate));
    }
    if (j) bad |= parity_json_set(j, "affine_vs_scan", parity_json_real(sm->cand_vs_base));
    bad |= json_array_append_new(a, j);
  }
  if (bad) json_decref(a);
  return bad ? NULL : a;
}

static json_t *histogram_json(const parity_case_result *r) {
  json_t *h = json_object();
  if (!h) return NULL;
  double edges[PARITY_ULP_BINS];
  for (int i = 0; i < PARITY_ULP_BINS; i++) edges[i] = parity_ulp_bin_edge(i);
  int bad = parity_json_set(h, "edges", real_array(edges, PARITY_ULP_BINS));
  size_t who[3] = {r->baseline, r->candidate, r->subject};
  for (int k = 0; k < (r->subject != SIZE_MAX ? 3 : 2); k++)
    bad |= parity_json_set(h, role_name(r, who[k]),
                           int_array(r->subjects[who[k]].vs_ref[PARITY_T_O].ulp_hist, PARITY_ULP_BINS));
  if (bad) json_decref(h);
  return bad ? NULL : h;
}

static json_t *shards_json(const parity_case_result *r) {
  json_t *a = json_array();
  int bad = !a;
  for (int64_t d = 0; a && d < r->devices; d++)
    bad |= json_array_append_new(a, json_pack("[II]", (json_int_t)r->shards[2 * d], (json_int_t)r->shards[2 * d + 1]));
  if (bad) json_decref(a);
  return bad ? NULL : a;
}

json_t *parity_json_case(const parity_case_result *r, int reproducible) {
  json_t *c = json_object();
  if (!c || r->baseline >= r->n_subjects || r->candidate >= r->n_subjects) {
    json_decref(c);
    return NULL;
  }
  int bad = 0;
  bad |= parity_json_set(c, "id", json_string(r->id));
  bad |= parity_json_set(c, "input", json_integer(r->input));
  bad |= parity_json_set(c, "shape", parity_json_shape(&r->shape));
  bad |= parity_json_set(c, "chunk", json_integer(r->chunk));
  bad |= parity_json_set(c, "devices", json_integer(r->devices));
  bad |= parity_json_set(c, "prefix", json_string(kern_prefix_name(r->prefix)));
  bad |= parity_json_set(c, "shard", json_string(kern_shard_name(r->shard)));
  if (r->shard_from) /* check only: synthetic cases' documents unchanged */
    bad |= parity_json_set(c, "shard_from", json_string(r->shard_from));
  if (r->packing >= 0) bad |= parity_json_set(c, "packing", json_string(gdn_packing_name(r->packing)));
  bad |= parity_json_set(c, "solve", json_string(kern_solve_name(r->solve)));
  if (r->mutant != KERN_MUTANT_NONE) /* outputs without a mutant unchanged */
    bad |= parity_json_set(c, "mutant", json_string(kern_mutant_name(r->mutant)));
  bad |= parity_json_set(c, "dtype", json_string(gdn_dtype_name(r->dtype)));
  bad |= parity_json_set(c, "matmul_precision", json_string(kern_matmul_name(r->matmul)));
  bad |= parity_json_set(c, "ftz", json_boolean(r->ftz));
  bad |= parity_json_set(c, "output_dtype", json_string(gdn_dtype_name(r->output_dtype)));
  bad |= parity_json_set(c, "shards", shards_json(r));
  bad |= parity_json_set(c, "impls", impls_json(r));
  const parity_subject_result *cand = &r->subjects[r->candidate];
  bad |= parity_json_set(c, "affine_vs_scan", tensors_json(cand->vs_scan, cand->has_vs_scan));
  bad |= parity_json_set(c, "tolerance", tolerance_json(&r->checks));
  bad |= parity_json_set(c, "upstream", upstream_json(r->upstream));
  if (r->subject != SIZE_MAX) { /* parity_case_subject.h: what the case's claims are about */
    bad |= parity_json_set(c, "subject", json_string(role_name(r, r->subject)));
    bad |= parity_json_set(c, "upstream_against", json_string(role_name(r, r->subject_against)));
    bad |= parity_json_set(c, "subject_vs_against", tensors_json(r->subject_vs, r->subject_vs_mask));
  }
  bad |= parity_json_set(c, "profile", profile_json(r));
  if (r->grad_profile.mask) bad |= parity_json_set(c, "grad_profile", grad_profile_json(r));
  bad |= parity_json_set(c, "seams", seams_json(r));
  /* Without a reference there is no ULP histogram: the key is left out
   * (an empty object is refused by the readers: "edges" is required). */
  if (r->has_ref) bad |= parity_json_set(c, "ulp_histogram", histogram_json(r));
  json_t *kg = json_object();
  bad |= parity_json_set(kg, "o", parity_json_real(r->kappa_g[0]));
  bad |= parity_json_set(kg, "ht", parity_json_real(r->kappa_g[1]));
  bad |= parity_json_set(c, "kappa_g", kg);
  if (r->finding[0]) bad |= parity_json_set(c, "finding", json_string(r->finding));
  if (r->block_map.subject) {
    json_t *rows = json_array();
    for (int64_t h = 0; rows && h < r->block_map.heads; h++)
      bad |= json_array_append_new(rows, real_array(r->block_map.values + h * r->block_map.bins,
                                                    (size_t)r->block_map.bins)) ? 1 : 0;
    json_t *bm = json_pack("{sssI}", "subject", r->block_map.subject, "tokens_per_bin",
                           (json_int_t)r->block_map.tokens_per_bin);
    bad |= parity_json_set(bm, "values", rows);
    bad |= parity_json_set(c, "block_map", bm);
  }
  bad |= parity_json_set(c, "pass", json_boolean(r->pass));
  if (!reproducible) bad |= parity_json_set(c, "seconds", json_real(r->seconds));
  if (bad) json_decref(c);
  return bad ? NULL : c;
}

/* The reference's description: which tier, and what certifies it. */
static int input_oracle_json(json_t *ji, const parity_reference *ref) {
  int bad = 0;
  bad |= parity_json_set(ji, "oracle_tier", json_string(parity_oracle_tier_name(ref->tier)));
  if (ref->requested != ref->tier && ref->requested == PARITY_ORACLE_AUTO)
    bad |= parity_json_set(ji, "oracle_tier_requested", json_string("auto"));
  bad |= parity_json_set(ji, "oracle_from_fixture", json_boolean(ref->from_fixture));
  if (ref->note[0]) bad |= parity_json_set(ji, "oracle_note", json_string(ref->note));
  if (ref->spot_columns)
    bad |= parity_json_set(ji, "oracle_spot_check",
                           json_pack("{sIso}", "columns", (json_int_t)ref->spot_columns, "rel", parity_json_real(ref->spot_rel)));
  bad |= parity_json_set(ji, "oracle_precision_bits", json_integer(ref->precision_bits));
  bad |= parity_json_set(ji, "oracle_certified_bits", json_integer(ref->certified_bits));
  bad |= parity_json_set(ji, "oracle_sampled_columns", json_integer(ref->sampled_columns));
  bad |= parity_json_set(ji, "oracle_total_columns", json_integer(ref->total_columns));
  if (ref->tier == PARITY_ORACLE_DD) {
    bad |= parity_json_set(ji, "oracle_normwise_bits", json_integer(ref->normwise_bits));
    bad |= parity_json_set(ji, "oracle_guaranteed_bits", json_integer(ref->guaranteed_bits));
    bad |= parity_json_set(ji, "oracle_bound_violations", json_integer(ref->bound_violations));
  }
  if (ref->has_grads) { /* --grad only: the gradients' certificate */
    bad |= parity_json_set(ji, "oracle_grad_tier", json_string(parity_oracle_tier_name(ref->grad_tier)));
    if (ref->grad_sha256[0]) /* a fixture's cotangents: the identity of the gradient problem */
      bad |= parity_json_set(ji, "grad_problem_sha256", json_string(ref->grad_sha256));
    bad |= parity_json_set(ji, "oracle_grad_certified_bits", json_integer(ref->grad_certified_bits));
    if (ref->grad_note[0]) bad |= parity_json_set(ji, "oracle_grad_note", json_string(ref->grad_note));
    if (ref->grads_from_fixture) /* a stored /oracle/grads (regen --grads) and its spot check */
      bad |= parity_json_set(ji, "oracle_grad_from_fixture", json_true()) |
             parity_json_set(ji, "oracle_grad_spot_check",
                             json_pack("{sIso}", "key_heads", (json_int_t)1, "rel", parity_json_real(ref->grad_spot_rel)));
    if (ref->grad_tier == PARITY_ORACLE_DD)
      bad |= parity_json_set(ji, "oracle_grad_normwise_bits", json_integer(ref->grad_normwise_bits));
  }
  return bad;
}

json_t *parity_json_input(const parity_input_result *r) {
  static const char *const tn[5] = {"q", "k", "v", "g", "beta"};
  const parity_input_info *info = r->info;
  const gdn_inputs *in = r->in;
  json_t *ji = json_object(), *bfl = json_array(), *names = NULL;
  int bad = !ji || !bfl;
  for (int i = 0; bfl && i < 5; i++)
    if (in->bf16_mask & (1u << i)) bad |= json_array_append_new(bfl, json_string(tn[i]));
  if (!ji) {
    json_decref(bfl);
    return NULL;
  }
  bad |= parity_json_set(ji, "name", json_string(info->name));
  bad |= parity_json_set(ji, "source", json_string(info->source));
  if (info->path) bad |= parity_json_set(ji, "path", json_string(info->path));
  if (info->sha256) bad |= parity_json_set(ji, "sha256", json_string(info->sha256));
  bad |= parity_json_set(ji, "shape", parity_json_shape(&in->shape));
  bad |= parity_json_set(ji, "l2norm_in_kernel", json_boolean(in->l2norm_in_kernel));
  bad |= parity_json_set(ji, "h0", json_boolean(in->h0 != NULL));
  bad |= parity_json_set(ji, "bf16_inputs", bfl);
  if (in->seg) { /* packed documents: how many (the largest id) and what a boundary does */
    int32_t nd = 0;
    for (int64_t i = 0; i < in->shape.B * in->shape.T; i++) nd = in->seg[i] > nd ? in->seg[i] : nd;
    bad |= parity_json_set(ji, "documents", json_integer(nd));
    bad |= parity_json_set(ji, "packing", json_string(gdn_packing_name(in->packing)));
  }
  if (r->ref) bad |= input_oracle_json(ji, r->ref);
  for (size_t i = 0; i < r->n_subjects; i++) {
    if (r->subjects[i].m->kind != PARITY_SUBJ_EXTERNAL) continue;
    if (!names && !(names = json_array())) bad = 1;
    else bad |= json_array_append_new(names, json_string(r->subjects[i].name));
  }
  if (names) bad |= parity_json_set(ji, "outputs", names);
  if (bad) json_decref(ji);
  return bad ? NULL : ji;
}
