#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_gemm.h"
#include "kern_mm.h"
#include "kern_num.h"
#include "kern_out.h"
#include "kern_prefix.h"

void kern_affine_shard(int64_t n_chunks, int64_t devices, int64_t r, int64_t *first_chunk,
                       int64_t *n_local) {
  const int64_t q = n_chunks / devices, rem = n_chunks % devices;
  if (r < rem) {
    *n_local = q + 1;
    *first_chunk = r * (q + 1);
  } else {
    *n_local = q;
    *first_chunk = rem * (q + 1) + (r - rem) * q;
  }
}

void kern_affine_piece(const kern_config *cfg, int64_t T, int64_t r, kern_piece *p) {
  const int64_t C = cfg->chunk, D = cfg->devices;
  if (cfg->shard == KERN_SHARD_TOKENS) {
    const int64_t L = T / D;
    p->t0 = p->base = r * L;
    p->t1 = p->t0 + L;
    p->first = 0;
    p->count = (L + C - 1) / C;
    p->index = r * p->count;
  } else {
    kern_affine_shard((T + C - 1) / C, D, r, &p->first, &p->count);
    p->base = 0;
    p->t0 = p->first * C;
    p->t1 = (p->first + p->count) * C < T ? (p->first + p->count) * C : T;
    p->index = p->first;
  }
  p->pad = p->count * C - (p->t1 - p->base - p->first * C);
}

void kern_affine_seams_init(kern_affine_seams *sm) { memset(sm, 0, sizeof *sm); }

void kern_affine_seams_clear(kern_affine_seams *sm) {
  gdn_free(sm->h_in);
  gdn_free(sm->h_out);
  kern_affine_seams_init(sm);
}

static int seams_alloc(kern_affine_seams *sm, const gdn_shape *s, int64_t D, gdn_error *e) {
  size_t n = 1;
  const int64_t dims[5] = {s->B, s->Hv, D, s->Dk, s->Dv};
  for (int i = 0; i < 5; i++)
    if (gdn_mul_size(n, (size_t)dims[i], &n)) n = SIZE_MAX / sizeof(double) + 1;
  if (!(sm->h_in = gdn_calloc(n, sizeof(double), "kern_affine_prefix seams h_in", e)) ||
      !(sm->h_out = gdn_calloc(n, sizeof(double), "kern_affine_prefix seams h_out", e))) {
    kern_affine_seams_clear(sm);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  sm->B = s->B;
  sm->Hv = s->Hv;
  sm->devices = D;
  sm->Dk = s->Dk;
  sm->Dv = s->Dv;
  return GDN_OK;
}

#include "kern_avx.h"

#define KERN_REAL 32
#include "kern_affine_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_affine_tmpl.h"
#undef KERN_REAL

size_t kern_scan_scratch(const gdn_shape *s, const kern_config *cfg); /* kern_scan.c */

size_t kern_scratch_bytes(const gdn_shape *s, const kern_config *cfg) {
  kern_num num;
  if (kern_num_init(&num, cfg, "kern_affine_prefix", NULL)) return SIZE_MAX;
  const int nt = kern_threads(s);
  size_t a = num.dtype == GDN_DTYPE_F64 ? affine_scratch_f64(s, cfg, num.matmul, nt)
                                        : affine_scratch_f32(s, cfg, num.matmul, nt);
  size_t b = kern_scan_scratch(s, cfg);
  return a > b ? a : b;
}

static int affine_entry(const gdn_inputs *in, const kern_config *cfg,
                        const kern_affine_comm *comm, gdn_outputs *out,
                        kern_affine_seams *seams, gdn_error *e) {
  gdn_outputs_clear(out);
  if (seams) kern_affine_seams_clear(seams);
  kern_num num;
  int rc = kern_num_setup(&num, in, cfg, "kern_affine_prefix", 1, e);
  if (!rc && (rc = kern_prefix_supported(cfg->prefix, e)))
    gdn_error_prefix(e, "kern_affine_prefix: ");
  if (!rc) rc = kern_out_alloc_for(out, in, cfg, "kern_affine_prefix", e);
  if (!rc && seams && (rc = seams_alloc(seams, &in->shape, cfg->devices, e)))
    gdn_error_prefix(e, "kern_affine_prefix: ");
  if (!rc)
    rc = num.dtype == GDN_DTYPE_F64 ? affine_run_f64(in, cfg, &num, comm, out, seams, e)
                                    : affine_run_f32(in, cfg, &num, comm, out, seams, e);
  if (!rc) rc = kern_out_finish(out, e);
  if (rc) {
    gdn_outputs_clear(out);
    if (seams) kern_affine_seams_clear(seams);
  }
  return rc;
}

int kern_affine_prefix_seams(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                             kern_affine_seams *seams, gdn_error *e) {
  return affine_entry(in, cfg, NULL, out, seams, e);
}

int kern_affine_prefix_rank(const gdn_inputs *in, const kern_config *cfg,
                            const kern_affine_comm *comm, gdn_outputs *out, gdn_error *e) {
  if (!comm || !comm->exchange || comm->self < 0 || comm->self >= cfg->devices) {
    gdn_outputs_clear(out);
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "kern_affine_prefix_rank: device %lld is not one of the %lld devices",
                         comm ? (long long)comm->self : -1LL, (long long)cfg->devices);
  }
  return affine_entry(in, cfg, comm, out, NULL, e);
}

int kern_affine_prefix(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                       gdn_error *e) {
  return kern_affine_prefix_seams(in, cfg, out, NULL, e);
}
