/* kern_out: the outputs of a kernel call, allocated for the kernel to fill.
 *
 * kern_out_alloc is gdn_outputs_alloc without the zeroing pass: every
 * element of o and ht is written by the kernel (scan, recurrence and
 * affine-prefix each store every row t < T of every head and every state),
 * so zeroing would be a wasted write of the whole output (1 GiB of o at
 * T = 2^20, D = 128) before the kernel writes it again.  Same checks, same
 * messages, same failure behaviour (out cleared).  A large o is also hinted
 * into transparent huge pages (Linux, where THP is on request): far fewer
 * page faults when the kernel first writes it.  When `out` already holds
 * buffers of the sizes `s` needs (a previous call's, kept by the caller),
 * they are reused as they are: the kernel overwrites every element.
 * With out->f32_ok and a float32 or bfloat16 output dtype, o is held as
 * float32 (out->o32, o NULL; gdn_outputs.h): the kernels store the same
 * values, converted exactly.  With out->code_base and a float32 output
 * dtype, o is held as codes against code_base (out->oc, gdn_ocode.h): the
 * kernels put every value and finish the codes (kern_out_finish) before
 * they return. */
#ifndef KERN_OUT_H
#define KERN_OUT_H

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "gdn_shape.h"
#include "kern_config.h"

int kern_out_alloc(gdn_outputs *out, const gdn_shape *s, gdn_dtype dtype, gdn_error *e);
/* The forward kernels' allocation: kern_out_alloc at in's shape in the
 * config's output dtype (kern_output_dtype), an error prefixed "WHO: " so the
 * message names the kernel that was called. */
int kern_out_alloc_for(gdn_outputs *out, const gdn_inputs *in, const kern_config *cfg, const char *who,
                       gdn_error *e);
/* After the kernel wrote every element: a coded o's exceptions in index
 * order (gdn_ocode_finish); nothing to do for the other forms. */
int kern_out_finish(gdn_outputs *out, gdn_error *e);

#endif
