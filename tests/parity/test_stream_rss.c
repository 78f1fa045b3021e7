/* A run streamed by head group keeps its peak RSS within --max-bytes, in
 * every streamed mode: the forward with no oracle, MPFR and dd, --grad with
 * --group-heads 1 and with the group chosen by the budget, check of a
 * fixture, on 1 and 2 threads.  Each mode runs as a child process; its
 * peak RSS is the child's own (wait4's ru_maxrss, KiB), and the run must
 * say it streamed (the plan's note), exit 0, and peak at most the limit.
 *
 * Before, the plan counted one group's data only: at 1,2048,8,32 with no
 * oracle the run peaked at 30 MB under --max-bytes 10M (the seams' exact
 * sums, the read-back buffers, the measurements' histograms and the
 * process's own 11-17 MB were outside it).  Now the plan counts them and
 * the process's resident memory when it plans (parity_stream.h).
 *
 * Negative controls: the same measurement fails a run whose budget leaves
 * out the process's own memory (a whole run, counted by its heap: at
 * 1,1024,8,32 under 22M it peaks some 23 MB); and a budget under one key
 * head's peak is refused (exit 2) naming the smallest budget that runs,
 * which then runs within it. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_runner.h"
#include "../run_capture.h"

#define RSS_MEANINGFUL (!CKR_UNDER_ASAN)

static char *exe, *fixture_exe;

/* Under AddressSanitizer (the ASan build) a process's RSS holds its shadow
 * memory (some 35 MB more at plan time), which the plan counts as resident
 * but no small budget holds: there the modes with --group-heads run under
 * 96 MiB more, their peaks only printed, and the budget's own choices and
 * the controls are left to the plain build. */

typedef struct rss_run {
  int status;
  long long rss; /* bytes: the child's peak resident set */
  char out[1 << 16], err[1 << 16];
} rss_run;

