/* bench_oracle: the MPFR oracle's speed against the bare MPFR floor.
 *
 *   bench_oracle [--json FILE] [--reps N] [--T N] [--D N] [--H N] [--prec P]
 *
 * Floor: a bare multiply-accumulate loop, mpfr_mul(t, x_i, y_j) then
 * mpfr_add(s, s, t), over two arrays of Dk numbers at the same precision,
 * made with mpfr_init2 in order as the oracle's workspaces are (so the cache
 * footprint of a pass is comparable).  Pass r pairs x_i with y_(i+r mod Dk):
 * the operands change from pass to pass as the oracle's state does.  With
 * the same pairs every pass (reported too, as "fixed pairs") the processor's
 * branch predictors learn MPFR's data-dependent branches for the whole pass
 * -- the loop runs up to twice as fast with a period of 1 to 4 passes and
 * slows down steadily as the period grows to 128 -- which no real
 * computation allows: that figure is a bound the oracle cannot approach,
 * not a floor.  A bare mpfr_mul loop (rotated the same way) gives the cost
 * of the decay multiply h *= a.
 *
 * MAC counting for the token form: per token and state element the oracle
 * does three multiply-add pairs (kv += h k, h += k delta, o += h q) and one
 * multiply (h *= a).  We count 3 MACs per state element per token, i.e.
 * 3 B Hv T Dk Dv in all; the decay multiply, the per-token preparation of q
 * and k, exp(g) and the conversions to binary64 are all counted as overhead,
 * not work, so ns/MAC is an upper bound on the cost of the MACs themselves.
 * The ideal ratio against the floor with this count is therefore
 * 1 + mul / (3 muladd) (about 1.2 at 128 bits), not 1.
 *
 * Timing (clock_gettime(CLOCK_MONOTONIC); CPU time alongside for one thread).
 * On a shared machine the speed of a core changes from second to second, so
 * the ratio is taken from paired measurements: each single-thread oracle
 * run is bracketed by a floor measurement before and after it, the ratio of
 * that rep is oracle / mean(before, after), and the median over --reps is
 * reported (with the best absolute figures).  Not run by meson test.
 */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdn_rng.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "oracle.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the process (meaningful for one thread): time spent
 * descheduled does not inflate it. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die_nomem(void) {
  fprintf(stderr, "bench_oracle: out of memory\n");
  exit(3);
}

/* The floor's operands and calibration. */
typedef struct floor_arrays {
  int64_t n;
  long passes; /* per measurement: whole rotations, >= ~0.2 s */
  mpfr_t *x, *y, s, t;
} floor_arrays;

enum { FLOOR_ROTATED, FLOOR_FIXED, FLOOR_MUL };

static void floor_pass(floor_arrays *f, int kind, int64_t r) {
  int64_t n = f->n, sh = kind == FLOOR_FIXED ? 0 : r % n;
  if (kind == FLOOR_MUL) {
    for (int64_t i = 0; i < n; i++)
      mpfr_mul(f->t, f->x[i], f->y[i + sh < n ? i + sh : i + sh - n], MPFR_RNDN);
    return;
  }
  mpfr_mul(f->s, f->x[0], f->y[sh], MPFR_RNDN);
  for (int64_t i = 1; i < n; i++) {
    mpfr_mul(f->t, f->x[i], f->y[i + sh < n ? i + sh : i + sh - n], MPFR_RNDN);
    mpfr_add(f->s, f->s, f->t, MPFR_RNDN);
  }
}

/* ns per operation of one measurement; *cpu_ns the same in CPU time. */
static double floor_measure(floor_arrays *f, int kind, double *cpu_ns) {
  double c0 = cpu_s(), t0 = now_s();
  for (long r = 0; r < f->passes; r++) floor_pass(f, kind, r);
  double t1 = now_s(), c1 = cpu_s(), per = 1e9 / ((double)f->passes * (double)f->n);
  if (cpu_ns) *cpu_ns = (c1 - c0) * per;
  return (t1 - t0) * per;
}

static void floor_init(floor_arrays *f, mpfr_prec_t p, int64_t n) {
  f->n = n;
  f->x = malloc(sizeof(mpfr_t) * (size_t)n);
  f->y = malloc(sizeof(mpfr_t) * (size_t)n);
  if (!f->x || !f->y) die_nomem();
  for (int64_t i = 0; i < n; i++) {
    mpfr_init2(f->x[i], p);
    mpfr_init2(f->y[i], p);
    /* Values like the oracle's: full-precision significands (a division
     * fills them), mixed signs and magnitudes. */
    mpfr_set_d(f->x[i], gdn_rng_normal(1, 1, (uint64_t)i), MPFR_RNDN);
    mpfr_div_ui(f->x[i], f->x[i], 3, MPFR_RNDN);
    mpfr_set_d(f->y[i], gdn_rng_normal(1, 2, (uint64_t)i), MPFR_RNDN);
    mpfr_div_ui(f->y[i], f->y[i], 7, MPFR_RNDN);
  }
  mpfr_init2(f->s, p);
  mpfr_init2(f->t, p);
  for (f->passes = n;; f->passes *= 2) {
    double t0 = now_s();
    floor_measure(f, FLOOR_ROTATED, NULL);
    if (now_s() - t0 > 0.2) break;
  }
}

