/* Template (see kern_real.h): kern_recurrent in F.  Per token, with the rows
 * of kern_rows_tmpl.h (rounding points KERN_RP_INPUT, KERN_RP_Q_SCALE only:
 * the recurrence forms no k_beta, S, U, W or attn):
 *   a = exp(g_t);  h_ij = h_ij * a
 *   kv = k^T h     (kern_mm, 1 x Dk by Dk x Dv)
 *   delta_j = beta_t * (v_j - kv_j)          (subtract, multiply)
 *   h_ij = h_ij + (k delta^T)_ij             (the outer product is a k = 1
 *                                             matmul in the mode -- IEEE: the
 *                                             rounded product k_i * delta_j,
 *                                             no fma -- then the add)
 *   o = (scale q)^T h                        (kern_mm)
 * Items: the B x Hv heads; memory: Dk x Dv (2 Dk x Dv in the pass modes,
 * plus the splits of q, k, delta, h) + O(Dk + Dv) per thread. */
#include "kern_rows_tmpl.h"

static size_t KR(rec_per)(int64_t Dk, int64_t Dv, kern_matmul mm) {
  const size_t kv = (size_t)(Dk * Dv); /* fits: gdn_shape_validate bounds the state */
  size_t per = KR(rows_pad)(kv) + 2 * KR(rows_pad)((size_t)Dk) + 3 * KR(rows_pad)((size_t)Dv) +
               KR(rows_pad)(KR(kern_gemm_ws_elems)());
  if (mm != KERN_MATMUL_IEEE) per = kern_size_add(per, KR(rows_pad)(kv)); /* outer product */
  per = kern_size_add(per, kern_size_mul(2, KR(kern_split_elems)(mm, (size_t)Dk)));
  per = kern_size_add(per, KR(kern_split_elems)(mm, (size_t)Dv));
  return kern_size_add(per, KR(kern_split_elems)(mm, kv));
}

