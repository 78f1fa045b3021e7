#include "parity_tensor.h"

#include <string.h>

static void dims_o(const gdn_shape *s, int64_t d[4]) {
  d[0] = s->B, d[1] = s->T, d[2] = s->Hv, d[3] = s->Dv;
}
static void dims_ht(const gdn_shape *s, int64_t d[4]) {
  d[0] = s->B, d[1] = s->Hv, d[2] = s->Dk, d[3] = s->Dv;
}
static void dims_qk(const gdn_shape *s, int64_t d[4]) {
  d[0] = s->B, d[1] = s->T, d[2] = s->Hk, d[3] = s->Dk;
}
static void dims_tok(const gdn_shape *s, int64_t d[4]) {
  d[0] = s->B, d[1] = s->T, d[2] = s->Hv, d[3] = 1;
}
/* Blocks of the localized statistic: a token-axis tensor (o and the
 * gradients dq dk dv dg dbeta) per (b, head, chunk of positions) -- the
 * chunk the kernels' error structure follows; a state (ht, dh0) per
 * (b, head). */
static void blocks_o(const gdn_shape *s, int64_t chunk, int64_t d[4]) {
  d[0] = 1, d[1] = chunk, d[2] = 1, d[3] = s->Dv;
}
static void blocks_qk(const gdn_shape *s, int64_t chunk, int64_t d[4]) {
  d[0] = 1, d[1] = chunk, d[2] = 1, d[3] = s->Dk;
}
static void blocks_tok(const gdn_shape *s, int64_t chunk, int64_t d[4]) {
  (void)s;
  d[0] = 1, d[1] = chunk, d[2] = 1, d[3] = 1;
}
static void blocks_ht(const gdn_shape *s, int64_t chunk, int64_t d[4]) {
  (void)chunk;
  d[0] = 1, d[1] = 1, d[2] = s->Dk, d[3] = s->Dv;
}
static parity_vals data_o(const gdn_outputs *x) { return parity_vals_o(x); }
static parity_vals data_ht(const gdn_outputs *x) { return parity_vals_f64(x->ht); }

const parity_tensor parity_tensors[PARITY_T_N] = {
    {PARITY_T_O, "o", {"b", "t", "h", "d"}, dims_o, blocks_o, data_o, 0, 0},
    {PARITY_T_HT, "ht", {"b", "h", "dk", "dv"}, dims_ht, blocks_ht, data_ht, 0, 0},
    {PARITY_T_DQ, "dq", {"b", "t", "h", "d"}, dims_qk, blocks_qk, NULL, 1, GDN_GRAD_DQ},
    {PARITY_T_DK, "dk", {"b", "t", "h", "d"}, dims_qk, blocks_qk, NULL, 1, GDN_GRAD_DK},
    {PARITY_T_DV, "dv", {"b", "t", "h", "d"}, dims_o, blocks_o, NULL, 1, GDN_GRAD_DV},
    {PARITY_T_DG, "dg", {"b", "t", "h", "_"}, dims_tok, blocks_tok, NULL, 1, GDN_GRAD_DG},
    {PARITY_T_DBETA, "dbeta", {"b", "t", "h", "_"}, dims_tok, blocks_tok, NULL, 1, GDN_GRAD_DBETA},
    {PARITY_T_DH0, "dh0", {"b", "h", "dk", "dv"}, dims_ht, blocks_ht, NULL, 1, GDN_GRAD_DH0},
};

parity_vals parity_tensor_get(const parity_tensor *t, const gdn_outputs *out, const gdn_grads *g) {
  if (t->grad) return parity_vals_f64(g ? gdn_grads_tensor_c(g, t->grad_id) : NULL);
  return out ? t->data(out) : parity_vals_f64(NULL);
}

const parity_tensor *parity_tensor_find(const char *name) {
  for (int i = 0; name && i < PARITY_T_N; i++)
    if (!strcmp(parity_tensors[i].name, name)) return &parity_tensors[i];
  return NULL;
}

int64_t parity_tensor_numel(const parity_tensor *t, const gdn_shape *s) {
  int64_t d[4];
  t->dims(s, d);
  return d[0] * d[1] * d[2] * d[3];
}
