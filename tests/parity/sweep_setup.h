/* The set-up of the parity tests that call parity_sweep_run themselves
 * (header-only, static): options for one device count, the float32
 * external outputs they compare, and one sweep into a finished document.
 * What a test varies (chunk size, matmul, mutant, shard, log) it sets on
 * the options between sws_opts and sws_run. */
#ifndef SWEEP_SETUP_H
#define SWEEP_SETUP_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "parity_doc.h"
#include "parity_subject.h"
#include "parity_sweep.h"

/* o initialised: policy pol (which the document borrows), no log, the one
 * device count `devices` instead of the default list. */
static inline void sws_opts(parity_sweep_opts *o, const parity_policy *pol, int64_t devices) {
  parity_sweep_opts_init(o);
  o->policy = pol;
  o->verbosity = 0;
  o->devices[0] = devices;
  o->n_devices = 1;
  o->devices_default = 0;
}

/* ext[0..n) as external outputs computed in float32 with IEEE products
 * (declared, so measured at their own numerics), with ht: names[k], out[k]. */
static inline void sws_externals(parity_external *ext, size_t n, const char *const *names, const gdn_outputs *out) {
  for (size_t k = 0; k < n; k++) {
    ext[k] = (parity_external){0};
    ext[k].name = names[k];
    ext[k].out = &out[k];
    ext[k].has_ht = 1;
    ext[k].own_numerics = 1;
    ext[k].dtype = GDN_DTYPE_F32;
    ext[k].matmul = KERN_MATMUL_IEEE;
  }
}

/* One sweep of synthetic inputs `in` (ref may be NULL: --oracle none; ext
 * may be NULL with n_ext 0) under o into a fresh document d, finished. */
static inline void sws_run(parity_doc *d, const gdn_inputs *in, const parity_reference *ref,
                           const parity_external *ext, size_t n_ext, const parity_sweep_opts *o) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_doc_init(d, "test", o->policy, &e), GDN_OK);
  parity_input_info info = {"synthetic", "synthetic", NULL, NULL};
  ck_assert_msg(parity_sweep_run(d, in, &info, ref, ext, n_ext, o, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(parity_doc_finish(d, 1, &e), GDN_OK);
}

#endif
