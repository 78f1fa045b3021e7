#include "parity_audit.h"

#include "gdn_path.h"
#include "report_audit.h"

int parity_audit_load(const char *path, const parity_output_opts *oo, json_t **audit, gdn_error *e) {
  *audit = NULL;
  const gdn_path_use u[] = {{"--audit", path, 0},        {"--json", oo->json, 1},   {"--report", oo->report, 1},
                            {"--junit", oo->junit, 1},   {"--summary", oo->summary, 1}};
  int rc = gdn_path_check_uses(u, sizeof u / sizeof *u, e);
  return rc ? rc : report_audit_read(path, audit, e);
}

static void put(FILE *f, const report_buf *b) {
  if (b->len && !b->err.code) fwrite(b->data, 1, b->len, f);
}

void parity_audit_print_lines(FILE *f, const json_t *doc) {
  const json_t *a = report_audit_of(doc);
  if (!a) return;
  report_buf b;
  report_buf_init(&b);
  report_audit_text_lines(&b, a);
  put(f, &b);
  report_buf_clear(&b);
}

void parity_audit_print_suffix(FILE *f, const json_t *doc) {
  report_buf b;
  report_buf_init(&b);
  report_audit_text_verdict(&b, doc);
  put(f, &b);
  report_buf_clear(&b);
}
