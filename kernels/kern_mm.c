#include "kern_mm.h"

#include <math.h>
#include <string.h>

#include "gdn_bf16.h"
#include "kern_gemm.h"

int kern_mm_parts(kern_matmul mode) {
  switch (mode) {
  case KERN_MATMUL_DEFAULT: return 1;
  case KERN_MATMUL_HIGH: return 2;
  case KERN_MATMUL_HIGHEST: return 3;
  default: return 0;
  }
}

int kern_mm_passes(kern_matmul mode) {
  switch (mode) {
  case KERN_MATMUL_HIGH: return 3;
  case KERN_MATMUL_HIGHEST: return 6;
  default: return 1;
  }
}

/* bfloat16 toward zero: XLA's Truncate (mask 0xFFFF0000). */
static inline float bf16_trunc(float x) { return gdn_f32_from_bits(gdn_f32_bits(x) & 0xffff0000u); }

/* gdn_bf16_round written branch-free so that the split loops vectorise;
 * bit-identical to it (NaN: quiet, sign and payload top kept; ties to even;
 * overflow to +-inf). */
static inline float bf16_rn(float x) {
  uint32_t u = gdn_f32_bits(x);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  uint32_t q = (u | 0x00400000u) & 0xffff0000u;
  return gdn_f32_from_bits((u & 0x7fffffffu) > 0x7f800000u ? q : r);
}

void kern_split_value_f32(kern_matmul mode, float x, float p[3]) {
  p[0] = p[1] = p[2] = 0;
  switch (mode) {
  case KERN_MATMUL_DEFAULT: p[0] = bf16_rn(x); break;
  case KERN_MATMUL_HIGH:
    p[0] = bf16_trunc(x);
    p[1] = bf16_rn(x - p[0]);
    break;
  case KERN_MATMUL_HIGHEST: {
    p[0] = bf16_trunc(x);
    float r = x - p[0];
    p[1] = bf16_trunc(r);
    p[2] = bf16_rn(r - p[1]);
    break;
  }
  default: p[0] = x; break;
  }
}

#define KERN_REAL 32
#include "kern_mm_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_mm_tmpl.h"
#undef KERN_REAL
