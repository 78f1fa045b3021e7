/* bench_oracle: every figure of the oracle, each with its peer and ratio.
 *
 *   bench_oracle [--json FILE] [--reps N] [--T N] [--D N] [--H N] [--prec P]
 *                [--dd-T N] [--proj-T N] [--long T] [--no-peer] [--peer-shape S]
 *                [--python PATH]
 *
 * Sections (all in the JSON too):
 *  1. MPFR token form vs the bare MPFR mul+add floor (below), 1 and all
 *     threads, wall and CPU time, and the certified run.
 *  2. dd tier (oracle_run_dd) vs a bare double-word mul+add floor (the kv
 *     loop alone: DWTimesDW3 + AccurateDWPlusDW over the same vectorised
 *     column layout) and vs the MPFR token form per MAC; the cost of the
 *     sampled certificate; 1 and all threads (shape 1,dd-T,H,D).
 *  3. The long context: the dd tier (with its sample) on 1,proj-T,1,D at
 *     all threads, projected linearly to T = 1,048,576 (time is linear in
 *     T: the state is streamed), next to the certified MPFR tier projected
 *     from its measured ns/MAC; with --long T the dd tier is run at T.
 *  4. Peer: bench/peer_mpmath.py (mpmath at the same precision on the same
 *     inputs, via bench_oracle_peer), unless --no-peer.
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
#include <unistd.h>

#include <jansson.h>

#include "gdn_rng.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "oracle.h"
#include "oracle_dd_arith.h"

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

/* Which oracle one timed run calls: the dd tier when dd is set, else the
 * MPFR tier (oracle_run_certified when certified). */
typedef struct {
  const oracle_config *mp;
  int certified;
  oracle_certificate *cert;
  const oracle_dd_config *dd;
  oracle_dd_certificate *dd_cert; /* NULL: a scratch one */
} timed_call;

/* One timed run of either tier: wall seconds, *cpu CPU seconds; a failure
 * ends the benchmark with its exit status (the figures would mean nothing). */
static double time_call(const gdn_inputs *in, const timed_call *tc, int threads, double *cpu) {
  gdn_threads_set(threads);
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs out;
  gdn_outputs_init(&out);
  oracle_dd_certificate c;
  double c0 = cpu_s(), t0 = now_s();
  int rc = tc->dd          ? oracle_run_dd(in, tc->dd, &out, tc->dd_cert ? tc->dd_cert : &c, &e)
           : tc->certified ? oracle_run_certified(in, tc->mp, &out, tc->cert, &e)
                           : oracle_run(in, tc->mp, &out, &e);
  double dt = now_s() - t0;
  if (cpu) *cpu = cpu_s() - c0;
  gdn_outputs_clear(&out);
  if (rc) {
    fprintf(stderr, "bench_oracle: %s\n", e.msg);
    exit(gdn_error_exit_status(rc));
  }
  return dt;
}

