/* kern_affine_shard: numpy.array_split's rule.  For every N in 1..200 and
 * D in 1..N: the D shards are contiguous and in order (shard 0 starts at 0,
 * each starts where the previous ended), their counts sum to N, differ by
 * at most 1, the larger ones come first, and none is empty.  D > N is
 * refused by kern_config_validate and by the affine kernel, with a message
 * naming both numbers. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kern_test_util.h"
#include "../check_runner.h"

START_TEST(partition_properties) {
  /* counted, then asserted once: a Check assertion per shard would be slow */
  long bad = 0;
  for (int64_t N = 1; N <= 200; N++)
    for (int64_t D = 1; D <= N; D++) {
      int64_t next = 0, prev_n = INT64_MAX, lo = INT64_MAX, hi = 0;
      for (int64_t r = 0; r < D; r++) {
        int64_t first, n;
        kern_affine_shard(N, D, r, &first, &n);
        if (first != next || n < 1 || n > prev_n) {
          if (!bad)
            fprintf(stderr, "N=%ld D=%ld r=%ld: first %ld (expected %ld), n %ld\n", (long)N,
                    (long)D, (long)r, (long)first, (long)next, (long)n);
          bad++;
        }
        prev_n = n;
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
        next = first + n;
      }
      bad += next != N;              /* counts sum to N */
      bad += hi - lo > 1;            /* differ by at most 1 */
      bad += hi != (N + D - 1) / D;  /* the larger is ceil(N/D) */
    }
  ck_assert_int_eq(bad, 0);
}
END_TEST

/* The examples of the rule: 10 over 4 is 3, 3, 2, 2. */
START_TEST(example) {
  int64_t want_first[4] = {0, 3, 6, 8}, want_n[4] = {3, 3, 2, 2};
  for (int r = 0; r < 4; r++) {
    int64_t f, n;
    kern_affine_shard(10, 4, r, &f, &n);
    ck_assert_int_eq(f, want_first[r]);
    ck_assert_int_eq(n, want_n[r]);
  }
}
END_TEST

START_TEST(more_devices_than_chunks_refused) {
  gdn_shape s = {1, 300, 1, 1, 8, 8}; /* 5 chunks of 64 */
  gdn_error e;
  gdn_error_init(&e);
  kern_config c = kt_cfg(GDN_DTYPE_F32, 64, 6);
  ck_assert_int_eq(kern_config_validate(&c, &s, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "6"));
  ck_assert_ptr_nonnull(strstr(e.msg, "5 chunks"));
  c.devices = 5;
  ck_assert_int_eq(kern_config_validate(&c, &s, &e), GDN_OK);

  gdn_inputs in = kt_inputs(s, 3, 0, 1, 1.0f);
  gdn_outputs out = kt_outputs();
  c.devices = 9;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_affine_prefix(&in, &c, &out, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "kern_affine_prefix"));
  ck_assert_ptr_nonnull(strstr(e.msg, "--devices 9"));
  ck_assert_ptr_nonnull(strstr(e.msg, "5 chunks"));
  ck_assert_ptr_null(out.o);
  ck_assert_ptr_null(out.ht);
  c.devices = 5;
  kt_run_ok(K_AFFINE, &in, &c, &out); /* D = N: one chunk each */
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("shard", "shard", 0, partition_properties, example, more_devices_than_chunks_refused)
