/* parity_metrics_stream: the metrics of a pair met one head group at a time
 * are the whole tensors' (parity_metrics_compute_v, then
 * parity_metrics_blocks_v), every field bit for bit -- including those that
 * need a whole-tensor value first (max_rel and elem_rel against u max|r|,
 * row_rel against the RMS row norm, the exact median ULP) -- for o-, ht-
 * and dg-shaped tensors, any group size (a short last group), groups met
 * in any order, x held as binary64 or float32, non-finite values, tied
 * maxima across heads, and each of the median's three ways (a bucket of one
 * value, a bucket held whole, the radix rounds over the groups again).
 * Negative controls: each group judged on its own (its own floors) and
 * merged by maxima gives another max_rel; a source that maps a group one
 * head off names other positions. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "gdn_threads.h"
#include "parity_metrics.h"

/* A whole pair, and the groups a source hands out: group g is heads
 * [cut[g], cut[g + 1]) along axis ax, met in the order `order` (NULL: 0, 1,
 * ...); shift moves one group's claimed heads (the negative control). */
typedef struct {
  const double *x, *r;
  const float *xf; /* x held as float32 instead (x ignored) */
  int64_t dims[4];
  int ax;
  const int64_t *cut;
  const int64_t *order;
  int64_t shift_group, shift;
  double *gx, *gr;
  float *gxf;
  int fail_at; /* >= 0: get fails for that group */
} src_ctx;

/* Heads [h0, h1) along axis ax of w (dims) into g, contiguous: elements of
 * `size` bytes (one copy for the binary64 and float32 tensors). */
static void heads_copy(const void *w, void *g, size_t size, const int64_t dims[4], int ax, int64_t h0, int64_t h1) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < ax; i++) outer *= dims[i];
  for (int i = ax + 1; i < 4; i++) inner *= dims[i];
  const size_t len = (size_t)((h1 - h0) * inner) * size;
  for (int64_t j = 0; j < outer; j++)
    memcpy((char *)g + j * len, (const char *)w + (size_t)((j * dims[ax] + h0) * inner) * size, len);
}

static int src_get(void *vctx, int64_t g, parity_vals *x, parity_vals *r, int64_t *h0, int64_t *h1, gdn_error *e) {
  src_ctx *c = vctx;
  if (g == c->fail_at) return gdn_error_set(e, GDN_ERR_IO, "group %lld: the spill file is gone", (long long)g);
  const int64_t k = c->order ? c->order[g] : g;
  *h0 = c->cut[k], *h1 = c->cut[k + 1];
  heads_copy(c->r, c->gr, sizeof *c->r, c->dims, c->ax, *h0, *h1);
  *r = parity_vals_f64(c->gr);
  if (c->xf) {
    heads_copy(c->xf, c->gxf, sizeof *c->xf, c->dims, c->ax, *h0, *h1);
    *x = parity_vals_f32(c->gxf);
  } else {
    heads_copy(c->x, c->gx, sizeof *c->x, c->dims, c->ax, *h0, *h1);
    *x = parity_vals_f64(c->gx);
  }
  if (k == c->shift_group) *h0 += c->shift, *h1 += c->shift;
  return GDN_OK;
}

static size_t numel(const int64_t d[4]) { return (size_t)(d[0] * d[1] * d[2] * d[3]); }

