/* bench_kernels: GFLOP/s of the float32 kernels at Qwen 3.5's head size.
 *
 *   bench_kernels [T [REPS]]   (default T = 65536, REPS = 1; B = 1,
 *                               Dk = Dv = 128, C = 64)
 *
 * Figures: kern_scan and kern_affine_prefix (D = 1, 4, 16) at H = 1 and
 * H = 4 value heads (Hk = Hv), with 1 thread and with all threads.  One line
 * per figure: the best of REPS calls (each call's time includes allocating
 * and writing `out`, as a caller sees it).  Then the float32 scan (H = 1,
 * 1 thread) in each matmul precision mode -- ieee, default, high, highest
 * (kern_mm.h: 1, 1, 3, 6 gemm passes over bfloat16 parts, plus splitting)
 * -- with its time relative to ieee; the GFLOP/s column of those lines
 * counts the algorithm's flops once, whatever the passes.  Not run by
 * `meson test`.
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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
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

/* Returns the best time of REPS calls in *best (NULL: not wanted). */
static int run_mode(const gdn_inputs *in, int64_t C, int64_t D, int affine, int threads, int reps,
                    kern_matmul mm, double *best) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F32;
  cfg.matmul = mm;
  cfg.chunk = C;
  cfg.devices = D;
  gdn_threads_set(threads);
  gdn_outputs out;
  gdn_outputs_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  double t = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    int rc = affine ? kern_affine_prefix(in, &cfg, &out, &e) : kern_scan(in, &cfg, &out, &e);
    double dt = now() - t0;
    gdn_outputs_clear(&out);
    if (rc) {
      fprintf(stderr, "bench_kernels: %s\n", e.msg);
      return rc;
    }
    t = r == 0 || dt < t ? dt : t;
  }
  const gdn_shape *s = &in->shape;
  double f = flops(s, C, D, affine);
  char name[48];
  if (mm == KERN_MATMUL_IEEE)
    snprintf(name, sizeof name, affine ? "affine-prefix D=%ld" : "scan", (long)D);
  else
    snprintf(name, sizeof name, "scan matmul=%s", kern_matmul_name(mm));
  printf("%-20s float32 B=%ld T=%ld H=%ld Dk=%ld Dv=%ld C=%ld threads=%d: %7.2f GFLOP in %7.3f s "
         "= %6.2f GFLOP/s",
         name, (long)s->B, (long)s->T, (long)s->Hv, (long)s->Dk, (long)s->Dv, (long)C, threads,
         f * 1e-9, t, f * 1e-9 / t);
  if (best) *best = t;
  return 0;
}

static int run(const gdn_inputs *in, int64_t C, int64_t D, int affine, int threads, int reps) {
  int rc = run_mode(in, C, D, affine, threads, reps, KERN_MATMUL_IEEE, NULL);
  if (!rc) printf("\n");
  fflush(stdout);
  return rc;
}

int main(int argc, char **argv) {
  int64_t T = argc > 1 ? strtoll(argv[1], NULL, 10) : 65536;
  int reps = argc > 2 ? atoi(argv[2]) : 1;
  if (T < 1 || reps < 1) {
    fprintf(stderr, "usage: bench_kernels [T >= 1 [REPS >= 1]]\n");
    return 2;
  }
  const int all = gdn_threads_get();
  static const int64_t heads[] = {1, 4}, devices[] = {1, 4, 16};
  for (int hi = 0; hi < 2; hi++) {
    gdn_shape s = {1, T, heads[hi], heads[hi], 128, 128};
    gdn_inputs in;
    gdn_inputs_init(&in);
    gdn_synth_opts o = {1, 0, 0};
    gdn_error e;
    gdn_error_init(&e);
    if (gdn_synth_generate(&in, &s, &o, &e)) {
      fprintf(stderr, "bench_kernels: %s\n", e.msg);
      return 3;
    }
    int th[2] = {1, all};
    for (int ti = 0; ti < (all > 1 ? 2 : 1); ti++) {
      if (run(&in, 64, 1, 0, th[ti], reps)) return 3;
      for (int di = 0; di < 3; di++)
        if (devices[di] <= gdn_shape_chunks(&s, 64) &&
            run(&in, 64, devices[di], 1, th[ti], reps))
          return 3;
    }
    if (hi == 0) { /* the matmul precision modes, float32 scan, 1 thread */
      double t_ieee = 0;
      for (int mm = 0; mm < 4; mm++) {
        double t;
        if (run_mode(&in, 64, 1, 0, 1, reps, (kern_matmul)mm, &t)) return 3;
        if (mm == 0) t_ieee = t;
        printf("  x%.2f vs ieee\n", t / t_ieee);
        fflush(stdout);
      }
    }
    gdn_inputs_clear(&in);
  }
  return 0;
}
