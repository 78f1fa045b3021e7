/* bench_vjp: time and memory of one gradient run of the float backward
 * kernels (kern_vjp.h) -- the figure docs/gradients.md quotes.
 *
 *   bench_vjp [--T N] [--heads H] [--dim D] [--chunk C] [--devices D1[,D2...]]
 *             [--dtype float32|float64] [--gates slow|init] [--dd 0|1]
 *
 * Defaults: T = 262144, H = 1 (Hk = Hv), Dk = Dv = 128, C = 64, devices
 * 1,4 (1 = kern_scan_vjp, >= 2 = kern_affine_prefix_vjp), float32, slow
 * gates, B = 1, with h0 and dht.  Prints per run the seconds, the heap held
 * at the peak (gdn_alloc_bytes_peak: inputs, cotangents, gradients and the
 * kernel's scratch) and, at the end, the process's peak resident set
 * (getrusage ru_maxrss) -- run it under /usr/bin/time -v for a second
 * opinion.  With --dd 1 the run also computes the reference gradients with
 * the oracle's double-word tier (oracle_vjp_dd, 2 sampled columns per head)
 * first and prints each kernel's rel_fro per gradient against them: a whole
 * gradient run, oracle included.  Not run by meson test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gdn_alloc.h"
#include "gdn_grads.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern_vjp.h"
#include "oracle_vjp.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int die(const gdn_error *e) {
  fprintf(stderr, "bench_vjp: error: %s\n", e->msg);
  return 3;
}

int main(int argc, char **argv) {
  int64_t T = 262144, H = 1, D = 128, C = 64;
  const char *devs = "1,4", *dtype = "float32", *gates = "slow";
  int dd = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--T")) T = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--heads")) H = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--dim")) D = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--chunk")) C = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--devices")) devs = argv[i + 1];
    else if (!strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
    else if (!strcmp(argv[i], "--gates")) gates = argv[i + 1];
    else if (!strcmp(argv[i], "--dd")) dd = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "bench_vjp: error: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {1, T, H, H, D, D};
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts so = {1, GDN_SYNTH_H0 | (strcmp(gates, "slow") ? 0u : GDN_SYNTH_SLOW_GATES), 0};
  if (gdn_synth_generate(&in, &s, &so, &e)) return die(&e);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  if (gdn_cotangents_alloc(&ct, &s, 1, &e)) return die(&e);
  gdn_cotangents_synth(&ct, 2);
  printf("shape B=1 T=%lld H=%lld Dk=Dv=%lld C=%lld %s, gates %s, threads %d\n", (long long)T,
         (long long)H, (long long)D, (long long)C, dtype, gates, gdn_threads_get());
  printf("inputs + cotangents held: %.1f MiB\n", gdn_alloc_bytes_live() / 1048576.0);
  gdn_grads ref;
  gdn_grads_init(&ref);
  if (dd) {
    oracle_vjp_dd_config oc;
    oracle_vjp_dd_config_init(&oc);
    oracle_vjp_dd_certificate cert;
    gdn_alloc_peak_reset();
    double t0 = now();
    if (oracle_vjp_dd(&in, &ct, &oc, &ref, &cert, &e)) return die(&e);
    printf("oracle_vjp_dd: %.1f s, heap peak %.1f MiB, certified %d bits on %lld sampled columns "
           "(normwise %d)\n", now() - t0, gdn_alloc_bytes_peak() / 1048576.0, cert.certified_bits,
           (long long)cert.sampled_columns, cert.normwise_bits);
  }
  for (const char *p = devs; *p;) {
    int64_t nd = atoll(p);
    kern_config cfg;
    kern_config_init(&cfg);
    cfg.chunk = C;
    cfg.devices = nd;
    cfg.dtype = strcmp(dtype, "float64") ? GDN_DTYPE_F32 : GDN_DTYPE_F64;
    gdn_grads g;
    gdn_grads_init(&g);
    gdn_alloc_peak_reset();
    double t0 = now();
    int rc = nd > 1 ? kern_affine_prefix_vjp(&in, &ct, &cfg, &g, &e) : kern_scan_vjp(&in, &ct, &cfg, &g, &e);
    double t1 = now();
    if (rc) return die(&e);
    printf("%s D=%lld: %.2f s, heap peak %.1f MiB (gradients %.1f MiB as binary64)\n",
           nd > 1 ? "affine-prefix" : "scan", (long long)nd, t1 - t0,
           gdn_alloc_bytes_peak() / 1048576.0,
           (double)(2 * gdn_shape_numel_qk(&s) + gdn_shape_numel_v(&s) + 2 * gdn_shape_numel_gate(&s) +
                    gdn_shape_numel_state(&s)) * 8 / 1048576.0);
    if (dd) {
      printf("  rel_fro vs oracle:");
      for (int id = 0; id < GDN_GRADS_N; id++)
        printf(" %s %.2e", gdn_grads_name((gdn_grad_id)id), gdn_grads_rel_fro(&g, &ref, (gdn_grad_id)id));
      printf("\n");
    }
    gdn_grads_clear(&g);
    const char *c = strchr(p, ',');
    p = c ? c + 1 : p + strlen(p);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak RSS %.1f MiB\n", ru.ru_maxrss / 1024.0);
  gdn_grads_clear(&ref);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
  return 0;
}
