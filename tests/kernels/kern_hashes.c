/* kern_hashes: FNV-1a hashes of every float kernel's o, ht and seam states
 * over a grid of configurations -- the "results unchanged, bit for bit"
 * check for work on the kernels' speed.  Not a `meson test` (the hashes
 * depend on the machine's libm expf / exp, so there is no portable golden
 * file): scripts/kern_hashes.sh runs it before and after a change and with
 * several thread counts and diffs the lines.
 *
 *   kern_hashes [THREADS [quick]]
 *
 * One line per (shape, inputs, kernel, dtype, matmul mode, ftz, chunk,
 * devices, prefix): the configuration and the hash of o, ht and (affine)
 * seams h_in, h_out as the doubles the kernel stored.  The grid covers the
 * blocking edges of the gemm (D = 128 heads, Dk > KC = 128, Dv not a multiple
 * of the 16-float panel, chunks that are not multiples of the micro-tile),
 * grouped heads, h0, in-kernel L2 norm, bfloat16-stored inputs, the four
 * matmul modes, bfloat16 compute, ftz, the three prefix schedules and device
 * counts 1, 2, 3, 5 (7 for the long case: shards of unequal length), all
 * with --shard chunks.  A second pass, printed after the first so that a
 * file from before token sharding existed stays a prefix of the output,
 * runs the affine kernel with --shard tokens (tagged "tokens") at the device
 * counts among 2, 3, 4, 5, 7, 11 that divide T (at most three per shape).
 * A third pass (tagged "xla", "leak", "reset") runs the scan and the affine
 * kernel (D = 1, 3, chunk sharding) with --solve xla-expander, and on
 * packed documents (6 per row, gdn_synth_segments) under both semantics, on
 * the small shapes in the first three modes at C = 16 and 64. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= 1099511628211ull;
  }
  return h;
}

typedef struct shape_case {
  gdn_shape s;
  unsigned flags;     /* GDN_SYNTH_* */
  unsigned bf16_mask; /* inputs stored as bfloat16 */
  float decay;        /* g multiplied by this */
  int big;            /* a large case: fewer modes */
} shape_case;

typedef struct mode_case {
  gdn_dtype dt;
  kern_matmul mm;
  int ftz;
} mode_case;

static const shape_case shapes[] = {
    {{2, 517, 2, 4, 16, 12}, GDN_SYNTH_H0, 0, 0.002f, 0},
    {{2, 517, 2, 4, 16, 12}, GDN_SYNTH_QK_PRENORM, 0, 1.0f, 0},
    {{1, 300, 1, 1, 128, 128}, GDN_SYNTH_H0, 0, 0.002f, 0},
    {{1, 300, 1, 1, 128, 128}, GDN_SYNTH_QK_PRENORM | GDN_SYNTH_SLOW_GATES, 0, 1.0f, 0},
    {{1, 640, 1, 2, 16, 16}, GDN_SYNTH_H0, GDN_T_Q | GDN_T_K | GDN_T_V, 0.01f, 0},
    {{1, 333, 1, 1, 64, 200}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 0, 1.0f, 0},
    {{1, 160, 1, 1, 200, 40}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 0, 1.0f, 0},
    {{1, 200, 2, 2, 128, 144}, 0, 0, 0.01f, 0},
    {{1, 2300, 1, 1, 128, 128}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 0, 1.0f, 1},
    {{2, 1100, 1, 3, 128, 128}, GDN_SYNTH_SLOW_GATES, 0, 1.0f, 1},
};
static const mode_case modes[] = {
    {GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0},    {GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0},
    {GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 1}, {GDN_DTYPE_F32, KERN_MATMUL_HIGH, 0},
    {GDN_DTYPE_F32, KERN_MATMUL_DEFAULT, 1}, {GDN_DTYPE_BF16, KERN_MATMUL_DEFAULT, 1},
    {GDN_DTYPE_BF16, KERN_MATMUL_HIGHEST, 1}, {GDN_DTYPE_BF16, KERN_MATMUL_IEEE, 0},
    {GDN_DTYPE_F32, KERN_MATMUL_IEEE, 1},
};
enum { NSHAPE = sizeof shapes / sizeof shapes[0], NMODE = sizeof modes / sizeof modes[0] };

