/* parity_metrics: how far one tensor is from a reference.
 *
 * The whole-tensor sums of squares (rel_fro, ref_fro, row_rel's RMS row
 * norm) are exact (parity_xsum.h), rounded once: the same bits for any
 * thread count and any order of the elements (a run streamed by head group
 * meets them in another order).  Sums within a block or a row are in
 * binary64 in memory order, a block or row lying inside one head.
 *
 *   max_abs     max |x - r|
 *   rel_fro     ||x - r||_F / ||r||_F  (0 if x == r everywhere; +inf if r == 0
 *               everywhere but x is not).  Equal to flash-linear-attention's
 *               RMS ratio.
 *   max_ulp     max |x - r| / ulp(r), ulp in `ulp_dtype` (gdn_dtype_ulp)
 *   median_ulp  the exact median of those (mean of the two middle values
 *               for even n), found by radix selection on the bits
 *   max_rel     componentwise max |x - r| / max(|r|, rel_floor) with
 *               rel_floor = u(ulp_dtype) * max |r|: relative error is
 *               undefined where r == 0, so such elements (counted in
 *               zero_ref) are measured against the floor instead
 *   worst       the multi-index of max_abs (ties: the first in memory order)
 *   rel_at      the multi-index of max_rel (ties: the first in memory order)
 * and, after parity_metrics_blocks, the localized statistic:
 *   block_rel   max over blocks of ||x - r||_blk / max(||r||_blk, sqrt(n_blk) rel_floor):
 *               the normwise error of the worst block (per head and chunk of
 *               positions for o, per head for ht); the floor is the
 *               componentwise one summed over the block, so a block whose
 *               reference is (nearly) zero is measured against the floor
 *   block_lo/hi the worst block's index range on each axis (hi exclusive;
 *               ties: the first block in memory order)
 *   elem_rel    componentwise max |x - r| / max(|r|, rms_blk(r), rel_floor):
 *               each element against its own size, or near zero against
 *               the RMS of its block.  (max_rel's global floor u max|r| is
 *               too low for o: o passes through zero, and the float32 scan's
 *               max_rel is 0.19 at T = 4096, so it cannot see a 1e-4 error.)
 *   elem_at     the multi-index of elem_rel (ties: the first)
 *   row_rel     max over rows (the last dimension: a token's vector of one
 *               head for o, dq, dk, dv; one scalar for dg, dbeta) of
 *               ||x_row - r_row|| / max(||r_row||, rms_row ||r_row||):
 *               the per-token (localized) error -- one bad token is not
 *               diluted by the rest of the sequence as it is in rel_fro.
 *               The floor, the RMS row norm, keeps rows with a small
 *               gradient from dominating: their rounding error is set by
 *               the typical token's magnitude, not their own (with a floor
 *               of 2^-10 max instead, correct float32 dk measured 1.4e-5
 *               on T = 1024 with the model's initial gates; with the RMS
 *               floor 1e-6).
 *               row_worst: the flat row index of that maximum (first).
 * A non-finite x (counted in `nonfinite`) makes max_abs, rel_fro, max_ulp and
 * max_rel +inf.
 *   nonfinite_at  the multi-index of the first non-finite x (the lowest flat
 *               index: the same for any thread count); meaningful only when
 *               nonfinite > 0
 */
#ifndef PARITY_METRICS_H
#define PARITY_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "parity_vals.h"
#include "parity_xsum.h"

#define PARITY_ULP_BINS 20 /* edges 0, 0.5, 1, 2, ..., 2^17; the last bin is open */

/* The error model's statistics of one pair (parity_metrics_model_v): each
 * element e, row (a token's vector) and block judged against the model's
 * scale s (parity_kappa_model.h) as well as against its own size.  Item i
 * (an element, a row, a block) has two figures:
 *   a_i = |x - r|_i / (lam s_i)   its error as a multiple of its model bound
 *   q_i = the metric's own relative error (elem_rel's, row_rel's,
 *         block_rel's definition and floor, parity_metrics.h)
 * and with a rule's limit L it passes when a_i <= 1 or q_i <= L: the check's
 * value/limit is rho = max_i min(a_i, q_i / L).  Every L gives rho from the
 * Pareto frontier of the points (a_i, q_i) (those no other point exceeds in
 * both; of equal points the least index), kept here: at most
 * PARITY_MODEL_FRONT points, sorted by a rising (q falling).  The frontier
 * is a set: the same whatever order the items come in (a run streamed by
 * head group meets them in another).  When more would be kept (random
 * errors keep about ln n), two neighbours merge into their componentwise
 * maximum: rho can only grow, never a missed FAIL, but the set then depends
 * on the order.
 * lam from a union bound over the items judged (false-alarm probability
 * PARITY_MODEL_ALPHA per statistic, Gaussian tails): elements
 * lam_elem = sqrt(2 ln(2 n / alpha)); a norm over k >= 1 items concentrates
 * (Lipschitz 1 in the standard normal), so rows and blocks take
 * 1 + sqrt(2 ln(n_items / alpha)) and the whole tensor
 * lam_fro = 1 + sqrt(2 ln(1 / alpha)); fro = ||s||_F / ||r||_F, the model's
 * normwise scale.  s_i = 0 makes a_i = +inf; a non-finite x gives +inf
 * for both figures. */
