#include "parity_subject.h"

#include <pthread.h>
#include <string.h>

const char *const parity_subject_kind_names[] = {"scan", "affine-prefix", "external", NULL};

/* o is rounded to the kernel's output dtype; ht stays float32 (binary64 in
 * the float64 mode), as MaxText returns it. */
static void kernel_dtypes(parity_subject_run *s, const parity_produce_ctx *cx) {
  s->present = PARITY_TENSOR_FORWARD;
  s->out_dtype[PARITY_T_O] = kern_output_dtype(cx->cfg, cx->in->bf16_mask);
  s->out_dtype[PARITY_T_HT] = cx->cfg->dtype == GDN_DTYPE_F64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
}

/* With cotangents, the kernel's backward with the same config: the six
 * gradient rows, each rounded to the compute dtype (kern_vjp.h). */
static int kernel_grads(parity_subject_run *s, const parity_produce_ctx *cx,
                        int (*vjp)(const gdn_inputs *, const gdn_cotangents *, const kern_config *,
                                   gdn_grads *, gdn_error *),
                        gdn_error *e) {
  if (!cx->ct) return GDN_OK;
  int rc = vjp(cx->in, cx->ct, cx->cfg, &s->owned_grads, e);
  if (rc) return rc;
  s->grads = &s->owned_grads;
  s->present |= PARITY_TENSOR_GRADS;
  for (int t = 0; t < PARITY_T_N; t++)
    if (parity_tensors[t].grad) s->out_dtype[t] = s->owned_grads.dtype;
  return GDN_OK;
}

/* The harness reads every output through parity_vals (all forms), so a
 * float32 kernel's o is held as float32 (half the memory), or as codes
 * against the reference when there is one (an eighth): the same values
 * (kern_out.h). */
static void ask_compact(parity_subject_run *s, const parity_produce_ctx *cx) {
  s->owned.f32_ok = 1;
  /* Codes only where the kernel is float32-accurate (float32 compute, IEEE
   * or six-pass matmuls: about 1 % exceptions at T = 16384): bfloat16
   * compute or one- and three-pass matmuls put most elements hundreds of
   * steps away, each an exception of 16 bytes. */
  const int accurate = cx->cfg->dtype == GDN_DTYPE_F32 &&
                       (cx->cfg->matmul == KERN_MATMUL_IEEE || cx->cfg->matmul == KERN_MATMUL_HIGHEST);
  s->owned.code_base = accurate ? cx->code_base : NULL;
}

static int produce_scan(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  ask_compact(s, cx);
  int rc = kern_scan(cx->in, cx->cfg, &s->owned, e);
  if (rc) return rc;
  s->out = &s->owned;
  kernel_dtypes(s, cx);
  return kernel_grads(s, cx, kern_scan_vjp, e);
}

static int produce_affine(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  ask_compact(s, cx);
  int rc = kern_affine_prefix_seams(cx->in, cx->cfg, &s->owned, cx->want_seams ? &s->seams : NULL, e);
  if (rc) return rc;
  s->has_seams = cx->want_seams;
  s->out = &s->owned;
  kernel_dtypes(s, cx);
  return kernel_grads(s, cx, kern_affine_prefix_vjp, e);
}

/* Borrowed as stored: o in its stored dtype, ht (when present) float32 as
 * the fixture schema stores it. */
static int produce_external(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  (void)cx;
  if (!s->ext || !s->ext->out)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "subject %s: no external output bound", s->name);
  s->out = s->ext->out;
  s->present = PARITY_TENSOR_O | (s->ext->has_ht || s->ext->ht_docs ? PARITY_TENSOR_HT : 0u);
  s->out_dtype[PARITY_T_O] = s->ext->out->dtype;
  s->out_dtype[PARITY_T_HT] = GDN_DTYPE_F32;
  if (s->ext->grads && cx->ct) { /* judged only against the oracle's VJP for the same cotangents */
    s->grads = s->ext->grads;
    s->present |= s->ext->grads_present;
    for (int t = 0; t < PARITY_T_N; t++)
      if (parity_tensors[t].grad) s->out_dtype[t] = s->ext->grads->dtype;
  }
  return GDN_OK;
}

const parity_subject_methods parity_subject_scan = {"scan", PARITY_SUBJ_SCAN, PARITY_STAGE_CHUNK,
                                                    PARITY_ROLE_BASELINE, 0, produce_scan};
