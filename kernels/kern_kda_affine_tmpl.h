/* Template (see kern_real.h): kern_kda_affine in F (kern_kda.h).  Per head:
 * the start states of the devices (kern_kda_prefix_tmpl.h: folds, the
 * prefix by cfg->prefix), then each device's piece replayed from its start
 * with kern_kda_chunk's body (kda_replay, the mutant applied there); ht the
 * full composition applied to h0.  D = 1: the single replay, its carry ht
 * (kern_kda_chunk bit for bit).  Items: the B x Hv heads. */

static __attribute__((noinline)) void KR(kda_affine_thread)(const gdn_inputs *in, const gdn_chgate *gate,
                                                            const kern_config *cfg, kern_kda_mutant mutant, int64_t C,
                                                            const kern_num *num, gdn_outputs *out, kreal *mem,
                                                            size_t per) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, D = cfg->devices, items = s->B * s->Hv;
  const size_t nb = (size_t)(Dk * Dv);
  const kreal scale = KR(rows_scale)(in, num);
  kreal *p = mem + (size_t)omp_get_thread_num() * per;
  KR(kda_ws) w;
  KR(kdp) pf;
  KR(kda_carve)(&w, p, C, Dk, Dv, 1);
  p += KR(rows_pad)(KR(kda_chunk_per)(C, Dk, Dv, 1));
  KR(kda_mm_bind)(&w, p, num->matmul, C, Dk, Dv);
  KR(kdp_carve)(&pf, p + KR(rows_pad)(KR(kda_mm_per)(num->matmul, C, Dk, Dv)), cfg, C, Dk, Dv);
  w.mutant = KERN_KDA_MUTANT_NONE;
  w.solve = num->solve;
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < items; it++) {
    const int64_t b = it / s->Hv, hv = it % s->Hv;
    const float *h0f = gdn_inputs_h0(in, b, hv);
    if (h0f)
      for (size_t x = 0; x < nb; x++) w.H0[x] = (kreal)KIN(num, h0f[x]);
    const kreal *h0 = h0f ? w.H0 : NULL;
    if (D > 1) KR(kdp_starts)(&pf, &w, in, gate, num, scale, b, hv, h0);
    for (int64_t r = 0; r < D; r++) {
      int64_t t0, t1;
      KR(kdp_piece)(&pf, s->T, r, &t0, &t1);
      for (size_t x = 0; x < nb; x++) w.S[x] = D > 1 ? pf.H[(size_t)r * nb + x] : h0 ? h0[x] : 0;
      KR(kda_replay)(&w, in, gate, mutant, C, num, scale, out, b, hv, t0, t1);
    }
    const kreal *hf = D > 1 ? pf.H + (size_t)D * nb : w.S;
    double *ht = gdn_outputs_ht(out, b, hv);
    for (size_t x = 0; x < nb; x++) ht[x] = hf[x];
  }
}

static int KR(kda_affine_run)(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg,
                              kern_kda_mutant mutant, int64_t C, const kern_num *num, gdn_outputs *out,
                              gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int nt = gdn_threads_for(s->B * s->Hv);
  size_t per = kern_size_add(KR(rows_pad)(KR(kda_chunk_per)(C, s->Dk, s->Dv, 1)),
                             KR(rows_pad)(KR(kda_mm_per)(num->matmul, C, s->Dk, s->Dv)));
  per = kern_size_add(per, KR(kdp_per)(cfg->devices, s->Dk, s->Dv));
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)), "kern_kda_affine per-thread scratch", e);
  if (!mem) return gdn_error_prefix(e, "kern_kda_affine: "), GDN_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(kda_affine_thread)(in, gate, cfg, mutant, C, num, out, mem, per);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
