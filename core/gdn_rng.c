#include "gdn_rng.h"

uint64_t gdn_rng_bits(uint64_t seed, uint64_t stream, uint64_t index) {
  return gdn_rng_bits_k(gdn_rng_key(seed, stream), index);
}

double gdn_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return gdn_rng_uniform_k(gdn_rng_key(seed, stream), index);
}

double gdn_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  return gdn_rng_normal_k(gdn_rng_key(seed, stream), index);
}
