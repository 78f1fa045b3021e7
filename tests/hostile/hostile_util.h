/* Helpers of the hostile-input tests: run a command with extra environment
 * and a time limit, scratch folders, file snapshots, and the check every
 * failing command must pass -- exit status, a message naming what and
 * where, the destination unchanged and no temporary left beside it. */
#ifndef HOSTILE_UTIL_H
#define HOSTILE_UTIL_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check_runner.h"
#include "../run_capture.h"
#include "../scratch_dir.h"

#define HU_UNUSED __attribute__((unused))

typedef struct hu_result {
  int status;    /* exit status, 128 + signal, or -1 if it outlived the limit */
  int timed_out;
  char out[1 << 16], err[1 << 16];
} hu_result;

/* Runs argv (argv[0] a path) with the extra "NAME=value" strings of env
 * (NULL-terminated, may be NULL) added to ours.  kill_after_ms > 0: send
 * kill_sig then (a timed interruption).  limit_s: SIGKILL and timed_out
 * after that long. */
HU_UNUSED static void hu_run_ex(hu_result *res, char *const argv[], char *const env[], int kill_after_ms,
                                int kill_sig, double limit_s) {
  run_capture c;
  run_capture_open(&c, "/tmp/gdn-hostile");
  fflush(NULL);
  /* A signal sent between fork and exec must meet default actions, not the
   * test framework's handlers (Check would report it as its own death). */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    run_capture_redirect(&c);
    for (int i = 0; env && env[i]; i++) putenv(env[i]);
    execv(argv[0], argv);
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = 0, sent = 0;
  res->timed_out = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double el = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
    if (kill_after_ms > 0 && !sent && el * 1000.0 >= kill_after_ms) {
      kill(pid, kill_sig);
      sent = 1;
    }
    if (el > limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      res->timed_out = 1;
      break;
    }
    struct timespec nap = {0, 2000000};
    nanosleep(&nap, NULL);
  }
  res->status = res->timed_out ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  run_capture_collect(&c, res->out, sizeof res->out, res->err, sizeof res->err);
}

HU_UNUSED static void hu_run(hu_result *res, char *const argv[], char *const env[]) {
  hu_run_ex(res, argv, env, 0, 0, 600);
}

/* gdn_atomic's temporaries: names containing ".tmp.". */
typedef struct hu_temp_list {
  int n;
  char *names;
  size_t cap;
} hu_temp_list;
HU_UNUSED static void hu_list_temp(const char *path, const char *name, void *ctx) {
  (void)path;
  hu_temp_list *l = ctx;
  if (!strstr(name, ".tmp.")) return;
  l->n++;
  if (l->names) {
    strncat(l->names, name, l->cap - strlen(l->names) - 1);
    strncat(l->names, " ", l->cap - strlen(l->names) - 1);
  }
}
HU_UNUSED static void hu_unlink_temp(const char *path, const char *name, void *ctx) {
  (void)ctx;
  if (strstr(name, ".tmp.")) unlink(path);
}

/* Names in dir containing ".tmp." (gdn_atomic's temporaries), joined. */
HU_UNUSED static int hu_temps(const char *dir, char *names, size_t cap) {
  hu_temp_list l = {0, cap ? names : NULL, cap};
  if (l.names) l.names[0] = '\0';
  scratch_each_entry(dir, hu_list_temp, &l);
  return l.n;
}

HU_UNUSED static void hu_remove_temps(const char *dir) { scratch_each_entry(dir, hu_unlink_temp, NULL); }

/* Whole file, or NULL (n = 0) if absent. */
HU_UNUSED static unsigned char *hu_read(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)sz + 1);
  ck_assert_uint_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
  b[sz] = '\0';
  fclose(f);
  *n = (size_t)sz;
  return b;
}

