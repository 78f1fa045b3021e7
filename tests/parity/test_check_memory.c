/* `gdn-parity check` of a fixture with many outputs, with gradients, obeys
 * --max-bytes (before, 48 copies of one output with gradients went 27 %
 * over, the excess growing with the outputs).  The loader's one up-front
 * total now counts what the run holds beside the fixture: the reference's
 * and both kernels' gradient sets, and per output its measurements and
 * checks (parity_budget_per_subject).
 *
 * For 1 and 24 copies of our scan's output (gradients included) the
 * smallest --max-bytes the run accepts is found by bisection (refusals
 * come before any data is read); at that limit the run passes and its heap
 * peak (gdn_alloc's accounting, results "memory.peak_heap_bytes") is at
 * most the limit.  Negative controls: 16 KiB less is refused (exit 2,
 * naming the limit), and the limit is tight -- the peak reaches 85 % of it,
 * so an estimate that over-counts grossly fails too. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "fix_synth_grads.h"
#include "gdn_alloc.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "report.h"
#include "../check_runner.h"
#include "synth_fixture.h"
#include "cli_inproc.h"

static void make(const char *path, int n_out) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  sfx_make(&fx, (gdn_shape){1, 1024, 2, 2, 16, 16}, 5, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 64);
  fx.version = FIX_SCHEMA_VERSION;
  ck_assert_msg(fix_synth_cotangents(&fx, 5, &e) == GDN_OK, "%s", e.msg);
  for (int i = 0; i < n_out; i++) {
    ck_assert_msg(fix_synth_kernel_output(&fx, 1, &e) == GDN_OK, "%s", e.msg);
    char name[32];
    snprintf(name, sizeof name, "copy-%02d", i);
    ck_assert_int_eq(fix_set_string(&fx.outputs[i].name, name, &e), GDN_OK);
  }
  unlink(path);
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  fix_fixture_clear(&fx);
}

/* check at --max-bytes `limit` (--oracle none: refused after the load,
 * so a refusal for memory is told apart from one for the oracle). */
static int run(const char *path, long long limit, const char *oracle, const char *js, char *err, size_t n) {
  char lim[32];
  snprintf(lim, sizeof lim, "%lld", limit);
  char *av[] = {"gdn-parity", "check", "--fixture", (char *)path, "--devices", "1,2", "--oracle", (char *)oracle,
                "--threads", "1", "--max-bytes", lim, "--json", (char *)js, NULL};
  gdn_error e;
  int st = cli_inproc(av, &e);
  snprintf(err, n, "%s", e.msg);
  return st < 0 ? gdn_error_exit_status(e.code) : st;
}

static long long smallest_limit(const char *path, const char *js) {
  char err[2048];
  long long lo = 1 << 20, hi = 256LL << 20; /* the fixtures here need 6 to 34 MiB */
  while (hi - lo > 16384) {
    long long mid = lo + (hi - lo) / 2;
    int st = run(path, mid, "none", js, err, sizeof err);
    ck_assert_int_eq(st, 2);
    if (strstr(err, "cannot judge")) hi = mid;
    else ck_assert_msg(strstr(err, "--max-bytes"), "%s", err), lo = mid;
  }
  return hi;
}

static void peak_within_limit(int n_out) {
  char path[] = "/tmp/gdn-many-XXXXXX.h5", js[] = "/tmp/gdn-many-XXXXXX.json", err[2048];
  close(mkstemps(path, 3));
  close(mkstemps(js, 5));
  make(path, n_out);
  const long long limit = smallest_limit(path, js);
  ck_assert_int_eq(run(path, limit - 16384, "dd", js, err, sizeof err), 2); /* control: just below */
  ck_assert_msg(strstr(err, "--max-bytes"), "%s", err);
  gdn_alloc_peak_reset();
  ck_assert_msg(run(path, limit, "dd", js, err, sizeof err) == 0, "%s", err);
  gdn_error e;
  gdn_error_init(&e);
  json_t *doc = NULL;
  ck_assert_msg(report_json_read(js, &doc, &e) == GDN_OK, "%s", e.msg);
  const long long peak = json_integer_value(json_object_get(json_object_get(doc, "memory"), "peak_heap_bytes"));
  const json_t *impls = json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "impls");
  ck_assert_ptr_nonnull(json_object_get(impls, "copy-00"));
  ck_assert_ptr_nonnull(json_object_get(json_object_get(impls, "copy-00"), "dk")); /* gradients judged */
  json_decref(doc);
  unlink(path);
  unlink(js);
  if (peak < 0) return; /* no byte accounting off glibc (gdn_alloc.h) */
  fprintf(stderr, "check, %d outputs with gradients: heap peak %lld bytes at --max-bytes %lld (%.4f)\n", n_out,
          peak, limit, (double)peak / (double)limit);
  ck_assert_msg(peak <= limit, "%d outputs: heap peak %lld over --max-bytes %lld (%.1f %% over)", n_out, peak,
                limit, 100.0 * (double)(peak - limit) / (double)limit);
  ck_assert_msg(peak >= limit / 100 * 85, "%d outputs: the limit %lld is loose (peak %lld)", n_out, limit, peak);
}

START_TEST(many_outputs_with_gradients_obey_max_bytes) { peak_within_limit(_i ? 24 : 1); }
END_TEST

int main(void) {
  Suite *su = suite_create("check_memory");
  TCase *tc = ckr_tcase_add(su, "check_memory", 300, NULL, 0);
  tcase_add_loop_test(tc, many_outputs_with_gradients_obey_max_bytes, 0, 2);
  return ckr_run_with(su, CK_FORK, CK_NORMAL);
}
