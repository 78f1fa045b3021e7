/* Grid files (parity_grid_parse, as sweep --grid reads them), then the
 * validation sweep runs before any case: shapes, chunk and device counts.
 * Nothing is computed. */
#include "fuzz_util.h"
#include "parity_grid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  char *text = fuzz_cstring(data, n);
  if (!text) return 0;
  parity_synth_spec base;
  gdn_error e;
  gdn_error_init(&e);
  int rc = parity_synth_spec_from_cli(&base, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, &e);
  FUZZ_CHECK(rc == GDN_OK, "base spec: %s", e.msg);
  parity_sweep_opts so;
  parity_sweep_opts_init(&so);
  parity_grid g;
  parity_grid_init(&g);
  rc = parity_grid_parse(&g, text, "fuzz-grid.json", &base, &so, &e);
  fuzz_check_error(rc, &e);
  FUZZ_CHECK(rc == GDN_OK || (g.n == 0 && g.entries == NULL), "failed parse left entries");
  for (size_t i = 0; !rc && i < g.n; i++) {
    const parity_grid_entry *ge = &g.entries[i];
    FUZZ_CHECK(ge->spec.have_shape, "entry %zu without a shape", i);
    gdn_error e2;
    gdn_error_init(&e2);
    FUZZ_CHECK(gdn_shape_validate(&ge->spec.shape, &e2) == GDN_OK, "entry %zu: %s", i, e2.msg);
    int v = parity_sweep_validate(&ge->spec.shape, &ge->opts, &e2);
    fuzz_check_error(v, &e2);
    uint64_t in, out;
    FUZZ_CHECK(gdn_shape_bytes(&ge->spec.shape, 1, &in, &out, &e2) == GDN_OK, "entry %zu bytes", i);
  }
  parity_grid_clear(&g);
  free(text);
  return 0;
}
