/* gdn_rng: counter-based random numbers for synthetic inputs.
 *
 * Every value is a pure function of (seed, stream, index), so inputs are the
 * same whatever the thread count or the order of generation.  The mixer is
 * SplitMix64's finaliser applied to a Weyl sequence; normals use Box-Muller
 * on two independent uniforms, computed in binary64 with the C library's
 * log, sqrt, cos (glibc's are accurate to < 1 ULP; a rare last-bit difference
 * between C libraries is the only way two machines can differ).
 */
#ifndef GDN_RNG_H
#define GDN_RNG_H

#include <stdint.h>

uint64_t gdn_rng_bits(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in the open interval (0, 1), 53 random bits. */
double gdn_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal. */
double gdn_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

#endif
