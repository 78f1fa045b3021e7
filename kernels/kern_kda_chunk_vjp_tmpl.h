/* Template (see kern_real.h): kern_kda_chunk_vjp and kern_kda_affine_vjp
 * (token by token) and their _algebra forms (chunkwise) in F
 * (kern_kda_chunk_vjp.h states the algorithm).  Included after
 * kern_kda_chunk_tmpl.h (the forward's chunk steps and folds),
 * kern_kda_vjp_tmpl.h (the token loop's reverse step) and
 * kern_kda_chunk_bwd_tmpl.h (a chunk's chunkwise VJP). */

typedef struct KR(kcb) {
  KR(kda_ws) cw;        /* the chunked forward's workspace */
  KR(kvw) tw;           /* the token loop backward's workspace (seg: C states) */
  kreal *ck;            /* nct state sets: the forward's state before each chunk */
  kreal *dec;           /* C x G x Dk: the chunk's decays e^(G_i - G_(i-1)) */
  KR(kcc) bw;           /* the chunkwise backward's workspace (algebra only) */
  kreal *dQa, *dKa;     /* C x Dk each: bfloat16's sums over the value heads (algebra only) */
  int64_t C, D, L, nct; /* chunk, token-sharded devices (1 for chunk sharding), tokens per device, chunks */
  KR(kdp) pf;           /* the affine-prefix (kern_kda_prefix_tmpl.h): its devices, schedule, shard */
  int algebra;          /* 1: each chunk by the chunkwise algebra; 0: token by token */
} KR(kcb);

static int64_t KR(kcb_chunks)(int64_t L, int64_t C, int64_t D) { return D * ((L + C - 1) / C); }

/* pc: the prefix's config (devices, prefix, shard); its grid: D token
 * pieces, or (chunk sharding) the unsharded grid, D = 1. */
static int64_t KR(kcb_grid)(const kern_config *pc) { return pc->shard == KERN_SHARD_CHUNKS ? 1 : pc->devices; }

static size_t KR(kcb_per)(const gdn_shape *s, int64_t C, const kern_config *pc, kern_matmul mm) {
  const int64_t D = KR(kcb_grid)(pc), G = s->Hv / s->Hk, nct = KR(kcb_chunks)(s->T / D, C, D);
  size_t per = KR(rows_pad)(KR(kda_chunk_per)(C, s->Dk, s->Dv, pc->devices > 1));
  per = kern_size_add(per, KR(rows_pad)(KR(kda_mm_per)(mm, C, s->Dk, s->Dv)));
  per = kern_size_add(per, kern_size_mul(2, KR(rows_pad)((size_t)(C * s->Dk))));
  per = kern_size_add(per, KR(rows_pad)(pc->devices > 1 ? KR(kdp_per)(pc->devices, s->Dk, s->Dv) : 0));
  per = kern_size_add(per, KR(rows_pad)(KR(kvw_elems)(s, C, mm)));
  per = kern_size_add(per, KR(rows_pad)(kern_size_mul((size_t)nct, (size_t)(G * s->Dk * s->Dv))));
  per = kern_size_add(per, KR(rows_pad)(KR(kcc_elems)(C, s->Dk, s->Dv)));
  return kern_size_add(per, KR(rows_pad)((size_t)(C * G * s->Dk)));
}

static void KR(kcb_carve)(KR(kcb) *w, const gdn_shape *s, int64_t C, const kern_config *pc, const kern_num *num,
                          kreal *p) {
  const int64_t D = KR(kcb_grid)(pc), Dp = pc->devices;
  w->C = C, w->D = D, w->L = s->T / D, w->nct = KR(kcb_chunks)(w->L, C, D);
  KR(kda_carve)(&w->cw, KR(rows_carve)(&p, KR(kda_chunk_per)(C, s->Dk, s->Dv, Dp > 1)), C, s->Dk, s->Dv, Dp > 1);
  KR(kda_mm_bind)(&w->cw, KR(rows_carve)(&p, KR(kda_mm_per)(num->matmul, C, s->Dk, s->Dv)), num->matmul, C, s->Dk,
                  s->Dv);
  w->dQa = KR(rows_carve)(&p, (size_t)(C * s->Dk));
  w->dKa = KR(rows_carve)(&p, (size_t)(C * s->Dk));
  if (Dp > 1)
    KR(kdp_carve)(&w->pf, KR(rows_carve)(&p, KR(kdp_per)(Dp, s->Dk, s->Dv)), pc, C, s->Dk, s->Dv);
  else
    w->pf.cfg = *pc; /* one device: no pieces but [0, T) */
  w->cw.mutant = KERN_KDA_MUTANT_NONE;
  KR(kvw_carve)(&w->tw, s, C, num, KR(rows_carve)(&p, KR(kvw_elems)(s, C, num->matmul)));
  w->ck = KR(rows_carve)(&p, (size_t)w->nct * w->tw.st);
  w->dec = KR(rows_carve)(&p, (size_t)(C * w->tw.G * s->Dk));
  KR(kcc_carve)(&w->bw, C, s->Dk, s->Dv, KR(rows_carve)(&p, KR(kcc_elems)(C, s->Dk, s->Dv)));
}

