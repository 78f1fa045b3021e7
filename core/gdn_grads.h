/* gdn_grads: the backward pass of one Gated DeltaNet kernel call -- the
 * cotangents it is given and the gradients it returns, owned.
 *
 * The loss is L = sum(do .* o) + sum(dht .* ht) (a vector-Jacobian product),
 * o and ht the outputs of gdn_outputs for the same inputs.  Layouts are the
 * inputs' (gdn_shape.h):
 *   cotangents  do  (B, T, Hv, Dv)   dht (B, Hv, Dk, Dv), or NULL for zero
 *               (float32: a JAX cotangent of a float32 output; exact in
 *               every consumer)
 *   gradients   dq, dk (B, T, Hk, Dk)   dv (B, T, Hv, Dv)
 *               dg, dbeta (B, T, Hv)    dh0 (B, Hv, Dk, Dv)
 *               held as binary64 whatever the producer's dtype; `dtype`
 *               records the format the producer rounded them to.
 * dq and dk are gradients with respect to the raw q and k the kernel is
 * given (through the in-kernel L2 norm when l2norm_in_kernel, and the scale);
 * with grouped heads they sum over the Hv / Hk value heads sharing a key
 * head.  dh0 is the gradient with respect to the initial state, whether or
 * not one was given (a missing h0 is the zero state).
 * Pair every _init with _clear; _clear is safe twice.
 */
#ifndef GDN_GRADS_H
#define GDN_GRADS_H

#include <stdint.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_shape.h"

typedef struct gdn_cotangents {
  gdn_shape shape;
  float *d_o; /* do: `do` is a C keyword */
  float *dht; /* NULL: zero */
} gdn_cotangents;

void gdn_cotangents_init(gdn_cotangents *c);
/* Zeroed tensors for a validated shape (dht too when with_dht). */
int gdn_cotangents_alloc(gdn_cotangents *c, const gdn_shape *s, int with_dht, gdn_error *e);
void gdn_cotangents_clear(gdn_cotangents *c);
/* Fills do (and dht if allocated) with N(0, 1) values rounded to float32,
 * each a function of (seed, tensor, flat index) only (gdn_rng.h). */
void gdn_cotangents_synth(gdn_cotangents *c, uint64_t seed);
/* The same for a head group (parity_stream.h): c allocated for the group's
 * shape, its value heads being heads [v0, v0 + c->shape.Hv) of the whole
 * shape's Hv; each value is the one gdn_cotangents_synth draws for the whole
 * shape at the same position. */
void gdn_cotangents_synth_heads(gdn_cotangents *c, int64_t Hv, int64_t v0, uint64_t seed);

/* The cotangents fit inputs of shape s (same B, T, Hv, Dk, Dv; do present)
 * and are finite: GDN_ERR_INPUT otherwise, the message starting with `who`
 * and naming the tensor and the first bad flat index. */
int gdn_cotangents_check(const gdn_cotangents *c, const gdn_shape *s, const char *who,
                         gdn_error *e);

typedef struct gdn_grads {
  gdn_shape shape;
  gdn_dtype dtype;
  double *dq, *dk, *dv, *dg, *dbeta, *dh0;
} gdn_grads;

/* The six tensors in a fixed order, for loops over all of them. */
enum { GDN_GRADS_N = 6 };
typedef enum gdn_grad_id {
  GDN_GRAD_DQ = 0, GDN_GRAD_DK, GDN_GRAD_DV, GDN_GRAD_DG, GDN_GRAD_DBETA, GDN_GRAD_DH0
} gdn_grad_id;
const char *gdn_grads_name(gdn_grad_id id); /* "dq", "dk", "dv", "dg", "dbeta", "dh0" */
size_t gdn_grads_numel(const gdn_shape *s, gdn_grad_id id);
double *gdn_grads_tensor(gdn_grads *g, gdn_grad_id id);
const double *gdn_grads_tensor_c(const gdn_grads *g, gdn_grad_id id);

void gdn_grads_init(gdn_grads *g);
/* Zeroed tensors for a validated shape; frees what `g` held before. */
int gdn_grads_alloc(gdn_grads *g, const gdn_shape *s, gdn_dtype dtype, gdn_error *e);
void gdn_grads_clear(gdn_grads *g);

/* The normwise relative error ||x - r||_F / ||r||_F of one tensor, in
 * binary64 (sums left to right; an estimate, not a certificate); 0 when
 * both are zero, +inf when only r is. */
double gdn_grads_rel_fro(const gdn_grads *x, const gdn_grads *r, gdn_grad_id id);

#endif
