/* gdn-parity --recurrence kda streamed by key-head group
 * (parity_recur_stream.h): the results document of --group-heads 1 and 3
 * byte for byte the whole run's (two batch items, h0, GVA, two chunk sizes
 * and two device counts, the MPFR certificate and kappa_G per channel
 * included); the negative control: a planted mutant streamed still FAILs
 * with the same numbers, byte for byte; a merge that keeps a group's own
 * index instead of the whole tensor's, or adds the kappa groups in
 * another order, is caught (the fold's index and the accumulator's sums
 * asserted against the whole scan); the plan: a shape over --max-bytes
 * streams instead of being refused, a budget under one key head is refused
 * naming the smallest --max-bytes that runs, and that figure runs;
 * --grad's backward streamed: byte
 * for byte too, its backward mutant failing alike; --oracle dd streamed,
 * forward and backward: the whole dd run's document byte for byte, its
 * sample columns and certificate included (negative control: the same
 * groups under the MPFR oracle give another document, so the tier really
 * ran; groups sampling by their own shape are caught by the oracle's
 * tests, test_oracle_kda and test_oracle_kda_vjp_dd). */
#include <check.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "cli_inproc.h"
#include "gdn_chgate.h"
#include "parity_kappa_ch.h"
#include "parity_recur_stream.h"

static const gdn_shape SHAPE = {2, 64, 4, 8, 16, 8}; /* 4 key heads, 2 value heads each */

static parity_recur_opts opts(const char *mutant) {
  gdn_error e;
  const parity_recurrence *r = parity_recurrence_find("kda", &e);
  ck_assert(r);
  parity_recur_opts o;
  parity_recur_opts_init(&o, r);
  o.shape = SHAPE;
  o.seed = 7;
  o.h0 = 1;
  o.chunks[0] = 32;
  o.chunks[1] = 64;
  o.n_chunks = 2;
  o.devices[0] = 1;
  o.devices[1] = 2;
  o.n_devices = 2;
  if (mutant) ck_assert((o.mutant = parity_recurrence_mutant(r, mutant, &e)) > 0);
  return o;
}

/* The document of o planned with force_group (0: the whole run), dumped;
 * vjp_mutant >= 0: with --grad's backward (that backward mutant). */
