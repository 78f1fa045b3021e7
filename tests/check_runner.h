/* The one Check runner of every test executable (header-only, static).
 *
 * A test file's main() lists its test cases in one place; with one case and
 * no set-up of its own, main() is one line: CKR_MAIN(suite, case, timeout,
 * tests...).  In general:
 *
 *   int main(void) {
 *     Suite *su = suite_create("alloc");
 *     CKR_TCASE(su, "alloc", 0, alignment_and_zero, overflow_refused);
 *     return ckr_run(su);
 *   }
 *
 * CKR_TCASE creates the test case, sets its time limit (0: Check's default,
 * which CK_DEFAULT_TIMEOUT sets), adds the tests in the order listed and adds
 * the case to the suite; it returns the case so a file can add loop tests or
 * fixtures to it.  CKR_ADD adds tests to a case a suite's helper made (the
 * hostile tests' hu_case).  ckr_run runs the suite with the fork mode CK_FORK
 * sets (fork unless CK_FORK=no, as the valgrind set-up asks) and returns the
 * exit status: 0 when every test passed, 1 otherwise.  ckr_run_with is for
 * the few executables that force a fork mode (tests that must share a
 * process) or print from one MPI rank only. */
#ifndef GDN_TESTS_CHECK_RUNNER_H
#define GDN_TESTS_CHECK_RUNNER_H

#include <check.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* CKR_UNDER_ASAN: 1 in an AddressSanitizer build (gcc's
 * __SANITIZE_ADDRESS__ or clang's feature), where a process's peak RSS holds
 * ASan's shadow memory and per-thread caches (some 35 MB at start and 18 MB
 * a worker thread), so tests of resident memory relax or skip there. */
#if defined(__SANITIZE_ADDRESS__)
#define CKR_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKR_UNDER_ASAN 1
#endif
#endif
#ifndef CKR_UNDER_ASAN
#define CKR_UNDER_ASAN 0
#endif

/* The tests of a CKR_TCASE call as an array and its length: START_TEST makes
 * each name a `const TTest *`. */
#define CKR_LIST(...) \
  (const TTest *const[]){__VA_ARGS__}, sizeof((const TTest *const[]){__VA_ARGS__}) / sizeof(const TTest *)

#define CKR_TCASE(su, name, timeout_s, ...) ckr_tcase_add((su), (name), (timeout_s), CKR_LIST(__VA_ARGS__))
/* Adds tests to a case made elsewhere (a helper that also sets fixtures). */
#define CKR_ADD(tc, ...) ckr_add_tests((tc), CKR_LIST(__VA_ARGS__))

static inline void ckr_add_tests(TCase *tc, const TTest *const *tests, size_t n) {
  for (size_t i = 0; i < n; i++) tcase_add_test(tc, tests[i]);
}

/* Adds each test as a loop test over rows [0, n) of a table (Check's _i). */
static inline void ckr_add_loops(TCase *tc, int n, const TTest *const *tests, size_t k) {
  for (size_t i = 0; i < k; i++) tcase_add_loop_test(tc, tests[i], 0, n);
}

static inline TCase *ckr_tcase_add(Suite *su, const char *name, double timeout_s, const TTest *const *tests,
                                   size_t n) {
  TCase *tc = tcase_create(name);
  if (timeout_s > 0) tcase_set_timeout(tc, timeout_s);
  ckr_add_tests(tc, tests, n);
  suite_add_tcase(su, tc);
  return tc;
}

static inline int ckr_run_with(Suite *su, enum fork_status fork, enum print_output print) {
  SRunner *sr = srunner_create(su);
  /* CK_FORK_GETENV is Check's own default: leave the choice to CK_FORK. */
  if (fork != CK_FORK_GETENV) srunner_set_fork_status(sr, fork);
  srunner_run_all(sr, print);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}

static inline int ckr_run(Suite *su) { return ckr_run_with(su, CK_FORK_GETENV, CK_NORMAL); }

/* argv[1..n] into the n `char **` slots that follow (a test's `static char
 * *` paths, which argv arrays of programs it runs take as they are), or
 * "usage: " `usage` on stderr and exit 2 when fewer were given (meson passes
 * the programs and folders a test drives). */
static inline void ckr_args(int argc, char **argv, const char *usage, int n, ...) {
  if (argc < n + 1) {
    fprintf(stderr, "usage: %s\n", usage);
    exit(2);
  }
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) *va_arg(ap, char **) = argv[i + 1];
  va_end(ap);
}

/* The whole main() of an executable with one test case and no set-up of its
 * own: CKR_MAIN("alloc", "alloc", 0, alignment_and_zero, overflow_refused) */
#define CKR_MAIN(suite, tcase, timeout_s, ...)          \
  int main(void) {                                       \
    Suite *ckr_su = suite_create(suite);                 \
    CKR_TCASE(ckr_su, (tcase), (timeout_s), __VA_ARGS__); \
    return ckr_run(ckr_su);                              \
  }

/* CKR_MAIN with the fork mode forced (CK_NOFORK: tests that share a process,
 * for the allocation counters or HDF5's library state). */
#define CKR_MAIN_FORK(fork, suite, tcase, timeout_s, ...)  \
  int main(void) {                                       \
    Suite *ckr_su = suite_create(suite);                 \
    CKR_TCASE(ckr_su, (tcase), (timeout_s), __VA_ARGS__); \
    return ckr_run_with(ckr_su, (fork), CK_NORMAL);      \
  }

/* CKR_MAIN for an executable meson hands paths: `slots`, in parentheses,
 * are the `char **` that ckr_args fills from argv[1..n]:
 * CKR_MAIN_ARGS("test_gate FIXTURE-DATA-DIR", 1, (&data_dir), "gate", "gate", 300, tests...) */
#define CKR_UNPAREN(...) __VA_ARGS__
#define CKR_MAIN_ARGS(usage, n, slots, suite, tcase, timeout_s, ...) \
  int main(int argc, char **argv) {                                  \
    ckr_args(argc, argv, (usage), (n), CKR_UNPAREN slots);           \
    Suite *ckr_su = suite_create(suite);                             \
    CKR_TCASE(ckr_su, (tcase), (timeout_s), __VA_ARGS__);            \
    return ckr_run(ckr_su);                                          \
  }

/* CKR_MAIN for tests that differ only in data: each of `loops`, in
 * parentheses, runs once per row of `table` (an array; the test reads
 * table[_i]), after the plain tests:
 * CKR_MAIN_TABLE("team", "team", 120, team_cases, (same_for_every_team), team_or_is_the_or_of_every_block) */
#define CKR_MAIN_TABLE(suite, tcase, timeout_s, table, loops, ...)                                  \
  int main(void) {                                                                                \
    Suite *ckr_su = suite_create(suite);                                                          \
    TCase *ckr_tc = CKR_TCASE(ckr_su, (tcase), (timeout_s), __VA_ARGS__);                         \
    ckr_add_loops(ckr_tc, (int)(sizeof(table) / sizeof((table)[0])), CKR_LIST(CKR_UNPAREN loops)); \
    return ckr_run(ckr_su);                                                                       \
  }

#endif
