/* gdn-parity check of non-GDN fixtures (parity_recur_check_cli.h). */
#include "parity_recur_check_cli.h"

#include <string.h>

#include "fix_kda.h"
#include "fix_load.h"
#include "gdn_path.h"
#include "gdn_threads.h"
#include "parity_dist.h"
#include "parity_output.h"
#include "parity_recur_check.h"
#include "parity_recur_check_stream.h"

static const char *const supported[] = {"recurrence", "fixture", "chunk", "devices", "oracle-bits", "json",
                                        "threads", "quiet", "verbose", "reproducible", "max-bytes", "group-heads",
                                        "report", "junit", "summary", NULL};

/* The files named: the arguments, then --fixture. */
static int files_of(const gdn_cli_opt *t, const gdn_cli_args *a, const char **f) {
  int n = 0;
  for (int i = 0; i < a->n_pos; i++) f[n++] = a->pos[i];
  const char *v = gdn_cli_get(t, a, "fixture");
  if (v) f[n++] = v;
  return n;
}

static int parse(const gdn_cli_opt *t, const gdn_cli_args *a, parity_recur_check_opts *o, uint64_t *mb,
                 int64_t *gh, gdn_error *e) {
  for (int i = 0; t[i].name; i++) {
    int ok = 0;
    for (int j = 0; supported[j]; j++) ok |= !strcmp(t[i].name, supported[j]);
    if (a->value[i] && !ok)
      return gdn_error_set(e, GDN_ERR_INPUT, "check of a %s fixture does not support --%s yet (see docs/errors.md)",
                           o->rec->name, t[i].name);
  }
  const char *v;
  int64_t x;
  size_t n;
  *mb = FIX_DEFAULT_MAX_BYTES;
  o->oracle_bits = 128;
  if ((v = gdn_cli_get(t, a, "chunk"))) {
    if (gdn_cli_int64_list(v, "--chunk", 1, 1 << 20, o->chunks, PARITY_RECUR_MAX_CHUNKS, &n, e)) return -1;
    o->n_chunks = (int)n;
  }
  if ((v = gdn_cli_get(t, a, "devices"))) {
    if (gdn_cli_int64_list(v, "--devices", 1, 1 << 20, o->devices, PARITY_RECUR_MAX_CHUNKS, &n, e)) return -1;
    o->n_devices = (int)n;
  }
  if ((v = gdn_cli_get(t, a, "oracle-bits"))) {
    if (gdn_cli_int64(v, "--oracle-bits", 53, 4096, &x, e)) return -1;
    o->oracle_bits = (int)x;
  }
  if ((v = gdn_cli_get(t, a, "threads"))) {
    if (gdn_cli_int64(v, "--threads", 1, 4096, &x, e)) return -1;
    gdn_threads_set((int)x);
  }
  if ((v = gdn_cli_get(t, a, "max-bytes")) && gdn_cli_bytes(v, "--max-bytes", mb, e)) return -1;
  *gh = 0;
  if ((v = gdn_cli_get(t, a, "group-heads")) && gdn_cli_int64(v, "--group-heads", 1, 1 << 20, gh, e)) return -1;
  return GDN_OK;
}

/* One file judged; its document appended to docs. */
static int check_file(parity_recur_check_opts *o, const char *path, uint64_t mb, int64_t gh, json_t *docs,
                      int *all_pass, FILE *out, gdn_error *e) {
  fix_fixture fx;
  fix_fixture_init(&fx);
  json_t *doc = NULL;
  int pass = 0, streamed = 0;
  o->name = path;
  /* by key-head group when asked or when the whole check is over --max-bytes */
  int rc = parity_recur_check_streamed(o, path, mb, gh, &streamed, &doc, &pass, e);
  if (!rc && parity_dist_rank() != 0) return GDN_OK; /* under mpirun (always streamed): rank 0 records */
  if (!rc && !streamed) rc = fix_kda_load(&fx, path, mb, e);
  for (int i = 0; !rc && !streamed && i < o->n_devices; i++)
    if (fx.inputs.shape.T % o->devices[i])
      rc = gdn_error_set(e, GDN_ERR_INPUT, "--devices %lld does not divide T = %lld of %s", (long long)o->devices[i],
                         (long long)fx.inputs.shape.T, path);
  if (!rc && (streamed || !(rc = parity_recur_check(o, &fx, &doc, &pass, e)))) {
    json_array_append_new(docs, doc);
    fprintf(out, "%s: %s (recurrence %s, %lld case%s, %lld failed)\n", path, pass ? "PASS" : "FAIL", o->rec->name,
            (long long)json_integer_value(json_object_get(doc, "n_cases")),
            json_integer_value(json_object_get(doc, "n_cases")) == 1 ? "" : "s",
            (long long)json_integer_value(json_object_get(doc, "n_failed")));
    if (!pass) *all_pass = 0;
  }
  fix_fixture_clear(&fx);
  return rc;
}

