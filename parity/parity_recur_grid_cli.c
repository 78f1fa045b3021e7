/* gdn-parity sweep / coverage --recurrence NAME (parity_recur_grid_cli.h). */
#include "parity_recur_grid_cli.h"

#include <string.h>

#include "gdn_threads.h"
#include "parity_datafile.h"
#include "parity_output.h"
#include "parity_recur_grid.h"

static const char *const supported[] = {"recurrence", "grid", "mutants", "json", "threads", "quiet", "verbose",
                                        "reproducible", "report", "junit", "summary", NULL};

/* --mutants all|NAME,... into idx (0-terminated, at most n - 1). */
static int parse_mutants(const parity_recurrence *rec, const char *v, int *idx, int n, gdn_error *e) {
  int k = 0;
  if (!v || !strcmp(v, "all")) {
    for (int i = 1; rec->mutants[i] && k < n - 1; i++) idx[k++] = i;
    idx[k] = 0;
    return GDN_OK;
  }
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    const int m = parity_recurrence_mutant(rec, t, e);
    if (m < 0) return -1;
    if (m == 0 || k >= n - 1) return gdn_error_set(e, GDN_ERR_INPUT, "--mutants %s: name mutants, not none", v);
    idx[k++] = m;
  }
  idx[k] = 0;
  return GDN_OK;
}

int parity_recur_grid_main(const parity_recurrence *rec, const gdn_cli_opt *t, const gdn_cli_args *a, int coverage,
                           FILE *out, gdn_error *e) {
  for (int i = 0; t[i].name; i++) {
    int ok = 0;
    for (int j = 0; supported[j]; j++) ok |= !strcmp(t[i].name, supported[j]);
    if (a->value[i] && !ok)
      return gdn_error_set(e, GDN_ERR_INPUT, "%s --recurrence %s does not support --%s yet (see docs/errors.md)",
                           coverage ? "coverage" : "sweep", rec->name, t[i].name), -1;
  }
  if (a->n_pos) return gdn_error_set(e, GDN_ERR_INPUT, "unexpected argument '%s' (see --help)", a->pos[0]), -1;
  const char *v;
  int64_t x;
  if ((v = gdn_cli_get(t, a, "threads"))) {
    if (gdn_cli_int64(v, "--threads", 1, 4096, &x, e)) return -1;
    gdn_threads_set((int)x);
  }
  char rel[256], def[4096];
  snprintf(rel, sizeof rel, "grids/upstream-pr-%s.json", rec->name);
  /* the checkout's, else the installed distribution's (parity_datafile.h) */
  if (!parity_datafile_find(rel, def, sizeof def)) snprintf(def, sizeof def, "%s", rel);
  const char *grid = gdn_cli_get(t, a, "grid");
  if (!grid && !coverage)
    return gdn_error_set(e, GDN_ERR_INPUT, "sweep --recurrence %s: give --grid GRID.json", rec->name), -1;
  if (!grid) grid = def;
  if (!coverage && gdn_cli_get(t, a, "mutants"))
    return gdn_error_set(e, GDN_ERR_INPUT, "--mutants is coverage's option"), -1;
  const parity_output_opts oo = {gdn_cli_get(t, a, "json"), gdn_cli_get(t, a, "report"), gdn_cli_get(t, a, "junit"),
                                 gdn_cli_get(t, a, "summary"), 0}; /* report_recur.h */
  if (parity_output_check_paths(&oo, e)) return -1;
  int mutants[64];
  if (coverage && parse_mutants(rec, gdn_cli_get(t, a, "mutants"), mutants, 64, e)) return -1;
  parity_recur_grid g;
  parity_recur_grid_init(&g);
  if (parity_recur_grid_load(&g, rec, grid, e)) return -1;
  json_t *doc = NULL;
  int pass = 0;
  const int rc = parity_recur_grid_run(&g, rec, coverage ? mutants : NULL, gdn_cli_get(t, a, "quiet") ? NULL : out,
                                       &doc, &pass, e);
  parity_recur_grid_clear(&g);
  if (rc) return -1;
  if (parity_output_write_all(&oo, doc, e)) return json_decref(doc), -1;
  if (coverage)
    fprintf(out, "%s: %lld of %lld mutants killed by %s (recurrence %s)\n", pass ? "PASS" : "FAIL",
            (long long)json_integer_value(json_object_get(doc, "n_killed")),
            (long long)json_integer_value(json_object_get(doc, "n_mutants")), grid, rec->name);
  else
    fprintf(out, "%s: %lld entries, %lld failed (recurrence %s, grid %s)\n", pass ? "PASS" : "FAIL",
            (long long)json_integer_value(json_object_get(doc, "n_entries")),
            (long long)json_integer_value(json_object_get(doc, "n_failed")), rec->name, grid);
  json_decref(doc);
  return pass ? 0 : 1;
}
