/* bench_kernels: the float32 kernels' speed, every figure next to a peer
 * measured in the same run.
 *
 *   bench_kernels [--T N] [--reps N] [--heads H[,H...]] [--devices D[,D...]]
 *                 [--threads N] [--modes-heads H] [--torch FILE] [--json FILE]
 *                 [--label TEXT] [--no-modes] [--gates slow|init]
 *                 [--gemm-reps N] [--gemm-only] [--subnormal-reps N]
 *                 [--subnormal-T N] [--kda-reps N] [--kda-T N] [--kda-heads H]
 *
 * Defaults: T = 65536, REPS = 3, heads 4,1 (B = 1, Hk = Hv, Dk = Dv = 128,
 * C = 64), devices 1,4,16, threads = all cores, gates slow.
 *
 * Gates: `slow` (GDN_SYNTH_SLOW_GATES, the long-memory heads; no value
 * underflows) or `init` (as a model initialises them: the in-chunk decays
 * of the fast heads are float32 subnormals, which some x86 cores compute
 * through microcoded assists; AMD Zen 4 does not: section 6).
 *
 * Sections (each also in the JSON document):
 *  1. peak    OpenBLAS cblas_sgemm of 512 x 512 x 512 (row-major, float32), 1
 *             thread and N threads: the machine's practical float32 peak.
 *             It is measured again right before every kernel figure and the
 *             best of all those measurements is the peak (a conservative
 *             denominator on a machine whose speed drifts).  Only with
 *             OpenBLAS (bench/meson.build finds it; the library never links
 *             it); without it the percentages are left out.
 *  2. ieee    kern_scan and kern_affine_prefix (each device count) in IEEE
 *             mode, per head count, with 1 thread and with N: seconds (best
 *             of REPS calls, each including the allocation of `out`, as a
 *             caller sees it), GFLOP/s, % of the peak at the same thread
 *             count, and the N-thread speedup over 1 thread.  At H = 1 the N
 *             threads scan the one head as a team (kern_scan_tmpl.h).
 *  3. modes   kern_scan and kern_affine_prefix (the middle device count) at
 *             --modes-heads heads (default the first of --heads) and N
 *             threads in every matmul mode: ieee, default (1 bf16 pass),
 *             high (3), highest (6), with ftz off, and ieee and highest
 *             with ftz on (highest + ftz is gdn-parity's default): seconds
 *             and the ratio to ieee.  GFLOP/s there counts the algorithm's
 *             flops once, whatever the passes.  ieee + ftz shows what
 *             subnormals cost: even with slow gates the fold's A, the
 *             product of a whole shard's decays (16384 tokens at D = 4),
 *             falls below 2^-126 in the fast-decaying heads.
 *  4. torch   with --torch FILE (written by bench/peer_torch.py for the same
 *             shape and thread count): the PyTorch peer's seconds next to
 *             kern_scan's at that shape and thread count, and the ratio.
 *  5. gemm    (printed second, after the peak; --gemm-reps 0 leaves it out,
 *             --gemm-only runs nothing else) each matrix product of one
 *             chunk on its own shape and layout (C = 64, Dk = Dv = 128:
 *             64x64x128 S and attn, 64x128x64 U and W, 64x128x128 o_inter
 *             and W h, 64x128x64 o += attn v_new, 128x128x64 h += Kt^T v_new
 *             with A transposed), 1 thread: OpenBLAS cblas_sgemm with the
 *             same transposes and beta, kern_gemm (one float32 pass, IEEE)
 *             and kern_mm highest (the six bfloat16 passes of
 *             --matmul-precision highest, on operands split beforehand, as
 *             the kernels split each operand once), interleaved: for each of
 *             --gemm-reps (default 30) rounds every shape's three batches of
 *             about 1 ms run one after the other, and each keeps its best
 *             batch, in the thread's CPU time.  The
 *             ratios: ieee = sgemm's time / kern_gemm's; highest = six
 *             sgemm calls' time / the six passes' (100 % = each pass as fast
 *             as sgemm); and both over one chunk's products weighted by how
 *             many of each the scan computes.
 *  6. subnormals  (with --subnormal-reps N, after section 5; --gemm-only
 *             keeps it) kern_scan and kern_affine_prefix at D = 8, H = 1,
 *             T = --subnormal-T (default 8192), 1 thread, gates as a model
 *             initialises them, in ieee and highest, each with ftz off and
 *             on, the eight interleaved call after call, best of N in CPU
 *             time: what the subnormal decays cost where the bits must stay
 *             IEEE's.
 *  7. kda     (with --kda-reps N, after section 6; bench_kda.c) the KDA
 *             kernels' time per token next to GDN's: kern_kda_recurrent vs
 *             kern_recurrent, kern_kda_chunk vs kern_scan and
 *             kern_kda_chunk_vjp vs kern_scan_vjp, float32 IEEE,
 *             H = --kda-heads (default 1), T = --kda-T (default 8192), N
 *             threads, best of N interleaved rounds, wall and
 *             CPU time.
 *
 * FLOP count (per head, per chunk of C tokens; Dk, Dv head dims), counted
 * from the algorithm as the kernels execute it (kernels/kern_chunk_tmpl.h):
 * a matrix product m x k by k x n is 2 m n k (dense: the products with the
 * zero upper triangles of A and of the masked attn are executed, so they
 * are counted), the forward substitution as executed, every elementwise
 * add / multiply / exp / sqrt / divide as 1.
 *   rows     q, k: L2 norm 2 Dk + 3, scale q Dk;  per token 5 Dk + 6
 *   G, exp   C - 1 adds, 2C exp + C subtracts, C(C-1)/2 (subtract + exp)
 *   WY       k*beta C Dk; S 2 C^2 Dk; mask C(C-1)/2; solve sum_i sum_{m<i}
 *            2 (m + 1) = (C-1) C (C+1) / 3; v*beta C Dv; U 2 C^2 Dv;
 *            kbg C Dk; W 2 C^2 Dk
 *   prep     qg C Dk; attn 2 C^2 Dk; mask C(C-1)/2; Kt C Dk
 *   body     o_inter, W h, Kt^T v_new: 3 x 2 C Dk Dv; U - W h C Dv;
 *            attn v_new 2 C^2 Dv; o add C Dv; h update 2 Dk Dv
 *   fold     (affine, D >= 2, every chunk once more) rows, G, WY, Kt as
 *            above; A_n: 2 Dk^2 C + Dk^2; B_n: 2 Dk Dv C;
 *            compose: 2 Dk^3 + 2 Dk^2 Dv + Dk Dv
 *   prefix   (D - 1) compositions; D - 1 applies for h_in and 1 for ht,
 *            each 2 Dk^2 Dv + Dk Dv (with h0 = 0: none: h = B)
 * At D = 1 the affine kernel computes no fold (kern.h), so its count is the
 * scan's.  For C = 64, Dk = Dv = 128 the scan is 11.76 MFLOP per chunk, of
 * which 98 % in kern_gemm; the fold adds 15.93 MFLOP.
 *
 * Run with the other figures by scripts/bench.sh.  Not run by `meson test`.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "gdn_synth.h"
#include "gdn_threads.h"
#include "gdn_alloc.h"
#include "kern.h"
#include "kern_gemm.h"
#include "kern_mm.h"
#include "bench_kda.h"

#ifdef BENCH_OPENBLAS
#include <cblas.h>
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The calling thread's CPU time: sections 5 and 6 run on one thread and time
 * by it, so the time other processes hold the core is not counted (on a
 * shared machine the wall clock of a call longer than a time slice measures
 * the load). */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* FLOPs shared by the scan and the fold: rows, G and decays, WY factors. */
