#include <check.h>
#include <stdint.h>
#include <string.h>

#include "gdn_shape.h"
#include "../check_runner.h"

START_TEST(parse_good) {
  gdn_shape s;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_shape_parse(&s, "1,4096,4,128", NULL, &e), GDN_OK);
  const gdn_shape want = {1, 4096, 4, 4, 128, 128}; /* H is both Hk and Hv, D both Dk and Dv */
  ck_assert_msg(!memcmp(&s, &want, sizeof s), "parsed B %lld T %lld Hk %lld Hv %lld Dk %lld Dv %lld",
                (long long)s.B, (long long)s.T, (long long)s.Hk, (long long)s.Hv, (long long)s.Dk, (long long)s.Dv);
  ck_assert_int_eq(gdn_shape_validate(&s, &e), GDN_OK);
}
END_TEST

/* Each bad string must be refused with exit-2 class and a message naming the
 * problem (the substring checked). */
START_TEST(parse_bad) {
  static const struct { const char *in, *needle; } cases[] = {
      {"", "empty"},
      {"1,2,3", "3 fields"},
      {"1,2,3,4,5", "more than 4"},
      {"1,0,3,4", "field 2 (T (sequence length)) must be at least 1"},
      {"1,-2,3,4", "field 2"},
      {"a,2,3,4", "field 1"},
      {"1,2,3,4x", "unexpected character 'x'"},
      {"1,,3,4", "field 2"},
      {"1, 2,3,4", "field 2"},
      {"1,99999999999999999999,3,4", "too large"},
      {"1,2,3,", "field 4"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gdn_shape s;
    gdn_error e;
    gdn_error_init(&e);
    ck_assert_int_eq(gdn_shape_parse(&s, cases[i].in, "--shape", &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, cases[i].needle), "'%s': message '%s' lacks '%s'", cases[i].in,
                  e.msg, cases[i].needle);
    ck_assert_msg(strstr(e.msg, "--shape"), "message names the option: %s", e.msg);
  }
}
END_TEST

START_TEST(validate_heads_and_overflow) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {1, 8, 3, 4, 16, 16};
  ck_assert_int_eq(gdn_shape_validate(&s, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "not a multiple"));
  gdn_shape big = {1 << 20, 1 << 20, 1 << 12, 1 << 12, 1 << 12, 1 << 12};
  ck_assert_int_eq(gdn_shape_validate(&big, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "overflows 64 bits"));
  gdn_shape z = {1, 0, 1, 1, 1, 1};
  ck_assert_int_eq(gdn_shape_validate(&z, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "T (sequence length) is 0"));
}
END_TEST

START_TEST(bytes_and_limit) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {2, 10, 1, 2, 4, 8};
  uint64_t in, out;
  ck_assert_int_eq(gdn_shape_bytes(&s, 1, &in, &out, &e), GDN_OK);
  /* q,k: 2*10*1*4 each; v: 2*10*2*8; g,beta: 2*10*2 each; h0: 2*2*4*8; float32. */
  ck_assert_uint_eq(in, 4u * (2 * 80 + 320 + 2 * 40 + 128));
  ck_assert_uint_eq(out, 8u * (320 + 128));
  ck_assert_int_eq(gdn_shape_check_limit(&s, 1, 2, in + 2 * out, &e), GDN_OK);
  ck_assert_int_eq(gdn_shape_check_limit(&s, 1, 2, in + 2 * out - 1, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "--max-bytes"));
  ck_assert_int_eq(gdn_shape_check_limit(&s, 1, 2, 0, &e), GDN_OK);
  ck_assert_int_eq(gdn_shape_chunks(&s, 4), 3);
  ck_assert_int_eq(gdn_shape_chunks(&s, 10), 1);
  ck_assert_int_eq(gdn_shape_chunks(&s, 64), 1);
}
END_TEST

CKR_MAIN("shape", "shape", 0, parse_good, parse_bad, validate_heads_and_overflow, bytes_and_limit)
