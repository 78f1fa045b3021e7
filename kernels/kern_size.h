/* kern_size: saturating size arithmetic for scratch buffers.
 *
 * Scratch sizes grow like C^2 and Dk x Dv; an absurd --chunk must give a
 * clean GDN_ERR_NOMEM, never a wrapped-around small allocation.  Sums and
 * products saturate at SIZE_MAX, which gdn_malloc / gdn_calloc then refuse. */
#ifndef KERN_SIZE_H
#define KERN_SIZE_H

#include <stddef.h>
#include <stdint.h>

static inline size_t kern_size_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}
static inline size_t kern_size_mul(size_t a, size_t b) {
  return (a != 0 && b > SIZE_MAX / a) ? SIZE_MAX : a * b;
}

#endif