const parity_subject_methods parity_subject_affine = {"affine-prefix", PARITY_SUBJ_AFFINE, PARITY_STAGE_CASE,
                                                      PARITY_ROLE_CANDIDATE, 1, produce_affine};
/* Not against the scan: an external output may declare other numerics than
 * the case's scan, and the results format has no place for it yet. */
const parity_subject_methods parity_subject_external = {"external", PARITY_SUBJ_EXTERNAL, PARITY_STAGE_INPUT,
                                                        PARITY_ROLE_JUDGED, 0, produce_external};

/* The mutant rows: built once from the catalogue (names are the
 * catalogue's own strings). */
static parity_subject_methods mutant_rows[KERN_MUTANT_COUNT];
static pthread_once_t mutant_rows_once = PTHREAD_ONCE_INIT;

/* The affine-prefix kernel with the row's bug; the row's index is the
 * mutant.  A forward row gives the forward only (o, ht: it has no
 * backward, so with cotangents its gradients are not judged); a backward
 * row (kern_mutant_row.backward) gives the correct forward and, with
 * cotangents, its broken backward's gradients. */
static int produce_mutant(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  kern_config cfg = *cx->cfg;
  cfg.mutant = parity_subject_mutant_of(s->m);
  if (cfg.mutant == KERN_MUTANT_NONE)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "subject %s: not a mutant row", s->name);
  int rc = kern_affine_prefix_seams(cx->in, &cfg, &s->owned, NULL, e);
  if (rc) return rc;
  s->out = &s->owned;
  kernel_dtypes(s, cx);
  if (!kern_mutant_row_of(cfg.mutant)->backward) return GDN_OK;
  parity_produce_ctx gx = *cx;
  gx.cfg = &cfg;
  return kernel_grads(s, &gx, kern_affine_prefix_vjp, e);
}

static void mutant_rows_build(void) {
  for (int m = 1; m < KERN_MUTANT_COUNT; m++)
    mutant_rows[m] = (parity_subject_methods){kern_mutant_name((kern_mutant)m), PARITY_SUBJ_AFFINE,
                                              PARITY_STAGE_CASE, PARITY_ROLE_JUDGED, 1, produce_mutant};
}

const parity_subject_methods *parity_subject_mutant(kern_mutant m) {
  if ((unsigned)m - 1u >= (unsigned)KERN_MUTANT_COUNT - 1u) return NULL;
  pthread_once(&mutant_rows_once, mutant_rows_build);
  return &mutant_rows[m];
}

kern_mutant parity_subject_mutant_of(const parity_subject_methods *m) {
  for (int i = 1; i < KERN_MUTANT_COUNT; i++)
    if (m == &mutant_rows[i]) return (kern_mutant)i;
  return KERN_MUTANT_NONE;
}

const parity_subject_methods *const parity_subject_rows[] = {&parity_subject_scan, &parity_subject_affine,
                                                             &parity_subject_external};
const size_t parity_subject_n_rows = sizeof parity_subject_rows / sizeof parity_subject_rows[0];

int parity_subject_name_is_own(const char *name) {
  for (size_t i = 0; name && i < parity_subject_n_rows; i++)
    if (parity_subject_rows[i]->kind != PARITY_SUBJ_EXTERNAL && !strcmp(name, parity_subject_rows[i]->name)) return 1;
  return name && !strcmp(name, "affine-prefix-mpi"); /* parity_dist.c's row, built with MPI only */
}

void parity_subject_run_init(parity_subject_run *s, const parity_subject_methods *m) {
  memset(s, 0, sizeof *s);
  s->m = m;
  s->name = m ? m->name : NULL;
  gdn_outputs_init(&s->owned);
  gdn_grads_init(&s->owned_grads);
  kern_affine_seams_init(&s->seams);
}

void parity_subject_park(parity_subject_run *s) {
  gdn_grads_clear(&s->owned_grads); /* outputs are kept for reuse; gradients are not */
  kern_affine_seams_clear(&s->seams);
  s->out = NULL;
  s->grads = NULL;
  s->present = 0;
  s->has_seams = 0;
}

void parity_subject_release(parity_subject_run *s) {
  gdn_outputs_clear(&s->owned);
  parity_subject_park(s);
}

void parity_subject_run_clear(parity_subject_run *s) {
  parity_subject_release(s);
  parity_subject_run_init(s, s->m);
}

int parity_subject_produce(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  parity_subject_park(s); /* owned buffers kept: the kernels reuse them (kern_out_alloc) */
  int rc = s->m->produce(s, cx, e);
  if (rc) parity_subject_release(s);
  return rc;
}
