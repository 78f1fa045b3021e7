/* .npz: the archive through libzip from memory (fix_npz_read_buffer), each
 * member import looks for, then the .npy inside.  Memory is capped with
 * max_bytes so a zip bomb is refused, not inflated. */
#include "fix_dump.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  static const char *const keys[] = {"q", "k", "v", "g", "beta", "h0", "o.npy"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    gdn_error e;
    gdn_error_init(&e);
    fix_array a;
    fix_array_init(&a);
    int found = -1;
    int rc = fix_npz_read_buffer(&a, data, n, "fuzz.npz", keys[i], (uint64_t)1 << 24, i % 2 ? &found : NULL, &e);
    fuzz_check_error(rc, &e);
    if (!rc && (i % 2 == 0 || found)) FUZZ_CHECK(a.origin != NULL, "member read without an origin");
    if (!rc && i % 2 && !found) FUZZ_CHECK(a.data == NULL, "absent member left data");
    fix_array_clear(&a);
    if (rc && i == 0 && strstr(e.msg, "cannot open as a .npz")) break; /* not a zip at all */
  }
  return 0;
}
