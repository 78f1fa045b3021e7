/* parity_external: a fixture's /outputs/<name> as subjects of its cases.
 *
 * Each output becomes one parity_external (parity_subject.h): its outputs
 * borrowed from the fixture, the numerics it is judged by (from what it
 * declares, never from the command line; the table is at output_numerics
 * in parity_external.c, and attrs.numerics says which row applied), and its
 * attributes as the results record them ("attrs", owned here).  An
 * incomplete float32 declaration or an unknown name is GDN_ERR_INPUT.
 */
#ifndef PARITY_EXTERNAL_H
#define PARITY_EXTERNAL_H

#include <stddef.h>

#include "fix.h"
#include "gdn_error.h"
#include "parity_subject.h"

/* *out: fx->n_outputs entries (NULL when there are none), borrowing from fx,
 * which must outlive them; free with parity_externals_free. */
int parity_externals_from_fixture(const fix_fixture *fx, parity_external **out, gdn_error *e);
void parity_externals_free(parity_external *ext, size_t n);

#endif
