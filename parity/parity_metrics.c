#include "parity_metrics.h"

#include "gdn_threads.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"

/* Every read of a compared value: exact whether it is held as binary64 or
 * float32 (parity_vals.h), so the metrics do not depend on the form. */
#define AT(v, i) parity_vals_at((v), (size_t)(i))
static const parity_vals NONE = {NULL, NULL, NULL, 0};

#define BLOCK 65536

double parity_ulp_bin_edge(int i) { return i == 0 ? 0.0 : ldexp(1.0, i - 2); }

static int ulp_bin(double u) {
  if (!(u >= 0.5)) return 0; /* includes u < 0.5 */
  if (!isfinite(u)) return PARITY_ULP_BINS - 1;
  int ex;
  frexp(u, &ex); /* u in [2^(ex-1), 2^ex) */
  int b = ex + 1; /* [0.5,1): ex = 0 -> bin 1 */
  return b >= PARITY_ULP_BINS ? PARITY_ULP_BINS - 1 : b;
}

typedef struct {
  double max_abs, sum_d2, sum_r2, max_ulp, max_r;
  int64_t arg, zero_ref, nonfinite;
  int64_t hist[PARITY_ULP_BINS];
} partial;

static inline double ulp_of(gdn_dtype t, double x, double r) {
  return gdn_dtype_ulp_distance(t, x, r);
}

/* k-th smallest (0-based) ULP value, by 4 rounds of 16-bit radix selection on
 * the binary64 bits (monotone for non-negative doubles, +inf included).  Each
 * round counts in parallel, one histogram per thread (`hist`: nt x 65536),
 * summed after: integer counts, so the result is the same for any thread
 * count. */
static double select_ulp(parity_vals x, parity_vals r, size_t n, gdn_dtype t, size_t k,
                         int64_t *hist, int nt, size_t *ties_after) {
  uint64_t prefix = 0;
  for (int round = 0; round < 4; round++) {
    int shift = 48 - 16 * round;
    memset(hist, 0, (size_t)nt * 65536 * sizeof *hist);
    uint64_t mask_hi = round == 0 ? 0 : ~0ull << (shift + 16);
#pragma omp parallel num_threads(nt)
    {
      int64_t *h = hist + (size_t)omp_get_thread_num() * 65536;
#pragma omp for schedule(static)
      for (size_t i = 0; i < n; i++) {
        double u = ulp_of(t, AT(x, i), AT(r, i));
        uint64_t b;
        memcpy(&b, &u, sizeof b);
        if ((b & mask_hi) != prefix) continue;
        h[(b >> shift) & 0xffff]++;
      }
    }
    for (int j = 1; j < nt; j++)
      for (int i = 0; i < 65536; i++) hist[i] += hist[(size_t)j * 65536 + i];
    size_t acc = 0;
    int sel = 0;
    for (int j = 0; j < 65536; j++) {
      if (acc + (size_t)hist[j] > k) {
        sel = j;
        break;
      }
      acc += (size_t)hist[j];
    }
    k -= acc;
    prefix |= (uint64_t)sel << shift;
    *ties_after = (size_t)hist[sel] - k - 1; /* last round: equal values after the k-th */
  }
  double v;
  memcpy(&v, &prefix, sizeof v);
  return v;
}

/* The smallest ULP value above v (the (k+1)-th smallest when no tie
 * follows the k-th); a minimum is exact, so any order gives it. */
static double next_ulp_above(parity_vals x, parity_vals r, size_t n, gdn_dtype t, double v, int nt) {
  double best = INFINITY;
#pragma omp parallel for schedule(static) num_threads(nt) reduction(min : best)
  for (size_t i = 0; i < n; i++) {
    double u = ulp_of(t, AT(x, i), AT(r, i));
    if (u > v && u < best) best = u;
  }
  return best;
}

/* max_i |x_i - r_i| / max(|r_i|, floor) over the elements that differ
 * (non-finite x: infinite), and the first index attaining it (*at; 0 when
 * none differs).  Per-block maxima and their first indices, combined in
 * block order with the same strict comparison: the same value and index as
 * one pass from i = 0, for any thread count.  A block of `hi - lo` doubles
 * per entry: the partials cost n / 65536 pairs. */
