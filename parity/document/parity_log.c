#include "parity_log.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static void fmt_e(char *b, size_t n, double x) {
  if (isnan(x)) snprintf(b, n, "nan");
  else if (isinf(x)) snprintf(b, n, "inf");
  else snprintf(b, n, "%.2e", x);
}

static void log_reference_grads(FILE *f, const parity_reference *ref) {
  if (ref && ref->has_grads && ref->grads_from_fixture)
    fprintf(f,
            "gradients: the fixture's stored %s VJP (/oracle/grads, gdn-fixture regen --grads), certified %d bits%s; "
            "spot check: key head 0 recomputed in double-double, normwise difference %.2g\n",
            parity_oracle_tier_name(ref->grad_tier), ref->grad_certified_bits,
            ref->grad_tier == PARITY_ORACLE_DD ? " on its sampled columns" : "", ref->grad_spot_rel);
  else if (ref && ref->has_grads)
    fprintf(f, "gradients: the %s oracle's VJP, certified %d bits%s\n", parity_oracle_tier_name(ref->grad_tier),
            ref->grad_certified_bits, ref->grad_tier == PARITY_ORACLE_DD ? " on its sampled columns" : "");
}

static void log_reference(FILE *f, const parity_reference *ref) {
  if (!ref)
    fprintf(f, "reference: none (--oracle none): affine-prefix is judged against the scan only\n");
  else if (ref->tier == PARITY_ORACLE_DD && ref->from_fixture)
    fprintf(f,
            "reference: the fixture's dd oracle (double-double, %d bits; gdn-fixture regen --oracle dd): certified "
            "%d bits (normwise %d) on %" PRId64 " of %" PRId64 " state columns against MPFR at %d bits, every "
            "column within a proven %d bits; spot check: %" PRId64
            " state columns recomputed in double-double, normwise difference %.2g\n",
            ref->precision_bits, ref->certified_bits, ref->normwise_bits, ref->sampled_columns, ref->total_columns,
            ref->check_bits, ref->guaranteed_bits, ref->spot_columns, ref->spot_rel);
  else if (ref->tier == PARITY_ORACLE_DD)
    fprintf(f,
            "reference: dd oracle (double-double, %d bits)%s: certified %d bits (normwise %d) on %" PRId64
            " of %" PRId64 " state columns against MPFR at %d bits; every column within a proven %d bits\n",
            ref->precision_bits, ref->requested == PARITY_ORACLE_AUTO ? ", chosen by --oracle auto for this size" : "",
            ref->certified_bits, ref->normwise_bits, ref->sampled_columns, ref->total_columns, ref->check_bits,
            ref->guaranteed_bits);
  else if (ref->from_fixture)
    fprintf(f, "reference: the fixture's MPFR oracle (%d bits, certified %d bits; spot check: %" PRId64
               " state columns recomputed in double-double, normwise difference %.2g)\n",
            ref->precision_bits, ref->certified_bits, ref->spot_columns, ref->spot_rel);
  else
    fprintf(f, "reference: mpfr oracle at %d bits, certified %d bits (checked at %d)\n", ref->precision_bits,
            ref->certified_bits, ref->check_bits);
}

