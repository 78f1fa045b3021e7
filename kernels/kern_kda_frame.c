/* The frame of the KDA kernels (kern_kda.h): the checks every KDA kernel
 * makes before it allocates, the outputs, the mutants' names. */

#include "kern_kda_frame.h"
#include "kern_out.h"
#include "kern_prefix.h"

static const char *const mutant_names[KERN_KDA_MUTANT_COUNT] = {
    "none", "gate-value-axis", "gate-after-update", "gate-other-head", "cumsum-across-chunks", "subchunk-off-by-one"};

const char *kern_kda_mutant_name(kern_kda_mutant m) {
  return (int)m >= 0 && m < KERN_KDA_MUTANT_COUNT ? mutant_names[m] : NULL;
}

static int begin(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int chunked, int affine,
                 const char *who, kern_num *num, gdn_outputs *out, gdn_error *e) {
  gdn_outputs_clear(out);
  if (!in || !cfg) return gdn_error_set(e, GDN_ERR_INTERNAL, "%s: inputs or config missing (NULL)", who);
  /* every compute dtype, matmul mode, ftz and solve, forward and backward (kern_kda.h) */
  int rc = kern_num_setup(num, in, cfg, who, chunked, e);
  if (rc) return rc;
  if (chunked && !affine && cfg->devices != 1)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: %lld devices: the KDA chunked kernel runs on one device (the "
                         "affine-prefix is kern_kda_affine)", who, (long long)cfg->devices);
  if (affine && (rc = kern_prefix_supported(cfg->prefix, e))) return gdn_error_prefix(e, "%s: ", who), rc;
  if (affine && cfg->shard != KERN_SHARD_TOKENS && cfg->shard != KERN_SHARD_CHUNKS)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: shard mode %d is not known (tokens, chunks)", who, (int)cfg->shard);
  if (in->seg) return gdn_error_set(e, GDN_ERR_INPUT, "%s: packed documents (segment ids) are not supported", who);
  const gdn_shape *s = &in->shape;
  if (!gate || !gate->g || gate->shape.B != s->B || gate->shape.T != s->T || gate->shape.Hv != s->Hv ||
      gate->shape.Dk != s->Dk)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: the per-channel gate is missing or not of shape (B, T, Hv, Dk)", who);
  return kern_out_alloc_for(out, in, cfg, who, e);
}

int kern_kda_begin_modes(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int chunked,
                         int affine, const char *who, kern_num *num, gdn_outputs *out, gdn_error *e) {
  return begin(in, gate, cfg, chunked, affine, who, num, out, e);
}

int kern_kda_end(gdn_outputs *out, int rc, gdn_error *e) {
  if (!rc) rc = kern_out_finish(out, e);
  if (rc) gdn_outputs_clear(out);
  return rc;
}
