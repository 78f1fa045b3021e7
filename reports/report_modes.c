#include "report_modes.h"

#include <string.h>

#include "report_doc.h"

const char *const report_mode_keys[REPORT_MODE_N] = {"shard", "solve", "packing"};

static int same(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

unsigned report_modes_varying(const report_summary *s) {
  unsigned m = 0;
  for (int k = 0; k < REPORT_MODE_N; k++)
    for (size_t i = 1; i < s->n && !(m & (1u << k)); i++)
      if (!same(report_doc_str(s->cases[0].c, report_mode_keys[k]), report_doc_str(s->cases[i].c, report_mode_keys[k])))
        m |= 1u << k;
  return m;
}

void report_modes_append(report_buf *b, const json_t *c, unsigned mask,
                         void (*esc)(report_buf *b, const char *s)) {
  for (int k = 0; k < REPORT_MODE_N; k++) {
    const char *v = (mask & (1u << k)) ? report_doc_str(c, report_mode_keys[k]) : NULL;
    if (!v) continue;
    report_buf_puts(b, " \xC2\xB7 ");
    esc(b, v);
  }
}

int report_modes_common(report_buf *b, const report_summary *s, unsigned varying,
                        void (*esc)(report_buf *b, const char *s)) {
  int n = 0;
  for (int k = 0; s->n && k < REPORT_MODE_N; k++) {
    const char *v = (varying & (1u << k)) ? NULL : report_doc_str(s->cases[0].c, report_mode_keys[k]);
    if (!v) continue;
    report_buf_puts(b, n ? ", " : "");
    report_buf_puts(b, report_mode_keys[k]);
    report_buf_puts(b, " ");
    esc(b, v);
    n++;
  }
  return n;
}