void parity_log_input(FILE *f, const parity_input_result *r, gdn_dtype dtype, kern_matmul matmul, int ftz,
                      int ftz_auto) {
  const gdn_inputs *in = r->in;
  char lab[160];
  gdn_shape_format(&in->shape, lab, sizeof lab);
  fprintf(f, "\n%s: %s, %s%s, dtype %s, matmul %s%s\n", r->info->name, lab,
          in->l2norm_in_kernel ? "q/k L2-normalised in the kernel" : "q/k pre-normalised", in->h0 ? ", with h0" : "",
          gdn_dtype_name(dtype), dtype == GDN_DTYPE_F64 ? "ieee (float64 ignores the matmul mode)" : kern_matmul_name(matmul),
          !ftz       ? ""
          : ftz_auto ? ", subnormals flushed to zero (on by default in the bf16 modes, as on TPU; --no-ftz turns it off)"
                     : ", subnormals flushed to zero");
  if (in->seg)
    fprintf(f, "packed documents (segment ids; id 0 = padding, k = v = g = 0): packing %s (%s)\n",
            gdn_packing_name(in->packing),
            in->packing == GDN_PACKING_RESET ? "the state restarts at every boundary, as flash-linear-attention's cu_seqlens"
                                             : "the state flows across boundaries, as MaxText's kernel");
  if (in->prelude)
    fprintf(f, "inputs from the layer's bfloat16 prelude (q, k, v, a, b, A_log, dt_bias; the kernel inputs "
               "equal it bit for bit)\n");
  log_reference(f, r->ref);
  for (size_t i = 0; i < r->n_subjects; i++) {
    const parity_external *x = r->subjects[i].ext;
    const char *pj = x ? json_string_value(json_object_get(x->attrs, "padding_judged")) : NULL;
    if (pj) fprintf(f, "note: output %s: o %s\n", r->subjects[i].name, pj); /* parity_padding.h */
    if (x && x->final_note[0] && strcmp(x->final_note, "no ht given"))
      fprintf(f, "note: output %s: %s\n", r->subjects[i].name, x->final_note);
    else if (x && !x->has_ht)
      fprintf(f, "note: output %s has no final state (MaxText returns one only when an "
                 "initial state is given): judged on o alone\n", r->subjects[i].name);
  }
  for (size_t i = 0; i < r->n_subjects; i++) /* schema v3: the fixture has cotangents, this output no gradients */
    if (r->subjects[i].ext && r->ref && r->ref->grad_sha256[0] && !r->subjects[i].ext->grads)
      fprintf(f, "note: output %s has no gradients (no /outputs/%s/grads): judged on o and ht alone\n",
              r->subjects[i].name, r->subjects[i].name);
  for (size_t i = 0; i < r->n_subjects; i++)
    if (r->subjects[i].ext && r->subjects[i].ext->packing_mismatch)
      fprintf(f, "FAIL: output %s %s\n", r->subjects[i].name, r->subjects[i].ext->packing_note);
  log_reference_grads(f, r->ref);
}

void parity_log_mutant(FILE *f, kern_mutant m) {
  if (m == KERN_MUTANT_NONE) return;
  fprintf(f, "PLANTED MUTANT %s: the affine-prefix kernel below carries this catalogued bug (--mutant, testing "
             "only): %s.  Its FAIL means a check caught it, PASS that it survived\n",
          kern_mutant_name(m), kern_mutant_row_of(m)->doc);
}

void parity_log_chunk(FILE *f, int64_t chunk, int64_t n_chunks, int64_t tokens_T, int skipped, int has_ref) {
  if (skipped && tokens_T)
    fprintf(f, "  note: --shard tokens needs D to divide T = %" PRId64 "; default device counts that do not are skipped\n",
            tokens_T);
  else if (skipped)
    fprintf(f, "  note: chunk size %" PRId64 " gives %" PRId64 " chunk%s; default device counts above that are skipped\n",
            chunk, n_chunks, n_chunks == 1 ? "" : "s");
  if (has_ref)
    fprintf(f, "  %-28s | %-29s | %-29s | %-20s | %-9s | %s\n", "case (C, devices, prefix)",
            "o rel_fro: scan  affine  a-s", "ht rel_fro: scan  affine  a-s", "o med ulp: scan  aff", "factor",
            "verdict");
  else
    fprintf(f, "  %-28s | %-21s | %-21s | %-9s | %s\n", "case (C, devices, prefix)", "affine vs scan: o",
            "affine vs scan: ht", "factor", "verdict");
}

/* How sure a verdict is (docs/results-json.md, the check's "model"):
 * " value/limit R" and, where the error model judged the check, the
 * deciding item's error in standard errors of the model and as a multiple
 * of its model bound ("" for a check without a limit). */
void parity_log_sureness(char *buf, size_t n, const parity_check *k) {
  buf[0] = '\0';
  if (!(k->limit > 0)) return;
  int o = snprintf(buf, n, " value/limit %.3g", k->value / k->limit);
  if (!k->has_model || o < 0 || (size_t)o >= n) return;
  if (k->rule->metric == PARITY_M_REL_FRO)
    snprintf(buf + o, n - (size_t)o, "; %.3g x the model's normwise error (%.3g sigma bound)", k->model_sig,
             k->model_lambda);
  else
    snprintf(buf + o, n - (size_t)o, "; the %s's error is %.3g sigma of the model, %.3g x its bound",
             k->rule->metric == PARITY_M_ELEM_REL ? "element" : k->rule->metric == PARITY_M_ROW_REL ? "token" : "block",
             k->model_sig, k->model_ratio);
}

