/* kern_kda_frame: what the KDA kernels share around their runs (private to
 * kernels/): kern_kda_begin_modes clears out, checks shape, config and gate
 * (what KDA does not implement refused, GDN_ERR_INPUT naming it), sets up
 * the numerics and allocates out; kern_kda_end finishes out, or clears it
 * when rc (the run's code) is an error, and returns the code. */
#ifndef KERN_KDA_FRAME_H
#define KERN_KDA_FRAME_H

#include "kern_kda.h"
#include "kern_num.h"

/* For the forward kernels and the backwards: every compute dtype (float32,
 * bfloat16, float64), matmul mode, ftz and solve taken (kern_kda.h,
 * Numerics); the backwards re-form the chunk by substitution under either
 * solve. */
int kern_kda_begin_modes(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int chunked,
                         int affine, const char *who, kern_num *num, gdn_outputs *out, gdn_error *e);
int kern_kda_end(gdn_outputs *out, int rc, gdn_error *e);

#endif
