/* parity_stream: the head-group plan against --max-bytes. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "../check_runner.h"
#include "parity_stream.h"

static parity_sweep_opts opts_devices(const int64_t *dev, size_t n) {
  parity_sweep_opts o;
  parity_sweep_opts_init(&o);
  memcpy(o.devices, dev, n * sizeof *dev);
  o.n_devices = n;
  o.devices_default = 0;
  return o;
}

/* The seed's layer at 262,144 tokens (Hk 16, Hv 32, D 128, devices 1 and
 * 8, three output sets) needs 32.1 GiB whole; under 12 GiB the plan
 * streams it with the largest group that fits: that group's peak is within
 * the limit and one more key head is not (the choice is the largest). */
START_TEST(layer_under_12_gib) {
  static const int64_t dev[] = {1, 8};
  parity_sweep_opts o = opts_devices(dev, 2);
  gdn_shape s = {1, 262144, 16, 32, 128, 128};
  const uint64_t lim = 12ull << 30;
  parity_stream_plan p;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_stream_plan_make(&s, 0, 3, &o, lim, 0, &p, &e), GDN_OK);
  ck_assert_msg(p.whole_bytes > (32ull << 30) && p.whole_bytes < (33ull << 30), "whole %llu",
                (unsigned long long)p.whole_bytes);
  ck_assert_int_gt(p.group, 1);
  ck_assert_int_lt(p.group, 16);
  ck_assert_uint_le(p.peak, lim);
  /* as few groups as fit: one group fewer would need a group over the limit */
  const int64_t fewer = (16 + p.n_groups - 2) / (p.n_groups - 1);
  parity_stream_plan more;
  ck_assert_int_eq(parity_stream_plan_make(&s, 0, 3, &o, 0, fewer, &more, &e), GDN_OK);
  ck_assert_uint_gt(more.peak, lim);
  ck_assert_int_eq(p.n_groups, (16 + p.group - 1) / p.group);
  ck_assert_int_eq(p.group * p.n_groups, 16); /* evened out (2 x 8 since the read-back buffers, 4 binary64
                                                 copies of a group's o, are counted: 8 GiB at 4 key heads) */
  char line[320];
  parity_stream_describe(&p, line, sizeof line);
  printf("%s\n", line); /* the estimate, for the log */
  char want[64];
  snprintf(want, sizeof want, "%lld key heads (%lld value heads) per group", (long long)p.group,
           (long long)(2 * p.group));
  ck_assert_msg(strstr(line, want) && strstr(line, "expected peak") && strstr(line, "32.1 GiB"), "%s", line);
  /* every key head in exactly one group, in order, the groups' shapes GQA */
  int64_t next = 0;
  for (int64_t i = 0; i < p.n_groups; i++) {
    int64_t k0, k1;
    gdn_shape gs;
    parity_stream_group(&p, i, &k0, &k1, &gs);
    ck_assert_int_eq(k0, next);
    ck_assert_int_eq(gs.Hk, k1 - k0);
    ck_assert_int_eq(gs.Hv, 2 * (k1 - k0));
    ck_assert_int_eq(gs.T, s.T);
    next = k1;
  }
  ck_assert_int_eq(next, 16);
}
END_TEST

/* A shape that fits is not streamed; a forced group size streams it
 * (the tests' way), a short last group included; round robin over ranks. */
