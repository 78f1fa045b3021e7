/* Template (see kern_real.h): kern_kda_recurrent in F, the products in
 * num->matmul (kern_mm.h; IEEE as before the modes, bit for bit).
 * kern_recurrent_tmpl.h's steps in its order, with the decay per row:
 *   a_i = exp(g_ti);  h_ij = h_ij * a_i      (mutants, kern_kda.h:
 *                                             gate-value-axis h_ij * a_(j mod Dk);
 *                                             gate-after-update: this step
 *                                             after the update; gate-other-head)
 *   kv = k^T h (kern_mm); delta_j = beta (v_j - kv_j);
 *   h_ij = h_ij + k_i * delta_j (rounded product, then the add; in a pass
 *                                mode the outer product is a k = 1 kern_mm,
 *                                then the add, as kern_recurrent's);
 *   o = (scale q)^T h (kern_mm).
 * Items: the B x Hv heads; memory per thread: Dk x Dv + O(Dk + Dv). */
#include "kern_rows_tmpl.h"
#include "kern_kda_put_tmpl.h"

static size_t KR(kda_rec_per)(int64_t Dk, int64_t Dv, kern_matmul mm) {
  size_t per = KR(rows_pad)((size_t)(Dk * Dv)) + 3 * KR(rows_pad)((size_t)Dk) + 3 * KR(rows_pad)((size_t)Dv) +
               KR(rows_pad)(KR(kern_gemm_ws_elems)());
  if (mm != KERN_MATMUL_IEEE) { /* the outer product, delta's split */
    per = kern_size_add(per, KR(rows_pad)((size_t)(Dk * Dv)));
    per = kern_size_add(per, KR(kern_split_elems)(mm, (size_t)Dv));
  }
  per = kern_size_add(per, kern_size_mul(2, KR(kern_split_elems)(mm, (size_t)Dk)));
  return kern_size_add(per, KR(kern_split_elems)(mm, (size_t)(Dk * Dv)));
}

/* h = Diag(a) h (the key axis), or h Diag(a) for gate-value-axis. */
static void KR(kda_decay)(kreal *h, const kreal *a, int64_t Dk, int64_t Dv, kern_kda_mutant mutant) {
  if (mutant == KERN_KDA_MUTANT_GATE_VALUE_AXIS) {
    for (int64_t i = 0; i < Dk; i++)
      for (int64_t j = 0; j < Dv; j++) h[i * Dv + j] = h[i * Dv + j] * a[j % Dk];
    return;
  }
  for (int64_t i = 0; i < Dk; i++) {
    const kreal ai = a[i];
    KSIMD for (int64_t j = 0; j < Dv; j++) h[i * Dv + j] = h[i * Dv + j] * ai;
  }
}

static __attribute__((noinline)) void KR(kda_rec_thread)(const gdn_inputs *in, const gdn_chgate *gate,
                                                         kern_kda_mutant mutant, const kern_num *num,
                                                         gdn_outputs *out, kreal *mem, size_t per) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, T = s->T, items = s->B * s->Hv;
  const kern_matmul mm = num->matmul;
  const int out_bf16 = out->dtype == GDN_DTYPE_BF16;
  const kreal scale = KR(rows_scale)(in, num);
  kreal *p = mem + (size_t)omp_get_thread_num() * per;
  kreal *h = KR(rows_carve)(&p, (size_t)(Dk * Dv));
  kreal *q = KR(rows_carve)(&p, (size_t)Dk), *k = KR(rows_carve)(&p, (size_t)Dk);
  kreal *a = KR(rows_carve)(&p, (size_t)Dk);
  kreal *v = KR(rows_carve)(&p, (size_t)Dv), *kv = KR(rows_carve)(&p, (size_t)Dv);
  kreal *o = KR(rows_carve)(&p, (size_t)Dv);
  kreal *gws = KR(rows_carve)(&p, KR(kern_gemm_ws_elems)());
  kreal *op = mm != KERN_MATMUL_IEEE ? KR(rows_carve)(&p, (size_t)(Dk * Dv)) : NULL;
  KR(kern_split) sq, sk, sh, sd;
  if (op) {
    KR(kern_split_bind)(&sd, mm, p, (size_t)Dv);
    p += KR(kern_split_elems)(mm, (size_t)Dv);
  }
  KR(kern_split_bind)(&sq, mm, p, (size_t)Dk);
  p += KR(kern_split_elems)(mm, (size_t)Dk);
  KR(kern_split_bind)(&sk, mm, p, (size_t)Dk);
  p += KR(kern_split_elems)(mm, (size_t)Dk);
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
      const int64_t hg = mutant == KERN_KDA_MUTANT_GATE_OTHER_HEAD ? (hv + 1) % s->Hv : hv;
      const float *g = gdn_chgate_row(gate->g, s, b, t, hg);
      for (int64_t i = 0; i < Dk; i++) a[i] = KEXP(KR(rows_g)(g[i], num));
      if (mutant != KERN_KDA_MUTANT_GATE_AFTER_UPDATE) KR(kda_decay)(h, a, Dk, Dv, mutant);
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
      if (mutant == KERN_KDA_MUTANT_GATE_AFTER_UPDATE) KR(kda_decay)(h, a, Dk, Dv, mutant);
      KR(kern_split_fill)(&sq, mm, q, (size_t)Dk);
      KR(kern_split_fill)(&sh, mm, h, (size_t)(Dk * Dv));
      KR(kern_mm)(mm, 1, Dv, Dk, &sq, Dk, 1, &sh, Dv, 1, o, Dv, gws);
      KR(kda_put_o)(out, b, t, hv, o, out_bf16);
    }
    double *ht = gdn_outputs_ht(out, b, hv);
    for (int64_t x = 0; x < Dk * Dv; x++) ht[x] = h[x];
  }
}

static int KR(kda_rec_run)(const gdn_inputs *in, const gdn_chgate *gate, kern_kda_mutant mutant,
                           const kern_num *num, gdn_outputs *out, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int nt = gdn_threads_for(s->B * s->Hv);
  const size_t per = KR(kda_rec_per)(s->Dk, s->Dv, num->matmul);
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)), "kern_kda_recurrent per-thread scratch", e);
  if (!mem) return gdn_error_prefix(e, "kern_kda_recurrent: "), GDN_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(kda_rec_thread)(in, gate, mutant, num, out, mem, per);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