#define PARITY_MODEL_ALPHA 1e-3
#define PARITY_MODEL_FRONT 64
typedef struct parity_model_front {
  int n;
  double a[PARITY_MODEL_FRONT], q[PARITY_MODEL_FRONT];
  int64_t at[PARITY_MODEL_FRONT]; /* flat element, row or block index */
} parity_model_front;

typedef struct parity_model_stats {
  int has;
  double fro, lam_elem, lam_block, lam_row, lam_fro;
  double fro_tail; /* the norm's own tail factor (>= 1): parity_metrics_model.c's finish */
  parity_model_front elem, row, block;
  int64_t dims[4], bl[4]; /* the tensor's shape and blocks, to place an item */
} parity_model_stats;

/* rho of front f under limit L (above), its item's a in *a and index in *at
 * (-1, a = 0 when f is empty). */
double parity_model_front_rho(const parity_model_front *f, double L, double *a, int64_t *at);

typedef struct parity_metrics {
  double max_abs, rel_fro, max_ulp, median_ulp, max_rel, rel_floor;
  double ref_max_abs, ref_fro;
  int64_t n, zero_ref, nonfinite;
  int64_t worst[4];
  double worst_x, worst_ref;
  double row_rel;
  int64_t row_worst;
  int64_t ulp_hist[PARITY_ULP_BINS];
  int64_t rel_at[4];
  int64_t nonfinite_at[4];
  double block_rel, elem_rel;
  int64_t elem_at[4];
  int64_t block_len[4], block_lo[4], block_hi[4], n_blocks; /* n_blocks 0: not computed */
  parity_model_stats model; /* parity_metrics_model (model.has 0: no error model) */
} parity_metrics;

/* row_rel of x against r (n_rows rows of `len`), as defined above; the
 * flat row index of the maximum in *worst (-1 when every row is exact).
 * Sums of squares in binary64 left to right within a row, the RMS over the
 * rows exact; a max does not depend on the order, so the value is the same
 * for any thread count. */
double parity_row_rel(const double *x, const double *r, int64_t n_rows, int64_t len, int64_t *worst);

/* Lower edge of ULP-histogram bin i (0, 0.5, 1, 2, 4, ...). */
double parity_ulp_bin_edge(int i);

/* x and r have n = dims[0]*dims[1]*dims[2]*dims[3] elements, row-major. */
int parity_metrics_compute(const double *x, const double *r, const int64_t dims[4],
                           gdn_dtype ulp_dtype, parity_metrics *m, gdn_error *e);

/* The error model's statistics of x against r (m->model), given s, the
 * model's per-element scale in x's layout (parity_kappa_model.h), and the
 * blocks of parity_metrics_blocks; m must hold parity_metrics_compute's
 * result for the pair (rel_floor, n).  One pass in memory order (block and
 * row sums in binary64 in that order, the whole-tensor sums exact): the
 * same for any thread count. */
int parity_metrics_model_v(parity_vals x, parity_vals r, const double *s, const int64_t dims[4],
                           const int64_t block_len[4], gdn_dtype ulp_dtype, parity_metrics *m, gdn_error *e);

/* The same met one head group at a time (parity_metrics_stream's way):
 * new, add_a for every group, between, add_b for every group, finish (m
 * holding the pair's other metrics: ref_fro), free.  The floor of elements
 * near zero is u(ulp_dtype) max|r|, rel_floor's definition.  x, r, s:
 * the group's slabs, heads [h0, h1) along head_axis (< 3), each in the
 * group's own shape.  Every figure is the whole pass's bit for bit (blocks
 * and rows lie inside one head; the whole sums are exact; the frontier is a
 * set). */
typedef struct parity_model_acc parity_model_acc;
int parity_model_acc_new(parity_model_acc **A, const int64_t dims[4], const int64_t block_len[4], int head_axis,
                         gdn_dtype ulp_dtype, gdn_error *e);