static double max_rel_floor(parity_vals x, parity_vals r, size_t n, double floor, size_t *at) {
  size_t nb = (n + BLOCK - 1) / BLOCK;
  double bm[64];
  size_t ba[64];
  double mr = 0;
  *at = 0;
  /* Groups of 64 blocks keep the partials on the stack. */
  for (size_t g = 0; g < nb; g += 64) {
    size_t ng = nb - g < 64 ? nb - g : 64;
#pragma omp parallel for schedule(static) num_threads(gdn_threads_for((int64_t)ng))
    for (size_t j = 0; j < ng; j++) {
      size_t lo = (g + j) * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
      double m = 0;
      size_t a = 0;
      for (size_t i = lo; i < hi; i++) {
        double d = isfinite(AT(x, i)) ? fabs(AT(x, i) - AT(r, i)) : INFINITY;
        if (d == 0) continue;
        double den = fabs(AT(r, i)) > floor ? fabs(AT(r, i)) : floor;
        double q = den > 0 ? d / den : INFINITY;
        if (q > m) m = q, a = i; /* NaN q (NaN reference) skipped, as before */
      }
      bm[j] = m;
      ba[j] = a;
    }
    for (size_t j = 0; j < ng; j++)
      if (bm[j] > mr) mr = bm[j], *at = ba[j];
  }
  return mr;
}

static double row_norm(parity_vals a, parity_vals b, int64_t len) {
  double s = 0;
  const int has_b = parity_vals_has(b);
  for (int64_t i = 0; i < len; i++) {
    double ai = AT(a, i);
    double d = has_b ? (isfinite(ai) ? ai - AT(b, i) : INFINITY) : ai;
    s += d * d;
  }
  return sqrt(s);
}

double parity_row_rel_v(parity_vals x, parity_vals r, int64_t n_rows, int64_t len, int64_t *worst) {
  double ss = 0, w = 0;
  int64_t arg = -1;
  for (int64_t q = 0; q < n_rows; q++) {
    double n = row_norm(parity_vals_off(r, (size_t)(q * len)), NONE, len);
    ss += n * n;
  }
  const double fl = n_rows > 0 ? sqrt(ss / (double)n_rows) : 0; /* the RMS row norm */
  for (int64_t q = 0; q < n_rows; q++) {
    double d = row_norm(parity_vals_off(x, (size_t)(q * len)), parity_vals_off(r, (size_t)(q * len)), len);
    if (d == 0) continue;
    double n = row_norm(parity_vals_off(r, (size_t)(q * len)), NONE, len), den = n > fl ? n : fl;
    double v = den > 0 ? d / den : INFINITY;
    if (v > w || arg < 0) w = v, arg = q;
  }
  if (worst) *worst = arg;
  return w;
}

