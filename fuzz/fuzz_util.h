/* Shared by the libFuzzer targets: a NUL-terminated copy of the input (the
 * JSON and command-line parsers take C strings) and the error checks every
 * target makes.  Nothing here hides a finding: a failed check aborts, which
 * libFuzzer records as a crash with the input that caused it. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_error.h"

#define FUZZ_UNUSED __attribute__((unused))

/* A failed invariant: print it and abort (a libFuzzer crash). */
#define FUZZ_CHECK(cond, ...)                                          \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "fuzz invariant failed: %s: ", #cond);           \
      fprintf(stderr, __VA_ARGS__);                                    \
      fputc('\n', stderr);                                             \
      abort();                                                         \
    }                                                                  \
  } while (0)

/* The input as a C string; NULL if it holds a NUL byte (the JSON readers
 * get files through a path that refuses those, see parity_policy_load_file). */
FUZZ_UNUSED static char *fuzz_cstring(const uint8_t *data, size_t n) {
  if (memchr(data, 0, n)) return NULL;
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, data, n);
  s[n] = '\0';
  return s;
}

/* Every failure must be one of the documented codes with a message that
 * says something (what and where), never an empty one. */
FUZZ_UNUSED static void fuzz_check_error(int rc, const gdn_error *e) {
  if (rc == GDN_OK) return;
  FUZZ_CHECK(rc == GDN_ERR_INPUT || rc == GDN_ERR_NOMEM || rc == GDN_ERR_IO || rc == GDN_ERR_INTERNAL,
             "unknown code %d", rc);
  FUZZ_CHECK(e->code == rc, "returned %d but e->code is %d", rc, e->code);
  FUZZ_CHECK(e->msg[0] != '\0', "error %d without a message", rc);
  FUZZ_CHECK(memchr(e->msg, '\0', sizeof e->msg) != NULL, "unterminated message");
}

#endif