void parity_model_acc_add_a(parity_model_acc *A, parity_vals x, parity_vals r, const double *s, int64_t h0, int64_t h1);
void parity_model_acc_between(parity_model_acc *A);
void parity_model_acc_add_b(parity_model_acc *A, parity_vals x, parity_vals r, const double *s, int64_t h0,
                            int64_t h1);
void parity_model_acc_finish(parity_model_acc *A, parity_metrics *m);
void parity_model_acc_free(parity_model_acc *A); /* NULL is fine */
/* The heap parity_model_acc_new holds for dims and block_len. */
size_t parity_model_acc_bytes(const int64_t dims[4], const int64_t block_len[4]);
/* Mergeable as parity_mstream_pack / _merge: after pass A the block sums,
 * the exact sums and max |r|; after pass B each group's element and row
 * frontiers (add_b keeps one pair per group, by its first head h0; finish
 * folds them in head order, so the figures do not depend on the order the
 * groups came in nor on which process measured which, even when a
 * frontier fills up and merges neighbours). */
size_t parity_model_acc_pack(const parity_model_acc *A, int pass_b, void *buf);
int parity_model_acc_merge(parity_model_acc *A, int pass_b, const void *buf, size_t n, gdn_error *e);

/* The localized statistic of m (block_rel, block_lo/hi) over blocks of
 * block_len[a] indices along each axis a (clamped to [1, dims[a]]); m must
 * hold parity_metrics_compute's result for the same pair (rel_floor,
 * nonfinite).  Per-block sums in binary64 in memory order: the same for any
 * thread count.  A non-finite x makes its block +inf. */
int parity_metrics_blocks(const double *x, const double *r, const int64_t dims[4], const int64_t block_len[4],
                          parity_metrics *m, gdn_error *e);

/* The block error map of an o-shaped (B, T, H, D) pair for the report's
 * heat map: out[h * n_bins + k] is the largest block_rel (blocks of `block`
 * positions x D per (b, h), floor sqrt(n_blk) rel_floor, as
 * parity_metrics_blocks) over b and the blocks k * per_bin .. (k + 1) *
 * per_bin - 1; n_bins = ceil(ceil(T / block) / per_bin).  A non-finite x
 * gives +inf. */
int parity_block_map_o(const double *x, const double *r, const int64_t dims[4], int64_t block, double rel_floor,
                       int64_t per_bin, double *out, gdn_error *e);

/* Max |x - r| over (b, h, d) for each block of `block` positions of an
 * o-shaped (B, T, H, D) pair; out has ceil(T / block) entries.  r may be NULL
 * (then max |x| is returned: the reference's own scale). */
void parity_profile_o(const double *x, const double *r, const int64_t dims[4], int64_t block,
                      double *out);

/* Max |x - r| over positions t0 <= t < t1 of an o-shaped (B, T, H, D) pair:
 * the error of the first chunk after a shard seam.  A NaN difference counts
 * as +inf.  A max does not depend on the order; the loop is b, t, h, d. */
double parity_max_abs_rows(const double *x, const double *r, const int64_t dims[4], int64_t t0, int64_t t1);

/* ||a - b||_F / ||b||_F accumulated over vectors (the state entering each
 * head at a seam against the state the previous device ended with).  Both
 * sums exact (parity_xsum.h), so the value does not depend on the order
 * the vectors are added in (heads streamed by group come in another order
 * than (b, h)); 0 when a == b == 0 and +inf when only b is all zero.
 * 64 KiB: parity_rel_acc_init before use (or zero it). */
typedef struct parity_rel_acc {
  parity_xsum dd, nn;
} parity_rel_acc;
void parity_rel_acc_init(parity_rel_acc *acc);
void parity_rel_acc_add(parity_rel_acc *acc, const double *a, const double *b, size_t len);
void parity_rel_acc_merge(parity_rel_acc *acc, const parity_rel_acc *other);
double parity_rel_acc_value(const parity_rel_acc *acc);

/* The largest |x - r| / (atol + rtol |r|) over all elements: <= 1 means
 * numpy.testing.assert_allclose / torch.testing.assert_close with these
 * tolerances would pass.  +inf for a non-finite x. */
double parity_allclose_ratio(const double *x, const double *r, size_t n, double rtol, double atol);

/* A slab of a tensor: a head group's part (parity_stream.h), held on its
 * own.  Slab element i is element full(i) = (i / len) stride + start +
 * i mod len of the whole tensor (run j of `len` elements starts at whole
 * index j stride + start).  For heads [h0, h1) of a (B, T, H, D) tensor:
 * runs B T, len (h1 - h0) D, stride H D, start h0 D. */