static double flops_wy(double C, double Dk, double Dv) {
  double rows = C * (5 * Dk + 6);
  double gexp = (C - 1) + 3 * C + C * (C - 1);
  double wy = C * Dk + 2 * C * C * Dk + C * (C - 1) / 2 + (C - 1) * C * (C + 1) / 3 + C * Dv +
              2 * C * C * Dv + C * Dk + 2 * C * C * Dk;
  return rows + gexp + wy;
}
static double flops_scan_chunk(double C, double Dk, double Dv) {
  double prep = C * Dk + 2 * C * C * Dk + C * (C - 1) / 2 + C * Dk;
  double body = 3 * 2 * C * Dk * Dv + C * Dv + 2 * C * C * Dv + C * Dv + 2 * Dk * Dv;
  return flops_wy(C, Dk, Dv) + prep + body;
}
static double flops_fold_chunk(double C, double Dk, double Dv) {
  double kt = C * Dk;
  double an = 2 * Dk * Dk * C + Dk * Dk, bn = 2 * Dk * Dv * C;
  double compose = 2 * Dk * Dk * Dk + 2 * Dk * Dk * Dv + Dk * Dv;
  return flops_wy(C, Dk, Dv) + kt + an + bn + compose;
}
static double flops(const gdn_shape *s, int64_t C, int64_t D, int affine) {
  double N = (double)gdn_shape_chunks(s, C), heads = (double)(s->B * s->Hv);
  double Dk = (double)s->Dk, Dv = (double)s->Dv, c = (double)C;
  double f = N * flops_scan_chunk(c, Dk, Dv);
  if (affine && D >= 2) {
    double compose = 2 * Dk * Dk * Dk + 2 * Dk * Dk * Dv + Dk * Dv;
    f += N * flops_fold_chunk(c, Dk, Dv) + (double)(D - 1) * compose; /* h0 = 0: no applies */
  }
  return f * heads;
}

