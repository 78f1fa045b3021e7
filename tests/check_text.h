/* Assertions over rendered text (header-only): a list of phrases that must
 * all be in a report, or none of them.  Macros, so a failure names the
 * test's own line, and the phrase that is missing (or present). */
#ifndef GDN_TESTS_CHECK_TEXT_H
#define GDN_TESTS_CHECK_TEXT_H

#include <check.h>
#include <stddef.h>
#include <string.h>

#define CKT_HAS_ALL(text, ...)                                                                 \
  do {                                                                                         \
    const char *const ckt_n_[] = {__VA_ARGS__};                                                \
    for (size_t ckt_i_ = 0; ckt_i_ < sizeof ckt_n_ / sizeof ckt_n_[0]; ckt_i_++)               \
      ck_assert_msg(strstr((text), ckt_n_[ckt_i_]) != NULL, "missing: %s", ckt_n_[ckt_i_]); \
  } while (0)

#define CKT_HAS_NONE(text, ...)                                                                \
  do {                                                                                         \
    const char *const ckt_n_[] = {__VA_ARGS__};                                                \
    for (size_t ckt_i_ = 0; ckt_i_ < sizeof ckt_n_ / sizeof ckt_n_[0]; ckt_i_++)               \
      ck_assert_msg(strstr((text), ckt_n_[ckt_i_]) == NULL, "present: %s", ckt_n_[ckt_i_]); \
  } while (0)

#endif
