/* Template (see kern_real.h): the affine-prefix of KDA in F (kern_kda.h,
 * kern_kda_affine; kern_kda_chunk_vjp.h's forward): the device pieces, the
 * pieces' folds, the exclusive prefix by cfg->prefix and the state each
 * device starts from.  The pieces are GDN's (kern_affine_piece, kern.h:
 * T/D tokens each, or whole chunks of the unsharded grid by array_split);
 * the composition, the application to h0 and the schedules are GDN's
 * (kern_prefix.h: kern_affine_apply, kern_prefix_inclusive), called in
 * the run's matmul mode (num->matmul; the folds' products kda_gemm's).  Included after kern_kda_chunk_tmpl.h (kda_ws, kda_fold). */
#include "kern.h"
#include "kern_prefix.h"

typedef struct KR(kdp) {
  kreal *A, *B;   /* D pairs: D x Dk x Dk, D x Dk x Dv, contiguous */
  kreal *H;       /* D + 1 states (Dk x Dv): device r's start at H + r Dk Dv; ht last */
  kreal *work;    /* kern_prefix_work_elems */
  kern_config cfg; /* its chunk the kernel's C */
} KR(kdp);

/* Per-thread elements of a kdp for D devices. */
static size_t KR(kdp_per)(int64_t D, int64_t Dk, int64_t Dv) {
  const size_t na = kern_size_mul((size_t)Dk, (size_t)Dk), nb = kern_size_mul((size_t)Dk, (size_t)Dv);
  size_t per = KR(rows_pad)(kern_size_mul((size_t)D, na));
  per = kern_size_add(per, KR(rows_pad)(kern_size_mul((size_t)D, nb)));
  per = kern_size_add(per, KR(rows_pad)(kern_size_mul((size_t)D + 1, nb)));
  /* the work of the widest matmul mode (three parts), whatever the mode */
  return kern_size_add(per, KR(rows_pad)(KR(kern_prefix_work_elems)(KERN_PREFIX_SEQUENTIAL, D, Dk, Dv,
                                                                    KERN_MATMUL_HIGHEST)));
}

/* Binds p to the per-thread block mem (KR(kdp_per) elements); cfg's
 * devices, prefix and shard, chunk C. */
static void KR(kdp_carve)(KR(kdp) *p, kreal *mem, const kern_config *cfg, int64_t C, int64_t Dk, int64_t Dv) {
  const int64_t D = cfg->devices;
  p->A = KR(rows_carve)(&mem, (size_t)(D * Dk * Dk));
  p->B = KR(rows_carve)(&mem, (size_t)(D * Dk * Dv));
  p->H = KR(rows_carve)(&mem, (size_t)((D + 1) * Dk * Dv));
  p->work = mem;
  p->cfg = *cfg;
  p->cfg.chunk = C;
}

/* Device r's rows [t0, t1) (kern_affine_piece; chunked from t0 with C). */
static void KR(kdp_piece)(const KR(kdp) *p, int64_t T, int64_t r, int64_t *t0, int64_t *t1) {
  kern_piece pc;
  kern_affine_piece(&p->cfg, T, r, &pc);
  *t0 = pc.t0;
  *t1 = pc.t1;
}

/* The start states of head (b, hv) into p->H: device 0 from h0 (NULL: 0);
 * each piece folded into its pair (kda_fold: the correct map, whatever the
 * mutant); the inclusive prefix by cfg->prefix; device r >= 1 from
 * A_cum[r-1] h0 + B_cum[r-1]; ht = A_cum[D-1] h0 + B_cum[D-1].  For the
 * sequential schedule these are the products and sums, in the order, that
 * kern_kda_affine composed inline before the schedules were called. */
static void KR(kdp_starts)(KR(kdp) *p, KR(kda_ws) *w, const gdn_inputs *in, const gdn_chgate *gate,
                           const kern_num *num, kreal scale, int64_t b, int64_t hv, const kreal *h0) {
  const int64_t D = p->cfg.devices, Dk = in->shape.Dk, Dv = in->shape.Dv;
  const size_t na = (size_t)(Dk * Dk), nb = (size_t)(Dk * Dv);
  for (int64_t r = 0; r < D; r++) {
    int64_t t0, t1;
    KR(kdp_piece)(p, in->shape.T, r, &t0, &t1);
    KR(kda_fold)(w, in, gate, p->cfg.chunk, num, scale, b, hv, t0, t1);
    memcpy(p->A + (size_t)r * na, w->FA, na * sizeof(kreal));
    memcpy(p->B + (size_t)r * nb, w->FB, nb * sizeof(kreal));
  }
  KR(kern_prefix_inclusive)(p->cfg.prefix, 0, num->matmul, D, Dk, Dv, p->A, p->B, p->work, NULL);
  for (size_t x = 0; x < nb; x++) p->H[x] = h0 ? h0[x] : 0;
  for (int64_t r = 1; r <= D; r++)
    KR(kern_affine_apply)(num->matmul, Dk, Dv, p->A + (size_t)(r - 1) * na, p->B + (size_t)(r - 1) * nb, h0,
                          p->H + (size_t)r * nb, p->work);
}
