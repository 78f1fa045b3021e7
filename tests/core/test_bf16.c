#include <check.h>
#include <math.h>
#include <stdint.h>

#include "gdn_bf16.h"
#include "../check_runner.h"

/* Hand-picked float32 bit patterns and the bfloat16 bits RNE must give. */
START_TEST(rounding_patterns) {
  static const struct { uint32_t f; uint16_t h; const char *why; } t[] = {
      {0x3f800000u, 0x3f80, "1.0 exact"},
      {0x3f808000u, 0x3f80, "tie, even below: stays"},
      {0x3f818000u, 0x3f82, "tie, odd below: rounds up to even"},
      {0x3f808001u, 0x3f81, "just above the tie: up"},
      {0x3f807fffu, 0x3f80, "just below the tie: down"},
      {0xbf818000u, 0xbf82, "negative tie to even"},
      {0x7f7fffffu, 0x7f80, "FLT_MAX overflows to +inf"},
      {0xff7fffffu, 0xff80, "-FLT_MAX overflows to -inf"},
      {0x7f7f7fffu, 0x7f7f, "largest value that stays finite"},
      {0x7f800000u, 0x7f80, "+inf"},
      {0xff800000u, 0xff80, "-inf"},
      {0x00000001u, 0x0000, "smallest subnormal rounds to +0"},
      {0x00008000u, 0x0000, "subnormal tie to even (0)"},
      {0x00018000u, 0x0002, "subnormal tie to even (up)"},
      {0x00010000u, 0x0001, "smallest bf16 subnormal, exact"},
      {0x007fffffu, 0x0080, "largest f32 subnormal rounds up to min normal"},
      {0x80000000u, 0x8000, "-0 keeps its sign"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    uint16_t h = gdn_bf16_from_f32(gdn_f32_from_bits(t[i].f));
    ck_assert_msg(h == t[i].h, "%s: 0x%08x -> 0x%04x, want 0x%04x", t[i].why, t[i].f, h, t[i].h);
  }
}
END_TEST

START_TEST(nan_stays_nan) {
  uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7fffffffu, 0x7f80ffffu};
  for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
    uint16_t h = gdn_bf16_from_f32(gdn_f32_from_bits(nans[i]));
    ck_assert_msg((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0, "0x%08x -> 0x%04x not NaN", nans[i], h);
    ck_assert_int_eq(h >> 15, nans[i] >> 31);
    ck_assert(isnan(gdn_bf16_to_f32(h)));
  }
}
END_TEST

/* Exhaustive: every bf16 value converts to f32 and back unchanged, and the
 * rounding of each midpoint region matches an independent reference that
 * picks the nearer neighbour (ties to the even one). */
START_TEST(round_trip_and_reference) {
  for (uint32_t h = 0; h < 0x10000u; h++) {
    float f = gdn_bf16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    ck_assert_uint_eq(gdn_bf16_from_f32(f), h);
  }
  for (uint32_t hi = 0; hi < 0x7f7fu; hi += 7) {
    double lo = gdn_bf16_to_f32((uint16_t)hi), up = gdn_bf16_to_f32((uint16_t)(hi + 1));
    for (uint32_t low = 1; low < 0x10000u; low += 1237) {
      float f = gdn_f32_from_bits((hi << 16) | low);
      double x = f;
      uint16_t want = (x - lo < up - x) ? (uint16_t)hi
                      : (x - lo > up - x) ? (uint16_t)(hi + 1)
                                          : (uint16_t)((hi & 1) ? hi + 1 : hi);
      ck_assert_uint_eq(gdn_bf16_from_f32(f), want);
    }
  }
}
END_TEST

CKR_MAIN("bf16", "bf16", 0, rounding_patterns, nan_stays_nan, round_trip_and_reference)
