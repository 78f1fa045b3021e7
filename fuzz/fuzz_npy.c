/* .npy: fix_npy_parse + fix_npy_decode over the raw bytes, then the exact
 * conversions fix_array_to_f32 / _to_f64 that import applies.
 * Invariants: a parsed header accounts for every byte (data_offset +
 * count * itemsize == n) and decoding succeeds exactly then. */
#include "fix_dump.h"
#include "fix_npy.h"
#include "fuzz_util.h"
#include "gdn_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  gdn_error e;
  gdn_error_init(&e);
  fix_npy_header h;
  int rc = fix_npy_parse(data, n, "fuzz.npy", &h, &e);
  fuzz_check_error(rc, &e);
  if (rc) return 0;
  FUZZ_CHECK(h.itemsize == 2 || h.itemsize == 4 || h.itemsize == 8, "itemsize %zu", h.itemsize);
  FUZZ_CHECK(h.data_offset <= n && n - h.data_offset == h.count * h.itemsize,
             "header says %zu x %zu bytes at %zu, buffer has %zu", h.count, h.itemsize, h.data_offset, n);
  FUZZ_CHECK(h.ndim >= 0 && h.ndim <= FIX_NPY_MAX_DIMS, "ndim %d", h.ndim);
  fix_array a;
  fix_array_init(&a);
  rc = fix_array_from_npy(&a, data, n, "fuzz.npy", &e);
  fuzz_check_error(rc, &e);
  FUZZ_CHECK(rc == GDN_OK || rc == GDN_ERR_NOMEM, "decode of a parsed header failed: %s", e.msg);
  if (!rc && a.count <= ((size_t)1 << 22)) {
    void *dst = malloc(a.count ? a.count * sizeof(double) : 1);
    int bf;
    rc = fix_array_to_f32(&a, 1, dst, &bf, &e);
    fuzz_check_error(rc, &e);
    rc = fix_array_to_f64(&a, 0, dst, &bf, &e);
    fuzz_check_error(rc, &e);
    free(dst);
  }
  fix_array_clear(&a);
  return 0;
}
