/* gdn_bf16: bfloat16 <-> float32, bit-exact.
 *
 * bfloat16 is the top 16 bits of an IEEE binary32 (1 sign, 8 exponent, 7
 * fraction bits).  float32 -> bfloat16 rounds to nearest, ties to even, as
 * XLA's convert does: overflow goes to +-inf, subnormals round within the
 * subnormal range (no flush here: see the kernels' FTZ option), NaN stays NaN
 * (made quiet, sign kept).  bfloat16 -> float32 is exact.
 */
#ifndef GDN_BF16_H
#define GDN_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t gdn_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float gdn_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t gdn_bf16_from_f32(float f) {
  uint32_t u = gdn_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign and payload top, force quiet */
    return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
  return (uint16_t)(u >> 16);
}

static inline float gdn_bf16_to_f32(uint16_t h) { return gdn_f32_from_bits((uint32_t)h << 16); }

/* The float32 value nearest-even representable in bfloat16. */
static inline float gdn_bf16_round(float f) { return gdn_bf16_to_f32(gdn_bf16_from_f32(f)); }

#endif
