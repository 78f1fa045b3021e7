/* parity_tensor: the tensors a case compares, one row each.
 *
 * Every module that names, shapes or indexes a compared tensor reads it from
 * this table: the policy (rule "tensors" names), the measurement loop (dims,
 * data), the results writer (worst-position names).  A new tensor (the
 * gradients dq dk dv dg dbeta dh0 are six such rows, read from gdn_grads) is
 * one row here, one enum value, and a `data` accessor; nothing else
 * enumerates tensors.
 *
 * Rows are in the order the results document lists them (o before ht).
 */
#ifndef PARITY_TENSOR_H
#define PARITY_TENSOR_H

#include <stdint.h>

#include "gdn_grads.h"
#include "gdn_outputs.h"
#include "parity_vals.h"

typedef enum parity_tensor_id {
  PARITY_T_O = 0,  /* outputs (B, T, Hv, Dv) */
  PARITY_T_HT = 1, /* final state (B, Hv, Dk, Dv) */
  /* The gradients (--grad; gdn_grads.h): the VJP of sum(do .* o) + sum(dht
   * .* ht) with respect to each input, in gdn_grad_id order. */
  PARITY_T_DQ = 2,    /* (B, T, Hk, Dk) */
  PARITY_T_DK = 3,    /* (B, T, Hk, Dk) */
  PARITY_T_DV = 4,    /* (B, T, Hv, Dv) */
  PARITY_T_DG = 5,    /* (B, T, Hv) as (B, T, Hv, 1) */
  PARITY_T_DBETA = 6, /* (B, T, Hv) as (B, T, Hv, 1) */
  PARITY_T_DH0 = 7,   /* (B, Hv, Dk, Dv) */
  PARITY_T_N          /* number of rows */
} parity_tensor_id;

/* Policy masks: bit (1 << id). */
enum { PARITY_TENSOR_O = 1u << PARITY_T_O, PARITY_TENSOR_HT = 1u << PARITY_T_HT };
#define PARITY_TENSOR_ALL ((1u << PARITY_T_N) - 1u)
/* The forward's tensors (a rule without "tensors" judges these) and the
 * gradients. */
#define PARITY_TENSOR_FORWARD (PARITY_TENSOR_O | PARITY_TENSOR_HT)
#define PARITY_TENSOR_GRADS (PARITY_TENSOR_ALL & ~PARITY_TENSOR_FORWARD)

typedef struct parity_tensor {
  parity_tensor_id id;
  const char *name;           /* "o", "ht": results keys and policy names */
  const char *index_names[4]; /* names of the worst position's indices */
  /* Row-major dims of the tensor for a shape. */
  void (*dims)(const gdn_shape *s, int64_t out[4]);
  /* Block lengths along each axis for the localized statistic
   * (parity_metrics_blocks) of a case with chunk size `chunk`: o, dq, dk,
   * dv, dg, dbeta per (b, head, chunk of positions), ht and dh0 per
   * (b, head). */
  void (*blocks)(const gdn_shape *s, int64_t chunk, int64_t out[4]);
  /* The tensor inside an implementation's outputs, as it is held (binary64
   * or float32; none: not produced); NULL for a gradient row. */
  parity_vals (*data)(const gdn_outputs *x);
  int grad;        /* 1: a gradient, read from gdn_grads (grad_id) */
  gdn_grad_id grad_id;
} parity_tensor;

extern const parity_tensor parity_tensors[PARITY_T_N];

/* The row named `name`, or NULL. */
const parity_tensor *parity_tensor_find(const char *name);
/* The tensor of row t in a subject's outputs or gradients, as it is held
 * (either may be NULL: then none). */
parity_vals parity_tensor_get(const parity_tensor *t, const gdn_outputs *out, const gdn_grads *g);
/* dims[0] * ... * dims[3]. */
int64_t parity_tensor_numel(const parity_tensor *t, const gdn_shape *s);

#endif
