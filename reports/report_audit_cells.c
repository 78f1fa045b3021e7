/* The audit's table cells that the HTML section's tables share (the
 * checks' and programs' tables, report_audit_html.c and
 * report_audit_programs.c, and the work tables, report_audit_work.c):
 * below all three (report_audit.h). */
#include <math.h>

#include "report_audit.h"
#include "report_doc.h"
#include "report_escape.h"
#include "report_num.h"

static void esc(report_buf *b, const char *s) { report_escape_html_text_z(b, s ? s : "\xE2\x80\x94"); }

/* A number as the audit has it: integers exactly (byte counts, and reals
 * with an integral value: Python writes flops as 1234.0), other reals to 4
 * significant digits, null or absent as a dash. */
void report_audit_html_num(report_buf *b, const json_t *j) {
  double d;
  if (json_is_integer(j)) report_buf_printf(b, "%lld", (long long)json_integer_value(j));
  else if (report_num_get(j, &d) && fabs(d) < 1e15 && d == floor(d)) report_buf_printf(b, "%.0f", d);
  else if (report_num_get(j, &d)) {
    char s[REPORT_NUM_CHARS];
    report_num_format(s, d, 4);
    report_buf_puts(b, s);
  } else report_buf_puts(b, "\xE2\x80\x94");
}

static void ints_text(report_buf *b, const json_t *a) {
  report_buf_putc(b, '[');
  for (size_t i = 0; i < json_array_size(a); i++)
    report_buf_printf(b, "%s%lld", i ? "," : "", (long long)json_integer_value(json_array_get(a, i)));
  report_buf_putc(b, ']');
}

/* "f32[1,1024,2,16]", a tuple as "(f32[..], [..])". */
void report_audit_html_shape(report_buf *b, const json_t *op) {
  esc(b, report_doc_str(op, "dtype") ? report_doc_str(op, "dtype") : "");
  const json_t *sh = json_object_get(op, "shape"), *shs = json_object_get(op, "shapes");
  if (json_is_array(sh)) ints_text(b, sh);
  else if (json_is_array(shs)) {
    report_buf_putc(b, '(');
    for (size_t i = 0; i < json_array_size(shs); i++) {
      if (i) report_buf_puts(b, ", ");
      ints_text(b, json_array_get(shs, i));
    }
    report_buf_putc(b, ')');
  }
}
