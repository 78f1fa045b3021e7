#include "kern_forward.h"

#include "kern_out.h"

int kern_forward(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, const char *who, int chunked,
                 kern_forward_run run_f32, kern_forward_run run_f64, gdn_error *e) {
  gdn_outputs_clear(out);
  kern_num num;
  int rc = kern_num_setup(&num, in, cfg, who, chunked, e);
  if (!rc) rc = kern_out_alloc_for(out, in, cfg, who, e);
  if (!rc) rc = (num.dtype == GDN_DTYPE_F64 ? run_f64 : run_f32)(in, cfg, &num, out, e);
  if (!rc) rc = kern_out_finish(out, e);
  if (rc) gdn_outputs_clear(out);
  return rc;
}
