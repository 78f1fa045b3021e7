/* Section 7 of bench_kernels: KDA against GDN per token (bench_kda.h), and
 * the KDA float32 kernels' accuracy on the same inputs.
 *
 * The seven kernels, all float32 with IEEE products (the only mode the KDA
 * kernels implement): kern_recurrent and kern_kda_recurrent (token loops),
 * kern_scan and kern_kda_chunk (C = 64), and the chunked backwards
 * kern_scan_vjp, kern_kda_chunk_vjp_algebra (the chunkwise one) and
 * kern_kda_chunk_vjp (token by token) (C = 64, with dht).  Inputs:
 * gdn_synth with slow gates (GDN) and Kimi Linear's per-channel draw (KDA)
 * on the same q, k, v, beta; N(0, 1) cotangents.  Each call includes the
 * allocation of its outputs.  Seconds are wall time and the process's CPU
 * time, each the best of REPS; a round runs the seven one after the other,
 * so a drift in the machine's speed hits all alike.  On a loaded machine
 * the CPU time's ratios are the steadier (with threads = 1 it is the one
 * thread's time; a descheduled thread does not count). */
#include "bench_kda.h"

#include <stdio.h>
#include <time.h>

#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_kda.h"
#include "kern_kda_chunk_vjp.h"
#include "kern_vjp.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { K_GDN_TOKEN, K_KDA_TOKEN, K_GDN_CHUNK, K_KDA_CHUNK, K_GDN_BACK, K_KDA_BACK, K_KDA_BACK_TOKEN, K_N };
static const char *const names[K_N] = {"gdn recurrent",     "kda recurrent",      "gdn scan C=64",
                                       "kda chunk C=64",    "gdn scan vjp C=64",  "kda chunk vjp C=64",
                                       "kda chunk vjp tok"};

/* max |x - r| / max |r| over o and ht (the larger). */
static double normwise(const gdn_outputs *x, const gdn_outputs *r) {
  const gdn_shape *s = &r->shape;
  double d = 0, m = 0, d2 = 0, m2 = 0;
  for (size_t i = 0; i < gdn_shape_numel_v(s); i++) {
    const double a = x->o[i] - r->o[i];
    d = a > d ? a : -a > d ? -a : d;
    m = r->o[i] > m ? r->o[i] : -r->o[i] > m ? -r->o[i] : m;
  }
  for (size_t i = 0; i < gdn_shape_numel_state(s); i++) {
    const double a = x->ht[i] - r->ht[i];
    d2 = a > d2 ? a : -a > d2 ? -a : d2;
    m2 = r->ht[i] > m2 ? r->ht[i] : -r->ht[i] > m2 ? -r->ht[i] : m2;
  }
  return d / m > d2 / m2 ? d / m : d2 / m2;
}

/* The KDA kernels' float32 error against the float64 token loop (itself
 * ~1e-15 from the oracle: tests/parity/test_kda_conformance.c) on the
 * bench's inputs: what float32 and the chunked form cost in accuracy at
 * D = 128, where the oracle would take minutes. */
static int accuracy(const gdn_inputs *in, const gdn_chgate *g, json_t *j, gdn_error *e) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.dtype = GDN_DTYPE_F64;
  gdn_outputs ref, x;
  gdn_outputs_init(&ref);
  gdn_outputs_init(&x);
  int rc = kern_kda_recurrent(in, g, &cfg, KERN_KDA_MUTANT_NONE, &ref, e);
  cfg.dtype = GDN_DTYPE_F32;
  static const char *const what[4] = {"kda recurrent", "kda chunk C=64", "kda chunk C=16", "kda affine C=64 D=4"};
  for (int k = 0; !rc && k < 4; k++) {
    cfg.chunk = k == 2 ? 16 : 64;
    cfg.devices = k == 3 ? 4 : 1;
    rc = k == 0 ? kern_kda_recurrent(in, g, &cfg, 0, &x, e)
         : k < 3 ? kern_kda_chunk(in, g, &cfg, 0, &x, e)
                 : kern_kda_affine(in, g, &cfg, 0, &x, e);
    if (rc) break;
    const double err = normwise(&x, &ref);
    printf("kda accuracy   %-20s float32 vs the float64 token loop: %.3e normwise\n", what[k], err);
    json_object_set_new(j, what[k], json_real(err));
    gdn_outputs_clear(&x);
  }
  gdn_outputs_clear(&ref);
  return rc;
}