static __attribute__((noinline)) void KR(recurrent_thread)(const gdn_inputs *in,
                                                           const kern_num *num, gdn_outputs *out,
                                                           kreal *mem, size_t per) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, T = s->T, items = s->B * s->Hv;
  const kern_matmul mm = num->matmul;
  const int out_bf16 = out->dtype == GDN_DTYPE_BF16;
  const kreal scale = KR(rows_scale)(in, num);
  kreal *p = mem + (size_t)omp_get_thread_num() * per;
  kreal *h = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  kreal *q = KR(rows_carve)(&p, (size_t)Dk), *k = KR(rows_carve)(&p, (size_t)Dk);
  kreal *v = KR(rows_carve)(&p, (size_t)Dv), *kv = KR(rows_carve)(&p, (size_t)Dv);
  kreal *o = KR(rows_carve)(&p, (size_t)Dv);
  kreal *gws = KR(rows_carve)(&p, KR(kern_gemm_ws_elems)());
  kreal *op = mm != KERN_MATMUL_IEEE ? KR(rows_carve)(&p, (size_t)(Dk * Dv)) : NULL;
  KR(kern_split) sq, sk, sd, sh;
  KR(kern_split_bind)(&sq, mm, p, (size_t)Dk);
  p += KR(kern_split_elems)(mm, (size_t)Dk);
  KR(kern_split_bind)(&sk, mm, p, (size_t)Dk);
  p += KR(kern_split_elems)(mm, (size_t)Dk);
  KR(kern_split_bind)(&sd, mm, p, (size_t)Dv);
  p += KR(kern_split_elems)(mm, (size_t)Dv);
  KR(kern_split_bind)(&sh, mm, p, (size_t)(Dk * Dv));
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < items; it++) {
    const int64_t b = it / s->Hv, hv = it % s->Hv, hk = gdn_inputs_key_head(in, hv);
    const float *h0 = gdn_inputs_h0(in, b, hv);
    for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h0 ? (kreal)KIN(num, h0[x]) : 0;
    for (int64_t t = 0; t < T; t++) {
      KR(rows_qk)(gdn_inputs_q(in, b, t, hk), Dk, in->l2norm_in_kernel, 1, scale, num, q);
      KR(rows_qk)(gdn_inputs_k(in, b, t, hk), Dk, in->l2norm_in_kernel, 0, scale, num, k);
      KR(rows_v)(gdn_inputs_v(in, b, t, hv), Dv, num, v);
      const kreal beta = KR(rows_beta)(gdn_inputs_beta(in, b, t, hv), num);
      /* packed documents (gdn_inputs.h): padding is k = v = 0, g = 0; a
       * reset zeroes the decay */
      const int kind = gdn_inputs_token_kind(in, b, t);
      if (kind == GDN_TOKEN_PAD) {
        for (int64_t d = 0; d < Dk; d++) k[d] = 0;
        for (int64_t d = 0; d < Dv; d++) v[d] = 0;
      }
      const kreal a = kind == GDN_TOKEN_RESET ? 0
                      : kind == GDN_TOKEN_PAD ? 1
                                              : KEXP(KR(rows_g)(gdn_inputs_g(in, b, t, hv), num));
      KSIMD for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h[x] * a;
      KR(kern_split_fill)(&sk, mm, k, (size_t)Dk);
      KR(kern_split_fill)(&sh, mm, h, (size_t)(Dk * Dv));
      KR(kern_mm)(mm, 1, Dv, Dk, &sk, Dk, 1, &sh, Dv, 1, kv, Dv, gws);
      KSIMD for (int64_t j = 0; j < Dv; j++) kv[j] = beta * (v[j] - kv[j]); /* kv becomes delta */
      if (!op) {
        for (int64_t i = 0; i < Dk; i++)
          KSIMD for (int64_t j = 0; j < Dv; j++) h[i * Dv + j] = h[i * Dv + j] + k[i] * kv[j];
      } else {
        KR(kern_split_fill)(&sd, mm, kv, (size_t)Dv);
        KR(kern_mm)(mm, Dk, Dv, 1, &sk, 1, 1, &sd, Dv, 1, op, Dv, gws); /* k delta^T */
        KSIMD for (int64_t x = 0; x < Dk * Dv; x++) h[x] = h[x] + op[x];
      }
      KR(kern_split_fill)(&sq, mm, q, (size_t)Dk);
      KR(kern_split_fill)(&sh, mm, h, (size_t)(Dk * Dv));
      KR(kern_mm)(mm, 1, Dv, Dk, &sq, Dk, 1, &sh, Dv, 1, o, Dv, gws);
      if (out->oc.c) { /* coded o (kern_out.h, gdn_ocode.h): the same values, exactly */
        gdn_ocode_local loc;
        loc.n = 0;
        const size_t at = (size_t)(((b * out->shape.T + t) * out->shape.Hv + hv) * Dv);
        for (int64_t j = 0; j < Dv; j++) gdn_ocode_put(&out->oc, at + (size_t)j, (float)KR(rows_out)(o[j], out_bf16), &loc);
        gdn_ocode_flush(&out->oc, &loc);
        continue;
      }
      if (out->o32) { /* float32-held o (kern_out.h): the same values, exactly */
        float *of = out->o32 + ((b * out->shape.T + t) * out->shape.Hv + hv) * Dv;
        for (int64_t j = 0; j < Dv; j++) of[j] = (float)KR(rows_out)(o[j], out_bf16);
        continue;
      }
      double *od = gdn_outputs_o(out, b, t, hv);
      for (int64_t j = 0; j < Dv; j++) od[j] = KR(rows_out)(o[j], out_bf16);
    }
    double *ht = gdn_outputs_ht(out, b, hv);
    for (int64_t x = 0; x < Dk * Dv; x++) ht[x] = h[x];
  }
}

/* cfg: the frame's (kern_forward.h); the recurrence has no chunks. */
static int KR(recurrent_run)(const gdn_inputs *in, const kern_config *cfg, const kern_num *num,
                             gdn_outputs *out, gdn_error *e) {
  (void)cfg;
  const gdn_shape *s = &in->shape;
  const int64_t items = s->B * s->Hv;
  const int nt = gdn_threads_for(items);
  const size_t per = KR(rec_per)(s->Dk, s->Dv, num->matmul);
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)),
                          "kern_recurrent per-thread scratch", e);
  if (!mem) {
    gdn_error_prefix(e, "kern_recurrent: ");
    return GDN_ERR_NOMEM;
  }
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(recurrent_thread)(in, num, out, mem, per);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
