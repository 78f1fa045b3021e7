/* parity_tensor: the tensors a case compares, one row each.
 *
 * Every module that names, shapes or indexes a compared tensor reads it from
 * this table: the policy (rule "tensors" names), the measurement loop (dims,
 * data), the results writer (worst-position names).  A new tensor (the
 * gradients dq dk dv dg dbeta dh0) is one row here, one enum value, and a
 * `data` accessor; nothing else enumerates tensors.
 *
 * Rows are in the order the results document lists them (o before ht).
 */
#ifndef PARITY_TENSOR_H
#define PARITY_TENSOR_H

#include <stdint.h>

#include "gdn_outputs.h"

typedef enum parity_tensor_id {
  PARITY_T_O = 0,  /* outputs (B, T, Hv, Dv) */
  PARITY_T_HT = 1, /* final state (B, Hv, Dk, Dv) */
  PARITY_T_N       /* number of rows */
} parity_tensor_id;

/* Policy masks: bit (1 << id). */
enum { PARITY_TENSOR_O = 1u << PARITY_T_O, PARITY_TENSOR_HT = 1u << PARITY_T_HT };
#define PARITY_TENSOR_ALL ((1u << PARITY_T_N) - 1u)

typedef struct parity_tensor {
  parity_tensor_id id;
  const char *name;           /* "o", "ht": results keys and policy names */
  const char *index_names[4]; /* names of the worst position's indices */
  /* Row-major dims of the tensor for a shape. */
  void (*dims)(const gdn_shape *s, int64_t out[4]);
  /* Block lengths along each axis for the localized statistic
   * (parity_metrics_blocks) of a case with chunk size `chunk`: o per
   * (b, head, chunk of positions), ht per (b, head). */
  void (*blocks)(const gdn_shape *s, int64_t chunk, int64_t out[4]);
  /* The tensor inside an implementation's outputs (NULL: not produced). */
  const double *(*data)(const gdn_outputs *x);
} parity_tensor;

extern const parity_tensor parity_tensors[PARITY_T_N];

/* The row named `name`, or NULL. */
const parity_tensor *parity_tensor_find(const char *name);
/* dims[0] * ... * dims[3]. */
int64_t parity_tensor_numel(const parity_tensor *t, const gdn_shape *s);

#endif
