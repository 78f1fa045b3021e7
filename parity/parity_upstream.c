#include "parity_upstream.h"

#include "parity_metrics.h"

void parity_upstream_evaluate(const double *x_o, const double *r_o, size_t n_o,
                              const double *x_ht, const double *r_ht, size_t n_ht,
                              double rel_fro_o, double rel_fro_ht,
                              parity_upstream out[PARITY_UPSTREAM_N]) {
  static const struct { const char *name; double rtol, atol; } ac[3] = {
      {"MaxText assert_allclose(rtol=1e-6, atol=1e-6)", 1e-6, 1e-6},
      {"torch.testing float32 (rtol=1.3e-6, atol=1e-5)", 1.3e-6, 1e-5},
      {"torch.testing bfloat16 (rtol=1.6e-2, atol=1e-5)", 1.6e-2, 1e-5},
  };
  for (int i = 0; i < 3; i++) {
    double wo = parity_allclose_ratio(x_o, r_o, n_o, ac[i].rtol, ac[i].atol);
    double wh = parity_allclose_ratio(x_ht, r_ht, n_ht, ac[i].rtol, ac[i].atol);
    out[i].name = ac[i].name;
    out[i].worst = wo >= wh ? wo : wh;
    out[i].worst_tensor = wo >= wh ? "o" : "ht";
    out[i].pass = out[i].worst <= 1.0;
  }
  out[3].name = "flash-linear-attention RMS ratio < 0.005";
  out[3].worst = rel_fro_o >= rel_fro_ht ? rel_fro_o : rel_fro_ht;
  out[3].worst_tensor = rel_fro_o >= rel_fro_ht ? "o" : "ht";
  out[3].pass = out[3].worst < 0.005;
}