typedef struct parity_slab {
  size_t runs, len, stride, start;
} parity_slab;

/* Pass 1 of parity_metrics_compute accumulated over slabs, merged exactly:
 * after adding every slab of the whole tensor once (any order, any
 * split, accumulators merged in any order), parity_metrics_acc_value
 * gives the fields parity_metrics_compute gives the whole tensor, bit for
 * bit: n, max_abs with worst, worst_x and worst_ref (ties: the least whole
 * index), rel_fro and ref_fro (exact sums), max_ulp, ref_max_abs, zero_ref,
 * nonfinite with nonfinite_at, ulp_hist, rel_floor; the rest of *m is
 * zero.  `top` counts the ULP values' top 16 bits (the median's first radix
 * round, integer counts).  Not covered yet: the fields that need a global
 * value first (max_rel, the median, row_rel, the blocks' statistics:
 * doc-stream notes).  One exception: a NaN reference value (|x - r| NaN)
 * may take max_abs's place differently, as the whole pass's result there
 * depends on its blocks of 65536. */
typedef struct parity_metrics_acc {
  parity_xsum d2, r2;
  double max_abs, max_ulp, max_r, arg_x, arg_r;
  int64_t arg, nf_at; /* whole flat indices; -1: none */
  int64_t n, zero_ref, nonfinite;
  int64_t hist[PARITY_ULP_BINS];
  int64_t *top; /* 65536 counts */
} parity_metrics_acc;
int parity_metrics_acc_init(parity_metrics_acc *a, gdn_error *e);
void parity_metrics_acc_clear(parity_metrics_acc *a);
int parity_metrics_acc_add_v(parity_metrics_acc *a, parity_vals x, parity_vals r, const parity_slab *sl, gdn_dtype t,
                             gdn_error *e);
void parity_metrics_acc_merge(parity_metrics_acc *a, const parity_metrics_acc *b);
void parity_metrics_acc_value(const parity_metrics_acc *a, const int64_t dims[4], gdn_dtype t, parity_metrics *m);

/* The localized statistic's block sums collected over head groups: each
 * block lies inside one head (block_len 1 on the head axis: o and the
 * token-axis gradients per (b, head, chunk), states per (b, head)), so a
 * group's blocks are summed exactly as the whole pass sums them.  After
 * every group is added (any order), parity_blocks_acc_value with m holding
 * pass 1's fields (n, rel_floor, parity_metrics_acc_value) sets block_rel,
 * block_lo/hi, block_len and n_blocks as parity_metrics_blocks does for the
 * whole tensor, bit for bit; once (it turns the sums into the blocks' RMS).
 * Not elem_rel: it needs each element again with the floor.  dims: the
 * whole tensor's; add_v's x, r: the group's tensors, heads [h0, h1). */
typedef struct parity_blocks_acc {
  int64_t dims[4], bl[4], nbk[4], nb;
  int head_axis;
  double *d2; /* nb sums of (x - r)^2, then nb of r^2 */
  unsigned char *bad;
} parity_blocks_acc;
int parity_blocks_acc_init(parity_blocks_acc *a, const int64_t dims[4], const int64_t block_len[4], int head_axis,
                           gdn_error *e);
int parity_blocks_acc_add_v(parity_blocks_acc *a, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e);
void parity_blocks_acc_value(parity_blocks_acc *a, parity_metrics *m);
void parity_blocks_acc_clear(parity_blocks_acc *a);

/* The metrics of a pair met one head group at a time: what
 * parity_metrics_compute_v and then parity_metrics_blocks_v (block_len)
 * give the whole tensors, every field bit for bit, from a source that
 * hands over group g's slabs of x and r (heads [h0, h1) along head_axis,
 * each group's tensors contiguous in its own shape) on request.  The
 * groups are read twice: pass A (pass 1 merged exactly, the blocks' sums,
 * the row norms of r), which fixes every floor (rel_floor = u max|r|, the
 * blocks' RMS, the RMS row norm); pass B (max_rel, elem_rel, row_rel
 * against those floors; ties go to the least whole index, as one pass from
 * 0 finds them; the median's bucket); and, only when the median's bucket
 * holds more than 65536 distinct values, up to three radix rounds more (a
 * pass each) and one for the value after the lower middle.  So a run that
 * holds one group's x and r at a time (its groups kept on disk, say)
 * measures what the whole run measures.  head_axis < 3 (rows and blocks
 * then lie inside one head); block_len[head_axis] must be 1.  `get` may
 * reuse its buffers: a group's slabs are read before the next get. */