/* argv[0] the program; the child's own peak RSS from wait4. */
static void run_measured(rss_run *r, char *const argv[]) {
  run_capture c;
  run_capture_open(&c, "/tmp/gdn-rss");
  const pid_t pid = fork();
  if (pid == 0) {
    run_capture_redirect(&c);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  const int waited = pid > 0 && wait4(pid, &st, 0, &ru) == pid; /* not ck_assert: also run outside a test */
  r->status = !waited ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r->rss = (long long)ru.ru_maxrss * 1024;
  run_capture_collect(&c, r->out, sizeof r->out, r->err, sizeof r->err);
}

static long long bytes_of(const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  return *end == 'K' ? v << 10 : *end == 'M' ? v << 20 : *end == 'G' ? v << 30 : v;
}

static char fixture[64];

/* A fixture with cotangents and h0 for the check modes: made once, before
 * the tests' processes fork (an unchecked fixture). */
static void fixture_make(void) {
  snprintf(fixture, sizeof fixture, "/tmp/gdn-rss-XXXXXX.h5");
  close(mkstemps(fixture, 3));
  char *av[] = {fixture_exe, "synth", "--shape", "1,512,4,32", "--grad", "--h0", "--out", fixture, "--force", NULL};
  rss_run *r = malloc(sizeof *r);
  run_measured(r, av);
  if (r->status != 0) fprintf(stderr, "gdn-fixture synth: exit %d: %s\n", r->status, r->err), exit(1);
  free(r);
}

static void fixture_remove(void) { unlink(fixture); }

/* The modes: a run's arguments after the program (FIXTURE: the_fixture),
 * its --max-bytes and --threads. */
typedef struct mode {
  const char *name;
  const char *args[16];
  const char *limit, *threads;
} mode;

static const mode modes[] = {
    {"forward, no oracle, chosen", {"--shape", "1,2048,8,32", "--oracle", "none"}, "30M", "1"},
    {"forward, no oracle, chosen", {"--shape", "1,2048,8,32", "--oracle", "none"}, "32M", "2"},
    {"forward, mpfr, --group-heads 1", {"--shape", "1,256,4,32", "--oracle", "mpfr", "--group-heads", "1"}, "40M", "1"},
    {"forward, dd, --group-heads 2", {"--shape", "1,512,4,32", "--oracle", "dd", "--group-heads", "2"}, "40M", "2"},
    {"--grad, dd, --group-heads 1",
     {"--shape", "1,256,4,16", "--h0", "--grad", "--oracle", "dd", "--group-heads", "1"}, "40M", "1"},
    {"--grad, mpfr, --group-heads 1",
     {"--shape", "1,128,4,16", "--h0", "--grad", "--oracle", "mpfr", "--group-heads", "1"}, "40M", "2"},
    {"--grad, no oracle, chosen",
     {"--shape", "1,4096,8,16", "--key-heads", "4", "--h0", "--grad", "--oracle", "none", "--devices", "1,2"}, "40M",
     "2"},
    {"check, dd, --group-heads 1", {"check", "--fixture", "FIXTURE", "--oracle", "dd", "--group-heads", "1"}, "40M",
     "1"},
    {"check, no oracle, --group-heads 2", {"check", "--fixture", "FIXTURE", "--oracle", "none", "--group-heads", "2"},
     "40M", "2"},
    /* Kimi Delta Attention (parity_recur_stream.h; the whole run 33.9 MB, one key head's plan 19.5 MB) */
    {"kda forward, mpfr, chosen",
     {"--recurrence", "kda", "--shape", "1,2048,8,32", "--key-heads", "4", "--dv", "32", "--devices", "1,2"}, "22M",
     "1"},
    {"kda --grad, mpfr, --group-heads 1",
     {"--recurrence", "kda", "--shape", "1,256,4,16", "--key-heads", "2", "--h0", "--grad", "--group-heads", "1"},
     "24M", "2"},
};

START_TEST(streamed_peak_rss_within_max_bytes) {
  const mode *m = &modes[_i];
  char *av[32], limit[32];
  int n = 0, forced = 0;
  av[n++] = exe;
  for (int i = 0; m->args[i]; i++) {
    av[n++] = (char *)(strcmp(m->args[i], "FIXTURE") ? m->args[i] : fixture);
    forced |= !strcmp(m->args[i], "--group-heads");
  }
  if (!RSS_MEANINGFUL && !forced) return; /* see RSS_MEANINGFUL */
  const long long lim = bytes_of(m->limit) + (RSS_MEANINGFUL ? 0 : 96ll << 20);
  snprintf(limit, sizeof limit, "%lld", lim);
  av[n++] = "--max-bytes", av[n++] = limit, av[n++] = "--threads", av[n++] = (char *)m->threads;
  av[n] = NULL;
  rss_run *r = malloc(sizeof *r);
  run_measured(r, av);
  const char *note = strstr(r->out, "streamed by head group: ");
  fprintf(stderr, "%s, %s thread%s: peak RSS %lld KiB under --max-bytes %s (%lld KiB, %.0f %%); %.160s\n", m->name,
          m->threads, m->threads[0] == '1' ? "" : "s", r->rss >> 10, limit, lim >> 10,
          100.0 * (double)r->rss / (double)lim, note ? note : "(no plan)");
  ck_assert_msg(r->status == 0, "%s: exit %d: %s", m->name, r->status, r->err);
  ck_assert_msg(note != NULL, "%s: not streamed: %.400s", m->name, r->out);
  ck_assert_msg(!RSS_MEANINGFUL || r->rss <= lim, "%s, %s threads: peak RSS %lld KiB over --max-bytes %s (%lld KiB)",
                m->name, m->threads, r->rss >> 10, limit, lim >> 10);
  free(r);
}
END_TEST

/* The measurement can fail: a whole run, whose count leaves out the
 * process's own memory, peaks over the same limit it ran under. */
START_TEST(negative_control_whole_run_over) {
  if (!RSS_MEANINGFUL) return;
  char *av[] = {exe, "--shape", "1,1024,8,32", "--oracle", "none", "--threads", "1", "--max-bytes", "22M", NULL};
  rss_run *r = malloc(sizeof *r);
  run_measured(r, av);
  fprintf(stderr, "whole run (control): peak RSS %lld KiB under --max-bytes 22M (22528 KiB)\n", r->rss >> 10);
  ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
  ck_assert_msg(!strstr(r->out, "streamed by head group"), "%.400s", r->out);
  ck_assert_msg(!RSS_MEANINGFUL || r->rss > bytes_of("22M"), "peak RSS %lld KiB: within 22M, the control shows nothing",
                r->rss >> 10);
  free(r);
}
END_TEST

/* Under one key head's peak: refused before any work, naming the smallest
 * budget; at that budget (and 1 MiB more, for pages the process maps while
 * starting up differently) the run streams within it. */
START_TEST(refused_below_one_head_names_the_smallest) {
  if (!RSS_MEANINGFUL) return;
  char *av[] = {exe, "--shape", "1,2048,8,32", "--oracle", "none", "--threads", "1", "--max-bytes", "16M", NULL};
  rss_run *r = malloc(sizeof *r);
  run_measured(r, av);
  ck_assert_msg(r->status == 2 && strstr(r->err, "one key head alone would need"), "exit %d: %s", r->status, r->err);
  const char *at = strstr(r->err, "alone would need");
  at = at ? strstr(at, "(--max-bytes ") : NULL;
  ck_assert_msg(at != NULL, "%s", r->err);
  const long long need = strtoll(at + strlen("(--max-bytes "), NULL, 10);
  ck_assert_msg(need > bytes_of("16M") && need < bytes_of("64M"), "%lld: %s", need, r->err);
  char lim[32];
  snprintf(lim, sizeof lim, "%lld", need + (1 << 20));
  char *ok[] = {exe, "--shape", "1,2048,8,32", "--oracle", "none", "--threads", "1", "--max-bytes", lim, NULL};
  run_measured(r, ok);
  fprintf(stderr, "smallest budget named: %lld bytes; run at %s: peak RSS %lld KiB\n", need, lim, r->rss >> 10);
  ck_assert_msg(r->status == 0 && strstr(r->out, "streamed by head group"), "exit %d: %s", r->status, r->err);
  ck_assert_msg(!RSS_MEANINGFUL || r->rss <= need + (1 << 20), "peak RSS %lld KiB over %s", r->rss >> 10, lim);
  free(r);
}
END_TEST

int main(int argc, char **argv) {
  ckr_args(argc, argv, "test_stream_rss PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, &exe, &fixture_exe);
  fixture_make();
  Suite *su = suite_create("stream_rss");
  TCase *tc = tcase_create("stream_rss");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, streamed_peak_rss_within_max_bytes, 0, (int)(sizeof modes / sizeof *modes));
  tcase_add_test(tc, negative_control_whole_run_over);
  tcase_add_test(tc, refused_below_one_head_names_the_smallest);
  suite_add_tcase(su, tc);
  const int rc = ckr_run(su);
  fixture_remove();
  return rc;
}