int parity_metrics_compute_v(parity_vals x, parity_vals r, const int64_t dims[4],
                           gdn_dtype t, parity_metrics *m, gdn_error *e) {
  memset(m, 0, sizeof *m);
  size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
  m->n = (int64_t)n;
  size_t nb = (n + BLOCK - 1) / BLOCK;
  partial *p = gdn_calloc(nb ? nb : 1, sizeof *p, "metric partial sums", e);
  if (!p) return e ? e->code : GDN_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic) num_threads(gdn_threads_for((int64_t)nb))
  for (size_t bi = 0; bi < nb; bi++) {
    partial *q = &p[bi];
    q->arg = -1;
    size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    for (size_t i = lo; i < hi; i++) {
      double xi = AT(x, i), ri = AT(r, i);
      if (!isfinite(xi)) q->nonfinite++;
      if (ri == 0.0) q->zero_ref++;
      double ar = fabs(ri);
      if (ar > q->max_r) q->max_r = ar;
      double d = isfinite(xi) ? fabs(xi - ri) : INFINITY;
      if (q->arg < 0 || d > q->max_abs) {
        q->max_abs = d;
        q->arg = (int64_t)i;
      }
      q->sum_d2 += d * d;
      q->sum_r2 += ri * ri;
      double u = ulp_of(t, xi, ri);
      if (u > q->max_ulp) q->max_ulp = u;
      q->hist[ulp_bin(u)]++;
    }
  }
  double sd2 = 0, sr2 = 0;
  int64_t arg = -1;
  for (size_t bi = 0; bi < nb; bi++) {
    partial *q = &p[bi];
    sd2 += q->sum_d2;
    sr2 += q->sum_r2;
    if (arg < 0 || q->max_abs > m->max_abs) m->max_abs = q->max_abs, arg = q->arg;
    if (q->max_ulp > m->max_ulp) m->max_ulp = q->max_ulp;
    if (q->max_r > m->ref_max_abs) m->ref_max_abs = q->max_r;
    m->zero_ref += q->zero_ref;
    m->nonfinite += q->nonfinite;
    for (int j = 0; j < PARITY_ULP_BINS; j++) m->ulp_hist[j] += q->hist[j];
  }
  gdn_free(p);
  m->ref_fro = sqrt(sr2);
  if (sd2 == 0) m->rel_fro = 0;
  else m->rel_fro = sr2 > 0 ? sqrt(sd2) / sqrt(sr2) : INFINITY;
  if (m->nonfinite) m->rel_fro = m->max_abs = m->max_ulp = INFINITY;
  /* Componentwise relative error with the floor (needs max |r| first). */
  m->rel_floor = gdn_dtype_unit_roundoff(t) * m->ref_max_abs;
  size_t rarg = 0;
  double mr = max_rel_floor(x, r, n, m->rel_floor, &rarg);
  m->max_rel = mr;
  for (int64_t d = 3, rem = (int64_t)rarg; d >= 0 && n; d--) {
    m->rel_at[d] = rem % dims[d];
    rem /= dims[d];
  }
  if (dims[3] > 0) m->row_rel = parity_row_rel_v(x, r, (int64_t)n / dims[3], dims[3], &m->row_worst);
  if (arg >= 0) {
    int64_t rem = arg;
    for (int d = 3; d >= 0; d--) {
      m->worst[d] = rem % dims[d];
      rem /= dims[d];
    }
    m->worst_x = AT(x, arg);
    m->worst_ref = AT(r, arg);
  }
  if (n) {
    const int nt = gdn_threads_for((int64_t)((n + BLOCK - 1) / BLOCK));
    int64_t *hist = gdn_malloc((size_t)nt * 65536 * sizeof *hist, "median histogram", e);
    if (!hist) return e ? e->code : GDN_ERR_NOMEM;
    size_t ties;
    double lo = select_ulp(x, r, n, t, (n - 1) / 2, hist, nt, &ties);
    /* Even n: the next order statistic is lo again when a tie follows it,
     * else the least value above lo (one pass, not four). */
    double hi = (n % 2) || ties ? lo : next_ulp_above(x, r, n, t, lo, nt);
    m->median_ulp = (n % 2) ? lo : 0.5 * (lo + hi);
    gdn_free(hist);
  }
  return GDN_OK;
}

void parity_profile_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block,
                      double *out) {
  int64_t B = dims[0], T = dims[1], row = dims[2] * dims[3];
  int64_t nblk = (T + block - 1) / block;
  const int has_r = parity_vals_has(r);
  for (int64_t k = 0; k < nblk; k++) out[k] = 0;
#pragma omp parallel for schedule(static) num_threads(gdn_threads_for(nblk))
  for (int64_t k = 0; k < nblk; k++) {
    double mx = 0;
    for (int64_t b = 0; b < B; b++)
      for (int64_t t = k * block; t < (k + 1) * block && t < T; t++) {
        const size_t at = (size_t)((b * T + t) * row);
        for (int64_t i = 0; i < row; i++) {
          double xi = AT(x, at + (size_t)i);
          double d = has_r ? (isfinite(xi) ? fabs(xi - AT(r, at + (size_t)i)) : INFINITY) : fabs(xi);
          if (d > mx) mx = d;
        }
      }
    out[k] = mx;
  }
}

double parity_allclose_ratio_v(parity_vals x, parity_vals r, size_t n, double rtol, double atol) {
  /* A maximum is exact: per-block maxima in any order give the same value. */
  size_t nb = (n + BLOCK - 1) / BLOCK;
  double worst = 0;
#pragma omp parallel for schedule(static) num_threads(gdn_threads_for((int64_t)nb)) reduction(max : worst)
  for (size_t bi = 0; bi < nb; bi++) {
    size_t lo = bi * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    double w = 0;
    for (size_t i = lo; i < hi; i++) {
      double d = isfinite(AT(x, i)) ? fabs(AT(x, i) - AT(r, i)) : INFINITY;
      double q = d / (atol + rtol * fabs(AT(r, i)));
      if (q > w) w = q;
    }
    if (w > worst) worst = w;
  }
  return worst;
}

double parity_max_abs_rows_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t t0, int64_t t1) {
  double m = 0;
  for (int64_t b = 0; b < dims[0]; b++)
    for (int64_t t = t0; t < t1; t++) {
      size_t base = (size_t)((b * dims[1] + t) * dims[2] * dims[3]);
      for (int64_t i = 0; i < dims[2] * dims[3]; i++) {
        double d = fabs(AT(x, base + i) - AT(r, base + i));
        if (!(d <= m)) m = isnan(d) ? INFINITY : d;
      }
    }
  return m;
}

