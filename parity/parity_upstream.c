#include "parity_upstream.h"

#include "parity_metrics.h"

/* The largest of fig[t] over the rows, the first on ties. */
static void worst_of(const double fig[PARITY_T_N], parity_upstream *u) {
  int w = 0;
  for (int t = 1; t < PARITY_T_N; t++)
    if (fig[t] > fig[w]) w = t;
  u->worst = fig[w];
  u->worst_tensor = parity_tensors[w].name;
}

void parity_upstream_evaluate(const double *const x[PARITY_T_N], const double *const r[PARITY_T_N],
                              const size_t n[PARITY_T_N], const double rel_fro[PARITY_T_N],
                              parity_upstream out[PARITY_UPSTREAM_N]) {
  static const struct { const char *name; double rtol, atol; } ac[3] = {
      {"MaxText assert_allclose(rtol=1e-6, atol=1e-6)", 1e-6, 1e-6},
      {"torch.testing float32 (rtol=1.3e-6, atol=1e-5)", 1.3e-6, 1e-5},
      {"torch.testing bfloat16 (rtol=1.6e-2, atol=1e-5)", 1.6e-2, 1e-5},
  };
  for (int i = 0; i < 3; i++) {
    double fig[PARITY_T_N];
    for (int t = 0; t < PARITY_T_N; t++) fig[t] = parity_allclose_ratio(x[t], r[t], n[t], ac[i].rtol, ac[i].atol);
    out[i].name = ac[i].name;
    worst_of(fig, &out[i]);
    out[i].pass = out[i].worst <= 1.0;
  }
  out[3].name = "flash-linear-attention RMS ratio < 0.005";
  worst_of(rel_fro, &out[3]);
  out[3].pass = out[3].worst < 0.005;
}
