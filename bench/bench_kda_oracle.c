/* bench_kda_oracle: the KDA oracle's double-word tiers against GDN's, per
 * token at the same shape (issue target: within 1.5x).
 *
 *   bench_kda_oracle [B,T,H,D] [reps] [sample_columns]
 *
 * Default 1,256,1,128, 3 reps, 2 sampled columns (the parity default).
 * Inputs: gdn_synth (seed 1) with slow gates for GDN and Kimi Linear's
 * per-channel draw (gdn_chgate_draw_kimi) for KDA on the same q, k, v,
 * beta; Hk = Hv = H.  Timed, 1 thread, best of reps, interleaved (a round
 * runs all four, so a drift in the machine's speed hits all alike):
 * oracle_run_dd vs oracle_kda_run_dd (the forward dd tier with its sampled
 * certificate) and oracle_vjp_dd vs oracle_kda_vjp_dd (the VJP's dd tier,
 * cotangents do and dht).  Prints CPU seconds (this thread's) and the
 * ratios KDA / GDN. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gdn_chgate.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "oracle.h"
#include "oracle_kda.h"
#include "oracle_kda_vjp.h"
#include "oracle_vjp.h"

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { F_GDN, F_KDA, V_GDN, V_KDA, N_RUNS };
static const char *const names[N_RUNS] = {"gdn dd forward", "kda dd forward", "gdn dd vjp", "kda dd vjp"};

static int run_one(int k, const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, int64_t ns,
                   gdn_error *e) {
  int rc;
  if (k <= F_KDA) {
    oracle_dd_config cfg;
    oracle_dd_config_init(&cfg);
    cfg.sample_columns = ns;
    oracle_dd_certificate cert;
    gdn_outputs out;
    gdn_outputs_init(&out);
    rc = k == F_GDN ? oracle_run_dd(in, &cfg, &out, &cert, e) : oracle_kda_run_dd(in, g, &cfg, &out, &cert, e);
    gdn_outputs_clear(&out);
    return rc;
  }
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  cfg.sample_columns = ns;
  oracle_vjp_dd_certificate cert;
  gdn_grads out;
  gdn_grads_init(&out);
  rc = k == V_GDN ? oracle_vjp_dd(in, ct, &cfg, &out, &cert, e) : oracle_kda_vjp_dd(in, g, ct, &cfg, &out, &cert, e);
  gdn_grads_clear(&out);
  return rc;
}

int main(int argc, char **argv) {
  long long B = 1, T = 256, H = 1, D = 128;
  if (argc > 1 && sscanf(argv[1], "%lld,%lld,%lld,%lld", &B, &T, &H, &D) != 4) {
    fprintf(stderr, "bench_kda_oracle: shape '%s': expected B,T,H,D\n", argv[1]);
    return 2;
  }
  const int reps = argc > 2 ? atoi(argv[2]) : 3;
  const int64_t ns = argc > 3 ? atoll(argv[3]) : 2;
  gdn_threads_set(1);
  const gdn_shape s = {B, T, H, H, D, D};
  gdn_inputs in;
  gdn_chgate g;
  gdn_cotangents ct;
  gdn_inputs_init(&in);
  gdn_chgate_init(&g);
  gdn_cotangents_init(&ct);
  gdn_error e;
  gdn_error_init(&e);
  gdn_synth_opts so = {1, GDN_SYNTH_H0, 0};
  if (gdn_synth_generate(&in, &s, &so, &e) || gdn_chgate_draw_kimi(&g, &s, 1, &e) ||
      gdn_cotangents_alloc(&ct, &s, 1, &e)) {
    fprintf(stderr, "bench_kda_oracle: %s\n", e.msg);
    return 2;
  }
  gdn_cotangents_synth(&ct, 1);
  double best[N_RUNS];
  for (int k = 0; k < N_RUNS; k++) best[k] = 1e300;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < N_RUNS; k++) {
      const double t0 = cpu();
      if (run_one(k, &in, &g, &ct, ns, &e)) {
        fprintf(stderr, "bench_kda_oracle: %s: %s\n", names[k], e.msg);
        return 1;
      }
      const double dt = cpu() - t0;
      if (dt < best[k]) best[k] = dt;
    }
  printf("shape %lld,%lld,%lld,%lld, 1 thread, %lld sampled columns, best of %d (CPU s)\n", B, T, H, D,
         (long long)ns, reps);
  for (int k = 0; k < N_RUNS; k++) printf("  %-16s %9.3f s  %8.2f us/token\n", names[k], best[k], 1e6 * best[k] / (double)T);
  printf("  ratio forward KDA/GDN %.2f, vjp KDA/GDN %.2f\n", best[F_KDA] / best[F_GDN], best[V_KDA] / best[V_GDN]);
  gdn_cotangents_clear(&ct);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return 0;
}