/* ---- the peer: OpenBLAS sgemm 512^3 ------------------------------------ */

typedef struct peak {
  double gflops[2]; /* [0]: 1 thread, [1]: N threads; 0 when not measured */
  int threads[2];
} peak;

#ifdef BENCH_OPENBLAS
static float *sg_a, *sg_b, *sg_c;
#endif

/* Best GFLOP/s of `reps` sgemm 512^3 at `threads`; 0 without OpenBLAS. */
static double sgemm_gflops(int threads, int reps) {
#ifdef BENCH_OPENBLAS
  const int n = 512;
  if (!sg_a) {
    sg_a = malloc(sizeof(float) * n * n);
    sg_b = malloc(sizeof(float) * n * n);
    sg_c = malloc(sizeof(float) * n * n);
    if (!sg_a || !sg_b || !sg_c) return 0;
    for (int i = 0; i < n * n; i++) {
      sg_a[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
      sg_b[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
    }
  }
  openblas_set_num_threads(threads);
  double best = 0;
  for (int r = 0; r < reps + 2; r++) { /* two warm-up calls */
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, sg_a, n, sg_b, n, 0.0f,
                sg_c, n);
    double g = 2.0 * n * n * n / (now() - t0) * 1e-9;
    if (r >= 2 && g > best) best = g;
  }
  return best;
#else
  (void)threads;
  (void)reps;
  return 0;
#endif
}

static void peak_update(peak *pk, int which, int threads) {
  double g = sgemm_gflops(threads, 10);
#ifdef BENCH_OPENBLAS
  /* OpenBLAS's idle worker threads spin for a while (scripts/bench.sh sets
   * OPENBLAS_THREAD_TIMEOUT short); let them go to sleep before a kernel runs */
  if (threads > 1) nanosleep(&(struct timespec){0, 200000000}, NULL);
#endif
  pk->threads[which] = threads;
  if (g > pk->gflops[which]) pk->gflops[which] = g;
}

/* ---- the GEMM beside sgemm on the kernels' own shapes -------------------- */

/* The products of one chunk (C = 64, Dk = Dv = 128; kern_chunk_tmpl.h) with
 * their layouts: A transposed where the kernel reads Kt^T, C += A B where it
 * adds the product (kern_mm_plus; sgemm with beta = 1), and how many of
 * each one chunk of the scan computes (the fold's are the 128 x 128 x 64
 * shape too). */
typedef struct gemm_shape {
  const char *what;
  int m, n, k, a_trans, plus, per_chunk;
} gemm_shape;

static const gemm_shape gemm_shapes[] = {
    {"S = kb K^T, attn = q K^T", 64, 64, 128, 0, 0, 2},
    {"U = A vb, W = A kbg", 64, 128, 64, 0, 0, 2},
    {"o_inter = qg h, W h", 64, 128, 128, 0, 0, 2},
    {"o += attn v_new", 64, 128, 64, 0, 1, 1},
    {"h += Kt^T v_new", 128, 128, 64, 1, 1, 1},
};
#define GEMM_NSHAPES (int)(sizeof gemm_shapes / sizeof gemm_shapes[0])

typedef struct gemm_bufs {
  float *a, *b, *c, *t, *ws, *mem_a, *mem_b;
  kern_split_f32 sa, sb;
} gemm_bufs;

/* Seconds of `calls` calls of one product: 0 OpenBLAS sgemm, 1 kern_gemm
 * (one float32 pass, IEEE), 2 kern_mm highest (the six bfloat16 passes, on
 * operands split beforehand as the kernels split them: once per operand). */
static double gemm_time(const gemm_shape *g, gemm_bufs *w, int which, int calls) {
  const int m = g->m, n = g->n, k = g->k;
  const int64_t a_rs = g->a_trans ? 1 : k, a_cs = g->a_trans ? m : 1;
  double t0 = cpu_now();
  for (int r = 0; r < calls; r++) {
    if (which == 0) {
#ifdef BENCH_OPENBLAS
      cblas_sgemm(CblasRowMajor, g->a_trans ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k,
                  1.0f, w->a, g->a_trans ? m : k, w->b, n, g->plus ? 1.0f : 0.0f, w->c, n);
#endif
    } else if (which == 1) {
      kern_gemm_f32(g->plus ? KERN_GEMM_PLUS : KERN_GEMM_SET, m, n, k, w->a, a_rs, a_cs, w->b, n,
                    1, w->c, n, w->ws);
    } else if (g->plus) {
      kern_mm_plus_f32(KERN_MATMUL_HIGHEST, m, n, k, &w->sa, a_rs, a_cs, &w->sb, n, 1, w->c, n,
                       w->t, n, w->ws);
    } else {
      kern_mm_f32(KERN_MATMUL_HIGHEST, m, n, k, &w->sa, a_rs, a_cs, &w->sb, n, 1, w->c, n, w->ws);
    }
  }
  return cpu_now() - t0;
}

/* Section 5: every chunk product at 1 thread, sgemm, kern_gemm and the six
 * passes interleaved (rep after rep, best of `reps` batches of about 1 ms
 * each), so a machine whose load drifts affects the three alike. */
static int gemm_section(int reps, json_t *root) {
#ifndef BENCH_OPENBLAS
  (void)reps;
  (void)root;
  printf("gemm: OpenBLAS not built in: no sgemm peer, section left out\n");
  return 0;
#endif
  gemm_bufs w;
  memset(&w, 0, sizeof w);
  const size_t big = 128 * 128;
  gdn_error e;
  gdn_error_init(&e);
  w.a = gdn_malloc(big * sizeof(float), "gemm A", &e);
  w.b = gdn_malloc(big * sizeof(float), "gemm B", &e);
  w.c = gdn_malloc(big * sizeof(float), "gemm C", &e);
  w.t = gdn_malloc(big * sizeof(float), "gemm tmp", &e);
  w.ws = gdn_malloc(kern_gemm_ws_elems_f32() * sizeof(float), "gemm workspace", &e);
  w.mem_a = gdn_malloc(kern_split_elems_f32(KERN_MATMUL_HIGHEST, big) * sizeof(float), "split", &e);
  w.mem_b = gdn_malloc(kern_split_elems_f32(KERN_MATMUL_HIGHEST, big) * sizeof(float), "split", &e);
  if (!w.a || !w.b || !w.c || !w.t || !w.ws || !w.mem_a || !w.mem_b) {
    fprintf(stderr, "bench_kernels: %s\n", e.msg);
    return 3;
  }
  uint32_t x = 12345u; /* values in (-1, 1) with full float32 significands */
  for (size_t i = 0; i < big; i++) {
    x = x * 1664525u + 1013904223u;
    w.a[i] = (float)((double)(x >> 8) / 8388608.0 - 1.0);
    x = x * 1664525u + 1013904223u;
    w.b[i] = (float)((double)(x >> 8) / 8388608.0 - 1.0);
    w.c[i] = 0;
  }
  kern_split_bind_f32(&w.sa, KERN_MATMUL_HIGHEST, w.mem_a, big);
  kern_split_bind_f32(&w.sb, KERN_MATMUL_HIGHEST, w.mem_b, big);
  kern_split_fill_f32(&w.sa, KERN_MATMUL_HIGHEST, w.a, big);
  kern_split_fill_f32(&w.sb, KERN_MATMUL_HIGHEST, w.b, big);
#ifdef BENCH_OPENBLAS
  openblas_set_num_threads(1);
#endif
  gdn_threads_set(1);
  double best[GEMM_NSHAPES][3];
  int calls[GEMM_NSHAPES][3];
  for (int s = 0; s < GEMM_NSHAPES; s++)
    for (int q = 0; q < 3; q++) {
      const gemm_shape *g = &gemm_shapes[s];
      double t1 = gemm_time(g, &w, q, 3) / 3; /* warm-up and size of a batch */
      calls[s][q] = t1 > 0 ? (int)(1e-3 / t1) + 1 : 100;
      best[s][q] = 1e30;
    }
  for (int r = 0; r < reps; r++)
    for (int s = 0; s < GEMM_NSHAPES; s++)
      for (int q = 0; q < 3; q++) {
        double t = gemm_time(&gemm_shapes[s], &w, q, calls[s][q]) / calls[s][q];
        if (t < best[s][q]) best[s][q] = t;
      }
  json_t *jg = json_array();
  double mix[3] = {0, 0, 0};
  printf("gemm: 1 thread, CPU time, best of %d interleaved batches; highest = 6 bfloat16 passes, "
         "%% of 6 sgemm calls\n", reps);
  for (int s = 0; s < GEMM_NSHAPES; s++) {
    const gemm_shape *g = &gemm_shapes[s];
    const double f = 2.0 * g->m * g->n * g->k;
    for (int q = 0; q < 3; q++) mix[q] += g->per_chunk * best[s][q];
    printf("  %3dx%3dx%3d%s%s %-26s sgemm %6.1f GFLOP/s | ieee %6.1f = %5.1f %% | highest "
           "%6.1f us = %5.1f %%\n",
           g->m, g->n, g->k, g->a_trans ? " A^T" : "    ", g->plus ? " +=" : "   ", g->what,
           f / best[s][0] * 1e-9, f / best[s][1] * 1e-9, 100 * best[s][0] / best[s][1],
           best[s][2] * 1e6, 100 * 6 * best[s][0] / best[s][2]);
    json_array_append_new(
        jg, json_pack("{sssisisisbsbsfsfsfsfsf}", "what", g->what, "m", g->m, "n", g->n, "k",
                      g->k, "a_trans", g->a_trans, "plus", g->plus, "sgemm_seconds", best[s][0],
                      "ieee_seconds", best[s][1], "highest_seconds", best[s][2],
                      "ieee_pct_of_sgemm", 100 * best[s][0] / best[s][1],
                      "highest_pct_of_6_sgemm", 100 * 6 * best[s][0] / best[s][2]));
  }
  printf("  one chunk's products (scan, weighted by count): ieee %5.1f %% of sgemm, highest "
         "%5.1f %% of 6 sgemm\n", 100 * mix[0] / mix[1], 100 * 6 * mix[0] / mix[2]);
  fflush(stdout);
  json_t *jo = json_pack("{sosfsf}", "shapes", jg, "chunk_ieee_pct_of_sgemm", 100 * mix[0] / mix[1],
                         "chunk_highest_pct_of_6_sgemm", 100 * 6 * mix[0] / mix[2]);
  json_object_set_new(root, "gemm", jo);
  gdn_free(w.a);
  gdn_free(w.b);
  gdn_free(w.c);
  gdn_free(w.t);
  gdn_free(w.ws);
  gdn_free(w.mem_a);
  gdn_free(w.mem_b);
  return 0;
}

/* ---- kernel figures ------------------------------------------------------- */

typedef struct figure {
  const char *kernel; /* "scan", "affine-prefix" */
  int64_t H, D;
  int threads;
  kern_matmul mm;
  int ftz;
  double seconds, gflop;
} figure;

/* Best seconds of `reps` calls (each including the allocation of out). */
static int time_kernel(const gdn_inputs *in, const char *kernel, int64_t D, kern_matmul mm,
                       int ftz, int threads, int reps, double *best) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F32;
  cfg.matmul = mm;
  cfg.ftz = ftz;
  cfg.chunk = 64;
  cfg.devices = D;
  gdn_threads_set(threads);
  gdn_error e;
  gdn_error_init(&e);
  const int affine = !strcmp(kernel, "affine-prefix");
  *best = 0;
  for (int r = 0; r < reps; r++) {
    gdn_outputs out;
    gdn_outputs_init(&out);
    double t0 = now();
    int rc = affine ? kern_affine_prefix(in, &cfg, &out, &e) : kern_scan(in, &cfg, &out, &e);
    double dt = now() - t0;
    gdn_outputs_clear(&out);
    if (rc) {
      fprintf(stderr, "bench_kernels: %s\n", e.msg);
      return rc;
    }
    if (r == 0 || dt < *best) *best = dt;
  }
  return 0;
}

