/* bench_oracle_peer: our side of the mpmath comparison (bench/peer_mpmath.py).
 *
 *   bench_oracle_peer --out FILE [--shape B,T,H,D] [--prec P] [--reps N] [--seed S]
 *
 * Synthetic inputs (gdn_synth, with h0, q and k L2-normalised in the
 * kernel), the MPFR token form at P bits (default 128) and the dd tier,
 * each on one thread, best wall time of N runs (CPU time alongside); FILE
 * (JSON) gets the timings, the inputs and both outputs as hexadecimal
 * floats (exact), so the peer can compute the same recurrence on the same
 * numbers and compare.  Not run by meson test.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdn_shape.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "oracle.h"

static double now_s(int cpu) {
  struct timespec ts;
  clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static json_t *hex_array(const double *x, size_t n) {
  json_t *a = json_array();
  char buf[40];
  for (size_t i = 0; a && i < n; i++) {
    snprintf(buf, sizeof buf, "%a", x[i]);
    json_array_append_new(a, json_string(buf));
  }
  return a;
}

static json_t *hex_array_f(const float *x, size_t n) {
  json_t *a = json_array();
  char buf[40];
  for (size_t i = 0; a && i < n; i++) {
    snprintf(buf, sizeof buf, "%a", (double)x[i]);
    json_array_append_new(a, json_string(buf));
  }
  return a;
}

static void die(const char *what, const gdn_error *e) {
  fprintf(stderr, "bench_oracle_peer: %s: %s\n", what, e ? e->msg : "failed");
  exit(3);
}

int main(int argc, char **argv) {
  const char *out = NULL, *shape = "1,24,1,64";
  long prec = 128, reps = 3, seed = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) {
      fprintf(stderr, "usage: bench_oracle_peer --out FILE [--shape B,T,H,D] [--prec P] [--reps N] [--seed S]\n");
      return 2;
    }
    const char *a = argv[i], *v = argv[++i];
    if (!strcmp(a, "--out")) out = v;
    else if (!strcmp(a, "--shape")) shape = v;
    else if (!strcmp(a, "--prec")) prec = atol(v);
    else if (!strcmp(a, "--reps")) reps = atol(v);
    else if (!strcmp(a, "--seed")) seed = atol(v);
    else {
      fprintf(stderr, "bench_oracle_peer: unknown option %s\n", a);
      return 2;
    }
  }
  if (!out || prec < ORACLE_PREC_MIN || prec > ORACLE_PREC_MAX || reps < 1) {
    fprintf(stderr, "bench_oracle_peer: --out FILE is required; --prec in [%d, %d], --reps >= 1\n",
            ORACLE_PREC_MIN, ORACLE_PREC_MAX);
    return 2;
  }
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s;
  if (gdn_shape_parse(&s, shape, "--shape", &e)) die("shape", &e);
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts so = {(uint64_t)seed, GDN_SYNTH_H0, 0};
  if (gdn_synth_generate(&in, &s, &so, &e)) die("inputs", &e);
  gdn_threads_set(1);

  oracle_config mc;
  oracle_config_init(&mc);
  mc.prec = prec;
  oracle_dd_config dc;
  oracle_dd_config_init(&dc);
  dc.sample_prec = prec;
  gdn_outputs mo, dd;
  gdn_outputs_init(&mo);
  gdn_outputs_init(&dd);
  oracle_dd_certificate cert;
  double tm = INFINITY, cm = INFINITY, td = INFINITY, cd = INFINITY;
  for (long r = 0; r < reps; r++) {
    double c0 = now_s(1), t0 = now_s(0);
    if (oracle_run(&in, &mc, &mo, &e)) die("oracle_run", &e);
    double t1 = now_s(0), c1 = now_s(1);
    if (oracle_run_dd(&in, &dc, &dd, &cert, &e)) die("oracle_run_dd", &e);
    double t2 = now_s(0), c2 = now_s(1);
    tm = fmin(tm, t1 - t0), cm = fmin(cm, c1 - c0);
    td = fmin(td, t2 - t1), cd = fmin(cd, c2 - c1);
  }
  double macs = 3.0 * (double)(s.B * s.Hv * s.T) * (double)(s.Dk * s.Dv);
  json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:b, s:f, s:f, s:f, s:f, s:f, s:i}",
                        "shape", shape, "B", (json_int_t)s.B, "T", (json_int_t)s.T,
                        "Hk", (json_int_t)s.Hk, "Hv", (json_int_t)s.Hv, "Dk", (json_int_t)s.Dk,
                        "Dv", (json_int_t)s.Dv, "prec", (int)prec, "l2norm", in.l2norm_in_kernel != 0,
                        "macs", macs, "mpfr_s", tm, "mpfr_cpu_s", cm, "dd_s", td, "dd_cpu_s", cd,
                        "dd_certified_bits", cert.certified_bits);
  json_t *inp = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
                          "q", hex_array_f(in.q, gdn_shape_numel_qk(&s)),
                          "k", hex_array_f(in.k, gdn_shape_numel_qk(&s)),
                          "v", hex_array_f(in.v, gdn_shape_numel_v(&s)),
                          "g", hex_array_f(in.g, gdn_shape_numel_gate(&s)),
                          "beta", hex_array_f(in.beta, gdn_shape_numel_gate(&s)),
                          "h0", hex_array_f(in.h0, gdn_shape_numel_state(&s)));
  json_t *outs = json_pack("{s:o, s:o, s:o, s:o}", "mpfr_o", hex_array(mo.o, gdn_shape_numel_v(&s)),
                           "mpfr_ht", hex_array(mo.ht, gdn_shape_numel_state(&s)),
                           "dd_o", hex_array(dd.o, gdn_shape_numel_v(&s)),
                           "dd_ht", hex_array(dd.ht, gdn_shape_numel_state(&s)));
  if (!j || !inp || !outs) die("JSON", NULL);
  json_object_set_new(j, "inputs", inp);
  json_object_set_new(j, "outputs", outs);
  if (json_dump_file(j, out, JSON_COMPACT)) {
    fprintf(stderr, "bench_oracle_peer: cannot write %s\n", out);
    return 3;
  }
  printf("bench_oracle_peer: %s, p = %ld: MPFR %.4f s (%.1f ns/MAC), dd %.4f s (%.2f ns/MAC), 1 thread\n",
         shape, prec, tm, tm * 1e9 / macs, td, td * 1e9 / macs);
  json_decref(j);
  gdn_outputs_clear(&mo);
  gdn_outputs_clear(&dd);
  gdn_inputs_clear(&in);
  return 0;
}
