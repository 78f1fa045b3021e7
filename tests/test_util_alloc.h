/* The allocation-failure sweep of the tests (header-only, static; shared by
 * tests/oracle and tests/grads): allocation n = 1, 2, ... of one run fails
 * in turn (gdn_alloc_fail_after) until the run succeeds.  The test gives
 * the run and what each outcome must leave, through `ctx`:
 *   prepare    (may be NULL) readies the outputs for an attempt, before
 *              allocation n is made to fail (otu_filled: a failure must
 *              clear what they held);
 *   run        the call under test, allocation n failing; its status;
 *   failed     what a failed run must leave (GDN_ERR_NOMEM, the message,
 *              the outputs cleared);
 *   succeeded  the run that succeeds must equal an undisturbed one (and
 *              frees what it made);
 *   live       (may be NULL) bytes held by an allocator of its own (GMP's,
 *              gmp_count_util.h), which every attempt must leave as it
 *              found them.
 * tua_sweep returns the number of failed runs -- the allocation sites of
 * the run -- and fails the test when allocation `max` still fails. */
#ifndef TEST_UTIL_ALLOC_H
#define TEST_UTIL_ALLOC_H

#include <check.h>

#include "gdn_alloc.h"
#include "gdn_error.h"

typedef struct tua_ops {
  void (*prepare)(void *ctx);
  int (*run)(void *ctx, gdn_error *e);
  void (*failed)(void *ctx, long n, int rc, const gdn_error *e);
  void (*succeeded)(void *ctx);
  long (*live)(void);
  long max;
} tua_ops;

static inline long tua_sweep(const tua_ops *ops, void *ctx) {
  for (long n = 1;; n++) {
    ck_assert_msg(n < ops->max, "still failing after %ld allocations", ops->max);
    gdn_error e;
    gdn_error_init(&e);
    if (ops->prepare) ops->prepare(ctx);
    const long live0 = ops->live ? ops->live() : 0;
    gdn_alloc_fail_after(n);
    int rc = ops->run(ctx, &e);
    gdn_alloc_fail_after(0);
    if (ops->live)
      ck_assert_msg(ops->live() == live0, "allocation %ld failing leaks %ld bytes", n, ops->live() - live0);
    if (rc == GDN_OK) {
      ops->succeeded(ctx);
      return n - 1;
    }
    ops->failed(ctx, n, rc, &e);
  }
}

#endif
