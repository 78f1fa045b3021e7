/* parity_recurrence: the recurrences gdn-parity knows, as a table.
 *
 * A recurrence kind is one parity_recurrence row: its name (--recurrence),
 * the shape of its gate, its oracle step (the MPFR ground truth with its
 * certificate, and the double-word tier with its sampled certificate), its token kernel, chunked kernel and affine-prefix over
 * devices (the float implementations under test), its synthetic gate draw and the names of its
 * mutants.  Every function takes the call's gdn_inputs (q, k, v, beta, h0,
 * scale: what every delta-rule layer here shares) and a gdn_chgate, which a
 * per head-token gate leaves empty (its gate is gdn_inputs.g).
 *
 *   gdn  Gated DeltaNet: one log-decay per (b, t, value head), the
 *        recurrence of oracle.h and kern.h; its rows point at oracle_run /
 *        oracle_run_certified, kern_recurrent, kern_scan and
 *        kern_affine_prefix unchanged, and
 *        its gate is gdn_synth's (drawn with the inputs).  Its mutants are
 *        the affine-prefix's (kern_mutant.h), run by the sweep of
 *        parity_sweep.h, which is GDN's full harness.
 *   kda  Kimi Delta Attention: one log-decay per (b, t, value head, key
 *        channel), oracle_kda.h and kern_kda.h; its gate is Kimi Linear's
 *        draw (gdn_chgate_draw_kimi).
 *
 * docs/CONVENTIONS.md ("Recurrences") says how to add a row.
 */
#ifndef PARITY_RECURRENCE_H
#define PARITY_RECURRENCE_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"
#include "oracle.h"
#include "oracle_vjp.h"

typedef enum parity_gate_shape {
  PARITY_GATE_HEAD_TOKEN = 0,         /* g (B, T, Hv): gdn_inputs.g */
  PARITY_GATE_HEAD_TOKEN_CHANNEL = 1, /* g (B, T, Hv, Dk): gdn_chgate */
} parity_gate_shape;

/* The oracle of (in, gate) at cfg; cert NULL: uncertified (oracle.h's
 * contract: out allocated here, cleared on error). */
typedef int (*parity_rec_oracle)(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg,
                                 gdn_outputs *out, oracle_certificate *cert, gdn_error *e);
/* The double-word tier of the oracle with its sampled certificate. */
typedef int (*parity_rec_oracle_dd)(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg,
                                    gdn_outputs *out, oracle_dd_certificate *cert, gdn_error *e);
/* A kernel on (in, gate) with cfg; mutant: an index into the row's mutant
 * names (0 = none). */
typedef int (*parity_rec_kernel)(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                                 gdn_outputs *out, gdn_error *e);
/* The synthetic gate for in (already drawn by gdn_synth): fills gate
 * (initialised) or, for a head-token gate, leaves it empty. */
typedef int (*parity_rec_draw)(const gdn_inputs *in, uint64_t seed, gdn_chgate *gate, gdn_error *e);

/* The backward (parity_recur_grad.h): the oracle's VJP, certified (out
 * allocated here; dg of the row's gate shape), and a kernel's backward
 * (mutant: an index into the row's vjp_mutants, 0 = none). */
typedef int (*parity_rec_vjp)(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                              const oracle_vjp_config *cfg, gdn_grads *out, oracle_vjp_certificate *cert,
                              gdn_error *e);
typedef int (*parity_rec_kernel_vjp)(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                                     const kern_config *cfg, int mutant, gdn_grads *out, gdn_error *e);
/* The VJP's double-word tier with its sampled certificate (oracle_vjp.h's
 * oracle_vjp_dd; oracle_kda_vjp.h's oracle_kda_vjp_dd). */
typedef int (*parity_rec_vjp_dd)(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                                 const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_vjp_dd_certificate *cert,
                                 gdn_error *e);

typedef struct parity_recurrence {
  const char *name;
  parity_gate_shape gate_shape;
  parity_rec_oracle oracle;
  parity_rec_oracle_dd oracle_dd;
  parity_rec_kernel kern_token, kern_chunked, kern_affine; /* kern_affine: over cfg->devices */
  const char *token_subject, *chunked_subject, *affine_subject; /* the kernels' names in results */
  parity_rec_draw draw_gate;
  const char *const *mutants; /* NULL-terminated, [0] = "none" */
  /* the backward: the oracle's VJP; the token kernel's and the chunked
   * kernel's backward (NULL: not implemented, and chunked_vjp_absent says
   * what stands in for it); the backward mutants (NULL-terminated, [0] =
   * "none"); the affine-prefix's backward over cfg->devices (NULL: not
   * implemented); which form the chunked and affine-prefix backwards take,
   * named in the document (NULL: not named, gdn's documents unchanged) */
  parity_rec_vjp oracle_vjp;
  parity_rec_kernel_vjp kern_token_vjp, kern_chunked_vjp;
  const char *chunked_vjp_absent;
  const char *const *vjp_mutants;
  parity_rec_kernel_vjp kern_affine_vjp;
  parity_rec_vjp_dd oracle_vjp_dd; /* the VJP's dd tier (--grad --oracle dd, or auto on long runs) */
  const char *chunked_vjp_form;
} parity_recurrence;

extern const parity_recurrence parity_recurrence_rows[];
extern const size_t parity_recurrence_count;

/* "head-token" or "head-token-channel". */
const char *parity_gate_shape_name(parity_gate_shape g);
/* The row named `name`, or NULL with GDN_ERR_INPUT naming --recurrence and
 * the choices. */
const parity_recurrence *parity_recurrence_find(const char *name, gdn_error *e);
/* The index of mutant `name` in row r's names, or -1 with GDN_ERR_INPUT
 * naming --mutant, the recurrence and the choices. */
int parity_recurrence_mutant(const parity_recurrence *r, const char *name, gdn_error *e);

#endif
