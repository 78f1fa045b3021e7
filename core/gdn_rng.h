/* gdn_rng: counter-based random numbers for synthetic inputs.
 *
 * Every value is a pure function of (seed, stream, index), so inputs are the
 * same whatever the thread count or the order of generation.  The mixer is
 * SplitMix64's finaliser applied to a Weyl sequence; normals use Box-Muller
 * on two independent uniforms, computed in binary64 with the C library's
 * log, sqrt, cos (glibc's are accurate to < 1 ULP; a rare last-bit difference
 * between C libraries is the only way two machines can differ).
 *
 * A stream's key (gdn_rng_key) is the part of the mixing that depends on
 * (seed, stream) only: a loop over one stream computes it once and draws
 * with the _k forms, which are inline (no call per element) and give the
 * same bits as the three-argument forms (they are those forms' bodies).
 * gdn_normal_fill (gdn_normal.h) stores the float32 roundings of
 * gdn_rng_normal_k's values, bit for bit, many at a time without a libm
 * call per element: what the synthetic inputs and cotangents use.
 */
#ifndef GDN_RNG_H
#define GDN_RNG_H

#include <math.h>
#include <stdint.h>

#define GDN_RNG_WEYL 0x9e3779b97f4a7c15ull

static inline uint64_t gdn_rng_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The key of (seed, stream). */
static inline uint64_t gdn_rng_key(uint64_t seed, uint64_t stream) {
  uint64_t k = gdn_rng_mix64(seed + GDN_RNG_WEYL);
  return gdn_rng_mix64(k ^ (stream * 0xd1b54a32d192ed03ull + GDN_RNG_WEYL));
}
static inline uint64_t gdn_rng_bits_k(uint64_t key, uint64_t index) {
  return gdn_rng_mix64(key + index * GDN_RNG_WEYL);
}
/* (bits >> 11) + 0.5 is exact in binary64 (53 bits) and the scaling by
 * 2^-53 is exact: the uniform is k/2^53 + 2^-54, never 0 or 1. */
static inline double gdn_rng_uniform_k(uint64_t key, uint64_t index) {
  return ((double)(gdn_rng_bits_k(key, index) >> 11) + 0.5) * 0x1p-53;
}
static inline double gdn_rng_normal_k(uint64_t key, uint64_t index) {
  double u1 = gdn_rng_uniform_k(key, 2 * index);
  double u2 = gdn_rng_uniform_k(key, 2 * index + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

uint64_t gdn_rng_bits(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in the open interval (0, 1), 53 random bits. */
double gdn_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal. */
double gdn_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

#endif