static void whole(const double *x, const float *xf, const double *r, const int64_t dims[4], const int64_t bl[4],
                  parity_metrics *m) {
  gdn_error e;
  gdn_error_init(&e);
  parity_vals xv = xf ? parity_vals_f32(xf) : parity_vals_f64(x);
  ck_assert_int_eq(parity_metrics_compute_v(xv, parity_vals_f64(r), dims, GDN_DTYPE_F32, m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks_v(xv, parity_vals_f64(r), dims, bl, m, &e), GDN_OK);
}

/* Streams with groups of gs heads (order reversed when rev). */
static int streamed(src_ctx *c, int64_t gs, int rev, const int64_t bl[4], parity_metrics *m, gdn_error *e) {
  const int64_t H = c->dims[c->ax];
  static int64_t cut[64], order[64];
  int64_t n = 0;
  for (int64_t h = 0; h < H; h += gs) cut[n++] = h;
  cut[n] = H;
  for (int64_t g = 0; g < n; g++) order[g] = rev ? n - 1 - g : g;
  c->cut = cut;
  c->order = order;
  const parity_group_src src = {src_get, c, n, c->ax, NULL, NULL, NULL};
  return parity_metrics_stream(&src, c->dims, bl, GDN_DTYPE_F32, m, e);
}

static void src_init(src_ctx *c, const double *x, const float *xf, const double *r, const int64_t dims[4], int ax) {
  memset(c, 0, sizeof *c);
  c->x = x, c->xf = xf, c->r = r, c->ax = ax;
  memcpy(c->dims, dims, sizeof c->dims);
  const size_t n = numel(dims);
  c->gx = malloc(n * sizeof *c->gx), c->gr = malloc(n * sizeof *c->gr), c->gxf = malloc(n * sizeof *c->gxf);
  c->shift_group = -1;
  c->fail_at = -1;
}

static void src_clear(src_ctx *c) { free(c->gx), free(c->gr), free(c->gxf); }

/* A tensor x and its reference r of dims, zeroed, and the source over them
 * by head groups (axis 2): the set-up of the tests that fill x and r by
 * hand.  pair_clear frees all three. */
typedef struct {
  double *x, *r;
  size_t n;
  src_ctx c;
} pair;
static pair pair_make(const int64_t dims[4]) {
  pair p;
  p.n = numel(dims);
  p.x = calloc(p.n, sizeof *p.x), p.r = calloc(p.n, sizeof *p.r);
  src_init(&p.c, p.x, NULL, p.r, dims, 2);
  return p;
}
static void pair_clear(pair *p) {
  src_clear(&p->c);
  free(p->x), free(p->r);
}

static int same(const parity_metrics *a, const parity_metrics *b) { return !memcmp(a, b, sizeof *a); }

/* Which field differs first, for the failure message. */
static const char *first_diff(const parity_metrics *a, const parity_metrics *b) {
#define F(f) if (memcmp(&a->f, &b->f, sizeof a->f)) return #f;
  F(max_abs) F(rel_fro) F(max_ulp) F(median_ulp) F(max_rel) F(rel_floor) F(ref_max_abs) F(ref_fro) F(n)
  F(zero_ref) F(nonfinite) F(worst) F(worst_x) F(worst_ref) F(row_rel) F(row_worst) F(ulp_hist) F(rel_at)
  F(nonfinite_at) F(block_rel) F(elem_rel) F(elem_at) F(block_len) F(block_lo) F(block_hi) F(n_blocks)
#undef F
  return "none";
}

/* A pair with every hazard: references over 30 binades and exact zeros,
 * x a float32 rounding of r times (1 + a few ulps), one head scaled 1e-3
 * (so a group's own floor is not the whole's), a max |x - r| tied across
 * two heads, and optionally a NaN and an infinity in x. */
static void fill(double *x, double *r, const int64_t dims[4], int ax, int nonfinite) {
  const size_t n = numel(dims);
  int64_t inner = 1;
  for (int i = ax + 1; i < 4; i++) inner *= dims[i];
  for (size_t i = 0; i < n; i++) {
    const int64_t h = (int64_t)(i / (size_t)inner) % dims[ax];
    r[i] = (i % 23 == 0) ? 0 : ldexp(1.0 + 1e-3 * (double)((i * 7919) % 1013), (int)(i % 30) - 15) * ((i & 1) ? -1 : 1);
    if (h == 0) r[i] *= 1e-3;
    x[i] = (float)(r[i] * (1 + ldexp(1.0, -22 + (int)(i % 9))));
  }
  const size_t t1 = n - 1 - inner * 0 - 3, t2 = n / 3 + 5; /* a tie of max |x - r| in two places */
  r[t1] = r[t2] = 1.0, x[t1] = x[t2] = 1e6;
  if (nonfinite) x[n / 2 + 7] = NAN, x[n / 5 + 1] = INFINITY;
}

static const struct {
  const char *what;
  int64_t dims[4], bl[4];
  int ax;
} shapes[] = {
    {"o (B, T, Hv, Dv)", {2, 700, 6, 16}, {1, 64, 1, 16}, 2},
    {"ht (B, Hv, Dk, Dv)", {2, 5, 24, 40}, {1, 1, 24, 40}, 1},
    {"dg (B, T, Hv, 1)", {3, 9000, 6, 1}, {1, 64, 1, 1}, 2},
};

/* Every shape, group size, order, form of x, with and without non-finite
 * values, on 1 and 2 threads: bit for bit the whole tensors' metrics. */
START_TEST(every_field_as_the_whole) {
  for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
    const int64_t *dims = shapes[sh].dims;
    const int ax = shapes[sh].ax;
    const size_t n = numel(dims);
    double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
    float *xf = malloc(n * sizeof *xf);
    for (int nf = 0; nf < 2; nf++) {
      fill(x, r, dims, ax, nf);
      for (size_t i = 0; i < n; i++) xf[i] = (float)x[i];
      for (int form = 0; form < 2; form++) {
        parity_metrics want, got;
        whole(x, form ? xf : NULL, r, dims, shapes[sh].bl, &want);
        src_ctx c;
        src_init(&c, x, form ? xf : NULL, r, dims, ax);
        for (int64_t gs = 1; gs <= dims[ax]; gs++)
          for (int rev = 0; rev < 2; rev++)
            for (int th = 1; th <= 2; th++) {
              gdn_threads_set(th);
              gdn_error e;
              gdn_error_init(&e);
              ck_assert_int_eq(streamed(&c, gs, rev, shapes[sh].bl, &got, &e), GDN_OK);
              ck_assert_msg(same(&got, &want), "%s nf %d form %d groups of %lld rev %d threads %d: %s differs",
                            shapes[sh].what, nf, form, (long long)gs, rev, th, first_diff(&got, &want));
            }
        gdn_threads_set(2);
        /* the fields that need the whole's floors were exercised: */
        ck_assert(want.max_rel > 0 && want.elem_rel > 0 && want.row_rel > 0 && want.median_ulp > 0);
        src_clear(&c);
      }
    }
    free(x), free(r), free(xf);
  }
}
END_TEST

