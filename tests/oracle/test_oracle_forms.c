/* Token-level vs chunked form: equal in exact arithmetic, so at precision p
 * they must agree to within a few bits of p.
 *
 * Binary64 outputs hide agreement beyond 53 bits, so the sharp check runs at
 * p = 40 and 48: there every p-bit value is exact in binary64 and the outputs
 * show the forms' rounding differences.  The measure is normwise per tensor,
 * floor(log2(max|r| / max|x - r|)): elementwise agreement is limited by the
 * conditioning of each element (o_t = h^T q cancels, and an element 1e-6 of
 * the tensor's largest loses 20 bits relative to itself whatever the form),
 * whereas the normwise figure measures the forms' rounding alone.
 *
 * Bound (p - 6).  An output of either form is built from O(Dk + C) rounded
 * operations per token (dots of length Dk, sums over the chunk of length
 * <= C, a few scalar roundings) over the recurrence's effective memory of
 * about 1 / (1 - a) tokens (the map is contractive, older errors decay).
 * Rounding errors of size <= 2^-p relative to the terms accumulate like a
 * random walk: sqrt(n) with n <= (Dk + C + 8) x memory ~ 2^10 here gives
 * <= 5 bits for one form, one more bit for the difference of two.  Observed:
 * 1 to 3 bits.  An upper bound (p + 4) checks that the outputs really carry
 * p-bit rounding (a form silently computed at another precision would fail).
 *
 * At p = 128 both forms are ~2^-120 (normwise) from the exact values, i.e.
 * even an element at the tensor's floor tau = 2^-64 max|r| is right to ~56
 * bits relative to tau; their binary64 roundings are then equal or adjacent,
 * which oracle_bits_agreed scores >= 52 (equal: 53).
 */
#include <check.h>

#include "oracle_test_util.h"
#include "../check_runner.h"

static const int64_t chunks[] = {1, 4, 16, 64};

/* gscale multiplies every g: 1 is the synthetic Qwen gates (fast decay on
 * some heads), 0.02 a slow decay (a ~ 0.99) that exercises long memory and
 * large ranges of exp(G_i - G_j) within a chunk. */
static void check_forms(int64_t T, float gscale, uint64_t seed) {
  gdn_shape s = {1, T, 2, 4, 16, 8}; /* grouped heads: Hv / Hk = 2 */
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, seed); /* raw q, k: l2norm_in_kernel = 1 */
  ck_assert_int_eq(in.l2norm_in_kernel, 1);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) in.g[i] *= gscale;
  const long precs[] = {40, 48, 128};
  for (size_t pi = 0; pi < 3; pi++) {
    long p = precs[pi];
    oracle_config ct = otu_cfg(p, ORACLE_FORM_TOKEN, 0);
    gdn_outputs tok;
    otu_run(&in, &ct, &tok);
    for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
      oracle_config cc = otu_cfg(p, ORACLE_FORM_CHUNKED, chunks[ci]);
      gdn_outputs ch;
      otu_run(&in, &cc, &ch);
      if (p < 53) {
        int nb = otu_norm_bits(&ch, &tok);
        ck_assert_msg(nb >= p - 6 && nb <= p + 4,
                      "T=%lld gscale %g p=%ld C=%lld: forms agree to %d bits (normwise), "
                      "expected within [p - 6, p + 4]",
                      (long long)T, (double)gscale, p, (long long)chunks[ci], nb);
      } else {
        int eb = oracle_bits_agreed(&ch, &tok, 53);
        ck_assert_msg(eb >= 52, "T=%lld gscale %g p=128 C=%lld: forms agree to %d bits",
                      (long long)T, (double)gscale, (long long)chunks[ci], eb);
      }
      gdn_outputs_clear(&ch);
    }
    gdn_outputs_clear(&tok);
  }
  gdn_inputs_clear(&in);
}

/* T = 37 and 100 are multiples of none of C = 4, 16, 64: the last chunk is
 * partial (and C = 64 > 37 makes the whole sequence one padded chunk). */
START_TEST(token_vs_chunked_T37) { check_forms(37, 1.0f, 11); }
END_TEST
START_TEST(token_vs_chunked_T100) { check_forms(100, 1.0f, 12); }
END_TEST
START_TEST(token_vs_chunked_slow_decay) { check_forms(100, 0.02f, 13); }
END_TEST

CKR_MAIN("oracle_forms", "forms", 60, token_vs_chunked_T37, token_vs_chunked_T100, token_vs_chunked_slow_decay)
