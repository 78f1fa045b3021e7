/* kern_forward: the frame every single-process forward kernel runs in.
 * The stock scan and the token recurrence differ only in their run; the
 * steps around it -- outputs cleared, numerics set up and checked, outputs
 * allocated, the run for the compute dtype, outputs finished, and on any
 * failure the outputs cleared again -- are one copy here, so a kernel
 * cannot return half-written outputs.  (affine-prefix adds its prefix
 * check and seams between the steps and keeps its own frame.) */
#ifndef KERN_FORWARD_H
#define KERN_FORWARD_H

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"
#include "kern_num.h"

/* One dtype's run: fills out (allocated for in and cfg) or fails. */
typedef int (*kern_forward_run)(const gdn_inputs *in, const kern_config *cfg, const kern_num *num,
                                gdn_outputs *out, gdn_error *e);

/* who names the kernel in messages; chunked: cfg's chunk and device
 * settings apply (kern_num_setup).  run_f32 for float32 and bfloat16
 * compute, run_f64 for float64. */
int kern_forward(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, const char *who, int chunked,
                 kern_forward_run run_f32, kern_forward_run run_f64, gdn_error *e);

#endif