/* The float32 backwards' error against the float64 token loop's backward
 * (kern_kda_recurrent_vjp, itself at ~1e-15 of the VJP oracle:
 * tests/parity/test_kda_grad.c) on the bench's inputs and cotangents, per
 * gradient: max |x - r| / max |r|.  The chunkwise and the token-by-token
 * chunked backwards (C = 64) and the token loop's, float32. */
static int accuracy_backward(const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, json_t *j,
                             gdn_error *e) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  cfg.dtype = GDN_DTYPE_F64;
  gdn_grads ref, x;
  gdn_grads_init(&ref);
  gdn_grads_init(&x);
  int rc = kern_kda_recurrent_vjp(in, g, ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &ref, e);
  cfg.dtype = GDN_DTYPE_F32;
  static const char *const what[3] = {"kda recurrent vjp", "kda chunk vjp (chunkwise)", "kda chunk vjp (token-by-token)"};
  for (int k = 0; !rc && k < 3; k++) {
    rc = k == 0   ? kern_kda_recurrent_vjp(in, g, ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &x, e)
         : k == 1 ? kern_kda_chunk_vjp_algebra(in, g, ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &x, e)
                  : kern_kda_chunk_vjp(in, g, ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &x, e);
    if (rc) break;
    json_t *row = json_object();
    printf("kda accuracy   %-31s float32 vs the float64 token loop's backward:", what[k]);
    for (int id = 0; id < GDN_GRADS_N; id++) {
      const double *a = gdn_grads_tensor_c(&x, (gdn_grad_id)id), *r = gdn_grads_tensor_c(&ref, (gdn_grad_id)id);
      double d = 0, m = 0;
      for (size_t i = 0; i < gdn_chgrads_numel(&in->shape, (gdn_grad_id)id); i++) {
        const double di = a[i] - r[i];
        d = di > d ? di : -di > d ? -di : d;
        m = r[i] > m ? r[i] : -r[i] > m ? -r[i] : m;
      }
      printf(" %s %.2e", gdn_grads_name((gdn_grad_id)id), d / m);
      json_object_set_new(row, gdn_grads_name((gdn_grad_id)id), json_real(d / m));
    }
    printf("\n");
    json_object_set_new(j, what[k], row);
    gdn_grads_clear(&x);
  }
  gdn_grads_clear(&ref);
  return rc;
}

