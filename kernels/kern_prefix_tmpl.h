/* Body of kern_prefix for one compute type (see kern_prefix.h). */
#include "kern_real.h"

#undef KSPLIT
#define KSPLIT KR(kern_split)

static inline size_t KR(prefix_pad)(size_t n) {
  const size_t per_line = 64 / sizeof(kreal);
  return n > SIZE_MAX - per_line ? SIZE_MAX : (n + per_line - 1) / per_line * per_line;
}

/* gemm workspace, then the splits of A2 / A (Dk x Dk), A1 (Dk x Dk), B1 / h0 (Dk x Dv) */
size_t KR(kern_affine_work_elems)(kern_matmul mode, int64_t dk, int64_t dv) {
  const size_t na = kern_size_mul((size_t)dk, (size_t)dk), nb = kern_size_mul((size_t)dk, (size_t)dv);
  size_t n = KR(prefix_pad)(KR(kern_gemm_ws_elems)());
  n = kern_size_add(n, kern_size_mul(2, KR(kern_split_elems)(mode, na)));
  return kern_size_add(n, KR(kern_split_elems)(mode, nb));
}

size_t KR(kern_prefix_work_elems)(kern_prefix schedule, int64_t devices, int64_t dk, int64_t dv,
                                  kern_matmul mode) {
  (void)schedule; /* every schedule composes in place through one pair */
  (void)devices;
  const size_t na = kern_size_mul((size_t)dk, (size_t)dk), nb = kern_size_mul((size_t)dk, (size_t)dv);
  size_t n = kern_size_add(KR(prefix_pad)(na), KR(prefix_pad)(nb));
  return kern_size_add(n, KR(kern_affine_work_elems)(mode, dk, dv));
}

typedef struct KR(affine_ws) {
  kreal *gws;
  KSPLIT s2, s1, sb; /* A2 (or A), A1, B1 (or h0) */
} KR(affine_ws);

static void KR(affine_ws_bind)(KR(affine_ws) *w, kern_matmul mode, int64_t dk, int64_t dv,
                               kreal *work) {
  const size_t na = (size_t)dk * (size_t)dk, nb = (size_t)dk * (size_t)dv;
  kreal *p = work;
  w->gws = p;
  p += KR(prefix_pad)(KR(kern_gemm_ws_elems)());
  KR(kern_split_bind)(&w->s2, mode, p, na);
  p += KR(kern_split_elems)(mode, na);
  KR(kern_split_bind)(&w->s1, mode, p, na);
  p += KR(kern_split_elems)(mode, na);
  KR(kern_split_bind)(&w->sb, mode, p, nb);
}

void KR(kern_affine_compose)(kern_matmul mode, int64_t dk, int64_t dv, const kreal *A2,
                             const kreal *B2, const kreal *A1, const kreal *B1, kreal *Aout,
                             kreal *Bout, kreal *work) {
  KR(affine_ws) w;
  KR(affine_ws_bind)(&w, mode, dk, dv, work);
  KR(kern_split_fill)(&w.s2, mode, A2, (size_t)(dk * dk));
  KR(kern_split_fill)(&w.s1, mode, A1, (size_t)(dk * dk));
  KR(kern_split_fill)(&w.sb, mode, B1, (size_t)(dk * dv));
  KR(kern_mm)(mode, dk, dk, dk, &w.s2, dk, 1, &w.s1, dk, 1, Aout, dk, w.gws);
  KR(kern_mm)(mode, dk, dv, dk, &w.s2, dk, 1, &w.sb, dv, 1, Bout, dv, w.gws);
  KSIMD for (int64_t x = 0; x < dk * dv; x++) Bout[x] = Bout[x] + B2[x];
}

void KR(kern_affine_apply)(kern_matmul mode, int64_t dk, int64_t dv, const kreal *A,
                           const kreal *B, const kreal *h0, kreal *h, kreal *work) {
  if (!h0) {
    for (int64_t x = 0; x < dk * dv; x++) h[x] = B[x];
    return;
  }
  KR(affine_ws) w;
  KR(affine_ws_bind)(&w, mode, dk, dv, work);
  KR(kern_split_fill)(&w.s2, mode, A, (size_t)(dk * dk));
  KR(kern_split_fill)(&w.sb, mode, h0, (size_t)(dk * dv));
  KR(kern_mm)(mode, dk, dv, dk, &w.s2, dk, 1, &w.sb, dv, 1, h, dv, w.gws);
  KSIMD for (int64_t x = 0; x < dk * dv; x++) h[x] = h[x] + B[x];
}

/* The state of one prefix run: the pairs, the composition temporaries, the
 * counters. */
typedef struct KR(prefix_run) {
  int broken;
  kern_matmul mode;
  int64_t dk, dv;
  size_t na, nb;
  kreal *A, *B, *tA, *tB, *aw;
  kern_prefix_stats *st;
  int64_t comps, rounds;
} KR(prefix_run);