/* "decided by: NAME (value V, limit L)" or "FAILED: ..." under a row. */
static void log_deciding(FILE *f, const parity_check *k) {
  if (k->nonfinite) { /* its value is no measurement: the count and the first position are */
    fprintf(f, "      FAILED: %s: %s\n", k->name, k->where);
    return;
  }
  char v[16], l[16], sure[160] = "";
  fmt_e(v, 16, k->value);
  fmt_e(l, 16, k->limit);
  parity_log_sureness(sure, sizeof sure, k);
  fprintf(f, "      %s: %s (value %s, limit %s)%s%s%s\n", k->pass ? "decided by" : "FAILED", k->name, v, l, sure,
          k->where[0] ? "; " : "", k->where);
}

/* A median ulp as its 9-wide column holds it: 2 decimals, 3 digits from 1e5 on. */
static void fmt_ulp(char *b, size_t n, double x) {
  if (isfinite(x) && x < 1e5) snprintf(b, n, "%.2f", x);
  else snprintf(b, n, "%.3g", x);
}

/* A factor as the column holds it: 2 decimals, 3 digits from 1000 on. */
static void fmt_factor(char *b, size_t n, double x) {
  if (isfinite(x) && x < 1000) snprintf(b, n, "%.2fx", x);
  else if (isfinite(x)) snprintf(b, n, "%.3gx", x);
  else snprintf(b, n, "%s", isnan(x) ? "nan" : "inf");
}

/* A judged subject's own row, under the header's columns: its name in the
 * case column, its errors against the reference in the affine slots (the
 * scan's are the kernels' row below), against the scan in a-s, its median
 * ulp, factor and verdict, then its deciding check. */
static void log_judged(FILE *f, const char *lab, const parity_case_result *r, const parity_subject_result *s) {
  char name[160], a[PARITY_T_N][16], vs[PARITY_T_N][16], u[16] = "-", fac[32] = "-";
  for (int t = 0; t < PARITY_T_N; t++) {
    if (s->has_vs_ref & (1u << t)) fmt_e(a[t], 16, s->vs_ref[t].rel_fro);
    else snprintf(a[t], 16, "-");
    if (s->has_vs_scan & (1u << t)) fmt_e(vs[t], 16, s->vs_scan[t].rel_fro);
    else snprintf(vs[t], 16, "-");
  }
  if (s->has_vs_ref & (1u << PARITY_T_O)) fmt_ulp(u, sizeof u, s->vs_ref[PARITY_T_O].median_ulp);
  snprintf(name, sizeof name, "%s %s", lab, s->name);
  const parity_check *k = s->deciding < r->checks.n ? &r->checks.v[s->deciding] : NULL;
  if (k) fmt_factor(fac, sizeof fac, k->factor_reached);
  fprintf(f, "  %-28s | %8s %8s %8s    | %8s %8s %8s    | %9s %9s  | %-9s | %s\n", name, "-", a[PARITY_T_O],
          vs[PARITY_T_O], "-", a[PARITY_T_HT], vs[PARITY_T_HT], "-", u, fac,
          !k ? "unjudged" : s->pass ? "PASS" : "FAIL");
  if (k) log_deciding(f, k);
}

static void log_kernels(FILE *f, const char *lab, const char *fac, const parity_case_result *r) {
  const parity_subject_result *sc = &r->subjects[r->baseline], *af = &r->subjects[r->candidate];
  if (r->has_ref) {
    char a[6][16], u1[16], u2[16];
    fmt_e(a[0], 16, sc->vs_ref[PARITY_T_O].rel_fro);
    fmt_e(a[1], 16, af->vs_ref[PARITY_T_O].rel_fro);
    fmt_e(a[2], 16, af->vs_scan[PARITY_T_O].rel_fro);
    fmt_e(a[3], 16, sc->vs_ref[PARITY_T_HT].rel_fro);
    fmt_e(a[4], 16, af->vs_ref[PARITY_T_HT].rel_fro);
    fmt_e(a[5], 16, af->vs_scan[PARITY_T_HT].rel_fro);
    fmt_ulp(u1, sizeof u1, sc->vs_ref[PARITY_T_O].median_ulp);
    fmt_ulp(u2, sizeof u2, af->vs_ref[PARITY_T_O].median_ulp);
    fprintf(f, "  %-28s | %8s %8s %8s    | %8s %8s %8s    | %9s %9s  | %-9s | %s\n", lab, a[0], a[1], a[2], a[3],
            a[4], a[5], u1, u2, fac, r->pass ? "PASS" : "FAIL");
  } else {
    char a[2][16];
    fmt_e(a[0], 16, af->vs_scan[PARITY_T_O].rel_fro);
    fmt_e(a[1], 16, af->vs_scan[PARITY_T_HT].rel_fro);
    fprintf(f, "  %-28s | rel_fro %-13s | rel_fro %-13s | %-9s | %s\n", lab, a[0], a[1], fac,
            r->pass ? "PASS" : "FAIL");
  }
}