/* Section 6: what subnormals cost.  kern_scan (D = 1) and
 * kern_affine_prefix (D = 8: the fold multiplies a shard's decays together)
 * at H = 1, 1 thread, gates as a model initialises them (subnormal in-chunk
 * decays), in ieee and highest, each with ftz off (IEEE subnormals, the bits
 * the kernels must keep) and on; the eight interleaved call after call, best
 * of `reps` each, in CPU time. */
static int subnormal_section(int64_t T, int reps, json_t *root) {
  gdn_shape s = {1, T, 1, 1, 128, 128};
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts o = {1, 0, 0};
  gdn_error e;
  gdn_error_init(&e);
  if (gdn_synth_generate(&in, &s, &o, &e)) {
    fprintf(stderr, "bench_kernels: %s\n", e.msg);
    return 3;
  }
  static const kern_matmul mm[2] = {KERN_MATMUL_IEEE, KERN_MATMUL_HIGHEST};
  static const char *kname[2] = {"scan", "affine-prefix D=8"};
  double best[2][2][2];
  for (int i = 0; i < 8; i++) (&best[0][0][0])[i] = 1e30;
  gdn_threads_set(1);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.chunk = 64;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++)
      for (int m = 0; m < 2; m++)
        for (int f = 0; f < 2; f++) {
          cfg.matmul = mm[m];
          cfg.ftz = f;
          cfg.devices = k ? 8 : 1;
          gdn_outputs out;
          gdn_outputs_init(&out);
          double t0 = cpu_now();
          int rc = k ? kern_affine_prefix(&in, &cfg, &out, &e) : kern_scan(&in, &cfg, &out, &e);
          double t = cpu_now() - t0;
          gdn_outputs_clear(&out);
          if (rc) {
            fprintf(stderr, "bench_kernels: %s\n", e.msg);
            return 3;
          }
          if (t < best[k][m][f]) best[k][m][f] = t;
        }
  gdn_inputs_clear(&in);
  json_t *j = json_array();
  printf("subnormals: H=1 T=%" PRId64 " 1 thread, gates init, CPU s, best of %d interleaved\n", T,
         reps);
  for (int k = 0; k < 2; k++)
    for (int m = 0; m < 2; m++) {
      const double *b = best[k][m];
      printf("  %-18s %-8s ftz off %7.4f s, ftz on %7.4f s: off / on x%.2f\n", kname[k],
             kern_matmul_name(mm[m]), b[0], b[1], b[0] / b[1]);
      json_array_append_new(j, json_pack("{sssssIsfsfsf}", "kernel", k ? "affine-prefix" : "scan",
                                         "matmul", kern_matmul_name(mm[m]), "devices",
                                         (json_int_t)(k ? 8 : 1), "ftz_off_seconds", b[0],
                                         "ftz_on_seconds", b[1], "off_over_on", b[0] / b[1]));
    }
  fflush(stdout);
  json_object_set_new(root, "subnormals",
                      json_pack("{sIso}", "T", (json_int_t)T, "figures", j));
  return 0;
}

