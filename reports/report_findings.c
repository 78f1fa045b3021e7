/* report_findings: distinct cases[].finding texts (report_findings.h). */
#include "report_findings.h"

#include <string.h>

#include "report_doc.h"

size_t report_findings_collect(const report_summary *s, report_finding *out, size_t cap) {
  size_t n = 0, listed = 0;
  for (size_t i = 0; i < s->n; i++) {
    const char *t = report_doc_str(s->cases[i].c, "finding");
    if (!t || !*t) continue;
    size_t j = 0;
    while (j < listed && strcmp(out[j].text, t)) j++;
    if (j < listed) {
      out[j].cases++;
      continue;
    }
    /* not among the listed: new, unless it repeats one past the cap (those
     * are counted once each by scanning the earlier cases) */
    int seen = 0;
    for (size_t k = 0; k < i && !seen && listed == cap; k++) {
      const char *u = report_doc_str(s->cases[k].c, "finding");
      seen = u && !strcmp(u, t);
    }
    if (seen) continue;
    n++;
    if (listed < cap) out[listed++] = (report_finding){t, report_doc_str(s->cases[i].c, "id"), 1};
  }
  return n;
}

const char *report_finding_label(const char *text) {
  int range = text && !strncmp(text, "range: ", 7), stock = text && strstr(text, "stock algorithm: ") != NULL;
  if (range && stock) return "findings about the format's range and the stock algorithm";
  if (stock) return "a finding about the stock algorithm";
  if (range) return "a finding about the format's range";
  return "a finding";
}

void report_findings_list(report_buf *b, const report_summary *s, const report_findings_style *st) {
  report_finding f[REPORT_FINDINGS_SHOWN];
  size_t n = report_findings_collect(s, f, REPORT_FINDINGS_SHOWN);
  if (!n) return;
  report_buf_puts(b, st->open);
  for (size_t i = 0; i < n && i < REPORT_FINDINGS_SHOWN; i++) st->item(b, &f[i]);
  if (n > REPORT_FINDINGS_SHOWN) report_buf_printf(b, st->more, n - REPORT_FINDINGS_SHOWN);
  report_buf_puts(b, st->close);
}
