/* Template (see kern_real.h): kern_recurrent in F.  Per token, with the rows
 * of kern_rows_tmpl.h:
 *   a = exp(g_t);  h_ij = h_ij * a
 *   kv = k^T h     (kern_gemm, 1 x Dk by Dk x Dv: i ascending, fma)
 *   delta_j = beta_t * (v_j - kv_j)          (subtract, multiply)
 *   h_ij = h_ij + k_i * delta_j              (multiply, add: no fma, as the
 *                                             elementwise outer-product update)
 *   o = (scale q)^T h                        (kern_gemm)
 * Items: the B x Hv heads; memory: Dk x Dv + O(Dk + Dv) per thread. */
#include "kern_rows_tmpl.h"

static int KR(recurrent_run)(const gdn_inputs *in, const kern_num *num, gdn_outputs *out,
                             gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, T = s->T, items = s->B * s->Hv;
  int nt = gdn_threads_get();
  if (nt > items) nt = (int)items;
  if (nt < 1) nt = 1;
  const size_t gw = KR(kern_gemm_ws_elems)(num->matmul);
  /* Dk x Dv fits: gdn_shape_validate bounds the state tensor */
  const size_t per = KR(rows_pad)((size_t)(Dk * Dv)) + 2 * KR(rows_pad)((size_t)Dk) +
                     3 * KR(rows_pad)((size_t)Dv) + KR(rows_pad)(gw);
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)),
                          "kern_recurrent per-thread scratch", e);
  if (!mem) {
    gdn_error_prefix(e, "kern_recurrent: ");
    return GDN_ERR_NOMEM;
  }
  const int out_bf16 = out->dtype == GDN_DTYPE_BF16;
  const kreal scale = KR(rows_scale)(in, num);
#pragma omp parallel num_threads(nt)
  {
    kreal *p = mem + (size_t)omp_get_thread_num() * per;
    kreal *h = KR(rows_carve)(&p, (size_t)(Dk * Dv));
    kreal *q = KR(rows_carve)(&p, (size_t)Dk), *k = KR(rows_carve)(&p, (size_t)Dk);
    kreal *v = KR(rows_carve)(&p, (size_t)Dv), *kv = KR(rows_carve)(&p, (size_t)Dv);
    kreal *o = KR(rows_carve)(&p, (size_t)Dv);
    kreal *gws = KR(rows_carve)(&p, gw);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; it++) {
      const int64_t b = it / s->Hv, hv = it % s->Hv, hk = gdn_inputs_key_head(in, hv);
      const float *h0 = gdn_inputs_h0(in, b, hv);
      for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h0 ? (kreal)h0[x] : 0;
      for (int64_t t = 0; t < T; t++) {
        KR(rows_qk)(gdn_inputs_q(in, b, t, hk), Dk, in->l2norm_in_kernel, 1, scale, num, q);
        KR(rows_qk)(gdn_inputs_k(in, b, t, hk), Dk, in->l2norm_in_kernel, 0, scale, num, k);
        KR(rows_v)(gdn_inputs_v(in, b, t, hv), Dv, num, v);
        kreal beta = (kreal)gdn_inputs_beta(in, b, t, hv);
        KROUND(num, KERN_RP_INPUT, &beta, 1);
        const kreal a = KEXP((kreal)gdn_inputs_g(in, b, t, hv));
        KSIMD for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h[x] * a;
        KR(kern_gemm)(num->matmul, KERN_GEMM_SET, 1, Dv, Dk, k, Dk, 1, h, Dv, 1, kv, Dv, gws);
        KSIMD for (int64_t j = 0; j < Dv; j++) kv[j] = beta * (v[j] - kv[j]); /* kv becomes delta */
        for (int64_t i = 0; i < Dk; i++)
          KSIMD for (int64_t j = 0; j < Dv; j++) h[i * Dv + j] = h[i * Dv + j] + k[i] * kv[j];
        KR(kern_gemm)(num->matmul, KERN_GEMM_SET, 1, Dv, Dk, q, Dk, 1, h, Dv, 1, o, Dv, gws);
        double *od = gdn_outputs_o(out, b, t, hv);
        for (int64_t j = 0; j < Dv; j++) od[j] = KR(rows_out)(o[j], out_bf16);
      }
      double *ht = gdn_outputs_ht(out, b, hv);
      for (int64_t x = 0; x < Dk * Dv; x++) ht[x] = h[x];
    }
  }
  gdn_free(mem);
  return GDN_OK;
}
