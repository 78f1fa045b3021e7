/* Never destroy a file (docs/errors.md, catalogue of the hostile tests,
 * rows 1-4): what an output may replace (argv[1] gdn-parity,
 * argv[2] gdn-fixture, argv[3] failshim.so).  Every output goes through
 * gdn_atomic (core/gdn_atomic.h) and every run's files through gdn_path
 * (core/gdn_path.h); each refusal here has a negative control that the same
 * command on an ordinary destination succeeds. */
#include <sys/sysmacros.h>

#include "hostile_util.h"

static char *parity, *fixture, *shim;

static void setup(void) {
  hu_scratch_make();
  umask(022);
}

/* A small run writing to --json out (plus extra arguments). */
static void run_json(hu_result *r, const char *out, char *extra1, char *extra2, char *const env[]) {
  char *av[] = {parity, "--shape", "1,32,1,8", "--chunk", "16", "--oracle", "dd", "--quiet",
                "--json", (char *)out, extra1, extra2, NULL};
  hu_run_ex(r, av, env, 0, 0, 120);
}

static int is_results(const char *p) {
  size_t n;
  unsigned char *b = hu_read(p, &n);
  int ok = b && strstr((char *)b, "\"tool\": \"gdn-parity\"") != NULL;
  free(b);
  return ok;
}

/* Row 1: a device, a FIFO, a dangling link are refused (exit 2) and stay
 * what they were; a symbolic link is written through. */