static int call(int k, const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, const kern_config *cfg,
                gdn_outputs *out, gdn_error *e) {
  if (k >= K_GDN_BACK) {
    gdn_grads gr;
    gdn_grads_init(&gr);
    const int rc = k == K_GDN_BACK   ? kern_scan_vjp(in, ct, cfg, &gr, e)
                   : k == K_KDA_BACK ? kern_kda_chunk_vjp_algebra(in, g, ct, cfg, KERN_KDA_VJP_MUTANT_NONE, &gr, e)
                                     : kern_kda_chunk_vjp(in, g, ct, cfg, KERN_KDA_VJP_MUTANT_NONE, &gr, e);
    gdn_grads_clear(&gr);
    return rc;
  }
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
  gdn_cotangents ct;
  gdn_inputs_init(&in);
  gdn_chgate_init(&g);
  gdn_cotangents_init(&ct);
  gdn_synth_opts o = {1, GDN_SYNTH_SLOW_GATES, 0};
  gdn_error e;
  gdn_error_init(&e);
  int rc = 0;
  if (gdn_synth_generate(&in, &s, &o, &e) || gdn_chgate_draw_kimi(&g, &s, 1, &e) ||
      gdn_cotangents_alloc(&ct, &s, 1, &e))
    goto fail;
  gdn_cotangents_synth(&ct, 2);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  gdn_threads_set(threads);
  double best[K_N] = {0}, cpu[K_N] = {0};
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < K_N; k++) {
      gdn_outputs out;
      gdn_outputs_init(&out);
      const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
      rc = call(k, &in, &g, &ct, &cfg, &out, &e);
      const double dt = clock_s(CLOCK_MONOTONIC) - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
      gdn_outputs_clear(&out);
      if (rc) goto fail;
      if (r == 0 || dt < best[k]) best[k] = dt;
      if (r == 0 || dc < cpu[k]) cpu[k] = dc;
    }
  json_t *j = json_object();
  json_object_set_new(j, "shape", json_pack("{sIsIsIsI}", "T", (json_int_t)T, "H", (json_int_t)H, "Dk",
                                            (json_int_t)128, "Dv", (json_int_t)128));
  json_object_set_new(j, "threads", json_integer(threads));
  for (int k = 0; k < K_N; k++) {
    const double ns = 1e9 * best[k] / (double)(T * H), nsc = 1e9 * cpu[k] / (double)(T * H);
    printf("kda section    %-18s H=%lld T=%lld threads=%d: %8.4f s  %8.1f ns/token/head  (CPU %8.4f s  %8.1f)\n",
           names[k], (long long)H, (long long)T, threads, best[k], ns, cpu[k], nsc);
    json_object_set_new(j, names[k], json_pack("{sfsfsfsf}", "seconds", best[k], "ns_per_token_head", ns, "cpu_seconds",
                                               cpu[k], "cpu_ns_per_token_head", nsc));
  }
  printf("kda section    kda / gdn time per token: recurrent x%.2f, chunked x%.2f, chunked backward x%.2f "
         "(token-by-token x%.2f) (wall)\n",
         best[K_KDA_TOKEN] / best[K_GDN_TOKEN], best[K_KDA_CHUNK] / best[K_GDN_CHUNK],
         best[K_KDA_BACK] / best[K_GDN_BACK], best[K_KDA_BACK_TOKEN] / best[K_GDN_BACK]);
  printf("kda section    kda / gdn time per token: recurrent x%.2f, chunked x%.2f, chunked backward x%.2f "
         "(token-by-token x%.2f) (CPU)\n",
         cpu[K_KDA_TOKEN] / cpu[K_GDN_TOKEN], cpu[K_KDA_CHUNK] / cpu[K_GDN_CHUNK], cpu[K_KDA_BACK] / cpu[K_GDN_BACK],
         cpu[K_KDA_BACK_TOKEN] / cpu[K_GDN_BACK]);
  json_object_set_new(j, "ratio_recurrent", json_real(best[K_KDA_TOKEN] / best[K_GDN_TOKEN]));
  json_object_set_new(j, "ratio_chunked", json_real(best[K_KDA_CHUNK] / best[K_GDN_CHUNK]));
  json_object_set_new(j, "ratio_chunked_backward", json_real(best[K_KDA_BACK] / best[K_GDN_BACK]));
  json_object_set_new(j, "cpu_ratio_recurrent", json_real(cpu[K_KDA_TOKEN] / cpu[K_GDN_TOKEN]));
  json_object_set_new(j, "cpu_ratio_chunked", json_real(cpu[K_KDA_CHUNK] / cpu[K_GDN_CHUNK]));
  json_object_set_new(j, "cpu_ratio_chunked_backward", json_real(cpu[K_KDA_BACK] / cpu[K_GDN_BACK]));
  json_object_set_new(j, "cpu_ratio_chunked_backward_token_by_token", json_real(cpu[K_KDA_BACK_TOKEN] / cpu[K_GDN_BACK]));
  json_t *acc = json_object();
  json_object_set_new(j, "accuracy_vs_f64_token", acc);
  json_object_set_new(root, "kda", j);
  if (accuracy(&in, &g, acc, &e) || accuracy_backward(&in, &g, &ct, acc, &e)) goto fail;
  gdn_cotangents_clear(&ct);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return 0;
fail:
  fprintf(stderr, "bench_kernels (kda): %s\n", e.msg);
  gdn_cotangents_clear(&ct);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return 3;
}
