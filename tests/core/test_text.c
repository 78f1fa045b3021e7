/* gdn_text_escape: every byte a terminal or a log line could misread is
 * escaped; valid printable UTF-8 passes unchanged (the negative control). */
#include <check.h>
#include <string.h>

#include "gdn_text.h"
#include "../check_runner.h"

static const char *esc(const char *s) {
  static char b[256];
  return gdn_text_escape(b, sizeof b, s);
}

START_TEST(controls_escaped) {
  ck_assert_str_eq(esc("a\nPASS: 1 case\n"), "a\\nPASS: 1 case\\n");
  ck_assert_str_eq(esc("x\r\ty"), "x\\r\\ty");
  ck_assert_str_eq(esc("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  ck_assert_str_eq(esc("del\x7f"), "del\\x7f");
  ck_assert_str_eq(esc("\x01\x1f"), "\\x01\\x1f");
}
END_TEST

START_TEST(utf8_kept_invalid_and_c1_escaped) {
  /* negative control: printable UTF-8 (2, 3 and 4 bytes) is unchanged */
  ck_assert_str_eq(esc("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80");
  ck_assert_str_eq(esc("plain ascii, 1.5e-3 (b=0)"), "plain ascii, 1.5e-3 (b=0)");
  ck_assert_str_eq(esc("\xff\xfe"), "\\xff\\xfe");
  ck_assert_str_eq(esc("\x9b" "2J"), "\\x9b2J");          /* a stray 8-bit CSI */
  ck_assert_str_eq(esc("\xc2\x9b" "2J"), "\\xc2\\x9b2J"); /* U+009B, the C1 CSI */
  ck_assert_str_eq(esc("\xc0\xaf"), "\\xc0\\xaf");        /* overlong '/' */
  ck_assert_str_eq(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
  ck_assert_str_eq(esc("\xe2\x80"), "\\xe2\\x80");        /* truncated */
}
END_TEST

START_TEST(truncation_and_rotation) {
  char b[8];
  ck_assert_str_eq(gdn_text_escape(b, sizeof b, "abcd"), "abcd");
  ck_assert_str_eq(gdn_text_escape(b, sizeof b, "abcdefghij"), "abcd...");
  ck_assert_str_eq(gdn_text_escape(b, sizeof b, "ab\ncd"), "ab\\n...");
  const char *p[9];
  for (int i = 0; i < 8; i++) p[i] = gdn_text_show(i % 2 ? "odd\n" : "even");
  for (int i = 0; i < 8; i++) ck_assert_str_eq(p[i], i % 2 ? "odd\\n" : "even");
  ck_assert_str_eq(gdn_text_show(NULL), "(null)");
}
END_TEST

CKR_MAIN("text", "text", 0, controls_escaped, utf8_kept_invalid_and_c1_escaped, truncation_and_rotation)
