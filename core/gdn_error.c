#include "gdn_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gdn_error_init(gdn_error *e) {
  if (!e) return;
  e->code = GDN_OK;
  e->msg[0] = '\0';
}

int gdn_error_set(gdn_error *e, int code, const char *fmt, ...) {
  if (!e) return code;
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return code;
}

int gdn_error_prefix(gdn_error *e, const char *fmt, ...) {
  if (!e) return GDN_ERR_INTERNAL;
  char head[GDN_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  /* Truncation is intended: a message is capped at GDN_ERROR_MSG_MAX. */
  size_t hl = strlen(head), ol = strlen(e->msg);
  if (hl >= sizeof e->msg) hl = sizeof e->msg - 1;
  if (hl + ol >= sizeof e->msg) ol = sizeof e->msg - 1 - hl;
  memmove(e->msg + hl, e->msg, ol);
  memcpy(e->msg, head, hl);
  e->msg[hl + ol] = '\0';
  return e->code;
}

int gdn_error_exit_status(int code) {
  switch (code) {
  case GDN_OK: return 0;
  case GDN_ERR_INPUT: return 2;
  default: return 3;
  }
}

const char *gdn_error_code_name(int code) {
  switch (code) {
  case GDN_OK: return "ok";
  case GDN_ERR_INPUT: return "bad input";
  case GDN_ERR_INTERNAL: return "internal error";
  case GDN_ERR_NOMEM: return "out of memory";
  case GDN_ERR_IO: return "I/O error";
  default: return "unknown error";
  }
}