/* The state path of kern_kda_chunk's chunk (kda_inter without o): the
 * chunk's rows, A and P loaded in cw; cw->S advanced over the chunk, every
 * operation as the forward rounds it (the products in its mode, kda_gemm). */
static void KR(kcb_state_step)(KR(kda_ws) *w, int64_t n, int64_t Dk, int64_t Dv) {
  const int64_t C = n;
  for (int64_t j = 0; j < n; j++)
    for (int64_t d = 0; d < Dk; d++) w->xk[j * Dk + d] = w->k[j * Dk + d] * KEXP(w->G[j * Dk + d]);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dk, n, w->A, C, 1, w->xk, Dk, 1, w->w, Dk, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, n, w->A, C, 1, w->v, Dv, 1, w->u, Dv, w->gws);
  KR(kda_gemm)(w, KERN_GEMM_SET, n, Dv, Dk, w->w, Dk, 1, w->S, Dv, 1, w->tmp, Dv, w->gws);
  for (int64_t x = 0; x < n * Dv; x++) w->vn[x] = w->u[x] - w->tmp[x];
  const kreal *Gl = w->G + (n - 1) * Dk;
  for (int64_t d = 0; d < Dk; d++) w->eg[d] = KEXP(Gl[d]);
  for (int64_t d = 0; d < Dk; d++)
    for (int64_t c = 0; c < Dv; c++) w->S[d * Dv + c] = w->S[d * Dv + c] * w->eg[d];
  for (int64_t j = 0; j < n; j++)
    for (int64_t d = 0; d < Dk; d++) w->kj[j * Dk + d] = w->k[j * Dk + d] * KEXP(Gl[d] - w->G[j * Dk + d]);
  KR(kda_gemm)(w, KERN_GEMM_ADD, Dk, Dv, n, w->kj, 1, Dk, w->vn, Dv, 1, w->S, Dv, w->gws);
}

/* Chunk m of the grid: its rows [c0, c0 + n); the device it starts
 * (>= 1; the state there is that device's start), else 0. */
static int64_t KR(kcb_at)(const KR(kcb) *w, int64_t T, int64_t m, int64_t *c0, int64_t *n) {
  const int64_t C = w->C, L = w->L, per_dev = w->nct / w->D, r = m / per_dev;
  *c0 = r * L + (m % per_dev) * C;
  *n = (r + 1) * L - *c0 < C ? (r + 1) * L - *c0 : C;
  for (int64_t q = 1; q < w->pf.cfg.devices; q++) {
    int64_t t0, t1;
    KR(kdp_piece)(&w->pf, T, q, &t0, &t1);
    if (t0 == *c0) return q;
  }
  return 0;
}

/* The forward of value head hv (the jj-th of its key head) as kern_kda_chunk
 * (one device) or kern_kda_affine (its start states, kern_kda_prefix_tmpl.h)
 * computes it, storing the state before every chunk into ck (chunk m at
 * ck + m st + jj Dk Dv). */
static void KR(kcb_forward)(KR(kcb) *w, const gdn_inputs *in, const gdn_chgate *gate, const kern_num *num,
                            kreal scale, int64_t b, int64_t hv, int64_t jj) {
  const int64_t Dk = in->shape.Dk, Dv = in->shape.Dv;
  KR(kda_ws) *cw = &w->cw;
  const float *h0f = gdn_inputs_h0(in, b, hv);
  if (h0f)
    for (int64_t x = 0; x < Dk * Dv; x++) cw->H0[x] = (kreal)KIN(num, h0f[x]);
  const kreal *h0 = h0f ? cw->H0 : NULL;
  if (w->pf.cfg.devices > 1) KR(kdp_starts)(&w->pf, cw, in, gate, num, scale, b, hv, h0);
  for (int64_t x = 0; x < Dk * Dv; x++) cw->S[x] = h0 ? h0[x] : 0;
  for (int64_t m = 0; m < w->nct; m++) {
    int64_t c0, n;
    const int64_t r = KR(kcb_at)(w, in->shape.T, m, &c0, &n);
    if (r > 0) memcpy(cw->S, w->pf.H + (size_t)(r * Dk * Dv), (size_t)(Dk * Dv) * sizeof(kreal));
    memcpy(w->ck + (size_t)m * w->tw.st + (size_t)(jj * Dk * Dv), cw->S, (size_t)(Dk * Dv) * sizeof(kreal));
    KR(kda_rows)(cw, in, gate, num, scale, b, hv, c0, n);
    KR(kda_intra)(cw, n, Dk);
    KR(kda_solve)(cw, n);
    KR(kcb_state_step)(cw, n, Dk, Dv);
  }
}

