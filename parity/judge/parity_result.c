#include "parity_result.h"

#include <string.h>

#include "gdn_alloc.h"

void parity_case_result_init(parity_case_result *r) {
  memset(r, 0, sizeof *r);
  parity_checks_init(&r->checks);
  r->baseline = r->candidate = SIZE_MAX;
  r->subject = r->subject_against = SIZE_MAX;
  r->packing = -1;
}

void parity_case_result_clear(parity_case_result *r) {
  gdn_free(r->shards);
  gdn_free(r->pieces);
  gdn_free(r->seams);
  gdn_free(r->subjects);
  gdn_free(r->profile.ref_max_abs);
  gdn_free(r->profile.baseline);
  gdn_free(r->profile.candidate);
  gdn_free(r->profile.cand_vs_base);
  for (int t = 0; t < PARITY_T_N; t++) {
    gdn_free(r->grad_profile.ref_max_abs[t]);
    gdn_free(r->grad_profile.baseline[t]);
    gdn_free(r->grad_profile.candidate[t]);
  }
  parity_checks_clear(&r->checks);
  gdn_free(r->block_map.values);
  gdn_free(r->subject_profile);
  parity_case_result_init(r);
}

int parity_case_result_alloc(parity_case_result *r, int64_t devices, size_t n_subjects, int64_t n_blocks,
                             gdn_error *e) {
  size_t nb = (size_t)n_blocks, nd = (size_t)devices;
  r->n_seams = nd > 0 ? nd - 1 : 0;
  r->n_subjects = n_subjects;
  r->profile.n = n_blocks;
  if (!(r->shards = gdn_calloc(2 * nd, sizeof *r->shards, "case shards", e)) ||
      !(r->pieces = gdn_calloc(3 * nd, sizeof *r->pieces, "case pieces", e)) ||
      (r->n_seams && !(r->seams = gdn_calloc(r->n_seams, sizeof *r->seams, "case seams", e))) ||
      !(r->subjects = gdn_calloc(n_subjects ? n_subjects : 1, sizeof *r->subjects, "case subjects", e)) ||
      !(r->profile.ref_max_abs = gdn_calloc(nb, sizeof(double), "profile", e)) ||
      !(r->profile.baseline = gdn_calloc(nb, sizeof(double), "profile", e)) ||
      !(r->profile.candidate = gdn_calloc(nb, sizeof(double), "profile", e)) ||
      !(r->profile.cand_vs_base = gdn_calloc(nb, sizeof(double), "profile", e))) {
    parity_case_result_clear(r);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  return GDN_OK;
}

int parity_case_result_alloc_grads(parity_case_result *r, unsigned mask, gdn_error *e) {
  parity_grad_profile *g = &r->grad_profile;
  const size_t nb = (size_t)r->profile.n;
  g->n = r->profile.n;
  for (int t = 0; t < PARITY_T_N; t++) {
    if (!(mask & (1u << t))) continue;
    if (!(g->ref_max_abs[t] = gdn_calloc(nb ? nb : 1, sizeof(double), "gradient profile", e)) ||
        !(g->baseline[t] = gdn_calloc(nb ? nb : 1, sizeof(double), "gradient profile", e)) ||
        !(g->candidate[t] = gdn_calloc(nb ? nb : 1, sizeof(double), "gradient profile", e)))
      return e ? e->code : GDN_ERR_NOMEM;
    g->mask |= 1u << t;
  }
  return GDN_OK;
}