/* Pass 2: packed documents (XLA's solve without segments, then leak and
 * reset packing) for the first three modes, scan and affine. */
static int hash_packed(int si, gdn_inputs *in, gdn_error *e) {
  const shape_case *sc = &shapes[si];
  static const char *const tags[3] = {"xla", "leak", "reset"};
  for (int v = 0; v < 3; v++)
    for (int mi = 0; mi < 3; mi++)
      for (int k = 1; k < 3; k++)
        for (int64_t C = 16; C <= 64; C *= 4)
          for (int64_t D = 1; D <= 3; D += 2) {
            if ((k == 1 && D > 1) || D > gdn_shape_chunks(&sc->s, C)) continue;
            if (v > 0 && !in->seg && gdn_synth_segments(in, 7 + (uint64_t)si, 6, e)) {
              printf("segments %s\n", e->msg);
              return 1;
            }
            in->packing = v == 2 ? GDN_PACKING_RESET : GDN_PACKING_LEAK;
            kern_config c;
            kern_config_init(&c);
            c.dtype = modes[mi].dt;
            c.matmul = modes[mi].mm;
            c.ftz = modes[mi].ftz;
            c.chunk = C;
            c.devices = D;
            c.shard = KERN_SHARD_CHUNKS;
            c.solve = v == 0 ? KERN_SOLVE_XLA_EXPANDER : KERN_SOLVE_SUBSTITUTION;
            gdn_outputs out;
            gdn_outputs_init(&out);
            if (k == 1 ? kern_scan(in, &c, &out, e) : kern_affine_prefix(in, &c, &out, e)) {
              printf("err %s\n", e->msg);
              return 1;
            }
            uint64_t h = 1469598103934665603ull;
            h = fnv(out.o, gdn_shape_numel_v(&sc->s) * sizeof(double), h);
            h = fnv(out.ht, gdn_shape_numel_state(&sc->s) * sizeof(double), h);
            printf("shape%d %s %s %s %s ftz=%d C=%ld D=%ld %016llx\n", si, tags[v],
                   k == 1 ? "scan" : "affine", gdn_dtype_name(modes[mi].dt),
                   kern_matmul_name(modes[mi].mm), modes[mi].ftz, (long)C, (long)D,
                   (unsigned long long)h);
            fflush(stdout);
            gdn_outputs_clear(&out);
          }
  return 0;
}

/* Passes 0 and 1: every mode, kernel, chunk, device count and prefix of a
 * shape, chunk sharding (pass 0) or token sharding (pass 1, affine only). */