START_TEST(fits_whole_and_forced) {
  static const int64_t dev[] = {1, 2};
  parity_sweep_opts o = opts_devices(dev, 2);
  gdn_shape s = {1, 256, 4, 8, 16, 16};
  parity_stream_plan p;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_stream_plan_make(&s, 1, 3, &o, 1ull << 30, 0, &p, &e), GDN_OK);
  ck_assert_int_eq(p.n_groups, 1);
  ck_assert_int_eq(p.group, 4);
  char line[320];
  parity_stream_describe(&p, line, sizeof line);
  ck_assert_msg(strstr(line, "not streamed"), "%s", line);
  ck_assert_int_eq(parity_stream_plan_make(&s, 1, 3, &o, 1ull << 30, 3, &p, &e), GDN_OK);
  ck_assert_int_eq(p.n_groups, 2);
  int64_t k0, k1;
  gdn_shape gs;
  parity_stream_group(&p, 1, &k0, &k1, &gs);
  ck_assert(k0 == 3 && k1 == 4 && gs.Hv == 2);
  parity_stream_describe(&p, line, sizeof line);
  ck_assert_msg(strstr(line, "as asked") && strstr(line, "(the last 1)"), "%s", line);
  /* chosen, not forced: a limit between 4 and 3 key heads' peaks (each
   * with the run's own part) gives 2 groups of 2, not 3 + 1 */
  parity_stream_plan whole, three;
  ck_assert_int_eq(parity_stream_plan_make(&s, 1, 3, &o, 0, 4, &whole, &e), GDN_OK);
  ck_assert_int_eq(parity_stream_plan_make(&s, 1, 3, &o, 0, 3, &three, &e), GDN_OK);
  ck_assert_uint_gt(whole.peak, three.peak);
  ck_assert_int_eq(parity_stream_plan_make(&s, 1, 3, &o, (whole.peak + three.peak) / 2, 0, &p, &e), GDN_OK);
  ck_assert_int_eq(p.group, 2);
  ck_assert_int_eq(p.n_groups, 2);
  ck_assert_int_eq(parity_stream_plan_make(&s, 1, 3, &o, 1ull << 30, 1, &p, &e), GDN_OK);
  int64_t total = 0;
  for (int r = 0; r < 3; r++) total += parity_stream_rank_groups(&p, r, 3);
  ck_assert_int_eq(total, 4);
  ck_assert_int_eq(parity_stream_rank_groups(&p, 0, 3), 2);
  ck_assert_int_eq(parity_stream_owner(3, 3), 0);
  ck_assert_int_eq(parity_stream_owner(2, 3), 2);
  ck_assert_int_eq(parity_stream_owner(2, 1), 0);
}
END_TEST

/* Negative controls: a group above Hk, and a limit below even one key
 * head's group, are refused with the numbers. */
/* The one key-head split (parity_stream_even, parity_stream_share): 16 in
 * groups of at most 5 are 4 of 4, not 5 5 5 1; dealt over ranks, ceil(Hk /
 * N): at most one group a rank, every head in one, most ranks busy. */
START_TEST(one_split) {
  const int64_t even[][3] = {{16, 5, 4}, {16, 16, 16}, {16, 1, 1}, {7, 3, 3}, {7, 6, 4}, {8, 0, 0}, {3, 2, 2}};
  for (size_t i = 0; i < sizeof even / sizeof even[0]; i++)
    ck_assert_int_eq(parity_stream_even(even[i][0], even[i][1]), even[i][2]);
  ck_assert_int_eq(parity_stream_share(16, 4), 4);
  ck_assert_int_eq(parity_stream_share(7, 2), 4);
  ck_assert_int_eq(parity_stream_share(3, 4), 1);
  ck_assert_int_eq(parity_stream_share(5, 1), 5);
  ck_assert_int_eq(parity_stream_share(5, 0), 5);
  for (int64_t Hk = 1; Hk <= 40; Hk++)
    for (int n = 1; n <= 9; n++) {
      const int64_t g = parity_stream_share(Hk, n), groups = (Hk + g - 1) / g;
      ck_assert_int_le(groups, n); /* at most one group a rank */
      ck_assert(g * n >= Hk);       /* every head in a group */
      if (Hk >= n) ck_assert_int_ge(groups, (n + 1) / 2); /* and most ranks busy */
      for (int64_t m = 1; m <= Hk; m++) {
        const int64_t e = parity_stream_even(Hk, m), ng = (Hk + m - 1) / m;
        ck_assert_int_le(e, m);                   /* never larger than asked */
        ck_assert_int_eq((Hk + e - 1) / e, ng);   /* no more groups than m needs */
        ck_assert_int_le(ng * e - Hk, ng - 1);    /* sizes differ by at most one */
      }
    }
}
END_TEST

START_TEST(refusals) {
  static const int64_t dev[] = {1};
  parity_sweep_opts o = opts_devices(dev, 1);
  gdn_shape s = {1, 65536, 4, 8, 128, 128};
  parity_stream_plan p;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_stream_plan_make(&s, 0, 3, &o, 0, 5, &p, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "5 key heads") && strstr(e.msg, "has 4"), "%s", e.msg);
  ck_assert_int_eq(parity_stream_plan_make(&s, 0, 3, &o, 64ull << 20, 0, &p, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "a group of 1 key head ") && strstr(e.msg, "--max-bytes 67108864"), "%s", e.msg);
  ck_assert_int_eq(parity_stream_plan_make(&s, 0, 3, &o, 64ull << 20, 2, &p, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "a group of 2 key heads"), "%s", e.msg);
}
END_TEST

/* The figure a refusal names: the count plus 1 MiB and a sixteenth of the
 * process's own, rounded up to a MiB; a count on a MiB boundary still gets
 * its room (the CI run under ASan refused the count plus 256 KiB: its own
 * memory had grown by some 300 KiB on the next run). */