/* One run of oracle_run (or _certified): wall seconds, *cpu CPU seconds. */
static double time_oracle(const gdn_inputs *in, const oracle_config *cfg, int threads, int certified,
                          oracle_certificate *cert, double *cpu) {
  const timed_call tc = {cfg, certified, cert, NULL, NULL};
  return time_call(in, &tc, threads, cpu);
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

/* --- the double-word floor ------------------------------------------------- */

/* A bare double-word multiply-accumulate, laid out as the dd tier's state:
 * rows of nb columns, acc[c] += x[i][c] * y[i] (DWTimesDW3 then
 * AccurateDWPlusDW) for i = 0 .. Dk-1, vectorised across c. */
typedef struct dd_floor {
  int64_t Dk, nb;
  double *xh, *xl, *yh, *yl, *ah, *al;
  long passes;
} dd_floor;

static void dd_floor_pass(dd_floor *f) {
  const int64_t nb = f->nb;
  double *restrict ah = f->ah, *restrict al = f->al;
  for (int64_t i = 0; i < f->Dk; i++) {
    const orc_dd y = {f->yh[i], f->yl[i]};
    const double *restrict rh = f->xh + i * nb, *restrict rl = f->xl + i * nb;
#pragma omp simd
    for (int64_t c = 0; c < nb; c++) {
      orc_dd a = orc_dd_add((orc_dd){ah[c], al[c]}, orc_dd_mul((orc_dd){rh[c], rl[c]}, y));
      ah[c] = a.hi, al[c] = a.lo;
    }
  }
}

static double dd_floor_measure(dd_floor *f, double *cpu_ns) {
  double c0 = cpu_s(), t0 = now_s();
  for (long r = 0; r < f->passes; r++) dd_floor_pass(f);
  double t1 = now_s(), c1 = cpu_s(), per = 1e9 / ((double)f->passes * (double)(f->Dk * f->nb));
  if (cpu_ns) *cpu_ns = (c1 - c0) * per;
  return (t1 - t0) * per;
}

static void dd_floor_init(dd_floor *f, int64_t Dk, int64_t nb) {
  f->Dk = Dk, f->nb = nb;
  size_t n = (size_t)(Dk * nb);
  /* One zeroed block carved in order, as the dd tier's own workspace is
   * (orc_ddw_alloc), so one free releases it. */
  f->xh = calloc(2 * n + 2 * (size_t)Dk + 2 * (size_t)nb, sizeof(double));
  if (!f->xh) die_nomem();
  f->xl = f->xh + n;
  f->yh = f->xl + n;
  f->yl = f->yh + Dk;
  f->ah = f->yl + Dk;
  f->al = f->ah + nb;
  for (size_t i = 0; i < n; i++) {
    orc_dd x = orc_dd_two_prod(gdn_rng_normal(3, 1, i), 1.0 / 3.0);
    f->xh[i] = x.hi, f->xl[i] = x.lo;
  }
  for (int64_t i = 0; i < Dk; i++) {
    /* |y| < 1 keeps the accumulators bounded over many passes */
    orc_dd y = orc_dd_two_prod(0.5 * gdn_rng_uniform(3, 2, (uint64_t)i), 1.0 / 7.0);
    f->yh[i] = y.hi, f->yl[i] = (i % 2 ? -1 : 1) * y.lo;
  }
  for (f->passes = 16;; f->passes *= 2) {
    double t0 = now_s();
    dd_floor_measure(f, NULL);
    if (now_s() - t0 > 0.2) break;
  }
}

static void dd_floor_clear(dd_floor *f) { free(f->xh); }

/* One dd run: wall seconds; *cpu CPU seconds; *cert its certificate. */
static double time_dd(const gdn_inputs *in, const oracle_dd_config *cfg, int threads,
                      oracle_dd_certificate *cert, double *cpu) {
  const timed_call tc = {NULL, 0, NULL, cfg, cert};
  return time_call(in, &tc, threads, cpu);
}

static void synth_or_die(gdn_inputs *in, const gdn_shape *s, unsigned flags) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts so = {1, flags, 0};
  if (gdn_synth_generate(in, s, &so, &e)) {
    fprintf(stderr, "bench_oracle: %s\n", e.msg);
    exit(gdn_error_exit_status(e.code));
  }
}

/* The load of the machine while we ran (other engineers share it). */
static double loadavg1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

#define SET(obj, key, val) json_object_set_new((obj), (key), (val))

