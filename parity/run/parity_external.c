#include "parity_external.h"

#include "gdn_alloc.h"
#include "parity_json.h"

/* The numerics an output is judged by, from what it declares (never from
 * the command line: --dtype / --matmul-precision describe our kernels, not
 * someone else's output).  The table:
 *   compute_dtype + matmul_precision  as declared
 *   neither                           "numerics not declared": the band of
 *                                     its storage dtype (float32 compute,
 *                                     highest matmul; a bfloat16 o then
 *                                     meets the bfloat16-output band)
 *   bfloat16 or float64 only          completed with matmul highest: their
 *                                     bands do not depend on the matmul mode
 *   float32 only, or matmul only      refused: the float32 bands differ by
 *                                     4000x between matmul modes
 * Unknown names are refused.  *note says which row applied. */
static int output_numerics(const fix_output *fo, gdn_dtype *dt, kern_matmul *mm, const char **note,
                           gdn_error *e) {
  *dt = GDN_DTYPE_F32;
  *mm = KERN_MATMUL_HIGHEST;
  if (fo->compute_dtype && gdn_dtype_parse(fo->compute_dtype, dt, NULL, e))
    return gdn_error_prefix(e, "/outputs/%s: compute_dtype: ", fo->name);
  if (fo->matmul_precision && kern_matmul_parse(fo->matmul_precision, mm, e))
    return gdn_error_prefix(e, "/outputs/%s: matmul_precision: ", fo->name);
  if (fo->compute_dtype && fo->matmul_precision) {
    *note = "declared";
  } else if (!fo->compute_dtype && !fo->matmul_precision) {
    *note = "numerics not declared: judged by the band of its storage dtype (float32 compute, highest matmul)";
  } else if (fo->compute_dtype && *dt != GDN_DTYPE_F32) {
    *note = "matmul_precision not declared: completed as highest (the bfloat16 and float64 bands do not depend on it)";
  } else {
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "/outputs/%s declares %s but not %s: the float32 bands differ by 4000x between matmul "
                         "modes (64u for highest/ieee, 2^-6 for default); declare both or neither",
                         fo->name, fo->compute_dtype ? "compute_dtype" : "matmul_precision",
                         fo->compute_dtype ? "matmul_precision" : "compute_dtype");
  }
  return GDN_OK;
}

/* What the results say about an output's gradients (schema v3). */
static const char *grads_note(const fix_fixture *fx, const fix_output *fo) {
  if (fo->has_grads) return "given: judged against the oracle's VJP for the fixture's /cotangents";
  if (fx->has_cotangents) return "not given (no grads group): judged on o and ht only";
  return "not given (the fixture has no /cotangents): judged on o and ht only";
}

/* The attributes in the schema's order, then the stored dtype of o. */
static json_t *output_attrs(const fix_fixture *fx, const fix_output *fo) {
  json_t *a = json_object();
  if (!a) return NULL;
  int bad = 0;
  if (fo->implementation) bad |= parity_json_set(a, "implementation", json_string(fo->implementation));
  if (!(fo->missing & FIX_ATTR_DEVICES)) bad |= parity_json_set(a, "devices", json_integer(fo->devices));
  if (fo->prefix) bad |= parity_json_set(a, "prefix", json_string(fo->prefix));
  if (fo->matmul_precision) bad |= parity_json_set(a, "matmul_precision", json_string(fo->matmul_precision));
  if (fo->compute_dtype) bad |= parity_json_set(a, "compute_dtype", json_string(fo->compute_dtype));
  if (fo->platform) bad |= parity_json_set(a, "platform", json_string(fo->platform));
  if (fo->shard) bad |= parity_json_set(a, "shard", json_string(fo->shard));
  if (fo->packing) bad |= parity_json_set(a, "packing", json_string(fo->packing));
  if (fo->padding) bad |= parity_json_set(a, "padding", json_string(fo->padding));
  if (fo->final_state) bad |= parity_json_set(a, "final_state", json_string(fo->final_state));
  bad |= parity_json_set(a, "o_dtype", json_string(gdn_dtype_name(fo->out.dtype)));
  /* schema v3: whether the output's gradients were judged */
  bad |= parity_json_set(a, "gradients", json_string(grads_note(fx, fo)));
  if (fo->has_grads) bad |= parity_json_set(a, "grads_dtype", json_string(gdn_dtype_name(fo->grads.dtype)));
  if (bad) json_decref(a);
  return bad ? NULL : a;
}

int parity_externals_from_fixture(const fix_fixture *fx, parity_external **out, gdn_error *e) {
  *out = NULL;
  if (!fx->n_outputs) return GDN_OK;
  parity_external *ext = gdn_calloc(fx->n_outputs, sizeof *ext, "external outputs", e);
  if (!ext) return GDN_ERR_NOMEM;
  for (size_t i = 0; i < fx->n_outputs; i++) {
    const fix_output *fo = &fx->outputs[i];
    if (parity_subject_name_is_own(fo->name)) {
      parity_externals_free(ext, fx->n_outputs);
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "/outputs/%s has the name of one of gdn-parity's own subjects (scan, affine-prefix, "
                           "affine-prefix-mpi), so its results would be written over ours; rename the output "
                           "(for example to jax_%s)", fo->name, fo->name);
    }
    ext[i].name = fo->name;
    ext[i].out = &fo->out;
    ext[i].has_ht = fo->has_ht;
    ext[i].ht_docs = fo->ht_docs;
    ext[i].n_docs = fo->n_docs;
    ext[i].docs_ht = fix_output_docs_ht(fo);
    ext[i].packing_matched = -1;
    ext[i].devices = fo->missing & FIX_ATTR_DEVICES ? 0 : fo->devices;
    const char *note = NULL;
    int rc = output_numerics(fo, &ext[i].dtype, &ext[i].matmul, &note, e);
    if (rc) {
      parity_externals_free(ext, fx->n_outputs);
      return rc;
    }
    ext[i].own_numerics = 1; /* always its own: the command line never sets an output's limits */
    if (fo->has_grads) {
      ext[i].grads = &fo->grads;
      for (int id = 0; id < GDN_GRADS_N; id++)
        if (fo->grads_present & (1u << id)) ext[i].grads_present |= 1u << (PARITY_T_DQ + id);
    }
    if (!(ext[i].attrs = output_attrs(fx, fo)) ||
        parity_json_set(ext[i].attrs, "numerics", json_string(note))) {
      parity_externals_free(ext, fx->n_outputs);
      return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory describing /outputs/%s", fo->name);
    }
  }
  *out = ext;
  return GDN_OK;
}

void parity_externals_free(parity_external *ext, size_t n) {
  for (size_t i = 0; ext && i < n; i++) {
    json_decref(ext[i].attrs);
    if (ext[i].owned_out) gdn_outputs_clear(ext[i].owned_out);
    gdn_free(ext[i].owned_out);
  }
  gdn_free(ext);
}
