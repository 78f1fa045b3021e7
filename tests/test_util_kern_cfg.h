/* The kernel configuration of a test (header-only, static; shared by
 * tests/kernels, tests/grads and tests/parity): kern_config_init's defaults
 * with the four choices every kernel test makes -- dtype, chunk size,
 * device count and shard mode. */
#ifndef TEST_UTIL_KERN_CFG_H
#define TEST_UTIL_KERN_CFG_H

#include <stdint.h>

#include "gdn_dtype.h"
#include "kern_config.h"

static inline kern_config tkc_cfg(gdn_dtype dt, int64_t chunk, int64_t devices, kern_shard shard) {
  kern_config c;
  kern_config_init(&c);
  c.dtype = dt;
  c.chunk = chunk;
  c.devices = devices;
  c.shard = shard;
  return c;
}

#endif
