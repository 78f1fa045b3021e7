/* bench_kda_oracle: the KDA oracle's double-word tiers against GDN's, per
 * token at the same shape (issue target: within 1.5x).
 *
 *   bench_kda_oracle [B,T,H,D] [reps] [sample_columns] [runs]
 *
 * Default 1,256,1,128, 3 reps, 2 sampled columns (the parity default);
 * runs: a mask of four 0/1 digits (the four runs below, in order; default
 * 1111), e.g. 0100 to profile the KDA forward alone.
 * Inputs: gdn_synth (seed 1) with slow gates for GDN and Kimi Linear's
 * per-channel draw (gdn_chgate_draw_kimi) for KDA on the same q, k, v,
 * beta; Hk = Hv = H.  Timed, 1 thread, best of reps, interleaved (a round
 * runs all four, so a drift in the machine's speed hits all alike):
 * oracle_run_dd vs oracle_kda_run_dd (the forward dd tier with its sampled
 * certificate) and oracle_vjp_dd vs oracle_kda_vjp_dd (the VJP's dd tier,
 * cotangents do and dht).  Prints CPU seconds (this thread's) and the
 * ratios KDA / GDN, and an FNV-1a hash of each run's outputs (bits kept
 * by a speed change show as the same hash). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdn_chgate.h"
#include "gdn_chgrads.h"
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

/* FNV-1a of the bytes of n doubles, folded into *h: the outputs' hash
 * (printed, so that a change meant to keep every bit can be seen to). */
static void fnv(uint64_t *h, const double *x, size_t n) {
  const unsigned char *p = (const unsigned char *)x;
  for (size_t i = 0; i < n * sizeof(double); i++) *h = (*h ^ p[i]) * 0x100000001b3ull;
}

static uint64_t hashes[4];

static int run_one(int k, const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, int64_t ns,
                   gdn_error *e) {
  uint64_t *h = &hashes[k];
  *h = 0xcbf29ce484222325ull;
  int rc;
  if (k <= F_KDA) {
    oracle_dd_config cfg;
    oracle_dd_config_init(&cfg);
    cfg.sample_columns = ns;
    oracle_dd_certificate cert;
    gdn_outputs out;
    gdn_outputs_init(&out);
    rc = k == F_GDN ? oracle_run_dd(in, &cfg, &out, &cert, e) : oracle_kda_run_dd(in, g, &cfg, &out, &cert, e);
    if (!rc) fnv(h, out.o, gdn_shape_numel_v(&in->shape)), fnv(h, out.ht, gdn_shape_numel_state(&in->shape));
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
  for (int id = 0; !rc && id < GDN_GRADS_N; id++)
    fnv(h, gdn_grads_tensor(&out, (gdn_grad_id)id),
        k == V_GDN ? gdn_grads_numel(&in->shape, (gdn_grad_id)id) : gdn_chgrads_numel(&in->shape, (gdn_grad_id)id));
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
  const char *mask = argc > 4 ? argv[4] : "1111";
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
      if ((int)strlen(mask) > k && mask[k] == '0') continue;
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
  for (int k = 0; k < N_RUNS; k++)
    if (best[k] < 1e300)
      printf("  %-16s %9.3f s  %8.2f us/token  outputs %016llx\n", names[k], best[k], 1e6 * best[k] / (double)T,
           (unsigned long long)hashes[k]);
  if (best[F_KDA] < 1e300 && best[F_GDN] < 1e300) printf("  ratio forward KDA/GDN %.2f\n", best[F_KDA] / best[F_GDN]);
  if (best[V_KDA] < 1e300 && best[V_GDN] < 1e300) printf("  ratio vjp KDA/GDN %.2f\n", best[V_KDA] / best[V_GDN]);
  gdn_cotangents_clear(&ct);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return 0;
}