static char *run_grad(const parity_recur_opts *o, int64_t force_group, int vjp_mutant, int *pass) {
  gdn_error e;
  parity_stream_plan p;
  ck_assert_msg(parity_recur_stream_plan(o, 0, 0, force_group, &p, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(p.n_groups, force_group ? (SHAPE.Hk + force_group - 1) / force_group : 1);
  json_t *doc;
  ck_assert_msg(parity_recur_sweep_streamed(o, &p, &doc, pass, &e) == GDN_OK, "%s", e.msg);
  if (vjp_mutant >= 0)
    ck_assert_msg(parity_recur_grad_streamed(o, &p, vjp_mutant, doc, pass, &e) == GDN_OK, "%s", e.msg);
  char *s = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
  json_decref(doc);
  ck_assert(s);
  return s;
}

static char *run(const parity_recur_opts *o, int64_t force_group, int *pass) {
  return run_grad(o, force_group, -1, pass);
}

START_TEST(test_byte_identical) {
  const parity_recur_opts o = opts(NULL);
  int pw, p1, p3;
  char *w = run(&o, 0, &pw), *g1 = run(&o, 1, &p1), *g3 = run(&o, 3, &p3); /* 3: groups of 3 and 1 */
  ck_assert(pw && p1 && p3);
  ck_assert_str_eq(g1, w);
  ck_assert_str_eq(g3, w);
  ck_assert(strstr(w, "\"kappa_g\"") && strstr(w, "\"certified_bits\""));
  free(w);
  free(g1);
  free(g3);
}
END_TEST

/* Negative control: the planted mutant fails streamed, at the same numbers.
 * gate-other-head reads the next value head's gate, across groups (each
 * group's last value head): run on the extended group
 * (parity_recur_other_head.h), groups of 1, 2, and 3 and 1 alike. */
START_TEST(test_mutant_streamed) {
  static const char *const muts[] = {"subchunk-off-by-one", "gate-value-axis", "gate-other-head"};
  for (int i = 0; i < 3; i++) {
    const parity_recur_opts o = opts(muts[i]);
    int pw, pg;
    char *w = run(&o, 0, &pw);
    ck_assert(!pw);
    for (int64_t g = i == 2 ? 1 : 2; g <= (i == 2 ? 3 : 2); g++) {
      char *gs = run(&o, g, &pg);
      ck_assert(!pg);
      ck_assert_msg(!strcmp(gs, w), "%s in groups of %lld: not the whole run's document", muts[i], (long long)g);
      free(gs);
    }
    free(w);
  }
}
END_TEST

/* --grad: the backward's "grad" too, byte for byte; the backward mutant
 * dg-value-axis streamed fails at the same numbers. */
START_TEST(test_grad_streamed) {
  parity_recur_opts o = opts(NULL);
  o.n_chunks = 1;
  int pw, p1, p3;
  char *w = run_grad(&o, 0, 0, &pw), *g1 = run_grad(&o, 1, 0, &p1), *g3 = run_grad(&o, 3, 0, &p3);
  ck_assert(pw && p1 && p3);
  ck_assert(strstr(w, "\"dbeta\"") && strstr(w, "\"dh0\""));
  ck_assert_str_eq(g1, w);
  ck_assert_str_eq(g3, w);
  free(w);
  free(g1);
  free(g3);
  const int m = 1; /* dg-value-axis */
  ck_assert_str_eq(o.rec->vjp_mutants[m], "dg-value-axis");
  char *mw = run_grad(&o, 0, m, &pw), *m2 = run_grad(&o, 2, m, &p1);
  ck_assert(!pw && !p1);
  ck_assert_str_eq(m2, mw);
  free(mw);
  free(m2);
}
END_TEST

/* --oracle dd streamed: the document (the "dd" oracle's certificate and
 * sampled columns, forward and --grad's "grad") the whole dd run's byte for
 * byte, groups of 1 and of 3 and 1. */
START_TEST(test_dd_streamed) {
  parity_recur_opts o = opts(NULL);
  o.n_chunks = 1;
  o.dd = 1;
  int pw, p1, p3;
  char *w = run_grad(&o, 0, 0, &pw), *g1 = run_grad(&o, 1, 0, &p1), *g3 = run_grad(&o, 3, 0, &p3);
  ck_assert(pw && p1 && p3);
  ck_assert_msg(strstr(w, "\"tier\": \"dd\"") && strstr(w, "\"sampled_columns\""), "%s", w);
  ck_assert_str_eq(g1, w);
  ck_assert_str_eq(g3, w);
  o.dd = 0;
  char *m1 = run_grad(&o, 1, 0, &p1);
  ck_assert(p1 && strcmp(m1, g1) != 0 && strstr(m1, "\"tier\": \"mpfr\""));
  free(m1);
  free(w);
  free(g1);
  free(g3);
}
END_TEST

/* Streamed under the prefix, shard and numerics modes (hillis-steele over
 * 3 chunk-sharded devices with bf16x3 products; associative-scan with
 * --grad): the whole run's document byte for byte, and the modes are
 * applied (the hillis-steele, high-precision run differs from the
 * sequential ieee one: the negative control). */
START_TEST(test_modes_streamed) {
  parity_recur_opts o = opts(NULL);
  o.chunks[0] = 16; /* 4 chunks of T = 64 */
  o.n_chunks = 1;
  o.devices[1] = 3;
  o.shard = KERN_SHARD_CHUNKS;
  int pd, pw, p1;
  char *d = run(&o, 0, &pd);
  o.prefix = KERN_PREFIX_HILLIS_STEELE;
  o.matmul = KERN_MATMUL_HIGH;
  char *w = run(&o, 0, &pw), *g1 = run(&o, 1, &p1);
  ck_assert(pd && pw && p1);
  ck_assert_str_eq(g1, w);
  ck_assert_str_ne(w, d);
  free(d);
  free(w);
  free(g1);
  o.prefix = KERN_PREFIX_ASSOCIATIVE_SCAN;
  o.matmul = KERN_MATMUL_IEEE;
  o.devices[1] = 2;
  char *gw = run_grad(&o, 0, 0, &pw), *g2 = run_grad(&o, 2, 0, &p1);
  ck_assert(pw && p1);
  ck_assert_str_eq(g2, gw);
  free(gw);
  free(g2);
}
END_TEST

/* The fold against the whole scan, on a tensor (outer 3, heads 4, inner 5)
 * with the worst error planted in head 3 and a tie in heads 1 and 2; the
 * group's own index, taken as the whole tensor's, would name another
 * element. */
START_TEST(test_fold) {
  enum { O = 3, H = 4, I = 5, N = O * H * I };
  double x[N], r[N];
  for (int i = 0; i < N; i++) {
    r[i] = sin(i + 1.0);
    x[i] = r[i] + 1e-3 * cos(3.0 * i);
  }
  const int worst = (2 * H + 3) * I + 1, tie_a = (1 * H + 1) * I + 4, tie_b = (0 * H + 2) * I + 2;
  x[worst] = r[worst] + 0.5;
  const parity_recur_err whole = parity_recur_measure(x, r, N);
  ck_assert_int_eq((int)whole.at, worst);
  for (int pass = 0; pass < 2; pass++) { /* 1: the worst removed, the tie decides */
    if (pass) {
      x[worst] = r[worst];
      x[tie_a] = r[tie_a] + 0.25;
      x[tie_b] = r[tie_b] + 0.25;
    }
    const parity_recur_err wm = parity_recur_measure(x, r, N);
    parity_recur_err acc = {0, 0, 0, 0};
    for (int g = 0; g < 2; g++) { /* heads [2g, 2g + 2) */
      double xg[O * 2 * I], rg[O * 2 * I];
      for (int o = 0; o < O; o++)
        for (int h = 0; h < 2; h++)
          for (int i = 0; i < I; i++) {
            xg[(o * 2 + h) * I + i] = x[(o * H + 2 * g + h) * I + i];
            rg[(o * 2 + h) * I + i] = r[(o * H + 2 * g + h) * I + i];
          }
      const parity_recur_err m = parity_recur_measure(xg, rg, O * 2 * I);
      ck_assert(m.at != wm.at || g == 0); /* the group's index is not the whole's */
      parity_recur_err_fold(&acc, m, 2 * g, 2, H, I);
    }
    parity_recur_err_finish(&acc);
    ck_assert_int_eq((int)acc.at, (int)wm.at);
    ck_assert(acc.err == wm.err && acc.max_abs == wm.max_abs && acc.max_ref == wm.max_ref);
    if (pass) ck_assert_int_eq((int)acc.at, tie_b); /* the first in the whole order, though group 1's head */
  }
}
END_TEST

/* kappa per channel by groups equals the whole's bit for bit; groups added
 * in reverse order do not (the sums' order is what makes it exact). */
START_TEST(test_kappa_groups) {
  const gdn_shape s = {3, 200, 4, 4, 8, 4};
  gdn_error e;
  gdn_inputs in = tsu_inputs(s, 0, 3);
  gdn_chgate gw;
  gdn_chgate_init(&gw);
  ck_assert(gdn_chgate_draw_kimi(&gw, &s, 3, &e) == GDN_OK);
  for (size_t i = 0; i < gdn_chgate_numel(&s); i++) gw.g[i] *= 0.05f; /* the slow regime: every channel counts */
  parity_kappa_ch whole;
  ck_assert(parity_kappa_channels(&in, &gw, 64, 1, &whole, &e) == GDN_OK);
  parity_kappa_ch_acc fwd, rev;
  parity_kappa_ch_acc_init(&fwd);
  parity_kappa_ch_acc_init(&rev);
  gdn_shape gs = s;
  gs.Hk = gs.Hv = 1;
  gdn_inputs gi = tsu_inputs(gs, 0, 3); /* only its shape is read */
  for (int pass = 0; pass < 2; pass++)
    for (int64_t j = 0; j < s.Hv; j++) {
      const int64_t h = pass ? s.Hv - 1 - j : j;
      gdn_chgate gg;
      gdn_chgate_init(&gg);
      ck_assert(gdn_chgate_alloc(&gg, &gs, &e) == GDN_OK);
      for (int64_t b = 0; b < s.B; b++)
        for (int64_t t = 0; t < s.T; t++)
          memcpy(gg.g + (b * s.T + t) * s.Dk, gdn_chgate_row(gw.g, &s, b, t, h), (size_t)s.Dk * sizeof(float));
      ck_assert_msg(parity_kappa_ch_acc_add(pass ? &rev : &fwd, &gi, &gg, 64, 1, &e) == GDN_OK, "%s", e.msg);
      gdn_chgate_clear(&gg);
    }
  parity_kappa_ch kf, kr;
  ck_assert(parity_kappa_ch_acc_finish(&fwd, &kf, &e) == GDN_OK);
  ck_assert(parity_kappa_ch_acc_finish(&rev, &kr, &e) == GDN_OK);
  ck_assert(kf.worst == whole.worst && kf.worst_d == whole.worst_d && kf.median == whole.median &&
            kf.worst_o == whole.worst_o && kf.worst_ht == whole.worst_ht);
  int differ = 0; /* the negative control: another order moves some channel's sum */
  for (int64_t d = 0; d < s.Dk; d++) differ |= fwd.sq[d] != rev.sq[d];
  ck_assert(differ);
  parity_kappa_ch_acc_clear(&fwd);
  parity_kappa_ch_acc_clear(&rev);
  gdn_chgate_clear(&gw);
  gdn_inputs_clear(&gi);
  gdn_inputs_clear(&in);
}
END_TEST

/* The plan: over the budget streams; under one key head refused with the
 * figure that runs; that figure runs; dd and gate-other-head stream (the
 * latter counted with one key head more per group). */
START_TEST(test_plan) {
  parity_recur_opts o = opts(NULL);
  /* planned only: a key head's data (some 18 MB) far above what the process's
   * resident memory, counted, moves between plans */
  o.shape = (gdn_shape){1, 4096, 4, 8, 64, 64};
  gdn_error e;
  parity_stream_plan p;
  ck_assert(parity_recur_stream_plan(&o, 0, 0, 0, &p, &e) == GDN_OK);
  const uint64_t whole = p.whole_bytes;
  ck_assert_int_eq(p.n_groups, 1);
  ck_assert_msg(parity_recur_stream_plan(&o, 0, whole - 1, 0, &p, &e) == GDN_OK, "%s", e.msg);
  /* 3 key heads fit; evened out: 2 groups of 2, not 3 and 1 */
  ck_assert_int_eq(p.n_groups, 2);
  ck_assert_int_eq(p.group, 2);
  ck_assert(p.peak < whole);
  ck_assert_int_eq(parity_recur_stream_plan(&o, 0, 1u << 20, 0, &p, &e), GDN_ERR_INPUT);
  const char *at = strstr(e.msg, "the smallest --max-bytes that runs is ");
  ck_assert_msg(at, "%s", e.msg);
  const uint64_t least = strtoull(at + strlen("the smallest --max-bytes that runs is "), NULL, 10);
  ck_assert(least % (1u << 20) == 0); /* rounded up to a MiB, with room for the resident memory's moves */
  if (!CKR_UNDER_ASAN) { /* (which under ASan are larger) */
    ck_assert_msg(parity_recur_stream_plan(&o, 0, least, 0, &p, &e) == GDN_OK, "%s", e.msg);
    ck_assert(p.peak <= least && p.group == 1 && p.n_groups == 4);
  }
  ck_assert_int_eq(parity_recur_stream_plan(&o, 0, 0, 5, &p, &e), GDN_ERR_INPUT); /* above Hk */
  o.dd = 1;
  ck_assert_msg(parity_recur_stream_plan(&o, 0, 0, 2, &p, &e) == GDN_OK, "%s", e.msg); /* dd streams */
  o.dd = 0;
  ck_assert_msg(parity_recur_stream_plan(&o, 0, 0, 1, &p, &e) == GDN_OK, "%s", e.msg);
  const uint64_t plain = p.peak;
  const gdn_shape big = o.shape;
  o = opts("gate-other-head");
  o.shape = big;
  ck_assert_msg(parity_recur_stream_plan(&o, 0, 0, 1, &p, &e) == GDN_OK, "%s", e.msg); /* gate-other-head streams */
  ck_assert_msg(p.peak > plain, "%llu vs %llu", (unsigned long long)p.peak, (unsigned long long)plain);
  /* the command line: --max-bytes and --group-heads taken */
  char *ok[] = {"gdn-parity", "--recurrence", "kda", "--shape", "1,64,4,8", "--key-heads", "2", "--group-heads", "1",
                "--devices", "1", "--max-bytes", "1G", NULL};
  ck_assert_msg(cli_inproc(ok, &e) == 0, "%s", e.msg);
  char *tiny[] = {"gdn-parity", "--recurrence", "kda", "--shape", "1,64,4,8", "--max-bytes", "1M", NULL};
  ck_assert_int_eq(cli_inproc(tiny, &e), -1);
  ck_assert_msg(strstr(e.msg, "smallest --max-bytes that runs"), "%s", e.msg);
}
END_TEST

int main(void) {
  Suite *su = suite_create("parity");
  TCase *tc = tcase_create("kda_stream");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_byte_identical);
  tcase_add_test(tc, test_mutant_streamed);
  tcase_add_test(tc, test_grad_streamed);
  tcase_add_test(tc, test_dd_streamed);
  tcase_add_test(tc, test_modes_streamed);
  tcase_add_test(tc, test_fold);
  tcase_add_test(tc, test_kappa_groups);
  tcase_add_test(tc, test_plan);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
