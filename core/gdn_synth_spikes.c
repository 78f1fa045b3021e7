/* Gate spikes (gdn_synth.h, gdn_synth_spikes): g = -G on every value head
 * of about 5 % of the tokens, the tokens drawn from the seed. */
#include "gdn_rng.h"
#include "gdn_synth.h"

void gdn_synth_spikes(gdn_inputs *in, float g, uint64_t seed) {
  const gdn_shape *s = &in->shape;
  const uint64_t key = gdn_rng_key(seed, GDN_SYNTH_SPIKE_STREAM);
  for (int64_t bt = 0; bt < s->B * s->T; bt++)
    if (gdn_rng_uniform_k(key, (uint64_t)bt) < GDN_SYNTH_SPIKE_FRACTION)
      for (int64_t h = 0; h < s->Hv; h++) in->g[bt * s->Hv + h] = g;
}