/* The median's three ways: n ULP values of which the middle ones lie in one
 * top-16-bit bucket holding (a) one value, (b) a few thousand distinct
 * values (held whole), (c) over 65536 distinct values (the radix rounds go
 * over the groups again, and for even n one more pass finds the value after
 * the lower middle); odd and even n. */
START_TEST(median_three_ways) {
  for (int way = 0; way < 3; way++)
    for (int odd = 0; odd < 2; odd++) {
      const int64_t dims[4] = {1, 150000 + odd, 4, 1}, bl[4] = {1, 64, 1, 1};
      pair p = pair_make(dims);
      double *x = p.x, *r = p.r;
      for (size_t i = 0; i < p.n; i++) {
        /* x = 1 and r = 1 + 2^-23 (1 + j 2^-24): ULP distance 1 + j 2^-24 */
        const uint64_t j = way == 0 ? 0 : way == 1 ? (i * 2654435761u) % 3000 : (i * 2654435761u) % (1u << 20);
        r[i] = 1.0 + ldexp(1.0 + ldexp((double)j, -24), -23);
        x[i] = 1.0;
      }
      parity_metrics want, got;
      whole(x, NULL, r, dims, bl, &want);
      gdn_error e;
      gdn_error_init(&e);
      for (int64_t gs = 1; gs <= 4; gs++) {
        ck_assert_int_eq(streamed(&p.c, gs, gs % 2, bl, &got, &e), GDN_OK);
        ck_assert_msg(same(&got, &want), "way %d odd %d groups of %lld: %s differs (median %.17g vs %.17g)", way, odd,
                      (long long)gs, first_diff(&got, &want), got.median_ulp, want.median_ulp);
      }
      ck_assert(way == 0 ? want.median_ulp == 1.0 : want.median_ulp > 1.0 && want.median_ulp < 1.0625);
      pair_clear(&p);
    }
}
END_TEST