static void log_every_check(FILE *f, const parity_case_result *r) {
  char v[16], l[16];
  for (size_t i = 0; i < r->checks.n; i++) {
    const parity_check *k = &r->checks.v[i];
    fmt_e(v, 16, k->value);
    fmt_e(l, 16, k->limit);
    fprintf(f, "        [%s] %s: value %s limit %s -- %s\n", k->pass ? "ok" : "FAIL", k->name, v, l, k->rule->reason);
  }
  for (int i = 0; i < PARITY_UPSTREAM_N; i++)
    if (r->upstream[i].present)
      fprintf(f, "        upstream %-48s %s (worst %.3g on %s)\n", r->upstream[i].name,
            r->upstream[i].pass ? "pass" : "FAIL", r->upstream[i].worst, r->upstream[i].worst_tensor);
}

/* With --grad: one line of the gradients' rel_fro against the reference,
 * scan / affine-prefix per tensor, and the affine-prefix's worst per-token
 * error. */
static void log_grads(FILE *f, const parity_case_result *r) {
  const parity_subject_result *sc = &r->subjects[r->baseline], *af = &r->subjects[r->candidate];
  if (!(af->has_vs_ref & PARITY_TENSOR_GRADS)) return;
  char line[512];
  size_t n = (size_t)snprintf(line, sizeof line, "      grads rel_fro scan/affine:");
  double tok = 0;
  for (int t = 0; t < PARITY_T_N && n < sizeof line; t++) {
    if (!parity_tensors[t].grad || !(af->has_vs_ref & (1u << t))) continue;
    char a[16], b[16];
    fmt_e(a, 16, sc->vs_ref[t].rel_fro);
    fmt_e(b, 16, af->vs_ref[t].rel_fro);
    n += (size_t)snprintf(line + n, sizeof line - n, " %s %s/%s", parity_tensors[t].name, a, b);
    if (t <= PARITY_T_DV && af->vs_ref[t].row_rel > tok) tok = af->vs_ref[t].row_rel; /* token vectors */
  }
  fprintf(f, "%s; affine per-token (dq dk dv) %.2e\n", line, tok);
}

void parity_log_case(FILE *f, const parity_case_result *r, int verbosity) {
  char lab[64], fac[32];
  snprintf(lab, sizeof lab, "C%" PRId64 " D%" PRId64 "%s %s", r->chunk, r->devices,
           r->devices > 1 && r->shard != KERN_SHARD_TOKENS ? " chunks" : "", kern_prefix_name(r->prefix));
  for (size_t i = 0; i < r->n_subjects; i++)
    if (r->subjects[i].role == PARITY_ROLE_JUDGED && r->subjects[i].has_vs_ref)
      log_judged(f, lab, r, &r->subjects[i]);
  const parity_check *k = &r->checks.v[r->checks.deciding];
  fmt_factor(fac, sizeof fac, k->factor_reached);
  log_kernels(f, lab, fac, r);
  log_grads(f, r);
  log_deciding(f, k);
  if (r->mutant != KERN_MUTANT_NONE)
    fprintf(f, "      planted mutant %s: %s\n", kern_mutant_name(r->mutant),
            r->pass ? "SURVIVES this case (no check caught it)" : "killed by this case");
  if (r->finding[0]) fprintf(f, "      finding: %s\n", r->finding);
  if (verbosity >= 2) log_every_check(f, r);
  fflush(f);
}
