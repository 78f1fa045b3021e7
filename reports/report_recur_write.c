/* The files of a recurrence document (report_recur_write_all,
 * report_recur.h): the JSON, then the reports rendered from the JSON read
 * back, so a run's reports are the bytes `gdn-parity report` rebuilds. */
#include <stdlib.h>

#include "gdn_atomic.h"
#include "report_recur.h"

typedef int (*render_fn)(const json_t *doc, const char *link, report_buf *b, gdn_error *e);

static int html(const json_t *d, const char *l, report_buf *b, gdn_error *e) {
  (void)l;
  return report_recur_html_render(d, b, e);
}
static int junit(const json_t *d, const char *l, report_buf *b, gdn_error *e) {
  (void)l;
  return report_recur_junit_render(d, b, e);
}

static int write_one(const json_t *doc, const char *path, const char *link, render_fn fn, gdn_error *e) {
  if (!path) return GDN_OK;
  report_buf b;
  report_buf_init(&b);
  return report_buf_write_file(&b, fn(doc, link, &b, e), path, e);
}

int report_recur_write_all(const json_t *doc, const char *json, const char *html_path, const char *junit_path,
                           const char *md, const char *md_link, gdn_error *e) {
  report_buf b;
  report_buf_init(&b);
  int rc = report_recur_json_render(doc, &b, e);
  json_t *back = NULL;
  json_error_t je;
  if (!rc && (html_path || junit_path || md) && !(back = json_loadb(b.data, b.len, JSON_REJECT_DUPLICATES, &je)))
    rc = gdn_error_set(e, GDN_ERR_INTERNAL, "the recurrence document does not read back: %s", je.text);
  /* each report validates what it walks (report_recur_validate); the JSON alone is written as it is */
  if (json) {
    rc = report_buf_write_file(&b, rc, json, e);
  } else {
    report_buf_clear(&b);
  }
  if (!rc) rc = write_one(back, html_path, NULL, html, e);
  if (!rc) rc = write_one(back, junit_path, NULL, junit, e);
  if (!rc) rc = write_one(back, md, md_link, report_recur_markdown_render, e);
  json_decref(back);
  return rc;
}