/* The chunk's per-token decays, formed from the chunk's cumulative sum as
 * the chunked forward forms G: G_0 = g_0, G_i = G_(i-1) + g_i (in F), and
 * a_0 = e^(G_0), a_i = e^(G_i - G_(i-1)) (subtract, exp). */
static void KR(kcb_decays)(KR(kcb) *w, const gdn_inputs *in, const gdn_chgate *gate, const kern_num *num, int64_t b,
                           int64_t kh, int64_t c0, int64_t n) {
  const int64_t Dk = in->shape.Dk, G = w->tw.G;
  kreal *Gp = w->cw.eg, *Gc = w->cw.Gc; /* Dk each: scratch (the forward is done) */
  for (int64_t jj = 0; jj < G; jj++)
    for (int64_t i = 0; i < n; i++) {
      const float *g = gdn_chgate_row(gate->g, &in->shape, b, c0 + i, kh * G + jj);
      kreal *a = w->dec + (i * G + jj) * Dk;
      for (int64_t d = 0; d < Dk; d++) {
        Gc[d] = i ? Gp[d] + KR(rows_g)(g[d], num) : KR(rows_g)(g[d], num);
        a[d] = i ? KEXP(Gc[d] - Gp[d]) : KEXP(Gc[d]);
        Gp[d] = Gc[d];
      }
    }
}

/* One chunk of item (b, kh) taken backwards from the adjoint tw.S (of the
 * state after it) to the adjoint of the state before it. */
static void KR(kcb_chunk_back)(KR(kcb) *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                               const kern_num *num, kreal scale, kern_kda_vjp_mutant mutant, gdn_grads *out, int64_t b,
                               int64_t kh, int64_t m, int64_t c0, int64_t n) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, G = w->tw.G;
  KR(kvw) *tw = &w->tw;
  const size_t st = tw->st;
  KR(kcb_decays)(w, in, gate, num, b, kh, c0, n);
  memcpy(tw->seg, w->ck + (size_t)m * st, st * sizeof(kreal));
  for (int64_t i = 0; i + 1 < n; i++) {
    memcpy(tw->seg + (size_t)(i + 1) * st, tw->seg + (size_t)i * st, st * sizeof(kreal));
    KR(kv_rows)(tw, in, gate, num, scale, b, kh, c0 + i, 0);
    memcpy(tw->a, w->dec + i * G * Dk, (size_t)(G * Dk) * sizeof(kreal));
    KR(kv_fstep)(tw, in, num, b, kh, c0 + i, tw->seg + (size_t)(i + 1) * st);
  }
  for (int64_t t = c0 + n - 1; t >= c0; t--) {
    KR(kv_rows)(tw, in, gate, num, scale, b, kh, t, 1);
    memcpy(tw->a, w->dec + (t - c0) * G * Dk, (size_t)(G * Dk) * sizeof(kreal));
    for (int64_t i = 0; i < Dk; i++) tw->dK[i] = 0, tw->dQ[i] = 0;
    for (int64_t jj = 0; jj < G; jj++) {
      const int64_t j = kh * G + jj, gi = (b * s->T + t) * s->Hv + j;
      KR(rows_v)(gdn_inputs_v(in, b, t, j), Dv, num, tw->v);
      KR(kv_rhead)(tw, tw->seg + (size_t)(t - c0) * st + (size_t)(jj * Dk * Dv), tw->S + (size_t)(jj * Dk * Dv),
                   tw->a + jj * Dk, tw->beta[jj], ct->d_o + gi * Dv, mutant, out->dg + gi * Dk, out->dbeta + gi,
                   out->dv + gi * Dv);
    }
    const int64_t qk = ((b * s->T + t) * s->Hk + kh) * Dk;
    KR(kv_prep_back)(tw, gdn_inputs_k(in, b, t, kh), tw->dK, in->l2norm_in_kernel, KC(1), num, out->dk + qk);
    KR(kv_prep_back)(tw, gdn_inputs_q(in, b, t, kh), tw->dQ, in->l2norm_in_kernel, tw->bf ? KC(1) : scale, num,
                     out->dq + qk);
  }
}

/* One chunk of item (b, kh) by the chunkwise algebra (kern_kda_chunk_bwd_tmpl.h):
 * each value head's share from its checkpointed start state, dq and dk
 * summed over the value heads, then each row's through its preparation. */
