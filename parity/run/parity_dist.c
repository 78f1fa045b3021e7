#include "parity_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_config.h"

#if GDN_HAVE_MPI
#include "gdn_mpi.h"

static gdn_mpi g_world = {0, 1, 0};
static int g_active, g_diverged;

int parity_dist_start(int *argc, char ***argv, gdn_error *e) {
  if (!gdn_mpi_launched()) return GDN_OK;
  int rc = gdn_mpi_init(argc, argv, &g_world, e);
  g_active = !rc;
  return rc;
}
void parity_dist_end(void) {
  if (g_active) gdn_mpi_finalize(&g_world);
  g_active = 0;
}
int parity_dist_rank(void) { return g_active ? g_world.rank : 0; }
int parity_dist_size(void) { return g_active ? g_world.size : 1; }
void parity_dist_abort(int status) {
  if (g_active && g_world.size > 1) gdn_mpi_abort(status);
}
int parity_dist_have_mpi(void) { return 1; }
int parity_dist_diverged(void) { return g_diverged; }

static int produce_mpi(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e) {
  if (!g_active)
    return gdn_error_set(e, GDN_ERR_INPUT, "--backend mpi: not started by mpirun (mpirun -np D gdn-parity ...)");
  int rc = gdn_mpi_affine_prefix(cx->in, cx->cfg, &s->owned, e);
  if (rc) return rc;
  s->out = &s->owned;
  s->present = PARITY_TENSOR_FORWARD; /* no backward over ranks: never the gradient rows */
  s->out_dtype[PARITY_T_O] = kern_output_dtype(cx->cfg, cx->in->bf16_mask);
  s->out_dtype[PARITY_T_HT] = cx->cfg->dtype == GDN_DTYPE_F64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32;
  return GDN_OK;
}

/* Held to the affine-prefix rules (it is that algorithm, its devices being
 * processes), judged on its own and measured against the scan. */
static const parity_subject_methods mpi_row = {"affine-prefix-mpi", PARITY_SUBJ_AFFINE, PARITY_STAGE_CASE,
                                               PARITY_ROLE_JUDGED, 1, produce_mpi};
const parity_subject_methods *const parity_subject_mpi = &mpi_row;

int parity_dist_test_entry(void) {
  if (!g_active) return 0;
  gdn_mpi_test_die(g_world.rank, "sweep");
  return gdn_mpi_test_fault(g_world.rank, "entry-error");
}

/* A part is its JSON text; an error is "!CODE message". */
int parity_dist_test_fault(const char *stage) { return g_active && gdn_mpi_test_fault(g_world.rank, stage); }

int parity_dist_bcast(void *buf, size_t n, int root, gdn_error *e) {
  if (!g_active || g_world.size == 1) return GDN_OK;
  const size_t piece = (size_t)1 << 30; /* MPI counts are int */
  for (size_t at = 0; at < n; at += piece) {
    int rc = gdn_mpi_bcast_bytes((char *)buf + at, n - at < piece ? n - at : piece, root, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* One tag for every piece: MPI keeps two ranks' messages in order. */
enum { DIST_TAG_BYTES = 4242 };
static const size_t dist_piece = (size_t)1 << 30; /* MPI counts are int */

int parity_dist_send(const void *buf, size_t n, int to, gdn_error *e) {
  for (size_t at = 0; at < n; at += dist_piece) {
    int rc = gdn_mpi_send_bytes((const char *)buf + at, n - at < dist_piece ? n - at : dist_piece, to,
                                DIST_TAG_BYTES, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

int parity_dist_recv(void *buf, size_t n, int from, gdn_error *e) {
  for (size_t at = 0; at < n; at += dist_piece) {
    int rc = gdn_mpi_recv_bytes((char *)buf + at, n - at < dist_piece ? n - at : dist_piece, from,
                                DIST_TAG_BYTES, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

int parity_dist_send_part(const parity_doc *part, int entry, const gdn_error *failed, gdn_error *e) {
  char *text = NULL;
  int rc;
  if (failed && failed->code) {
    size_t n = strlen(failed->msg) + 16;
    if (!(text = malloc(n))) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
    snprintf(text, n, "!%d %s", failed->code, failed->msg);
  } else if ((rc = parity_doc_part_dump(part, &text, e))) {
    return rc;
  }
  rc = gdn_mpi_send_text(text, 0, entry, e);
  free(text);
  return rc;
}

int parity_dist_recv_part(parity_doc *part, int from, int entry, gdn_error *e) {
  char *text = NULL;
  int rc = gdn_mpi_recv_text(&text, from, entry, e);
  if (rc) return rc;
  if (text[0] == '!') {
    char *msg = NULL;
    long code = strtol(text + 1, &msg, 10);
    g_diverged = 1;
    rc = gdn_error_set(e, code > 0 && code < 100 ? (int)code : GDN_ERR_INTERNAL, "rank %d: grid entry %d: %s",
                       from, entry, msg && *msg ? msg + 1 : "");
  } else {
    rc = parity_doc_part_load(part, text, e);
  }
  free(text);
  return rc;
}

#else /* one process */

int parity_dist_start(int *argc, char ***argv, gdn_error *e) {
  (void)argc, (void)argv, (void)e;
  return GDN_OK;
}
void parity_dist_end(void) {}
int parity_dist_rank(void) { return 0; }
int parity_dist_size(void) { return 1; }
void parity_dist_abort(int status) { (void)status; }
int parity_dist_have_mpi(void) { return 0; }
int parity_dist_test_entry(void) { return 0; }
int parity_dist_diverged(void) { return 0; }
const parity_subject_methods *const parity_subject_mpi = NULL;
int parity_dist_test_fault(const char *stage) {
  (void)stage;
  return 0;
}
int parity_dist_bcast(void *buf, size_t n, int root, gdn_error *e) {
  (void)buf, (void)n, (void)root, (void)e;
  return GDN_OK;
}

int parity_dist_send(const void *buf, size_t n, int to, gdn_error *e) {
  (void)buf, (void)n, (void)to;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "built without MPI");
}
int parity_dist_recv(void *buf, size_t n, int from, gdn_error *e) {
  (void)buf, (void)n, (void)from;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "built without MPI");
}

int parity_dist_send_part(const parity_doc *part, int entry, const gdn_error *failed, gdn_error *e) {
  (void)part, (void)entry, (void)failed;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "built without MPI");
}
int parity_dist_recv_part(parity_doc *part, int from, int entry, gdn_error *e) {
  (void)part, (void)from, (void)entry;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "built without MPI");
}
#endif