/* Negative controls.  (1) Each group measured alone, with its own floor
 * u max|r| over the group, and merged by maxima: the 1e-3-scaled head's
 * near-zero elements are judged against a floor 1000 times too low, so
 * max_rel differs from the whole's (the streamed one agrees).  (2) A source
 * that hands max_rel's group as heads one off: other positions. */
START_TEST(negative_controls) {
  const int64_t dims[4] = {2, 700, 6, 16}, bl[4] = {1, 64, 1, 16};
  pair p = pair_make(dims);
  double *x = p.x, *r = p.r;
  const size_t n = p.n;
  fill(x, r, dims, 2, 0);
  for (size_t i = 0; i < n; i++) /* no planted tie: it would decide max_rel everywhere */
    if (x[i] == 1e6) x[i] = r[i];
  for (size_t i = 0; i < n; i += 97) /* near-zero references with an error in the scaled head */
    if ((int64_t)(i / 16) % 6 == 0) r[i] = 1e-12, x[i] = 1e-6;
  parity_metrics want, got, g0;
  whole(x, NULL, r, dims, bl, &want);
  double naive = 0;
  for (int64_t h = 0; h < 6; h++) {
    int64_t gd[4] = {2, 700, 1, 16};
    double *gx = malloc(n / 6 * sizeof *gx), *gr = malloc(n / 6 * sizeof *gr);
    heads_copy(x, gx, sizeof *x, dims, 2, h, h + 1);
    heads_copy(r, gr, sizeof *r, dims, 2, h, h + 1);
    whole(gx, NULL, gr, gd, bl, &g0);
    if (g0.max_rel > naive) naive = g0.max_rel;
    free(gx), free(gr);
  }
  ck_assert_msg(naive > 1e3 * want.max_rel, "per-group floors gave %g, the whole's %g: the control shows nothing",
                naive, want.max_rel);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(streamed(&p.c, 1, 0, bl, &got, &e), GDN_OK);
  ck_assert(same(&got, &want));
  ck_assert(got.max_rel != naive);
  p.c.shift_group = want.rel_at[2] / 2; /* the group holding max_rel's element, one head off */
  p.c.shift = p.c.shift_group == 2 ? -1 : 1;
  ck_assert_int_eq(streamed(&p.c, 2, 0, bl, &got, &e), GDN_OK);
  ck_assert_msg(!same(&got, &want), "a group mapped one head off went unnoticed");
  pair_clear(&p);
}
END_TEST

/* A source that fails (a spill file gone) is the run's error, its message
 * kept; heads outside the tensor are an internal error naming the group. */
START_TEST(source_errors) {
  const int64_t dims[4] = {1, 100, 4, 8}, bl[4] = {1, 64, 1, 8};
  pair p = pair_make(dims);
  src_ctx *c = &p.c;
  for (size_t i = 0; i < p.n; i++) p.r[i] = 1.0 + (double)i, p.x[i] = p.r[i] + 1e-3;
  parity_metrics m;
  gdn_error e;
  for (int at = 0; at < 2; at++) {
    gdn_error_init(&e);
    c->fail_at = at;
    ck_assert_int_eq(streamed(c, 2, 0, bl, &m, &e), GDN_ERR_IO);
    ck_assert_msg(strstr(e.msg, "spill file is gone") != NULL, "%s", e.msg);
  }
  c->fail_at = -1;
  c->shift_group = 1, c->shift = 1; /* heads [3, 5) of 4 */
  gdn_error_init(&e);
  ck_assert_int_eq(streamed(c, 2, 0, bl, &m, &e), GDN_ERR_INTERNAL);
  ck_assert_msg(strstr(e.msg, "head group 1") != NULL, "%s", e.msg);
  pair_clear(&p);
}
END_TEST

CKR_MAIN("metrics_stream", "metrics_stream", 240, every_field_as_the_whole, median_three_ways, negative_controls,
         source_errors)