/* x[l] = x[l] o x[e] (later o earlier; broken: x[e] o x[l]), in place. */
static void KR(prefix_combine)(KR(prefix_run) *p, int64_t l, int64_t e) {
  kreal *Al = p->A + (size_t)l * p->na, *Bl = p->B + (size_t)l * p->nb;
  const kreal *Ae = p->A + (size_t)e * p->na, *Be = p->B + (size_t)e * p->nb;
  if (!(p->broken & KERN_PREFIX_BROKEN_ORDER))
    KR(kern_affine_compose)(p->mode, p->dk, p->dv, Al, Bl, Ae, Be, p->tA, p->tB, p->aw);
  else
    KR(kern_affine_compose)(p->mode, p->dk, p->dv, Ae, Be, Al, Bl, p->tA, p->tB, p->aw);
  memcpy(Al, p->tA, p->na * sizeof *Al);
  memcpy(Bl, p->tB, p->nb * sizeof *Bl);
  kern_prefix_stats *st = p->st;
  if (st && st->trace && p->comps < st->trace_cap) {
    st->trace[3 * p->comps] = p->rounds + 1;
    st->trace[3 * p->comps + 1] = l;
    st->trace[3 * p->comps + 2] = e;
  }
  p->comps++;
}

/* jax.lax.associative_scan's _scan in place (kern_prefix.h).  Level j holds
 * m_j = floor(D / 2^j) elements, element t at off_j + t * 2^j with
 * off_j = 2^j - 1. */
static void KR(prefix_assoc)(KR(prefix_run) *p, int64_t D) {
  int64_t m[64], L = 0;
  for (int64_t mj = D; mj >= 2; mj /= 2) m[L++] = mj;
  for (int64_t j = 0; j < L; j++) { /* reduce: y[2i+1] = y[2i].y[2i+1] */
    const int64_t s = (int64_t)1 << j, off = s - 1;
    for (int64_t i = 0; i < m[j] / 2; i++)
      KR(prefix_combine)(p, off + (2 * i + 1) * s, off + 2 * i * s);
    p->rounds++; /* m_j >= 2: at least one pair */
  }
  for (int64_t j = L - 1; j >= 0; j--) { /* even: y[2i+2] = y[2i+1].y[2i+2] */
    const int64_t s = (int64_t)1 << j, off = s - 1, ne = (m[j] + 1) / 2 - 1;
    for (int64_t i = 0; i < ne; i++)
      KR(prefix_combine)(p, off + (2 * i + 2) * s, off + (2 * i + 1) * s);
    if (ne > 0) p->rounds++;
  }
}

void KR(kern_prefix_inclusive)(kern_prefix schedule, int broken, kern_matmul mode,
                               int64_t devices, int64_t dk, int64_t dv, kreal *A, kreal *B,
                               kreal *work, kern_prefix_stats *stats) {
  KR(prefix_run) p;
  p.broken = broken;
  p.mode = mode;
  p.dk = dk;
  p.dv = dv;
  p.na = (size_t)(dk * dk);
  p.nb = (size_t)(dk * dv);
  p.A = A;
  p.B = B;
  p.tA = work;
  p.tB = work + KR(prefix_pad)(p.na);
  p.aw = p.tB + KR(prefix_pad)(p.nb);
  p.st = stats;
  p.comps = p.rounds = 0;
  const int64_t D = devices;
  switch (schedule) {
  case KERN_PREFIX_ASSOCIATIVE_SCAN: KR(prefix_assoc)(&p, D); break;
  case KERN_PREFIX_HILLIS_STEELE:
    if (!(broken & KERN_PREFIX_BROKEN_ROUNDS)) {
      /* hs-two-rounds: the loop unrolled for strides 1 and 2 only */
      const int64_t top = broken & KERN_PREFIX_BROKEN_TWO_ROUNDS ? (D < 4 ? D : 4) : D;
      for (int64_t s = 1; s < top; s *= 2) { /* round k: s = 2^k */
        for (int64_t r = D - 1; r >= s; r--) KR(prefix_combine)(&p, r, r - s);
        p.rounds++;
      }
    } else { /* hs-reversed: the same strides, largest first */
      int64_t top = 1;
      while (top * 2 < D) top *= 2;
      for (int64_t s = D >= 2 ? top : 0; s >= 1; s /= 2) {
        for (int64_t r = D - 1; r >= s; r--) KR(prefix_combine)(&p, r, r - s);
        p.rounds++;
      }
    }
    break;
  default: /* SEQUENTIAL */
    for (int64_t r = 1; r < D; r++) {
      KR(prefix_combine)(&p, r, r - 1);
      p.rounds++;
    }
    break;
  }
  if (stats) {
    stats->compositions = p.comps;
    stats->rounds = p.rounds;
  }
}