int main(int argc, char **argv) {
  const char *json = NULL, *peer_shape = "1,24,1,64", *python = "/usr/bin/python3";
  int reps = 3, peer = 1;
  long T = 512, D = 128, H = 2, prec = 128, ddT = 2048, projT = 8192, longT = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--no-peer")) {
      peer = 0;
      continue;
    }
    int takes = !strcmp(a, "--json") || !strcmp(a, "--reps") || !strcmp(a, "--T") ||
                !strcmp(a, "--D") || !strcmp(a, "--H") || !strcmp(a, "--prec") ||
                !strcmp(a, "--dd-T") || !strcmp(a, "--proj-T") || !strcmp(a, "--long") ||
                !strcmp(a, "--peer-shape") || !strcmp(a, "--python");
    if (!takes) {
      fprintf(stderr,
              "usage: bench_oracle [--json FILE] [--reps N] [--T N] [--D N] [--H N] [--prec P]\n"
              "                    [--dd-T N] [--proj-T N] [--long T] [--no-peer] [--peer-shape S]\n"
              "                    [--python PATH]\n");
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
    else if (!strcmp(a, "--dd-T")) ddT = parse_pos(a, v);
    else if (!strcmp(a, "--proj-T")) projT = parse_pos(a, v);
    else if (!strcmp(a, "--long")) longT = parse_pos(a, v);
    else if (!strcmp(a, "--peer-shape")) peer_shape = v;
    else if (!strcmp(a, "--python")) python = v;
    else prec = parse_pos(a, v);
  }
  if (reps > MAX_REPS) reps = MAX_REPS;
  if (prec < ORACLE_PREC_MIN || prec > ORACLE_PREC_MAX) {
    fprintf(stderr, "bench_oracle: --prec %ld: must be in [%d, %d]\n", prec, ORACLE_PREC_MIN,
            ORACLE_PREC_MAX);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress is visible when logged to a file */
  int nthreads = gdn_threads_get();
  double load0 = loadavg1();
  printf("bench_oracle: %d threads available (%d processors), MPFR %s, GMP %s, load average %.2f\n",
         nthreads, omp_get_num_procs(), mpfr_get_version(), gmp_version, load0);
  json_t *root = json_object(), *jm = json_object(), *jd = json_object(), *jl = json_object();

  /* 1. MPFR ----------------------------------------------------------------- */
  gdn_shape s = {1, T, H, H, D, D};
  gdn_inputs in;
  synth_or_die(&in, &s, GDN_SYNTH_H0);
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
  double tn = INFINITY, tn_cpu = INFINITY, tc = INFINITY, tc_cpu = INFINITY;
  oracle_certificate cert;
  for (int r = 0; r < reps; r++) {
    double c;
    double t = time_oracle(&in, &cfg, nthreads, 0, NULL, &c);
    if (t < tn) tn = t, tn_cpu = c;
  }
  for (int r = 0; r < (reps > 2 ? 2 : reps); r++) {
    double c;
    double t = time_oracle(&in, &cfg, nthreads, 1, &cert, &c);
    if (t < tc) tc = t, tc_cpu = c;
  }
  gdn_threads_set(nthreads);
  gdn_inputs_clear(&in);

  double ns1 = t1 * 1e9 / macs, nsn = tn * 1e9 / macs, ns1_cpu = c1 * 1e9 / macs;
  double nsn_cpu = tn_cpu * 1e9 / macs, nsc = tc * 1e9 / macs, nsc_cpu = tc_cpu * 1e9 / macs;
  double ideal = 1.0 + fl_mul / (3.0 * fl);
  double rmed = median(ratio, reps), rmed_cpu = median(ratio_cpu, reps);
  printf("\n1. MPFR token form, %s, p = %ld, %.3g MACs (3 per state element per token)\n", lab,
         prec, macs);
  printf("  floor (bare loop, %ld bits, arrays of %ld): %.2f ns per mul+add (fixed pairs: %.2f), "
         "%.2f ns per mul\n",
         prec, D, fl, fl_fix, fl_mul);
  printf("  1 thread : %8.3f s  %6.2f ns/MAC  ratio to floor %.2f (median of %d paired reps; "
         "ideal with the decay multiply %.2f)\n",
         t1, ns1, rmed, reps, ideal);
  printf("             CPU time: %.2f ns/MAC, floor %.2f, paired ratio %.2f; against fixed pairs "
         "%.2f\n",
         ns1_cpu, fl_cpu, rmed_cpu, ns1 / fl_fix);
  printf("  %d threads: %8.3f s  %6.2f ns/MAC (wall)  speed-up %.2f (efficiency %.0f %%); CPU "
         "time %.2f ns/MAC (%.2f x the 1-thread CPU time: scaling overhead)\n",
         nthreads, tn, nsn, t1 / tn, 100.0 * t1 / tn / nthreads, nsn_cpu, nsn_cpu / ns1_cpu);
  printf("  certified (P = %d, %d threads): %.3f s = %.2f x the plain run, %.2f ns/MAC wall, "
         "%.2f CPU; certified bits %d\n",
         cert.check_bits, nthreads, tc, tc / tn, nsc, nsc_cpu, cert.certified_bits);
  SET(jm, "shape", json_string(lab));
  SET(jm, "macs", json_real(macs));
  SET(jm, "floor_ns_per_muladd", json_real(fl));
  SET(jm, "floor_ns_per_muladd_fixed_pairs", json_real(fl_fix));
  SET(jm, "floor_ns_per_mul", json_real(fl_mul));
  SET(jm, "ideal_ratio", json_real(ideal));
  SET(jm, "token_1thread_s", json_real(t1));
  SET(jm, "token_1thread_ns_per_mac", json_real(ns1));
  SET(jm, "ratio_to_floor", json_real(rmed));
  SET(jm, "token_1thread_cpu_ns_per_mac", json_real(ns1_cpu));
  SET(jm, "floor_cpu_ns_per_muladd", json_real(fl_cpu));
  SET(jm, "ratio_to_floor_cpu", json_real(rmed_cpu));
  SET(jm, "token_nthreads_s", json_real(tn));
  SET(jm, "token_nthreads_ns_per_mac", json_real(nsn));
  SET(jm, "token_nthreads_cpu_ns_per_mac", json_real(nsn_cpu));
  SET(jm, "speedup", json_real(t1 / tn));
  SET(jm, "cpu_time_ratio_nthreads_over_1", json_real(nsn_cpu / ns1_cpu));
  SET(jm, "certified_s", json_real(tc));
  SET(jm, "certified_over_plain", json_real(tc / tn));
  SET(jm, "certified_ns_per_mac", json_real(nsc));
  SET(jm, "certified_cpu_ns_per_mac", json_real(nsc_cpu));
  SET(jm, "certified_bits", json_integer(cert.certified_bits));
  SET(jm, "check_prec", json_integer(cert.check_bits));

  /* 2. dd ------------------------------------------------------------------- */
  gdn_shape sd = {1, ddT, H, H, D, D};
  synth_or_die(&in, &sd, GDN_SYNTH_H0);
  char labd[160];
  gdn_shape_format(&sd, labd, sizeof labd);
  double macs_d = 3.0 * (double)(sd.B * sd.Hv * sd.T) * (double)(sd.Dk * sd.Dv);
  dd_floor df;
  dd_floor_init(&df, D, D < 64 ? D : 64);
  double dfl = INFINITY, dfl_cpu = INFINITY;
  oracle_dd_config dc;
  oracle_dd_config_init(&dc);
  dc.sample_prec = (mpfr_prec_t)prec;
  oracle_dd_config d0 = dc;
  d0.sample_columns = 0;
  double u1 = INFINITY, u1c = INFINITY, s1 = INFINITY, s1c = INFINITY, sn = INFINITY, snc = INFINITY;
  oracle_dd_certificate dcert;
  for (int r = 0; r < reps; r++) {
    double c, cf;
    dfl = fmin(dfl, dd_floor_measure(&df, &cf));
    dfl_cpu = fmin(dfl_cpu, cf);
    double t = time_dd(&in, &d0, 1, NULL, &c);
    if (t < u1) u1 = t, u1c = c;
    t = time_dd(&in, &dc, 1, &dcert, &c);
    if (t < s1) s1 = t, s1c = c;
    t = time_dd(&in, &dc, nthreads, NULL, &c);
    if (t < sn) sn = t, snc = c;
  }
  dd_floor_clear(&df);
  gdn_threads_set(nthreads);
  gdn_inputs_clear(&in);
  double du = u1 * 1e9 / macs_d, duc = u1c * 1e9 / macs_d, ds = s1 * 1e9 / macs_d;
  double dsc = s1c * 1e9 / macs_d, dn = sn * 1e9 / macs_d, dnc = snc * 1e9 / macs_d;
  /* Ideal against the floor: 3 mul+add and the decay multiply (a ninth of
   * a mul+add's 29 flops: 9) per state element: 1 + 9 / 87. */
  double dd_ideal = 1.0 + 9.0 / 87.0;
  printf("\n2. dd tier, %s, %.3g MACs; sample %lld columns per head at %ld bits\n", labd, macs_d,
         (long long)dc.sample_columns, prec);
  printf("  floor (bare double-word mul+add, %lld x %lld, vectorised): %.3f ns per mul+add (CPU %.3f)\n",
         (long long)df.Dk, (long long)df.nb, dfl, dfl_cpu);
  printf("  1 thread, no sample : %7.3f s  %6.3f ns/MAC (CPU %.3f)  ratio to floor %.2f (ideal %.2f)\n",
         u1, du, duc, du / dfl, dd_ideal);
  printf("  1 thread, sampled   : %7.3f s  %6.3f ns/MAC (CPU %.3f)  certificate +%.0f %%, "
         "certified %d bits (normwise %d) on %lld of %lld columns; guaranteed %d bits on all "
         "(%lld bound violations)\n",
         s1, ds, dsc, 100.0 * (s1 / u1 - 1.0), dcert.certified_bits, dcert.normwise_bits,
         (long long)dcert.sampled_columns, (long long)dcert.total_columns, dcert.guaranteed_bits,
         (long long)dcert.bound_violations);
  printf("  %d threads, sampled  : %7.3f s  %6.3f ns/MAC (CPU %.3f)  speed-up %.2f\n", nthreads, sn,
         dn, dnc, s1 / sn);
  printf("  against MPFR (1 thread, per MAC): %.1f x faster wall, %.1f x CPU (MPFR %.2f ns/MAC "
         "on %s)\n",
         ns1 / du, ns1_cpu / duc, ns1, lab);
  SET(jd, "shape", json_string(labd));
  SET(jd, "macs", json_real(macs_d));
  SET(jd, "sample_columns", json_integer(dc.sample_columns));
  SET(jd, "floor_ns_per_muladd", json_real(dfl));
  SET(jd, "floor_cpu_ns_per_muladd", json_real(dfl_cpu));
  SET(jd, "ideal_ratio", json_real(dd_ideal));
  SET(jd, "unsampled_1thread_s", json_real(u1));
  SET(jd, "unsampled_1thread_ns_per_mac", json_real(du));
  SET(jd, "unsampled_1thread_cpu_ns_per_mac", json_real(duc));
  SET(jd, "ratio_to_floor", json_real(du / dfl));
  SET(jd, "sampled_1thread_s", json_real(s1));
  SET(jd, "sampled_1thread_ns_per_mac", json_real(ds));
  SET(jd, "sampled_1thread_cpu_ns_per_mac", json_real(dsc));
  SET(jd, "certificate_overhead", json_real(s1 / u1 - 1.0));
  SET(jd, "sampled_nthreads_s", json_real(sn));
  SET(jd, "sampled_nthreads_ns_per_mac", json_real(dn));
  SET(jd, "sampled_nthreads_cpu_ns_per_mac", json_real(dnc));
  SET(jd, "speedup", json_real(s1 / sn));
  SET(jd, "mpfr_over_dd_per_mac", json_real(ns1 / du));
  SET(jd, "mpfr_over_dd_per_mac_cpu", json_real(ns1_cpu / duc));
  SET(jd, "certified_bits", json_integer(dcert.certified_bits));
  SET(jd, "normwise_bits", json_integer(dcert.normwise_bits));
  SET(jd, "guaranteed_bits", json_integer(dcert.guaranteed_bits));
  SET(jd, "bound_violations", json_integer(dcert.bound_violations));

  /* 3. the long context ------------------------------------------------------ */
  const double Tlong = 1048576.0;
  gdn_shape sp = {1, projT, 1, 1, D, D};
  synth_or_die(&in, &sp, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES);
  double tp = INFINITY, tpc = INFINITY;
  oracle_dd_certificate pcert;
  for (int r = 0; r < (reps > 2 ? 2 : reps); r++) {
    double c;
    double t = time_dd(&in, &dc, nthreads, &pcert, &c);
    if (t < tp) tp = t, tpc = c;
  }
  gdn_inputs_clear(&in);
  double macs_long = 3.0 * Tlong * (double)(D * D);
  double proj = tp * Tlong / (double)projT, proj_cpu = tpc * Tlong / (double)projT;
  double proj_mpfr = nsc * 1e-9 * macs_long;
  printf("\n3. long context: shape 1,%ld,1,%ld (slow gates) measured at T = %ld, %d threads: %.3f s "
         "(%.1f us/token), certified %d bits, guaranteed %d\n",
         (long)Tlong, D, projT, nthreads, tp, tp * 1e6 / (double)projT, pcert.certified_bits,
         pcert.guaranteed_bits);
  printf("  projected dd tier at T = 1,048,576: %.0f s (%.1f min) wall, %.0f s CPU\n", proj,
         proj / 60, proj_cpu);
  printf("  projected certified MPFR tier     : %.0f s (%.1f h) wall at %.1f ns/MAC (%d threads)\n",
         proj_mpfr, proj_mpfr / 3600, nsc, nthreads);
  SET(jl, "shape", json_string("1,1048576,1,D"));
  SET(jl, "D", json_integer(D));
  SET(jl, "measured_T", json_integer(projT));
  SET(jl, "measured_s", json_real(tp));
  SET(jl, "measured_cpu_s", json_real(tpc));
  SET(jl, "us_per_token", json_real(tp * 1e6 / (double)projT));
  SET(jl, "projected_dd_s", json_real(proj));
  SET(jl, "projected_dd_cpu_s", json_real(proj_cpu));
  SET(jl, "projected_mpfr_certified_s", json_real(proj_mpfr));
  if (longT > 0) {
    gdn_shape sl = {1, longT, 1, 1, D, D};
    double g0 = now_s();
    synth_or_die(&in, &sl, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES);
    double gen = now_s() - g0, c;
    oracle_dd_certificate lc;
    double t = time_dd(&in, &dc, nthreads, &lc, &c);
    gdn_inputs_clear(&in);
    printf("  measured dd tier at T = %ld: %.1f s (%.2f min) wall, %.1f s CPU (inputs generated "
           "in %.1f s); certified %d bits (normwise %d), %lld of %lld columns sampled; "
           "guaranteed %d bits (normwise %d) on all, %lld bound violations\n",
           longT, t, t / 60, c, gen, lc.certified_bits, lc.normwise_bits,
           (long long)lc.sampled_columns, (long long)lc.total_columns, lc.guaranteed_bits,
           lc.guaranteed_normwise, (long long)lc.bound_violations);
    SET(jl, "long_T", json_integer(longT));
    SET(jl, "long_s", json_real(t));
    SET(jl, "long_cpu_s", json_real(c));
    SET(jl, "long_certified_bits", json_integer(lc.certified_bits));
    SET(jl, "long_normwise_bits", json_integer(lc.normwise_bits));
    SET(jl, "long_guaranteed_bits", json_integer(lc.guaranteed_bits));
    SET(jl, "long_guaranteed_normwise", json_integer(lc.guaranteed_normwise));
    SET(jl, "long_bound_violations", json_integer(lc.bound_violations));
  }

  /* 4. peer ----------------------------------------------------------------- */
  json_t *jp = NULL;
  if (peer) {
    char tmpl[] = "/tmp/bench_oracle_peer_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) {
      close(fd);
      char cmd[4096];
      snprintf(cmd, sizeof cmd, "%s %s/peer_mpmath.py --exe %s/bench_oracle_peer --shape %s --prec %ld --json %s",
               python, GDN_BENCH_SRC, GDN_BENCH_BUILD, peer_shape, prec, tmpl);
      printf("\n4. peer: %s\n", cmd);
      fflush(stdout);
      int st = system(cmd);
      if (st == 0) jp = json_load_file(tmpl, 0, NULL);
      else fprintf(stderr, "bench_oracle: the peer failed (status %d)\n", st);
      unlink(tmpl);
    }
    if (!jp) printf("  (no peer figures)\n");
  }

  double load1 = loadavg1();
  printf("\nload average %.2f at the start, %.2f at the end (other work on the machine slows "
         "the wall-clock figures; CPU times are less affected)\n",
         load0, load1);
  SET(root, "bench", json_string("oracle"));
  SET(root, "threads", json_integer(nthreads));
  SET(root, "processors", json_integer(omp_get_num_procs()));
  SET(root, "mpfr", json_string(mpfr_get_version()));
  SET(root, "prec", json_integer(prec));
  SET(root, "reps", json_integer(reps));
  SET(root, "mac_count", json_string("3 per state element per token"));
  SET(root, "loadavg_start", json_real(load0));
  SET(root, "loadavg_end", json_real(load1));
  SET(root, "mpfr_token", jm);
  SET(root, "dd", jd);
  SET(root, "long_context", jl);
  if (jp) SET(root, "peer_mpmath", jp);
  int rc = 0;
  if (json && json_dump_file(root, json, JSON_INDENT(2))) {
    fprintf(stderr, "bench_oracle: cannot write %s\n", json);
    rc = 3;
  }
  json_decref(root);
  return rc;
}