HU_UNUSED static void hu_write(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

HU_UNUSED static void hu_copy(const char *from, const char *to) {
  size_t n;
  unsigned char *b = hu_read(from, &n);
  ck_assert_msg(b != NULL, "cannot read %s", from);
  hu_write(to, b, n);
  free(b);
}

HU_UNUSED static int hu_same(const char *path, const unsigned char *b, size_t n) {
  size_t m;
  unsigned char *c = hu_read(path, &m);
  int same = c && m == n && !memcmp(b, c, n);
  free(c);
  return same;
}

/* The refusal contract: status, every needle in stderr (the program's
 * "error:" line), `dest` byte-identical to before (before == NULL: absent)
 * and no temporary in `dir`. */
HU_UNUSED static void hu_expect_refusal(const hu_result *r, int status, const char *what, const char *n1,
                                        const char *n2, const char *dir, const char *dest,
                                        const unsigned char *before, size_t before_n) {
  ck_assert_msg(!r->timed_out, "%s: did not finish", what);
  ck_assert_msg(r->status == status, "%s: exit status %d, expected %d; stderr: %s", what, r->status, status,
                r->err);
  ck_assert_msg(strstr(r->err, "error: "), "%s: no 'error:' line: %s", what, r->err);
  ck_assert_msg(!n1 || strstr(r->err, n1), "%s: stderr lacks '%s': %s", what, n1, r->err);
  ck_assert_msg(!n2 || strstr(r->err, n2), "%s: stderr lacks '%s': %s", what, n2, r->err);
  char t[1024];
  ck_assert_msg(!dir || hu_temps(dir, t, sizeof t) == 0, "%s: temporaries left: %s", what, t);
  if (dest) {
    if (before) ck_assert_msg(hu_same(dest, before, before_n), "%s: %s changed", what, dest);
    else ck_assert_msg(access(dest, F_OK) != 0, "%s: %s was created", what, dest);
  }
}

/* The scratch folder of the running test: hu_scratch_make in a checked
 * fixture's setup, hu_scratch_remove in its teardown (whatever is left in
 * it goes too). */
static char *hu_dir;
HU_UNUSED static void hu_scratch_make(void) { hu_dir = scratch_mkdtemp("/tmp/gdn-hostile"); }
HU_UNUSED static void hu_scratch_remove(void) {
  scratch_rmdir(hu_dir);
  free(hu_dir);
  hu_dir = NULL;
}

/* hu_dir/name (scratch_join: valid for the next 15 calls). */
HU_UNUSED static const char *hu_path(const char *name) { return scratch_join(hu_dir, name); }

/* A copy of the file `from` in the scratch folder as `name`; its path
 * (hu_path's buffer). */
HU_UNUSED static const char *hu_scratch_copy(const char *from, const char *name) {
  const char *p = hu_path(name);
  hu_copy(from, p);
  return p;
}

/* One test case `name` with the scratch fixture (or `setup`/`teardown` when
 * given) and a time limit; hu_suite_run runs it: 0 when every test passed. */
HU_UNUSED static TCase *hu_case(const char *name, void (*setup)(void), void (*teardown)(void), int timeout_s) {
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, setup ? setup : hu_scratch_make, teardown ? teardown : hu_scratch_remove);
  tcase_set_timeout(tc, timeout_s);
  return tc;
}
HU_UNUSED static int hu_suite_run(const char *name, TCase *tc) {
  Suite *s = suite_create(name);
  suite_add_tcase(s, tc);
  return ckr_run(s);
}

/* A float32 .npy image of zeros of `shape` (version 1.0, header padded to
 * 64 bytes, the shape written "(a, b, ..., )"); *size is its length.  The
 * caller frees it. */
HU_UNUSED static unsigned char *hu_npy_zeros(const int64_t *shape, int rank, size_t *size) {
  size_t n = 1;
  char dims[96] = "";
  for (int i = 0; i < rank; i++) {
    n *= (size_t)shape[i];
    size_t l = strlen(dims);
    snprintf(dims + l, sizeof dims - l, "%lld, ", (long long)shape[i]);
  }
  char dict[160];
  int dl = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
  size_t hl = (size_t)(10 + dl + 1 + 63) / 64 * 64;
  unsigned char *b = calloc(1, hl + 4 * n);
  ck_assert_ptr_nonnull(b);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)((hl - 10) & 0xff);
  b[9] = (unsigned char)((hl - 10) >> 8);
  memset(b + 10, ' ', hl - 10);
  memcpy(b + 10, dict, (size_t)dl);
  b[hl - 1] = '\n';
  *size = hl + 4 * n;
  return b;
}

/* The whole main() of a hostile test: ckr_args fills `slots` (in
 * parentheses), hu_case makes the case, the tests are added in order and
 * hu_suite_run runs it. */
#define HU_MAIN(usage, n, slots, suite, tcase, setup, teardown, timeout_s, ...) \
  int main(int argc, char **argv) {                                             \
    ckr_args(argc, argv, (usage), (n), CKR_UNPAREN slots);                      \
    TCase *hu_tc = hu_case((tcase), (setup), (teardown), (timeout_s));          \
    CKR_ADD(hu_tc, __VA_ARGS__);                                                \
    return hu_suite_run((suite), hu_tc);                                        \
  }

#endif
