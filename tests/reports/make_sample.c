/* make_sample OUTDIR [AUDIT.json | --subject]: writes the realistic sample document and every report
 * rendered from it, the way `gdn-parity ... --json --report --junit
 * --summary` and `gdn-parity report results.json -o report.html` would:
 * OUTDIR/results.json, then (read back from that file) report.html,
 * junit.xml, summary.md.  Used by the browser and XSD tests and to make
 * docs/report-screenshot.png.  With AUDIT.json the audit is embedded
 * first (as --audit does), so every report shows it.  With --subject the
 * failing case judges a dump's output, its subject (sample_doc_add_subject). */
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "report_audit.h"
#include "sample_doc.h"

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: make_sample OUTDIR [AUDIT.json | --subject]\n");
    return 2;
  }
  char path[4096];
  gdn_error e;
  gdn_error_init(&e);
  json_t *doc = sample_doc_realistic();
  json_t *back = NULL, *audit = NULL;
  int rc;
  int subject = argc == 3 && !strcmp(argv[2], "--subject");
  if (subject) sample_doc_add_subject(doc);
  if (argc == 3 && !subject && ((rc = report_audit_read(argv[2], &audit, &e)) || (rc = report_audit_embed(doc, audit, &e))))
    goto fail;
  snprintf(path, sizeof path, "%s/results.json", argv[1]);
  if ((rc = report_json_write(doc, path, &e))) goto fail;
  if ((rc = report_json_read(path, &back, &e))) goto fail;
  snprintf(path, sizeof path, "%s/report.html", argv[1]);
  if ((rc = report_html_write(back, path, &e))) goto fail;
  snprintf(path, sizeof path, "%s/junit.xml", argv[1]);
  if ((rc = report_junit_write(back, path, &e))) goto fail;
  snprintf(path, sizeof path, "%s/summary.md", argv[1]);
  if ((rc = report_markdown_write(back, path, "report.html", &e))) goto fail;
  json_decref(doc);
  json_decref(back);
  json_decref(audit);
  return 0;
fail:
  fprintf(stderr, "make_sample: %s\n", e.msg);
  json_decref(doc);
  json_decref(back);
  json_decref(audit);
  return gdn_error_exit_status(rc);
}