static void floor_clear(floor_arrays *f) {
  for (int64_t i = 0; i < f->n; i++) {
    mpfr_clear(f->x[i]);
    mpfr_clear(f->y[i]);
  }
  mpfr_clear(f->s);
  mpfr_clear(f->t);
  free(f->x);
  free(f->y);
  mpfr_free_cache();
}

/* One run of oracle_run (or _certified): wall seconds, *cpu CPU seconds. */
static double time_oracle(const gdn_inputs *in, const oracle_config *cfg, int threads, int certified,
                          oracle_certificate *cert, double *cpu) {
  gdn_threads_set(threads);
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs out;
  gdn_outputs_init(&out);
  double c0 = cpu_s(), t0 = now_s();
  int rc = certified ? oracle_run_certified(in, cfg, &out, cert, &e) : oracle_run(in, cfg, &out, &e);
  double dt = now_s() - t0;
  if (cpu) *cpu = cpu_s() - c0;
  gdn_outputs_clear(&out);
  if (rc) {
    fprintf(stderr, "bench_oracle: %s\n", e.msg);
    exit(gdn_error_exit_status(rc));
  }
  return dt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long parse_pos(const char *opt, const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < 1) {
    fprintf(stderr, "bench_oracle: %s '%s': expected a positive integer\n", opt, s);
    exit(2);
  }
  return v;
}

enum { MAX_REPS = 64 };