START_TEST(named_bytes_leave_room) {
  const uint64_t mib = 1u << 20;
  ck_assert_uint_eq(parity_stream_named_bytes(53 * mib, 0), 54 * mib);
  ck_assert_uint_eq(parity_stream_named_bytes(53 * mib - 1, 0), 54 * mib);
  ck_assert_uint_eq(parity_stream_named_bytes(53 * mib + 1, 0), 55 * mib);
  ck_assert_uint_eq(parity_stream_named_bytes(53 * mib, 48 * mib), 57 * mib);
  for (uint64_t need = 1; need < (64ull << 20); need = need * 3 + 7) {
    const uint64_t n = parity_stream_named_bytes(need, 47 * mib);
    ck_assert_uint_eq(n % mib, 0);
    ck_assert_uint_ge(n, need + mib + 47 * mib / 16);
    ck_assert_uint_lt(n, need + 2 * mib + 47 * mib / 16);
  }
}
END_TEST

/* --grad (PARITY_STREAM_GRADS): a group's bytes count its three gradient
 * sets (2 x the inputs with h0 each) and the cotangents (half an output
 * set) beside the forward's, at least the bytes --grad's own check asks of
 * that group (7 x inputs + 3.5 x outputs), so the group chosen is never
 * refused by it; and over budgets from one key head's peak to past the whole
 * run's, a budget the plan accepts is never followed by a larger one it
 * refuses, the group never shrinks and its peak stays within each budget.
 * (The forward-only plan chose groups whose gradients did not fit: at T =
 * 8192 120M and 200M were refused while --group-heads 1 ran at 90M.) */
START_TEST(gradients_counted_and_monotone) {
  static const int64_t dev[] = {1, 2, 4, 8};
  parity_sweep_opts o = opts_devices(dev, 4);
  const gdn_shape s = {1, 8192, 16, 32, 64, 64};
  gdn_error e;
  gdn_error_init(&e);
  uint64_t fwd, grad, in, out;
  ck_assert_int_eq(parity_stream_bytes(&s, PARITY_STREAM_H0, 3, &o, &fwd, &e), GDN_OK);
  ck_assert_int_eq(parity_stream_bytes(&s, PARITY_STREAM_GRADS, 3, &o, &grad, &e), GDN_OK);
  ck_assert_int_eq(gdn_shape_bytes(&s, 1, &in, &out, &e), GDN_OK);
  ck_assert_uint_eq(grad, fwd + 6 * in + out / 2); /* the inputs with h0: h0 has a gradient */
  ck_assert(grad >= 7 * in + 3.5 * out);
  int accepted = 0;
  int64_t last_group = 0;
  parity_stream_plan full; /* every head in one group, with the streamed run's read-back buffers */
  ck_assert_int_eq(parity_stream_plan_make(&s, PARITY_STREAM_H0 | PARITY_STREAM_GRADS, 3, &o, 0, 16, &full, &e),
                   GDN_OK);
  ck_assert_uint_gt(full.peak, grad);
  for (uint64_t lim = 8ull << 20; lim <= full.peak + (8ull << 20); lim += 2ull << 20) {
    parity_stream_plan p;
    gdn_error q;
    gdn_error_init(&q);
    const int rc = parity_stream_plan_make(&s, PARITY_STREAM_H0 | PARITY_STREAM_GRADS, 3, &o, lim, 0, &p, &q);
    ck_assert_msg(rc == GDN_OK || !accepted, "%llu bytes refused after a smaller budget was accepted: %s",
                  (unsigned long long)lim, q.msg);
    if (rc) continue;
    accepted = 1;
    ck_assert_uint_le(p.peak, lim);
    ck_assert_int_ge(p.group, last_group);
    last_group = p.group;
    gdn_shape gs;
    int64_t k0, k1;
    parity_stream_group(&p, 0, &k0, &k1, &gs);
    uint64_t gin, gout;
    ck_assert_int_eq(gdn_shape_bytes(&gs, 1, &gin, &gout, &e), GDN_OK);
    ck_assert(7.0 * gin + 3.5 * gout <= (double)lim); /* --grad's own check of the group passes */
  }
  ck_assert(accepted);
  ck_assert_int_eq(last_group, 16); /* past one group of every head: not streamed */
}
END_TEST

CKR_MAIN("stream_plan", "stream_plan", 0, layer_under_12_gib, fits_whole_and_forced, one_split, refusals,
         named_bytes_leave_room, gradients_counted_and_monotone)
