/* make_sample OUTDIR: writes the realistic sample document and every report
 * rendered from it, the way `gdn-parity ... --json --report --junit
 * --summary` and `gdn-parity report results.json -o report.html` would:
 * OUTDIR/results.json, then (read back from that file) report.html,
 * junit.xml, summary.md.  Used by the browser and XSD tests and to make
 * docs/report-screenshot.png. */
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "sample_doc.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_sample OUTDIR\n");
    return 2;
  }
  char path[4096];
  gdn_error e;
  gdn_error_init(&e);
  json_t *doc = sample_doc_realistic();
  json_t *back = NULL;
  int rc;
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
  return 0;
fail:
  fprintf(stderr, "make_sample: %s\n", e.msg);
  json_decref(doc);
  json_decref(back);
  return gdn_error_exit_status(rc);
}