static json_t *figure_json(const figure *f, const peak *pk, int all) {
  json_t *o = json_pack("{sssIsIsisssbsfsfsf}", "kernel", f->kernel, "H", (json_int_t)f->H,
                        "devices", (json_int_t)f->D, "threads", f->threads, "matmul",
                        kern_matmul_name(f->mm), "ftz", f->ftz, "seconds", f->seconds, "gflop",
                        f->gflop, "gflops", f->gflop / f->seconds);
  double p = pk->gflops[f->threads == 1 ? 0 : 1];
  if (o && p > 0 && (f->threads == 1 || f->threads == all))
    json_object_set_new(o, "pct_of_openblas", json_real(100.0 * f->gflop / f->seconds / p));
  return o;
}

static int parse_list(const char *s, int64_t *v, int max) {
  int n = 0;
  while (s && *s && n < max) {
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end == s || x < 1) return -1;
    v[n++] = x;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

static void machine_json(json_t *root) {
  char model[256] = "unknown", line[512];
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10)) {
      char *c = strchr(line, ':');
      if (c) {
        snprintf(model, sizeof model, "%s", c + 2);
        model[strcspn(model, "\n")] = 0;
      }
      break;
    }
  if (f) fclose(f);
  double l1 = -1, l5 = -1, l15 = -1;
  f = fopen("/proc/loadavg", "r");
  if (f && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) != 3) l1 = l5 = l15 = -1;
  if (f) fclose(f);
  json_object_set_new(root, "machine",
                      json_pack("{sssisfsfsf}", "cpu", model, "threads", gdn_threads_get(),
                                "load1_at_start", l1, "load5_at_start", l5, "load15_at_start",
                                l15));
}

