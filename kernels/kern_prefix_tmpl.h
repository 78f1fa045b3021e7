/* Body of kern_prefix for one compute type (see kern_prefix.h). */
#include "kern_real.h"

void KR(kern_affine_compose)(kern_matmul mode, int64_t dk, int64_t dv, const kreal *A2,
                             const kreal *B2, const kreal *A1, const kreal *B1, kreal *Aout,
                             kreal *Bout, kreal *gws) {
  KR(kern_gemm)(mode, KERN_GEMM_SET, dk, dk, dk, A2, dk, 1, A1, dk, 1, Aout, dk, gws);
  KR(kern_gemm)(mode, KERN_GEMM_SET, dk, dv, dk, A2, dk, 1, B1, dv, 1, Bout, dv, gws);
  KSIMD for (int64_t x = 0; x < dk * dv; x++) Bout[x] = Bout[x] + B2[x];
}

void KR(kern_affine_apply)(kern_matmul mode, int64_t dk, int64_t dv, const kreal *A,
                           const kreal *B, const kreal *h0, kreal *h, kreal *gws) {
  if (!h0) {
    for (int64_t x = 0; x < dk * dv; x++) h[x] = B[x];
    return;
  }
  KR(kern_gemm)(mode, KERN_GEMM_SET, dk, dv, dk, A, dk, 1, h0, dv, 1, h, dv, gws);
  KSIMD for (int64_t x = 0; x < dk * dv; x++) h[x] = h[x] + B[x];
}

void KR(kern_prefix_inclusive)(kern_prefix schedule, int broken, kern_matmul mode,
                               int64_t devices, int64_t dk, int64_t dv, kreal *A, kreal *B,
                               kreal *work, kreal *gws) {
  (void)schedule; /* SEQUENTIAL: the only one kern_prefix_supported accepts */
  const size_t na = (size_t)(dk * dk), nb = (size_t)(dk * dv);
  kreal *tA = work, *tB = work + na;
  for (int64_t r = 1; r < devices; r++) {
    kreal *Ar = A + (size_t)r * na, *Br = B + (size_t)r * nb;
    const kreal *Ap = A + (size_t)(r - 1) * na, *Bp = B + (size_t)(r - 1) * nb;
    if (!broken)
      KR(kern_affine_compose)(mode, dk, dv, Ar, Br, Ap, Bp, tA, tB, gws);
    else
      KR(kern_affine_compose)(mode, dk, dv, Ap, Bp, Ar, Br, tA, tB, gws);
    memcpy(Ar, tA, na * sizeof *Ar);
    memcpy(Br, tB, nb * sizeof *Br);
  }
}