int main(int argc, char **argv) {
  const char *json = NULL;
  int reps = 3;
  long T = 512, D = 128, H = 2, prec = 128;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int takes = !strcmp(a, "--json") || !strcmp(a, "--reps") || !strcmp(a, "--T") ||
                !strcmp(a, "--D") || !strcmp(a, "--H") || !strcmp(a, "--prec");
    if (!takes) {
      fprintf(stderr,
              "usage: bench_oracle [--json FILE] [--reps N] [--T N] [--D N] [--H N] [--prec P]\n");
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "bench_oracle: %s needs a value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    if (!strcmp(a, "--json")) json = v;
    else if (!strcmp(a, "--reps")) reps = (int)parse_pos(a, v);
    else if (!strcmp(a, "--T")) T = parse_pos(a, v);
    else if (!strcmp(a, "--D")) D = parse_pos(a, v);
    else if (!strcmp(a, "--H")) H = parse_pos(a, v);
    else prec = parse_pos(a, v);
  }
  if (reps > MAX_REPS) reps = MAX_REPS;
  if (prec < ORACLE_PREC_MIN || prec > ORACLE_PREC_MAX) {
    fprintf(stderr, "bench_oracle: --prec %ld: must be in [%d, %d]\n", prec, ORACLE_PREC_MIN,
            ORACLE_PREC_MAX);
    return 2;
  }
  int nthreads = gdn_threads_get();
  printf("bench_oracle: %d threads available (%d processors), MPFR %s, GMP %s\n", nthreads,
         omp_get_num_procs(), mpfr_get_version(), gmp_version);

  gdn_shape s = {1, T, H, H, D, D};
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_error e;
  gdn_error_init(&e);
  gdn_synth_opts so = {1, GDN_SYNTH_H0, 0};
  if (gdn_synth_generate(&in, &s, &so, &e)) {
    fprintf(stderr, "bench_oracle: %s\n", e.msg);
    return gdn_error_exit_status(e.code);
  }
  char lab[160];
  gdn_shape_format(&s, lab, sizeof lab);
  oracle_config cfg;
  oracle_config_init(&cfg);
  cfg.prec = (mpfr_prec_t)prec;
  double macs = 3.0 * (double)(s.B * s.Hv * s.T) * (double)(s.Dk * s.Dv);

  floor_arrays fa;
  floor_init(&fa, (mpfr_prec_t)prec, D);
  double fl_fix = INFINITY, fl_mul = INFINITY, fl = INFINITY, fl_cpu = INFINITY;
  double t1 = INFINITY, c1 = INFINITY, ratio[MAX_REPS], ratio_cpu[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    double cb, ca, c, t;
    double fb = floor_measure(&fa, FLOOR_ROTATED, &cb);
    t = time_oracle(&in, &cfg, 1, 0, NULL, &c);
    double fa_ = floor_measure(&fa, FLOOR_ROTATED, &ca);
    ratio[r] = (t * 1e9 / macs) / (0.5 * (fb + fa_));
    ratio_cpu[r] = (c * 1e9 / macs) / (0.5 * (cb + ca));
    fl = fmin(fl, fmin(fb, fa_));
    fl_cpu = fmin(fl_cpu, fmin(cb, ca));
    t1 = fmin(t1, t);
    c1 = fmin(c1, c);
    fl_fix = fmin(fl_fix, floor_measure(&fa, FLOOR_FIXED, NULL));
    fl_mul = fmin(fl_mul, floor_measure(&fa, FLOOR_MUL, NULL));
  }
  floor_clear(&fa);
  double tn = INFINITY, tc = INFINITY;
  oracle_certificate cert;
  for (int r = 0; r < reps; r++) tn = fmin(tn, time_oracle(&in, &cfg, nthreads, 0, NULL, NULL));
  for (int r = 0; r < (reps > 2 ? 2 : reps); r++)
    tc = fmin(tc, time_oracle(&in, &cfg, nthreads, 1, &cert, NULL));
  gdn_threads_set(nthreads);

  double ns1 = t1 * 1e9 / macs, nsn = tn * 1e9 / macs, ns1_cpu = c1 * 1e9 / macs;
  double ideal = 1.0 + fl_mul / (3.0 * fl);
  double rmed = median(ratio, reps), rmed_cpu = median(ratio_cpu, reps);
  printf("floor  (bare loop, %ld bits, arrays of %ld): %.2f ns per mul+add (fixed pairs: %.2f), "
         "%.2f ns per mul\n",
         prec, D, fl, fl_fix, fl_mul);
  printf("oracle token form, %s, p = %ld, %.3g MACs (3 per state element per token):\n", lab, prec,
         macs);
  printf("  1 thread : %8.3f s  %6.2f ns/MAC  ratio to floor %.2f (median of %d paired reps; "
         "ideal with the decay multiply %.2f)\n",
         t1, ns1, rmed, reps, ideal);
  printf("             CPU time: %.2f ns/MAC, floor %.2f, paired ratio %.2f; against fixed pairs "
         "%.2f\n",
         ns1_cpu, fl_cpu, rmed_cpu, ns1 / fl_fix);
  printf("  %d threads: %8.3f s  %6.2f ns/MAC (wall)  speed-up %.2f (efficiency %.0f %%)\n",
         nthreads, tn, nsn, t1 / tn, 100.0 * t1 / tn / nthreads);
  printf("  certified (P = %d, %d threads): %.3f s = %.2f x the plain run; certified bits %d\n",
         cert.check_bits, nthreads, tc, tc / tn, cert.certified_bits);

  int rc = 0;
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      fprintf(stderr, "bench_oracle: cannot write %s\n", json);
      rc = 3;
    } else {
      fprintf(f,
              "{\n  \"bench\": \"oracle\",\n  \"threads\": %d,\n  \"processors\": %d,\n"
              "  \"mpfr\": \"%s\",\n  \"prec\": %ld,\n  \"shape\": \"%s\",\n  \"reps\": %d,\n"
              "  \"macs\": %.0f,\n  \"mac_count\": \"3 per state element per token\",\n"
              "  \"floor_ns_per_muladd\": %.4f,\n  \"floor_ns_per_muladd_fixed_pairs\": %.4f,\n"
              "  \"floor_ns_per_mul\": %.4f,\n  \"ideal_ratio\": %.4f,\n"
              "  \"token_1thread_s\": %.6f,\n  \"token_1thread_ns_per_mac\": %.4f,\n"
              "  \"ratio_to_floor\": %.4f,\n  \"token_1thread_cpu_ns_per_mac\": %.4f,\n"
              "  \"floor_cpu_ns_per_muladd\": %.4f,\n  \"ratio_to_floor_cpu\": %.4f,\n"
              "  \"token_nthreads_s\": %.6f,\n  \"token_nthreads_ns_per_mac\": %.4f,\n"
              "  \"speedup\": %.4f,\n  \"certified_s\": %.6f,\n  \"certified_over_plain\": %.4f,\n"
              "  \"certified_bits\": %d,\n  \"check_prec\": %d\n}\n",
              nthreads, omp_get_num_procs(), mpfr_get_version(), prec, lab, reps, macs, fl, fl_fix,
              fl_mul, ideal, t1, ns1, rmed, ns1_cpu, fl_cpu, rmed_cpu, tn, nsn, t1 / tn, tc,
              tc / tn, cert.certified_bits, cert.check_bits);
      if (fclose(f)) {
        fprintf(stderr, "bench_oracle: error writing %s\n", json);
        rc = 3;
      }
    }
  }
  gdn_inputs_clear(&in);
  return rc;
}