int main(int argc, char **argv) {
  int64_t T = 65536;
  int reps = 3, threads = gdn_threads_get(), no_modes = 0, gemm_reps = 30, gemm_only = 0, sub_reps = 0;
  int64_t sub_T = 8192, kda_T = 8192, kda_H = 1;
  int kda_reps = 0;
  int64_t heads[8] = {4, 1}, devices[8] = {1, 4, 16}, modes_heads = 0;
  int nheads = 2, ndev = 3;
  const char *json_path = NULL, *torch_path = NULL, *label = "";
  unsigned gates = GDN_SYNTH_SLOW_GATES;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = 1;
    if (!strcmp(a, "--T") && v) T = strtoll(v, NULL, 10), i++;
    else if (!strcmp(a, "--reps") && v) reps = atoi(v), i++;
    else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
    else if (!strcmp(a, "--heads") && v) ok = (nheads = parse_list(v, heads, 8)) > 0, i++;
    else if (!strcmp(a, "--devices") && v) ok = (ndev = parse_list(v, devices, 8)) > 0, i++;
    else if (!strcmp(a, "--modes-heads") && v) modes_heads = strtoll(v, NULL, 10), i++;
    else if (!strcmp(a, "--torch") && v) torch_path = v, i++;
    else if (!strcmp(a, "--json") && v) json_path = v, i++;
    else if (!strcmp(a, "--label") && v) label = v, i++;
    else if (!strcmp(a, "--no-modes")) no_modes = 1;
    else if (!strcmp(a, "--gemm-reps") && v) ok = (gemm_reps = atoi(v)) >= 0, i++;
    else if (!strcmp(a, "--gemm-only")) gemm_only = 1;
    else if (!strcmp(a, "--subnormal-reps") && v) ok = (sub_reps = atoi(v)) >= 0, i++;
    else if (!strcmp(a, "--subnormal-T") && v) ok = (sub_T = strtoll(v, NULL, 10)) > 0, i++;
    else if (!strcmp(a, "--kda-reps") && v) ok = (kda_reps = atoi(v)) >= 0, i++;
    else if (!strcmp(a, "--kda-T") && v) ok = (kda_T = strtoll(v, NULL, 10)) > 0, i++;
    else if (!strcmp(a, "--kda-heads") && v) ok = (kda_H = strtoll(v, NULL, 10)) > 0, i++;
    else if (!strcmp(a, "--gates") && v) {
      ok = !strcmp(v, "slow") || !strcmp(v, "init");
      gates = strcmp(v, "init") ? GDN_SYNTH_SLOW_GATES : 0;
      i++;
    }
    else ok = 0;
    if (!ok || T < 1 || reps < 1 || threads < 1) {
      fprintf(stderr,
              "usage: bench_kernels [--T N] [--reps N] [--heads H,...] [--devices D,...] "
              "[--threads N] [--modes-heads H] [--torch FILE] [--json FILE] [--label TEXT] "
              "[--no-modes] [--gates slow|init] [--gemm-reps N] [--gemm-only] [--subnormal-reps N] [--subnormal-T N] [--kda-reps N] [--kda-T N] [--kda-heads H]\n");
      return 2;
    }
  }
  if (modes_heads < 1) modes_heads = heads[0];
  json_t *root = json_object(), *jfig = json_array(), *jmodes = json_array(),
         *jspeed = json_array();
  json_object_set_new(root, "tool", json_string("bench_kernels"));
  json_object_set_new(root, "label", json_string(label));
  json_object_set_new(root, "shape", json_pack("{sIsIsIsIsI}", "B", (json_int_t)1, "T",
                                               (json_int_t)T, "Dk", (json_int_t)128, "Dv",
                                               (json_int_t)128, "C", (json_int_t)64));
  machine_json(root);
  peak pk = {{0, 0}, {1, threads}};
  peak_update(&pk, 0, 1);
  if (threads > 1) peak_update(&pk, 1, threads);
