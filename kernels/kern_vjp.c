/* kern_scan_vjp and kern_affine_prefix_vjp: checks, modes, the two
 * instantiations (kern_vjp.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_gemm.h"
#include "kern_mm.h"
#include "kern_num.h"
#include "kern_prefix.h"
#include "kern_size.h"
#include "kern_vjp.h"

#define KERN_REAL 32
#include "kern_vjp_drv_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_vjp_drv_tmpl.h"
#undef KERN_REAL

/* The modes the backward implements (kern_vjp.h), as a table. */
static int check_modes(const kern_config *cfg, int affine, const char *who, gdn_error *e) {
  if (affine && kern_prefix_supported(cfg->prefix, e)) return gdn_error_prefix(e, "%s: ", who);
  /* a backward row lives in the affine-prefix backward (the scan's ignores
   * it, as kern_scan ignores every row); a forward row has no backward */
  if (cfg->mutant != KERN_MUTANT_NONE && !kern_mutant_row_of(cfg->mutant)->backward)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: mutant %s has no backward", who, kern_mutant_name(cfg->mutant));
  return GDN_OK;
}

/* The schedule's compositions x[l] = x[l] o x[e], in execution order, as
 * kern_prefix_inclusive performs them (its trace, on 1 x 1 pairs): the
 * backward replays exactly the forward's pairing.  *ops is gdn_malloc'd. */
static int prefix_ops(kern_prefix schedule, int64_t D, int64_t *nops, int64_t **ops, gdn_error *e) {
  *nops = 0, *ops = NULL;
  if (D < 2) return GDN_OK;
  int64_t lg = 0;
  while ((INT64_C(1) << lg) < D) lg++;
  const int64_t cap = D * (lg + 2);
  const size_t work = kern_prefix_work_elems_f64(schedule, D, 1, 1, KERN_MATMUL_IEEE);
  double *buf = gdn_calloc(work + 2 * (size_t)D, sizeof(double), "kern vjp prefix schedule", e);
  int64_t *trace = buf ? gdn_calloc(3 * (size_t)cap, sizeof(int64_t), "kern vjp prefix trace", e) : NULL;
  *ops = trace ? gdn_calloc(2 * (size_t)cap, sizeof(int64_t), "kern vjp prefix operations", e) : NULL;
  if (!*ops) {
    gdn_free(trace);
    gdn_free(buf);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  kern_prefix_stats st = {0, 0, trace, cap};
  kern_prefix_inclusive_f64(schedule, 0, KERN_MATMUL_IEEE, D, 1, 1, buf + work, buf + work + D, buf, &st);
  *nops = st.compositions < cap ? st.compositions : cap;
  for (int64_t i = 0; i < *nops; i++) (*ops)[2 * i] = trace[3 * i + 1], (*ops)[2 * i + 1] = trace[3 * i + 2];
  gdn_free(trace);
  gdn_free(buf);
  return GDN_OK;
}

static int run(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
               gdn_grads *out, int affine, double *dg_terms, gdn_error *e) {
  const char *who = affine ? "kern_affine_prefix_vjp" : "kern_scan_vjp";
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "%s: gradients missing (NULL)", who);
  gdn_grads_clear(out);
  kern_num num;
  int rc = kern_num_setup(&num, in, cfg, who, 1, e);
  if (!rc) rc = check_modes(cfg, affine, who, e);
  if (!rc) rc = gdn_cotangents_check(ct, &in->shape, who, e);
  if (!rc && (rc = gdn_grads_alloc(out, &in->shape, num.dtype == GDN_DTYPE_F64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, e)))
    gdn_error_prefix(e, "%s: ", who);
  const int64_t D = affine ? cfg->devices : 1;
  int64_t nops = 0, *ops = NULL;
  if (!rc) {
    rc = prefix_ops(cfg->prefix, D, &nops, &ops, e);
    if (!rc)
      rc = num.dtype == GDN_DTYPE_F64 ? vj_run_f64(in, ct, cfg, &num, D, nops, ops, out, dg_terms, e)
                                      : vj_run_f32(in, ct, cfg, &num, D, nops, ops, out, dg_terms, e);
    if (rc) gdn_error_prefix(e, "%s: ", who);
  }
  gdn_free(ops);
  if (rc) gdn_grads_clear(out);
  return rc;
}

int kern_scan_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                  gdn_grads *out, gdn_error *e) {
  return run(in, ct, cfg, out, 0, NULL, e);
}

int kern_scan_vjp_terms(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                        gdn_grads *out, double *dg_terms, gdn_error *e) {
  return run(in, ct, cfg, out, 0, dg_terms, e);
}

int kern_affine_prefix_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg,
                           gdn_grads *out, gdn_error *e) {
  return run(in, ct, cfg, out, 1, NULL, e);
}
