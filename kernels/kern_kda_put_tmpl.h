/* Template (see kern_real.h): one row of o stored by a KDA kernel, after
 * kern_rows_tmpl.h. */
/* o row (b, t, hv) stored in whichever form out holds it (kern_out.h). */
KTMPL void KR(kda_put_o)(gdn_outputs *out, int64_t b, int64_t t, int64_t hv, const kreal *o, int out_bf16) {
  const int64_t Dv = out->shape.Dv;
  const size_t at = (size_t)(((b * out->shape.T + t) * out->shape.Hv + hv) * Dv);
  if (out->oc.c) {
    gdn_ocode_local loc;
    loc.n = 0;
    for (int64_t j = 0; j < Dv; j++) gdn_ocode_put(&out->oc, at + (size_t)j, (float)KR(rows_out)(o[j], out_bf16), &loc);
    gdn_ocode_flush(&out->oc, &loc);
  } else if (out->o32) {
    for (int64_t j = 0; j < Dv; j++) out->o32[at + (size_t)j] = (float)KR(rows_out)(o[j], out_bf16);
  } else {
    for (int64_t j = 0; j < Dv; j++) out->o[at + (size_t)j] = KR(rows_out)(o[j], out_bf16);
  }
}