typedef struct parity_group_src {
  int (*get)(void *ctx, int64_t g, parity_vals *x, parity_vals *r, int64_t *h0, int64_t *h1, gdn_error *e);
  void *ctx;
  int64_t n_groups;
  int head_axis;
  /* Optional (NULL: every group is here): groups held by several
   * processes, each measuring its own (parity_mstream_pack below).  holds:
   * whether this process holds group g (the median's extra rounds read
   * those only); sum_i64 / min_f64: v summed / its minimum taken over every
   * process, in place (collective: every process calls them in the same
   * order, so a process's rounds are the others'). */
  int (*holds)(void *ctx, int64_t g);
  int (*sum_i64)(void *ctx, int64_t *v, size_t n, gdn_error *e);
  int (*min_f64)(void *ctx, double *v, gdn_error *e);
} parity_group_src;
int parity_metrics_stream(const parity_group_src *src, const int64_t dims[4], const int64_t block_len[4],
                          gdn_dtype ulp_dtype, parity_metrics *m, gdn_error *e);
/* The same, driven by the caller, for several pairs met in one visit of
 * each group (a run reads each group's reference and outputs once a pass):
 * new (src: the source the median's extra rounds read, when its bucket
 * holds over 65536 values; src->get is not called otherwise), add_a for
 * every group, between, add_b for every group, finish.  Groups in any
 * order; each call's x and r the group's slabs (heads [h0, h1)). */
typedef struct parity_mstream parity_mstream;
int parity_mstream_new(parity_mstream **M, const parity_group_src *src, const int64_t dims[4],
                       const int64_t block_len[4], gdn_dtype ulp_dtype, gdn_error *e);
int parity_mstream_add_a(parity_mstream *M, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e);
void parity_mstream_between(parity_mstream *M);
int parity_mstream_add_b(parity_mstream *M, parity_vals x, parity_vals r, int64_t h0, int64_t h1, gdn_error *e);
int parity_mstream_finish(parity_mstream *M, parity_metrics *m, gdn_error *e);
void parity_mstream_free(parity_mstream *M); /* NULL is fine */
/* The heap one parity_mstream of a tensor of dims (blocks block_len) holds
 * from parity_mstream_new to parity_mstream_free, on the current thread
 * count: its median's histograms and thread states, its exact sums, its
 * blocks' sums (parity_stream counts it, every pair's at once). */
size_t parity_mstream_bytes(const int64_t dims[4], const int64_t block_len[4]);
/* Mergeable: a pair's groups measured by several processes, each adding
 * the groups it holds.  After pass A every process packs its state
 * (pass_b 0), merges every other's (any order: every part is exact --
 * exact sums, integer counts, maxima with their least whole index, block
 * sums each from the one group holding its block), then calls between: so
 * each holds the same floors and the same median bucket.  After pass B the
 * same with pass_b 1 (max_rel, row_rel, elem_rel, the bucket's extrema and
 * its values or their next 16 bits' counts), then finish on every process
 * (collective when the median needs its extra rounds: the source's holds,
 * sum_i64, min_f64).  The result is the one-process result bit for bit.
 * pack with buf NULL returns the bytes needed; merge refuses a part of
 * the wrong size or one that overfills the state (GDN_ERR_INTERNAL). */
size_t parity_mstream_pack(parity_mstream *M, int pass_b, void *buf);
int parity_mstream_merge(parity_mstream *M, int pass_b, const void *buf, size_t n, gdn_error *e);

/* The functions above, reading x and r as they are held (binary64 or
 * float32, parity_vals.h; r may be absent where the double form takes
 * NULL).  Every value is read exactly, so each result is bit for bit the
 * double form's on the same values. */
double parity_row_rel_v(parity_vals x, parity_vals r, int64_t n_rows, int64_t len, int64_t *worst);
int parity_metrics_compute_v(parity_vals x, parity_vals r, const int64_t dims[4], gdn_dtype ulp_dtype,
                             parity_metrics *m, gdn_error *e);
int parity_metrics_blocks_v(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t block_len[4],
                            parity_metrics *m, gdn_error *e);
int parity_block_map_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block, double rel_floor,
                         int64_t per_bin, double *out, gdn_error *e);
void parity_profile_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block, double *out);
double parity_max_abs_rows_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t t0, int64_t t1);
double parity_allclose_ratio_v(parity_vals x, parity_vals r, size_t n, double rtol, double atol);

/* The heap parity_metrics_compute_v allocates for n elements on the current
 * thread count (block partials, the median's radix histograms and thread
 * states, the exact sums), freed before it returns: parity_budget counts it
 * beside the kernels' scratch, which is never live at the same time. */
size_t parity_metrics_scratch_bytes(size_t n);

#endif
