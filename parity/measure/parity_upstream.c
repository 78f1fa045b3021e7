#include "parity_upstream.h"

#include <math.h>

#include "parity_metrics.h"

/* The largest of fig[t] over the rows in `rows`, the first on ties. */
static void worst_of(const double fig[PARITY_T_N], unsigned rows, parity_upstream *u) {
  int w = -1;
  for (int t = 0; t < PARITY_T_N; t++)
    if ((rows & (1u << t)) && (w < 0 || fig[t] > fig[w] || (isnan(fig[t]) && !isnan(fig[w])))) w = t;
  u->present = w >= 0;
  u->worst = w >= 0 ? fig[w] : 0;
  u->worst_tensor = w >= 0 ? parity_tensors[w].name : "";
}

/* Upstream's gradient RMS-ratio limit per row (fla's backward tests). */
static double fla_grad_limit(int t) { return t == PARITY_T_DG || t == PARITY_T_DBETA ? 0.02 : 0.008; }

static const struct {
  const char *name;
  double rtol, atol;
  unsigned rows;
} ac[PARITY_UPSTREAM_AC] = {
    {"MaxText assert_allclose(rtol=1e-6, atol=1e-6)", 1e-6, 1e-6, PARITY_TENSOR_FORWARD},
    {"torch.testing float32 (rtol=1.3e-6, atol=1e-5)", 1.3e-6, 1e-5, PARITY_TENSOR_FORWARD},
    {"torch.testing bfloat16 (rtol=1.6e-2, atol=1e-5)", 1.6e-2, 1e-5, PARITY_TENSOR_FORWARD},
    {"MaxText gradients assert_allclose(rtol=1e-4, atol=1e-5)", 1e-4, 1e-5, PARITY_TENSOR_GRADS},
};

void parity_upstream_figures(const parity_vals x[PARITY_T_N], const parity_vals r[PARITY_T_N],
                             const size_t n[PARITY_T_N], unsigned mask, double fig[PARITY_UPSTREAM_AC][PARITY_T_N]) {
  for (int i = 0; i < PARITY_UPSTREAM_AC; i++)
    for (int t = 0; t < PARITY_T_N; t++)
      fig[i][t] = (ac[i].rows & mask & (1u << t)) ? parity_allclose_ratio_v(x[t], r[t], n[t], ac[i].rtol, ac[i].atol) : 0;
}

void parity_upstream_judge(const double fig[PARITY_UPSTREAM_AC][PARITY_T_N], const double rel_fro[PARITY_T_N],
                           unsigned mask, parity_upstream out[PARITY_UPSTREAM_N]) {
  static const int slot[PARITY_UPSTREAM_AC] = {0, 1, 2, 4};
  for (int i = 0; i < PARITY_UPSTREAM_AC; i++) {
    parity_upstream *u = &out[slot[i]];
    u->name = ac[i].name;
    worst_of(fig[i], ac[i].rows & mask, u);
    u->pass = u->worst <= 1.0;
  }
  out[3].name = "flash-linear-attention RMS ratio < 0.005";
  worst_of(rel_fro, PARITY_TENSOR_FORWARD & mask, &out[3]);
  out[3].pass = out[3].worst < 0.005;
  /* Gradients: each row against its own limit; the figure is the RMS ratio
   * of the row with the largest ratio / limit. */
  double q[PARITY_T_N] = {0};
  for (int t = 0; t < PARITY_T_N; t++)
    if (parity_tensors[t].grad) q[t] = rel_fro[t] / fla_grad_limit(t);
  out[5].name = "flash-linear-attention gradients RMS ratio < 0.008 (dg, dbeta 0.02)";
  worst_of(q, PARITY_TENSOR_GRADS & mask, &out[5]);
  out[5].pass = out[5].worst < 1.0;
  if (out[5].present) {
    const parity_tensor *w = parity_tensor_find(out[5].worst_tensor);
    out[5].worst = rel_fro[w->id];
    out[5].pass = rel_fro[w->id] < fla_grad_limit(w->id);
  }
}

void parity_upstream_evaluate(const parity_vals x[PARITY_T_N], const parity_vals r[PARITY_T_N],
                              const size_t n[PARITY_T_N], const double rel_fro[PARITY_T_N],
                              unsigned mask, parity_upstream out[PARITY_UPSTREAM_N]) {
  double fig[PARITY_UPSTREAM_AC][PARITY_T_N];
  parity_upstream_figures(x, r, n, mask, fig);
  parity_upstream_judge(fig, rel_fro, mask, out);
}