/* The recurrence of every file, all the same, and --recurrence's. */
static const parity_recurrence *recurrence_of(const char *const *files, int n, const char *want, int *any,
                                              gdn_error *e) {
  char first[64] = "", name[64];
  *any = 0;
  for (int i = 0; i < n; i++) {
    int rank;
    if (fix_recurrence_peek(files[i], name, sizeof name, &rank, e)) {
      if (!want || !strcmp(want, "gdn")) e->code = GDN_OK; /* unreadable: GDN's check gives its own message */
      return NULL;
    }
    if (!strcmp(name, "gdn") && rank == 4) *any = 1; /* the GDN loader names the rank-4 g */
    if (strcmp(name, "gdn")) *any = 1;
    if (want && strcmp(want, name))
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "--recurrence %s: %s is a %s fixture (root attribute recurrence %s, /inputs/g of rank %d)",
                           want, files[i], name, strcmp(name, "gdn") ? "given" : "absent", rank), NULL;
    if (i && strcmp(first, name))
      return gdn_error_set(e, GDN_ERR_INPUT, "check: %s is a %s fixture, %s a %s one: check one recurrence at a time",
                           files[0], first, files[i], name), NULL;
    snprintf(first, sizeof first, "%s", name);
  }
  if (!*any && !want) return NULL;
  return parity_recurrence_find(first[0] ? first : want, e);
}

int parity_recur_check_dispatch(const gdn_cli_opt *t, const gdn_cli_args *a, FILE *out, int *handled, gdn_error *e) {
  const char *files[GDN_CLI_MAX_POS + 1], *want = gdn_cli_get(t, a, "recurrence");
  const int n = files_of(t, a, files);
  int any;
  *handled = 0;
  if (!want && !n) return 0;
  e->code = GDN_OK;
  const parity_recurrence *rec = recurrence_of(files, n, want, &any, e);
  if (!rec) {
    *handled = e->code != GDN_OK;
    return *handled ? -1 : 0;
  }
  if (!strcmp(rec->name, "gdn")) return 0; /* a rank-4 g in a GDN file: its loader's message */
  *handled = 1;
  if (!n) return gdn_error_set(e, GDN_ERR_INPUT, "check needs a fixture FILE.h5"), -1;
  parity_recur_check_opts o;
  memset(&o, 0, sizeof o);
  o.rec = rec;
  uint64_t mb;
  int64_t gh;
  if (parse(t, a, &o, &mb, &gh, e)) return -1;
  /* the outputs (report_recur.h): folders checked, none of them a fixture read */
  const parity_output_opts oo = {gdn_cli_get(t, a, "json"), gdn_cli_get(t, a, "report"), gdn_cli_get(t, a, "junit"),
                                 gdn_cli_get(t, a, "summary"), 0};
  gdn_path_use u[GDN_CLI_MAX_POS + 5];
  size_t nu = 0;
  for (int i = 0; i < n; i++) u[nu++] = (gdn_path_use){"the fixture", files[i], 0};
  u[nu++] = (gdn_path_use){"--json", oo.json, 1};
  u[nu++] = (gdn_path_use){"--report", oo.report, 1};
  u[nu++] = (gdn_path_use){"--junit", oo.junit, 1};
  u[nu++] = (gdn_path_use){"--summary", oo.summary, 1};
  if (parity_output_check_paths(&oo, e) || gdn_path_check_uses(u, nu, e)) return -1;
  o.log = gdn_cli_get(t, a, "quiet") || parity_dist_rank() != 0 ? NULL : out; /* rank 0 speaks */
  parity_progress line; /* on a terminal only (gdn_progress.h), rank 0's, not with --quiet */
  parity_progress_init(&line, stderr, o.log != NULL);
  o.progress = &line;
  json_t *docs = json_array();
  int all = 1, rc = docs ? 0 : gdn_error_set(e, GDN_ERR_NOMEM, "out of memory (results)");
  for (int i = 0; i < n && !rc; i++) rc = check_file(&o, files[i], mb, gh, docs, &all, out, e);
  parity_progress_clear(&line);
  if (!rc && parity_dist_rank() == 0 && (oo.json || oo.report || oo.junit || oo.summary)) {
    json_t *top = json_array_size(docs) == 1 ? json_incref(json_array_get(docs, 0)) : json_incref(docs);
    rc = parity_output_write_all(&oo, top, e);
    json_decref(top);
  }
  json_decref(docs);
  return rc ? -1 : all ? 0 : 1;
}