static void KR(kcb_chunk_algebra)(KR(kcb) *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                                  const kern_num *num, kreal scale, kern_kda_vjp_mutant mutant, gdn_grads *out,
                                  int64_t b, int64_t kh, int64_t m, int64_t c0, int64_t n) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, G = w->tw.G;
  KR(kvw) *tw = &w->tw;
  for (int64_t x = 0; x < n * Dk; x++) w->bw.dQ[x] = w->bw.dK[x] = w->dQa[x] = w->dKa[x] = 0;
  for (int64_t jj = 0; jj < G; jj++) {
    KR(kcc_head)(&w->cw, &w->bw, in, gate, ct, num, scale, mutant == KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS, out,
                 w->ck + (size_t)m * tw->st + (size_t)(jj * Dk * Dv), tw->S + (size_t)(jj * Dk * Dv), b, kh * G + jj,
                 c0, n);
    if (!tw->bf) continue; /* float32, float64: the heads' shares summed in place */
    for (int64_t x = 0; x < n * Dk; x++) { /* bfloat16: each head's rounded (kv_add_dq, kv_add_dk), then summed */
      w->dQa[x] = w->dQa[x] + KR(kv_rn)(tw, KR(kv_rn)(tw, w->bw.dQ[x]) * scale);
      w->dKa[x] = w->dKa[x] + KR(kv_rn)(tw, w->bw.dK[x]);
      w->bw.dQ[x] = w->bw.dK[x] = 0;
    }
  }
  const kreal *dQ = tw->bf ? w->dQa : w->bw.dQ, *dK = tw->bf ? w->dKa : w->bw.dK;
  for (int64_t i = 0; i < n; i++) {
    const int64_t t = c0 + i, qk = ((b * s->T + t) * s->Hk + kh) * Dk;
    KR(kv_prep_back)(tw, gdn_inputs_k(in, b, t, kh), dK + i * Dk, in->l2norm_in_kernel, KC(1), num, out->dk + qk);
    KR(kv_prep_back)(tw, gdn_inputs_q(in, b, t, kh), dQ + i * Dk, in->l2norm_in_kernel, tw->bf ? KC(1) : scale, num,
                     out->dq + qk);
  }
}

/* Item (b, key head kh): the forward's chunk-boundary states of its value
 * heads, then the chunks in reverse, devices right to left, the state's
 * adjoint carried across every chunk and device boundary. */
static void KR(kcb_item)(KR(kcb) *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                         const kern_num *num, kern_kda_vjp_mutant mutant, gdn_grads *out, int64_t b, int64_t kh) {
  const gdn_shape *s = &in->shape;
  const int64_t Dk = s->Dk, Dv = s->Dv, G = w->tw.G;
  const kreal scale = KR(rows_scale)(in, num);
  w->tw.scale = scale;
  for (int64_t jj = 0; jj < G; jj++) {
    KR(kcb_forward)(w, in, gate, num, scale, b, kh * G + jj, jj);
    const float *dht = ct->dht ? ct->dht + (b * s->Hv + kh * G + jj) * Dk * Dv : NULL;
    for (int64_t x = 0; x < Dk * Dv; x++) w->tw.S[jj * Dk * Dv + x] = dht ? (kreal)KIN(num, dht[x]) : 0;
  }
  for (int64_t m = w->nct - 1; m >= 0; m--) {
    int64_t c0, n;
    const int64_t r = KR(kcb_at)(w, s->T, m, &c0, &n);
    if (w->algebra)
      KR(kcb_chunk_algebra)(w, in, gate, ct, num, scale, mutant, out, b, kh, m, c0, n);
    else
      KR(kcb_chunk_back)(w, in, gate, ct, num, scale, mutant, out, b, kh, m, c0, n);
    if (mutant == KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED && r > 0)
      for (size_t x = 0; x < w->tw.st; x++) w->tw.S[x] = 0; /* the seam's adjoint dropped */
  }
  for (int64_t jj = 0; jj < G; jj++) {
    double *dh0 = out->dh0 + (b * s->Hv + kh * G + jj) * Dk * Dv;
    for (int64_t x = 0; x < Dk * Dv; x++) dh0[x] = (double)w->tw.S[jj * Dk * Dv + x];
  }
}

static int KR(kcb_run)(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const kern_num *num,
                       int64_t C, const kern_config *pc, int algebra, kern_kda_vjp_mutant mutant, gdn_grads *out,
                       const char *who,
                       gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t items = s->B * s->Hk;
  const int nt = gdn_threads_for(items);
  const size_t per = KR(kcb_per)(s, C, pc, num->matmul);
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)), "per-thread scratch", e);
  if (!mem) return gdn_error_prefix(e, "%s: ", who), GDN_ERR_NOMEM;
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(kcb) w;
    KR(kcb_carve)(&w, s, C, pc, num, mem + (size_t)omp_get_thread_num() * per);
    w.algebra = algebra;
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; it++) KR(kcb_item)(&w, in, gate, ct, num, mutant, out, it / s->Hk, it % s->Hk);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