static int hash_modes(int pass, int si, const gdn_inputs *in, gdn_error *e) {
  const shape_case *sc = &shapes[si];
  for (int mi = 0; mi < NMODE; mi++) {
    const mode_case *md = &modes[mi];
    if (sc->big && mi > 3) continue;
    for (int k = pass ? 2 : 0; k < 3; k++) {
      static const int64_t Cs[] = {1, 16, 64, 100};
      int64_t Ds[5] = {1, 2, 3, 5, 7};
      if (pass) { /* token sharding: divisors of T only */
        static const int64_t cand[] = {2, 3, 4, 5, 7, 11};
        int nd = 0;
        for (int x = 0; x < 6 && nd < 3; x++)
          if (sc->s.T % cand[x] == 0) Ds[1 + nd++] = cand[x];
        if (nd == 0) break;
        while (nd < 4) Ds[1 + nd++] = 0; /* unused slots */
      }
      for (int ci = 0; ci < 4; ci++)
        for (int dd = 0; dd < 5; dd++)
          for (int pf = 0; pf < 3; pf++) {
            if (k != 2 && (dd > 0 || pf > 0)) continue;
            if (k == 0 && ci > 0) continue; /* the recurrence has no chunks */
            if (k != 0 && Cs[ci] == 1 && (sc->s.Dk > 16 || sc->s.T > 600)) continue;
            if (sc->big && (ci != 2 || (pass ? dd != 1 : (dd != 0 && dd != 4)))) continue;
            if (!sc->big && dd == 4) continue;
            if (pass && (dd == 0 || Ds[dd] == 0)) continue;
            if (pf > 0 && (dd == 0 || mi > 2)) continue;
            kern_config c;
            kern_config_init(&c);
            c.dtype = md->dt;
            c.matmul = md->mm;
            c.ftz = md->ftz;
            c.chunk = Cs[ci];
            c.devices = Ds[dd];
            c.prefix = (kern_prefix)pf;
            c.shard = pass ? KERN_SHARD_TOKENS : KERN_SHARD_CHUNKS;
            if (!pass && Ds[dd] > gdn_shape_chunks(&sc->s, Cs[ci])) continue;
            gdn_outputs out;
            gdn_outputs_init(&out);
            kern_affine_seams sm;
            kern_affine_seams_init(&sm);
            int rc = k == 0   ? kern_recurrent(in, &c, &out, e)
                     : k == 1 ? kern_scan(in, &c, &out, e)
                              : kern_affine_prefix_seams(in, &c, &out, &sm, e);
            if (rc) {
              printf("err %s\n", e->msg);
              return 1;
            }
            uint64_t h = 1469598103934665603ull;
            h = fnv(out.o, gdn_shape_numel_v(&sc->s) * sizeof(double), h);
            h = fnv(out.ht, gdn_shape_numel_state(&sc->s) * sizeof(double), h);
            if (k == 2) {
              size_t n = (size_t)(sm.B * sm.Hv * sm.devices * sm.Dk * sm.Dv);
              h = fnv(sm.h_in, n * sizeof(double), h);
              h = fnv(sm.h_out, n * sizeof(double), h);
            }
            printf("shape%d %s%s %s %s ftz=%d C=%ld D=%ld %s %016llx\n", si, pass ? "tokens " : "",
                   k == 0 ? "recurrent" : k == 1 ? "scan" : "affine", gdn_dtype_name(md->dt),
                   kern_matmul_name(md->mm), md->ftz, (long)Cs[ci], (long)Ds[dd],
                   kern_prefix_name((kern_prefix)pf), (unsigned long long)h);
            fflush(stdout);
            gdn_outputs_clear(&out);
            kern_affine_seams_clear(&sm);
          }
    }
  }
return 0;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int quick = argc > 2 && !strcmp(argv[2], "quick");
  if (threads < 1) {
    fprintf(stderr, "usage: kern_hashes [THREADS >= 1 [quick]]\n");
    return 2;
  }
  gdn_threads_set(threads);
  for (int pass = 0; pass < 3; pass++)
    for (int si = 0; si < NSHAPE; si++) {
      const shape_case *sc = &shapes[si];
      if (quick && sc->big) continue;
      if (pass == 2 && sc->big) continue;
      gdn_inputs in;
      gdn_inputs_init(&in);
      gdn_error e;
      gdn_error_init(&e);
      gdn_synth_opts o = {(uint64_t)(7 + si), sc->flags, sc->bf16_mask};
      if (gdn_synth_generate(&in, &sc->s, &o, &e)) {
        printf("synth %s\n", e.msg);
        return 1;
      }
      for (size_t i = 0; i < gdn_shape_numel_gate(&sc->s); i++) in.g[i] *= sc->decay;
      int rc = pass == 2 ? hash_packed(si, &in, &e) : hash_modes(pass, si, &in, &e);
      gdn_inputs_clear(&in);
      if (rc) return 1;
    }
  return 0;
}
