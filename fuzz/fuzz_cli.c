/* The command line: the input is argv (NUL-separated words) for
 * gdn_cli_parse with gdn-parity's option table, and every value goes
 * through the parser gdn-parity gives it (--shape and heads, lists, names,
 * sizes, integers), then the shape and sweep validation.  Parse only: no
 * sweep runs.  Also gdn_shape_parse on the raw first word. */
#include "fuzz_util.h"
#include "gdn_cli.h"
#include "gdn_dtype.h"
#include "gdn_shape.h"
#include "kern_config.h"
#include "parity_cli.h"
#include "parity_grid.h"
#include "parity_oracle.h"
#include "parity_sweep.h"

#define GETV(name) gdn_cli_get(t, &a, name)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  if (n > 4096) return 0;
  char *buf = malloc(n + 1);
  memcpy(buf, data, n);
  buf[n] = '\0';
  char *argv[64];
  int argc = 0;
  argv[argc++] = (char *)"gdn-parity";
  for (size_t i = 0; i <= n && argc < 63;) {
    argv[argc++] = buf + i;
    i += strlen(buf + i) + 1;
  }
  argv[argc] = NULL;
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s;
  int rc = gdn_shape_parse(&s, argv[1], "--shape", &e);
  fuzz_check_error(rc, &e);
  if (!rc) FUZZ_CHECK(s.B >= 1 && s.T >= 1 && s.Hk >= 1 && s.Dk >= 1 && s.Hk == s.Hv && s.Dk == s.Dv, "shape");
  const gdn_cli_opt *t = parity_cli_options();
  gdn_cli_args a;
  int first = argc > 1 && argv[1][0] != '-' ? 2 : 1;
  rc = gdn_cli_parse(t, argc, argv, first, &a, &e);
  fuzz_check_error(rc, &e);
  if (!rc) {
    FUZZ_CHECK(a.n_pos <= GDN_CLI_MAX_POS, "n_pos %d", a.n_pos);
    const char *v;
    parity_sweep_opts so;
    parity_sweep_opts_init(&so);
    int64_t x;
    uint64_t u;
    if ((v = GETV("chunk"))) fuzz_check_error(gdn_cli_int64_list(v, "--chunk", 1, 1 << 20, so.chunks, PARITY_MAX_LIST, &so.n_chunks, &e), &e);
    if ((v = GETV("devices"))) fuzz_check_error(gdn_cli_int64_list(v, "--devices", 1, 1 << 20, so.devices, PARITY_MAX_LIST, &so.n_devices, &e), &e);
    if ((v = GETV("prefix"))) {
      static const char *const ch[] = {"sequential", "associative-scan", "hillis-steele", NULL};
      int idx[3];
      size_t k;
      fuzz_check_error(gdn_cli_name_list(v, "--prefix", ch, idx, 3, &k, &e), &e);
    }
    gdn_dtype dt;
    kern_matmul mm;
    parity_oracle_tier tier;
    if ((v = GETV("dtype"))) fuzz_check_error(gdn_dtype_parse(v, &dt, "--dtype", &e), &e);
    if ((v = GETV("matmul-precision"))) fuzz_check_error(kern_matmul_parse(v, &mm, &e), &e);
    if ((v = GETV("oracle"))) fuzz_check_error(parity_oracle_tier_parse(v, &tier, &e), &e);
    if ((v = GETV("oracle-bits"))) fuzz_check_error(gdn_cli_int64(v, "--oracle-bits", 53, 4096, &x, &e), &e);
    if ((v = GETV("threads"))) fuzz_check_error(gdn_cli_int64(v, "--threads", 1, 4096, &x, &e), &e);
    if ((v = GETV("max-bytes"))) fuzz_check_error(gdn_cli_bytes(v, "--max-bytes", &u, &e), &e);
    if ((v = GETV("seed"))) fuzz_check_error(gdn_cli_uint64(v, "--seed", &u, &e), &e);
    parity_synth_spec sp;
    rc = parity_synth_spec_from_cli(&sp, GETV("shape"), GETV("key-heads"), GETV("dv"), GETV("seed"),
                                    GETV("h0") != NULL, GETV("qk-norm"), GETV("input-dtype"), GETV("gates"), &e);
    fuzz_check_error(rc, &e);
    if (!rc && sp.have_shape) {
      FUZZ_CHECK(gdn_shape_validate(&sp.shape, &e) == GDN_OK, "accepted shape invalid: %s", e.msg);
      fuzz_check_error(parity_sweep_validate(&sp.shape, &so, &e), &e);
      fuzz_check_error(gdn_shape_check_limit(&sp.shape, 1, 3, (uint64_t)16 << 30, &e), &e);
    }
  }
  free(buf);
  return 0;
}