void parity_rel_acc_add(parity_rel_acc *acc, const double *a, const double *b, size_t len) {
  for (size_t i = 0; i < len; i++) {
    double df = a[i] - b[i];
    acc->dd += df * df;
    acc->nn += b[i] * b[i];
  }
}

double parity_rel_acc_value(const parity_rel_acc *acc) {
  return acc->nn > 0 ? sqrt(acc->dd / acc->nn) : (acc->dd > 0 ? INFINITY : 0);
}

/* elem_rel: each element against max(|r|, the RMS of r over its block,
 * rel_floor); rms[k] holds the block RMS.  Same loop order as block_sums. */
static void elem_rel(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4],
                     const int64_t nbk[4], const double *rms, parity_metrics *m) {
  int64_t i = 0, arg = -1;
  double best = 0;
  for (int64_t a = 0; a < dims[0]; a++)
    for (int64_t b = 0; b < dims[1]; b++)
      for (int64_t c = 0; c < dims[2]; c++) {
        int64_t k3 = ((a / bl[0]) * nbk[1] + b / bl[1]) * nbk[2] + c / bl[2];
        for (int64_t d = 0; d < dims[3]; d++, i++) {
          double df = isfinite(AT(x, i)) ? fabs(AT(x, i) - AT(r, i)) : INFINITY;
          if (df == 0) continue;
          double den = fmax(fabs(AT(r, i)), fmax(rms[k3 * nbk[3] + d / bl[3]], m->rel_floor));
          double q = den > 0 ? df / den : INFINITY;
          if (q > best || arg < 0) best = q, arg = i;
        }
      }
  m->elem_rel = best;
  for (int64_t d = 3, rem = arg; d >= 0 && arg >= 0; d--) {
    m->elem_at[d] = rem % dims[d];
    rem /= dims[d];
  }
}

/* Sums of (x - r)^2 and r^2 per block; a non-finite x marks its block. */
static void block_sums(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t bl[4],
                       const int64_t nbk[4], double *d2, double *r2, unsigned char *bad) {
  int64_t i = 0;
  for (int64_t a = 0; a < dims[0]; a++)
    for (int64_t b = 0; b < dims[1]; b++)
      for (int64_t c = 0; c < dims[2]; c++) {
        int64_t k3 = ((a / bl[0]) * nbk[1] + b / bl[1]) * nbk[2] + c / bl[2];
        for (int64_t d = 0; d < dims[3]; d++, i++) {
          int64_t k = k3 * nbk[3] + d / bl[3];
          if (!isfinite(AT(x, i))) bad[k] = 1;
          double df = AT(x, i) - AT(r, i);
          d2[k] += df * df;
          r2[k] += AT(r, i) * AT(r, i);
        }
      }
}

