/* gdn_error: the one way errors travel in gdn-parity.
 *
 * Every fallible function takes a `gdn_error *` last and returns an int
 * status: GDN_OK (0) or the error's code.  The message says what went wrong
 * and where (file, dataset, index, option), in words a user can act on.
 * Codes map onto the command-line exit statuses of the CLI contract:
 * GDN_ERR_INPUT -> exit 2, GDN_ERR_INTERNAL / GDN_ERR_NOMEM / GDN_ERR_IO -> 3
 * (an I/O failure on an *output* is environmental, not the user's input).
 */
#ifndef GDN_ERROR_H
#define GDN_ERROR_H

#include <stddef.h>

enum {
  GDN_OK = 0,
  GDN_ERR_INPUT = 2,    /* bad usage, bad option, bad or too large input */
  GDN_ERR_INTERNAL = 3, /* a bug or an impossible state */
  GDN_ERR_NOMEM = 4,    /* allocation failed (exit 3) */
  GDN_ERR_IO = 5,       /* could not write an output (exit 3) */
};

#define GDN_ERROR_MSG_MAX 1024

typedef struct gdn_error {
  int code;
  char msg[GDN_ERROR_MSG_MAX];
} gdn_error;

void gdn_error_init(gdn_error *e);

/* Sets code and message (printf format); returns code.  A NULL `e` is allowed
 * and makes the call a no-op that still returns code. */
int gdn_error_set(gdn_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends context ("reading fixture x.h5: ") to an existing message;
 * returns the existing code. */
int gdn_error_prefix(gdn_error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The process exit status for a code: 0, 2 or 3. */
int gdn_error_exit_status(int code);

const char *gdn_error_code_name(int code);

#endif
