#include "parity_tensor.h"

#include <string.h>

static void dims_o(const gdn_shape *s, int64_t d[4]) {
  d[0] = s->B, d[1] = s->T, d[2] = s->Hv, d[3] = s->Dv;
}
static void dims_ht(const gdn_shape *s, int64_t d[4]) {
  d[0] = s->B, d[1] = s->Hv, d[2] = s->Dk, d[3] = s->Dv;
}
static void blocks_o(const gdn_shape *s, int64_t chunk, int64_t d[4]) {
  d[0] = 1, d[1] = chunk, d[2] = 1, d[3] = s->Dv;
}
static void blocks_ht(const gdn_shape *s, int64_t chunk, int64_t d[4]) {
  (void)chunk;
  d[0] = 1, d[1] = 1, d[2] = s->Dk, d[3] = s->Dv;
}
static const double *data_o(const gdn_outputs *x) { return x->o; }
static const double *data_ht(const gdn_outputs *x) { return x->ht; }

const parity_tensor parity_tensors[PARITY_T_N] = {
    {PARITY_T_O, "o", {"b", "t", "h", "d"}, dims_o, blocks_o, data_o},
    {PARITY_T_HT, "ht", {"b", "h", "dk", "dv"}, dims_ht, blocks_ht, data_ht},
};

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
