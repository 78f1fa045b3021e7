/* The recurrences' table (parity_recurrence.h): GDN's row adapts today's
 * functions to the row's signatures and changes nothing they compute. */
#include "parity_recurrence.h"

#include <string.h>

#include "kern.h"
#include "kern_kda.h"
#include "kern_kda_chunk_vjp.h"
#include "kern_kda_vjp.h"
#include "kern_vjp.h"
#include "oracle_kda.h"
#include "oracle_kda_vjp.h"

/* ---- gdn: the gate is gdn_inputs.g, drawn by gdn_synth ---- */

static int gdn_oracle(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_outputs *out,
                      oracle_certificate *cert, gdn_error *e) {
  (void)gate;
  return cert ? oracle_run_certified(in, cfg, out, cert, e) : oracle_run(in, cfg, out, e);
}

static int gdn_oracle_dd(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg, gdn_outputs *out,
                         oracle_dd_certificate *cert, gdn_error *e) {
  (void)gate;
  return oracle_run_dd(in, cfg, out, cert, e);
}

static int gdn_token(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                     gdn_outputs *out, gdn_error *e) {
  (void)gate, (void)mutant;
  return kern_recurrent(in, cfg, out, e);
}

static int gdn_chunked(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                       gdn_outputs *out, gdn_error *e) {
  (void)gate, (void)mutant;
  return kern_scan(in, cfg, out, e);
}

static int gdn_affine(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                      gdn_outputs *out, gdn_error *e) {
  (void)gate, (void)mutant;
  return kern_affine_prefix(in, cfg, out, e);
}

static int gdn_draw(const gdn_inputs *in, uint64_t seed, gdn_chgate *gate, gdn_error *e) {
  (void)in, (void)seed, (void)e;
  gdn_chgate_clear(gate);
  return GDN_OK;
}

static int gdn_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                   const oracle_vjp_config *cfg, gdn_grads *out, oracle_vjp_certificate *cert, gdn_error *e) {
  (void)gate;
  return cert ? oracle_vjp_certified(in, ct, cfg, out, cert, e) : oracle_vjp(in, ct, cfg, out, e);
}

static int gdn_vjp_dd(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                      const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e) {
  (void)gate;
  return oracle_vjp_dd(in, ct, cfg, out, cert, e);
}

static int gdn_chunked_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                           const kern_config *cfg, int mutant, gdn_grads *out, gdn_error *e) {
  (void)gate, (void)mutant;
  return kern_scan_vjp(in, ct, cfg, out, e);
}

/* ---- kda: the gate per key channel ---- */

static int kda_token_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                         const kern_config *cfg, int mutant, gdn_grads *out, gdn_error *e) {
  return kern_kda_recurrent_vjp(in, gate, ct, cfg, (kern_kda_vjp_mutant)mutant, out, e);
}

/* The chunked and affine-prefix backwards by the chunkwise algebra
 * (kern_kda_chunk_vjp_algebra); the token-by-token form (kern_kda_chunk_vjp)
 * stays the kernels' reference (tests/parity/test_kda_chunk_algebra.c). */
static int kda_chunked_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                           const kern_config *cfg, int mutant, gdn_grads *out, gdn_error *e) {
  return kern_kda_chunk_vjp_algebra(in, gate, ct, cfg, (kern_kda_vjp_mutant)mutant, out, e);
}

static int kda_affine_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                          const kern_config *cfg, int mutant, gdn_grads *out, gdn_error *e) {
  return kern_kda_affine_vjp_algebra(in, gate, ct, cfg, (kern_kda_vjp_mutant)mutant, out, e);
}

static int kda_token(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                     gdn_outputs *out, gdn_error *e) {
  return kern_kda_recurrent(in, gate, cfg, (kern_kda_mutant)mutant, out, e);
}

static int kda_chunked(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                       gdn_outputs *out, gdn_error *e) {
  return kern_kda_chunk(in, gate, cfg, (kern_kda_mutant)mutant, out, e);
}

static int kda_affine(const gdn_inputs *in, const gdn_chgate *gate, const kern_config *cfg, int mutant,
                      gdn_outputs *out, gdn_error *e) {
  return kern_kda_affine(in, gate, cfg, (kern_kda_mutant)mutant, out, e);
}

static int kda_draw(const gdn_inputs *in, uint64_t seed, gdn_chgate *gate, gdn_error *e) {
  return gdn_chgate_draw_kimi(gate, &in->shape, seed, e);
}

static const char *const gdn_mutants[] = {"none", NULL};
/* kern_kda_mutant's order (kern_kda.h) */
static const char *const kda_mutants[] = {"none",           "gate-value-axis",      "gate-after-update",
                                          "gate-other-head", "cumsum-across-chunks", "subchunk-off-by-one",
                                          NULL};

/* kern_kda_vjp_mutant's order (kern_kda_vjp.h) */
static const char *const kda_vjp_mutants[] = {"none", "dg-value-axis", "dh-seam-dropped", NULL};

const parity_recurrence parity_recurrence_rows[] = {
    {"gdn", PARITY_GATE_HEAD_TOKEN, gdn_oracle, gdn_oracle_dd, gdn_token, gdn_chunked, gdn_affine, "recurrent", "scan",
     "affine-prefix", gdn_draw, gdn_mutants, gdn_vjp, NULL, gdn_chunked_vjp, NULL, gdn_mutants, NULL,
     gdn_vjp_dd, NULL},
    {"kda", PARITY_GATE_HEAD_TOKEN_CHANNEL, oracle_kda_run, oracle_kda_run_dd, kda_token, kda_chunked, kda_affine, "kda-recurrent",
     "kda-chunk", "kda-affine-prefix", kda_draw, kda_mutants, oracle_kda_vjp, kda_token_vjp,
     kda_chunked_vjp, NULL, kda_vjp_mutants, kda_affine_vjp, oracle_kda_vjp_dd, "chunkwise"},
};
const size_t parity_recurrence_count = sizeof parity_recurrence_rows / sizeof parity_recurrence_rows[0];

const char *parity_gate_shape_name(parity_gate_shape g) {
  return g == PARITY_GATE_HEAD_TOKEN_CHANNEL ? "head-token-channel" : "head-token";
}

const parity_recurrence *parity_recurrence_find(const char *name, gdn_error *e) {
  for (size_t i = 0; name && i < parity_recurrence_count; i++)
    if (!strcmp(name, parity_recurrence_rows[i].name)) return &parity_recurrence_rows[i];
  gdn_error_set(e, GDN_ERR_INPUT, "--recurrence '%s' is not known; expected gdn or kda", name ? name : "(null)");
  return NULL;
}

int parity_recurrence_mutant(const parity_recurrence *r, const char *name, gdn_error *e) {
  for (int i = 0; name && r->mutants[i]; i++)
    if (!strcmp(name, r->mutants[i])) return i;
  char list[256] = "";
  for (int i = 0; r->mutants[i]; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, r->mutants[i], sizeof list - strlen(list) - 1);
  }
  gdn_error_set(e, GDN_ERR_INPUT, "--mutant '%s' is not a mutant of --recurrence %s; expected %s",
                name ? name : "(null)", r->name, list);
  return -1;
}
