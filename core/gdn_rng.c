#include "gdn_rng.h"

#include <math.h>

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t gdn_rng_bits(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t k = mix64(seed + 0x9e3779b97f4a7c15ull);
  k = mix64(k ^ (stream * 0xd1b54a32d192ed03ull + 0x9e3779b97f4a7c15ull));
  return mix64(k + index * 0x9e3779b97f4a7c15ull);
}

double gdn_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return ((double)(gdn_rng_bits(seed, stream, index) >> 11) + 0.5) * 0x1p-53;
}

double gdn_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  double u1 = gdn_rng_uniform(seed, stream, 2 * index);
  double u2 = gdn_rng_uniform(seed, stream, 2 * index + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
