/* Section 7 of bench_kernels: KDA against GDN per token (bench_kda.h).
 *
 * The four kernels, all float32 with IEEE products (the only mode the KDA
 * kernels implement): kern_recurrent and kern_kda_recurrent (token loops),
 * kern_scan and kern_kda_chunk (C = 64).  Inputs: gdn_synth with slow
 * gates (GDN) and Kimi Linear's per-channel draw (KDA) on the same q, k,
 * v, beta.  Each call includes the allocation of its outputs.  Seconds are
 * wall time, best of REPS; a round runs the four one after the other, so a
 * drift in the machine's speed hits all four alike. */
#include "bench_kda.h"

#include <stdio.h>
#include <time.h>

#include "gdn_chgate.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_kda.h"

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { K_GDN_TOKEN, K_KDA_TOKEN, K_GDN_CHUNK, K_KDA_CHUNK, K_N };
static const char *const names[K_N] = {"gdn recurrent", "kda recurrent", "gdn scan C=64", "kda chunk C=64"};

static int call(int k, const gdn_inputs *in, const gdn_chgate *g, const kern_config *cfg, gdn_outputs *out,
                gdn_error *e) {
  switch (k) {
  case K_GDN_TOKEN: return kern_recurrent(in, cfg, out, e);
  case K_KDA_TOKEN: return kern_kda_recurrent(in, g, cfg, KERN_KDA_MUTANT_NONE, out, e);
  case K_GDN_CHUNK: return kern_scan(in, cfg, out, e);
  default: return kern_kda_chunk(in, g, cfg, KERN_KDA_MUTANT_NONE, out, e);
  }
}

int bench_kda_section(int64_t T, int64_t H, int threads, int reps, json_t *root) {
  const gdn_shape s = {1, T, H, H, 128, 128};
  gdn_inputs in;
  gdn_chgate g;
  gdn_inputs_init(&in);
  gdn_chgate_init(&g);
  gdn_synth_opts o = {1, GDN_SYNTH_SLOW_GATES, 0};
  gdn_error e;
  gdn_error_init(&e);
  int rc = 0;
  if (gdn_synth_generate(&in, &s, &o, &e) || gdn_chgate_draw_kimi(&g, &s, 1, &e)) goto fail;
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  gdn_threads_set(threads);
  double best[K_N] = {0};
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < K_N; k++) {
      gdn_outputs out;
      gdn_outputs_init(&out);
      const double t0 = wall();
      rc = call(k, &in, &g, &cfg, &out, &e);
      const double dt = wall() - t0;
      gdn_outputs_clear(&out);
      if (rc) goto fail;
      if (r == 0 || dt < best[k]) best[k] = dt;
    }
  json_t *j = json_object();
  json_object_set_new(j, "shape", json_pack("{sIsIsIsI}", "T", (json_int_t)T, "H", (json_int_t)H, "Dk",
                                            (json_int_t)128, "Dv", (json_int_t)128));
  json_object_set_new(j, "threads", json_integer(threads));
  for (int k = 0; k < K_N; k++) {
    const double ns = 1e9 * best[k] / (double)(T * H);
    printf("kda section    %-15s H=%lld T=%lld threads=%d: %8.4f s  %8.1f ns/token/head\n", names[k],
           (long long)H, (long long)T, threads, best[k], ns);
    json_object_set_new(j, names[k], json_pack("{sfsf}", "seconds", best[k], "ns_per_token_head", ns));
  }
  printf("kda section    kda / gdn time per token: recurrent x%.2f, chunked x%.2f\n",
         best[K_KDA_TOKEN] / best[K_GDN_TOKEN], best[K_KDA_CHUNK] / best[K_GDN_CHUNK]);
  json_object_set_new(j, "ratio_recurrent", json_real(best[K_KDA_TOKEN] / best[K_GDN_TOKEN]));
  json_object_set_new(j, "ratio_chunked", json_real(best[K_KDA_CHUNK] / best[K_GDN_CHUNK]));
  json_object_set_new(root, "kda", j);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return 0;
fail:
  fprintf(stderr, "bench_kernels (kda): %s\n", e.msg);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return 3;
}
