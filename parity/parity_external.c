#include "parity_external.h"

#include "gdn_alloc.h"
#include "parity_json.h"

/* A fixture's numerics attributes as our (dtype, matmul) pair; 0 when
 * either is absent or unknown (then the case's numerics apply). */
static int output_numerics(const fix_output *fo, gdn_dtype *dt, kern_matmul *mm) {
  if (!fo->compute_dtype || !fo->matmul_precision) return 0;
  gdn_error ig;
  gdn_error_init(&ig);
  if (gdn_dtype_parse(fo->compute_dtype, dt, NULL, &ig) || kern_matmul_parse(fo->matmul_precision, mm, &ig))
    return 0;
  return 1;
}

/* The attributes in the schema's order, then the stored dtype of o. */
static json_t *output_attrs(const fix_output *fo) {
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
  bad |= parity_json_set(a, "o_dtype", json_string(gdn_dtype_name(fo->out.dtype)));
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
    ext[i].name = fo->name;
    ext[i].out = &fo->out;
    ext[i].has_ht = fo->has_ht;
    ext[i].packing_matched = -1;
    ext[i].own_numerics = output_numerics(fo, &ext[i].dtype, &ext[i].matmul);
    if (!(ext[i].attrs = output_attrs(fo))) {
      parity_externals_free(ext, fx->n_outputs);
      return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory describing /outputs/%s", fo->name);
    }
  }
  *out = ext;
  return GDN_OK;
}

void parity_externals_free(parity_external *ext, size_t n) {
  for (size_t i = 0; ext && i < n; i++) json_decref(ext[i].attrs);
  gdn_free(ext);
}