START_TEST(non_regular_destinations_refused) {
  hu_result r;
  run_json(&r, "/dev/null", NULL, NULL, NULL);
  hu_expect_refusal(&r, 2, "--json /dev/null", "/dev/null", "a character device", NULL, NULL, NULL, 0);
  struct stat st;
  ck_assert(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1);
  const char *fifo = hu_path("fifo.json");
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  run_json(&r, fifo, NULL, NULL, NULL);
  hu_expect_refusal(&r, 2, "--json FIFO", fifo, "a FIFO", hu_dir, NULL, NULL, 0);
  ck_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
  const char *dangling = hu_path("dangling.json");
  ck_assert_int_eq(symlink("no-such-target.json", dangling), 0);
  run_json(&r, dangling, NULL, NULL, NULL);
  hu_expect_refusal(&r, 2, "--json dangling link", dangling, "symbolic link to a missing file", hu_dir, NULL, NULL, 0);
  ck_assert(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
  /* negative control: an ordinary destination is written */
  run_json(&r, hu_path("plain.json"), NULL, NULL, NULL);
  ck_assert_msg(r.status == 0 && is_results(hu_path("plain.json")), "control: %d %s", r.status, r.err);
}
END_TEST

START_TEST(symlinks_written_through) {
  const char *real = hu_path("real.json"), *link = hu_path("link.json");
  hu_write(real, "old\n", 4);
  ck_assert_int_eq(symlink("real.json", link), 0);
  hu_result r;
  run_json(&r, link, NULL, NULL, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  struct stat st;
  ck_assert_msg(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced by a file");
  ck_assert_msg(is_results(real), "the link's target did not get the results");
  /* regen through a link: the real fixture gets the oracle */
  const char *fx = hu_path("fx.h5"), *fl = hu_path("fx-link.h5");
  char *a1[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)fx, NULL};
  hu_run(&r, a1, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_int_eq(symlink("fx.h5", fl), 0);
  char *a2[] = {fixture, "regen", (char *)fl, "--oracle-bits", "64", NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert(lstat(fl, &st) == 0 && S_ISLNK(st.st_mode));
  char *a3[] = {fixture, "verify", (char *)fx, NULL};
  hu_run(&r, a3, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "oracle fresh"), "real fixture: %s %s", r.out, r.err);
  /* negative control: before regen the same verify says "no /oracle" */
  char *a4[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)hu_path("fx2.h5"), NULL};
  hu_run(&r, a4, NULL);
  char *a5[] = {fixture, "verify", (char *)hu_path("fx2.h5"), NULL};
  hu_run(&r, a5, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "no /oracle"), "%s", r.out);
}
END_TEST

/* Row 2: an output on an input, or two outputs on one file -- by file
 * identity, whatever the spelling -- is refused before any work. */
START_TEST(aliases_refused) {
  char fx[600]; /* hu_path()'s buffers rotate */
  snprintf(fx, sizeof fx, "%s", hu_path("dump.h5"));
  hu_result r;
  char *a1[] = {fixture, "synth", "--shape", "1,32,1,8", "--chunk-size", "16", "--out", (char *)fx, NULL};
  hu_run(&r, a1, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  size_t n;
  unsigned char *before = hu_read(fx, &n);
  char dotted[700], hard[700];
  snprintf(dotted, sizeof dotted, "%s/./dump.h5", hu_dir);
  snprintf(hard, sizeof hard, "%s", hu_path("hard.h5"));
  ck_assert_int_eq(link(fx, hard), 0);
  const char *spell[] = {fx, dotted, hard};
  for (int i = 0; i < 3; i++) {
    char *av[] = {parity, "check", "--fixture", (char *)fx, "--oracle", "dd", "--json", (char *)spell[i], NULL};
    hu_run(&r, av, NULL);
    hu_expect_refusal(&r, 2, spell[i], "the same file", "destroy the input", hu_dir, fx, before, n);
  }
  /* report r.json -o r.json */
  char res[600];
  snprintf(res, sizeof res, "%s", hu_path("r.json"));
  run_json(&r, res, NULL, NULL, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  size_t rn;
  unsigned char *rb = hu_read(res, &rn);
  char *a2[] = {parity, "report", (char *)res, "-o", (char *)res, NULL};
  hu_run(&r, a2, NULL);
  hu_expect_refusal(&r, 2, "report r.json -o r.json", "the same file", res, hu_dir, res, rb, rn);
  /* two outputs, one file: ./same.json and same.json */
  char same2[700];
  snprintf(same2, sizeof same2, "%s/./same.json", hu_dir);
  run_json(&r, hu_path("same.json"), "--junit", same2, NULL);
  hu_expect_refusal(&r, 2, "--json X --junit ./X", "are the same file", "overwrite", hu_dir, hu_path("same.json"), NULL, 0);
  /* negative controls: distinct files are fine */
  char *a3[] = {parity, "check", "--fixture", (char *)fx, "--oracle", "dd", "--quiet", "--json", (char *)hu_path("c.json"), NULL};
  hu_run(&r, a3, NULL);
  ck_assert_msg(r.status == 0 && hu_same(fx, before, n), "control check: %s", r.err);
  run_json(&r, hu_path("a.json"), "--junit", (char *)hu_path("a.xml"), NULL);
  ck_assert_msg(r.status == 0, "control two outputs: %s", r.err);
  free(before);
  free(rb);
}
END_TEST

/* Row 3: a replaced file keeps its mode; a read-only one is refused. */
START_TEST(modes_kept_read_only_refused) {
  const char *fx = hu_path("private.h5");
  hu_result r;
  char *a1[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)fx, NULL};
  hu_run(&r, a1, NULL);
  struct stat st;
  /* negative control: a new file is 0666 minus the umask (022) */
  ck_assert(stat(fx, &st) == 0 && (st.st_mode & 07777) == 0644);
  ck_assert_int_eq(chmod(fx, 0600), 0);
  char *a2[] = {fixture, "regen", (char *)fx, "--oracle-bits", "64", NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(stat(fx, &st) == 0 && (st.st_mode & 07777) == 0600, "regen made a 0600 fixture %04o",
                (unsigned)(st.st_mode & 07777));
  const char *ro = hu_path("ro.json");
  hu_write(ro, "keep\n", 5);
  ck_assert_int_eq(chmod(ro, 0444), 0);
  run_json(&r, ro, NULL, NULL, NULL);
  hu_expect_refusal(&r, 2, "--json on a 0444 file", ro, "read-only (mode 0444)", hu_dir, ro,
                    (const unsigned char *)"keep\n", 5);
  ck_assert_int_eq(chmod(fx, 0400), 0);
  char *a3[] = {fixture, "regen", (char *)fx, "--oracle-bits", "64", "--force", NULL};
  hu_run(&r, a3, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "read-only"), "regen of a 0400 fixture: %d %s", r.status, r.err);
}
END_TEST

/* Row 4: a failure on the second of two outputs: with fsync failing
 * (nothing renamed yet) both stay old and the message says so; with its
 * rename failing, the message names the one that was written -- and that
 * one really is new. */
START_TEST(output_sets_tell_the_truth) {
  char preload[700];
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s", shim);
  char *asan = "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0";
  const char *a = hu_path("a.json"), *b = hu_path("b.xml");
  static const char old[] = "old\n";
  hu_result r;
  hu_write(a, old, 4);
  hu_write(b, old, 4);
  char *env1[] = {preload, asan, "GDN_SHIM_FAIL=fsync", "GDN_SHIM_NTH=2", NULL};
  run_json(&r, a, "--junit", (char *)b, env1);
  hu_expect_refusal(&r, 3, "fsync of the 2nd output", b, "nothing was written", hu_dir, b, (const unsigned char *)old, 4);
  ck_assert_msg(hu_same(a, (const unsigned char *)old, 4), "the first output was replaced: %s", r.err);
  char *env2[] = {preload, asan, "GDN_SHIM_FAIL=rename", "GDN_SHIM_NTH=2", NULL};
  run_json(&r, a, "--junit", (char *)b, env2);
  ck_assert_msg(r.status == 3 && strstr(r.err, "written: ") && strstr(r.err, "not written: "), "%d %s", r.status,
                r.err);
  char want[800];
  snprintf(want, sizeof want, "written: %s; not written: %s", a, b);
  ck_assert_msg(strstr(r.err, want), "message: %s", r.err);
  ck_assert_msg(is_results(a) && hu_same(b, (const unsigned char *)old, 4), "the message is not the truth");
  char t[1024];
  ck_assert_msg(hu_temps(hu_dir, t, sizeof t) == 0, "temporaries left: %s", t);
  /* negative control: the same two outputs without a failure */
  run_json(&r, a, "--junit", (char *)b, NULL);
  ck_assert_msg(r.status == 0 && is_results(a) && !hu_same(b, (const unsigned char *)old, 4), "%s", r.err);
}
END_TEST

HU_MAIN("test_outputs GDN-PARITY GDN-FIXTURE FAILSHIM.so", 3, (&parity, &fixture, &shim), "outputs", "outputs", setup, NULL, 300,
    non_regular_destinations_refused, symlinks_written_through, aliases_refused, modes_kept_read_only_refused,
    output_sets_tell_the_truth)