#ifdef BENCH_OPENBLAS
  printf("peak: OpenBLAS sgemm 512^3  1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s (%s)\n",
         pk.gflops[0], threads, pk.gflops[threads > 1 ? 1 : 0], openblas_get_config());
#else
  printf("peak: OpenBLAS not built in: no percentages\n");
#endif
  fflush(stdout);
  if (gemm_reps > 0 && gemm_section(gemm_reps, root)) return 3;
  if (sub_reps > 0 && subnormal_section(sub_T, sub_reps, root)) return 3;
  if (kda_reps > 0 && bench_kda_section(kda_T, kda_H, threads, kda_reps, root)) return 3;
  if (gemm_only) nheads = 0, torch_path = NULL;

  double scan_seconds_at[8][2] = {{0}}; /* [head index][1 thread, N threads] */
  int th_list[2] = {1, threads}, nth = threads > 1 ? 2 : 1;
  for (int hi = 0; hi < nheads; hi++) {
    gdn_shape s = {1, T, heads[hi], heads[hi], 128, 128};
    gdn_inputs in;
    gdn_inputs_init(&in);
    gdn_synth_opts o = {1, gates, 0};
    gdn_error e;
    gdn_error_init(&e);
    if (gdn_synth_generate(&in, &s, &o, &e)) {
      fprintf(stderr, "bench_kernels: %s\n", e.msg);
      return 3;
    }
    /* ieee figures, 1 thread and N */
    for (int k = 0; k < 1 + ndev; k++) {
      const char *kernel = k == 0 ? "scan" : "affine-prefix";
      const int64_t D = k == 0 ? 1 : devices[k - 1];
      if (D > gdn_shape_chunks(&s, 64)) continue;
      double secs[2] = {0, 0};
      for (int ti = 0; ti < nth; ti++) {
        peak_update(&pk, ti, th_list[ti]);
        figure f = {kernel, heads[hi], D, th_list[ti], KERN_MATMUL_IEEE, 0, 0, 0};
        if (time_kernel(&in, kernel, D, KERN_MATMUL_IEEE, 0, th_list[ti], reps, &f.seconds))
          return 3;
        f.gflop = flops(&s, 64, D, k > 0) * 1e-9;
        secs[ti] = f.seconds;
        if (k == 0) scan_seconds_at[hi][ti] = f.seconds;
        double p = pk.gflops[ti];
        printf("%-14s D=%-3" PRId64 " ieee     H=%" PRId64 " T=%" PRId64 " threads=%d: %7.3f s  "
               "%6.2f GFLOP/s",
               kernel, D, heads[hi], T, th_list[ti], f.seconds, f.gflop / f.seconds);
        if (p > 0) printf("  = %5.1f %% of OpenBLAS sgemm (%d thr)", 100 * f.gflop / f.seconds / p,
                          th_list[ti]);
        printf("\n");
        fflush(stdout);
        json_array_append_new(jfig, figure_json(&f, &pk, threads));
      }
      if (nth == 2) {
        printf("%-14s D=%-3" PRId64 "          H=%" PRId64 ": %d threads / 1 thread speedup x%.2f\n",
               kernel, D, heads[hi], threads, secs[0] / secs[1]);
        json_array_append_new(jspeed, json_pack("{sssIsIsisf}", "kernel", kernel, "H",
                                                (json_int_t)heads[hi], "devices", (json_int_t)D,
                                                "threads", threads, "speedup", secs[0] / secs[1]));
      }
    }
    /* the matmul modes */
    if (!no_modes && heads[hi] == modes_heads) {
      static const struct {
        kern_matmul mm;
        int ftz;
      } md[] = {{KERN_MATMUL_IEEE, 0}, {KERN_MATMUL_IEEE, 1},    {KERN_MATMUL_DEFAULT, 0},
                {KERN_MATMUL_HIGH, 0}, {KERN_MATMUL_HIGHEST, 0}, {KERN_MATMUL_HIGHEST, 1}};
      const int64_t Dm = devices[ndev / 2] <= gdn_shape_chunks(&s, 64) ? devices[ndev / 2] : 1;
      for (int k = 0; k < 2; k++) {
        const char *kernel = k == 0 ? "scan" : "affine-prefix";
        const int64_t D = k == 0 ? 1 : Dm;
        double t_ieee = 0;
        for (size_t mi = 0; mi < sizeof md / sizeof md[0]; mi++) {
          figure f = {kernel, heads[hi], D, threads, md[mi].mm, md[mi].ftz, 0, 0};
          if (time_kernel(&in, kernel, D, md[mi].mm, md[mi].ftz, threads, reps, &f.seconds))
            return 3;
          f.gflop = flops(&s, 64, D, k > 0) * 1e-9;
          if (mi == 0) t_ieee = f.seconds;
          printf("%-14s D=%-3" PRId64 " %-7s%s H=%" PRId64 " threads=%d: %7.3f s  %6.2f GFLOP/s  "
                 "x%.2f the time of ieee\n",
                 kernel, D, kern_matmul_name(md[mi].mm), md[mi].ftz ? "+ftz" : "    ", heads[hi],
                 threads, f.seconds, f.gflop / f.seconds, f.seconds / t_ieee);
          fflush(stdout);
          json_t *j = figure_json(&f, &pk, threads);
          json_object_set_new(j, "ratio_to_ieee", json_real(f.seconds / t_ieee));
          json_array_append_new(jmodes, j);
        }
      }
    }
    gdn_inputs_clear(&in);
  }

  /* the PyTorch peer */
  if (torch_path) {
    json_error_t je;
    json_t *tj = json_load_file(torch_path, 0, &je);
    if (!tj) {
      fprintf(stderr, "bench_kernels: %s: %s\n", torch_path, je.text);
      return 3;
    }
    double ts = json_real_value(json_object_get(tj, "seconds"));
    int tthr = (int)json_integer_value(json_object_get(tj, "threads"));
    int64_t tH = json_integer_value(json_object_get(tj, "H")),
            tT = json_integer_value(json_object_get(tj, "T"));
    int hi = -1;
    for (int i = 0; i < nheads; i++)
      if (heads[i] == tH) hi = i;
    int ti = tthr == 1 ? 0 : (tthr == threads ? 1 : -1);
    if (hi < 0 || ti < 0 || tT != T || ts <= 0) {
      fprintf(stderr, "bench_kernels: %s: the torch run (H=%" PRId64 ", T=%" PRId64
              ", %d threads) matches no scan figure here\n", torch_path, tH, tT, tthr);
      return 3;
    }
    double ours = scan_seconds_at[hi][ti];
    printf("torch peer     (%s, float32, H=%" PRId64 " T=%" PRId64 " threads=%d): %.3f s;  "
           "kern_scan %.3f s;  ours is x%.2f faster\n",
           json_string_value(json_object_get(tj, "impl")), tH, T, tthr, ts, ours, ts / ours);
    json_object_set_new(tj, "ours_seconds", json_real(ours));
    json_object_set_new(tj, "ratio_torch_over_ours", json_real(ts / ours));
    json_object_set_new(root, "torch", tj);
  }
  json_object_set_new(root, "peak_openblas_sgemm_512",
                      json_pack("{sisfsisf}", "threads_1", pk.threads[0], "gflops_1",
                                pk.gflops[0], "threads_n", pk.threads[1], "gflops_n",
                                pk.gflops[threads > 1 ? 1 : 0]));
  json_object_set_new(root, "ieee", jfig);
  json_object_set_new(root, "speedup", jspeed);
  json_object_set_new(root, "modes", jmodes);
  double l1 = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fscanf(f, "%lf", &l1) != 1) l1 = -1;
  if (f) fclose(f);
  json_object_set_new(json_object_get(root, "machine"), "load1_at_end", json_real(l1));
  if (json_path && json_dump_file(root, json_path, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) {
    fprintf(stderr, "bench_kernels: cannot write %s\n", json_path);
    return 3;
  }
  json_decref(root);
  return 0;
}