int parity_metrics_blocks_v(parity_vals x, parity_vals r, const int64_t dims[4], const int64_t block_len[4],
                          parity_metrics *m, gdn_error *e) {
  int64_t bl[4], nbk[4], nb = 1;
  for (int a = 0; a < 4; a++) {
    bl[a] = block_len[a] < 1 ? 1 : block_len[a] > dims[a] ? dims[a] : block_len[a];
    if (bl[a] < 1) bl[a] = 1;
    nbk[a] = (dims[a] + bl[a] - 1) / bl[a];
    nb *= nbk[a];
  }
  m->block_rel = m->elem_rel = 0;
  memset(m->elem_at, 0, sizeof m->elem_at);
  m->n_blocks = nb;
  memcpy(m->block_len, bl, sizeof bl);
  if (nb == 0 || m->n == 0) return GDN_OK;
  double *d2 = gdn_calloc((size_t)nb * 2, sizeof *d2, "block sums", e);
  unsigned char *bad = gdn_calloc((size_t)nb, 1, "block flags", e);
  if (!d2 || !bad) {
    gdn_free(d2);
    gdn_free(bad);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  double *r2 = d2 + nb;
  block_sums(x, r, dims, bl, nbk, d2, r2, bad);
  int64_t worst = 0;
  for (int64_t k = 0; k < nb; k++) {
    /* the block's element count (the last block on an axis may be short) */
    int64_t rem = k, cnt = 1;
    for (int a = 3; a >= 0; a--) {
      int64_t j = rem % nbk[a], lo = j * bl[a], hi = lo + bl[a] < dims[a] ? lo + bl[a] : dims[a];
      cnt *= hi - lo;
      rem /= nbk[a];
    }
    double fl = sqrt((double)cnt) * m->rel_floor, nr = sqrt(r2[k]);
    double den = nr > fl ? nr : fl;
    double q = bad[k] ? INFINITY : d2[k] == 0 ? 0 : den > 0 ? sqrt(d2[k]) / den : INFINITY;
    if (q > m->block_rel) m->block_rel = q, worst = k;
    r2[k] = sqrt(r2[k] / (double)cnt); /* now the block's RMS, for elem_rel */
  }
  elem_rel(x, r, dims, bl, nbk, r2, m);
  int64_t rem = worst;
  for (int a = 3; a >= 0; a--) {
    int64_t j = rem % nbk[a];
    rem /= nbk[a];
    m->block_lo[a] = j * bl[a];
    m->block_hi[a] = m->block_lo[a] + bl[a] < dims[a] ? m->block_lo[a] + bl[a] : dims[a];
  }
  gdn_free(d2);
  gdn_free(bad);
  return GDN_OK;
}

int parity_block_map_o_v(parity_vals x, parity_vals r, const int64_t dims[4], int64_t block, double rel_floor,
                       int64_t per_bin, double *out, gdn_error *e) {
  const int64_t B = dims[0], T = dims[1], H = dims[2], D = dims[3];
  const int64_t nblk = (T + block - 1) / block, bins = (nblk + per_bin - 1) / per_bin;
  for (int64_t i = 0; i < H * bins; i++) out[i] = 0;
  double *acc = gdn_calloc((size_t)(2 * H), sizeof *acc, "block map sums", e);
  if (!acc) return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t b = 0; b < B; b++)
    for (int64_t k = 0; k < nblk; k++) {
      int64_t t0 = k * block, t1 = t0 + block < T ? t0 + block : T;
      memset(acc, 0, (size_t)(2 * H) * sizeof *acc);
      for (int64_t t = t0; t < t1; t++)
        for (int64_t h = 0; h < H; h++) {
          const size_t at = (size_t)(((b * T + t) * H + h) * D);
          for (int64_t d = 0; d < D; d++) {
            double xd = AT(x, at + (size_t)d), rd = AT(r, at + (size_t)d);
            double df = isfinite(xd) ? xd - rd : INFINITY;
            acc[2 * h] += df * df;
            acc[2 * h + 1] += rd * rd;
          }
        }
      double fl = sqrt((double)((t1 - t0) * D)) * rel_floor;
      for (int64_t h = 0; h < H; h++) {
        double nr = sqrt(acc[2 * h + 1]), den = nr > fl ? nr : fl;
        double q = acc[2 * h] == 0 ? 0 : den > 0 ? sqrt(acc[2 * h]) / den : INFINITY;
        if (isnan(q)) q = INFINITY;
        double *o = &out[h * bins + k / per_bin];
        if (q > *o) *o = q;
      }
    }
  gdn_free(acc);
  return GDN_OK;
}

/* The same metrics of values held as binary64 (tests, fixtures' outputs). */
#define V64(p) parity_vals_f64(p)
double parity_row_rel(const double *x, const double *r, int64_t n_rows, int64_t len, int64_t *worst) {
  return parity_row_rel_v(V64(x), V64(r), n_rows, len, worst);
}
int parity_metrics_compute(const double *x, const double *r, const int64_t dims[4], gdn_dtype t,
                           parity_metrics *m, gdn_error *e) {
  return parity_metrics_compute_v(V64(x), V64(r), dims, t, m, e);
}
int parity_metrics_blocks(const double *x, const double *r, const int64_t dims[4], const int64_t block_len[4],
                          parity_metrics *m, gdn_error *e) {
  return parity_metrics_blocks_v(V64(x), V64(r), dims, block_len, m, e);
}
int parity_block_map_o(const double *x, const double *r, const int64_t dims[4], int64_t block, double rel_floor,
                       int64_t per_bin, double *out, gdn_error *e) {
  return parity_block_map_o_v(V64(x), V64(r), dims, block, rel_floor, per_bin, out, e);
}
void parity_profile_o(const double *x, const double *r, const int64_t dims[4], int64_t block, double *out) {
  parity_profile_o_v(V64(x), V64(r), dims, block, out);
}
double parity_max_abs_rows(const double *x, const double *r, const int64_t dims[4], int64_t t0, int64_t t1) {
  return parity_max_abs_rows_v(V64(x), V64(r), dims, t0, t1);
}
double parity_allclose_ratio(const double *x, const double *r, size_t n, double rtol, double atol) {
  return parity_allclose_ratio_v(V64(x), V64(r), n, rtol, atol);
}
