#include "report_markdown.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report_doc.h"
#include "report_findings.h"
#include "report_audit.h"
#include "report_escape.h"
#include "report_modes.h"
#include "report_num.h"
#include "report_summary.h"

/* Room kept for the closing lines once the tables stop. */
#define TAIL_RESERVE 4096

static void cell(report_buf *b, const char *s) {
  report_buf_puts(b, " ");
  report_escape_markdown_cell_z(b, s ? s : "\xE2\x80\x94");
  report_buf_puts(b, " |");
}

static void cell_num(report_buf *b, int has, double v) {
  char t[REPORT_NUM_CHARS] = "\xE2\x80\x94";
  if (has) report_num_format(t, v, 3);
  report_buf_printf(b, " %s |", t);
}

static void metric_cell(report_buf *b, const json_t *c, const char *impl) {
  double v = 0;
  int has = report_doc_metric(c, impl, "o", "rel_fro", &v);
  cell_num(b, has, v);
}

static const char HEADER[] =
    "| # | verdict | case | input | T | C | D | prefix | dtype | deciding check | value | limit "
    "| value/limit | scan o rel_fro | judged o rel_fro | judged vs scan o rel_fro | upstream |\n"
    "|---:|---|---|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";

/* With external outputs the table gains one column: each output's o
 * rel_fro and verdict in that case. */
static const char EXT_HEADER[] =
    "| # | verdict | case | input | T | C | D | prefix | dtype | deciding check | value | limit "
    "| value/limit | external outputs (o rel_fro, verdict) | scan o rel_fro | judged o rel_fro "
    "| judged vs scan o rel_fro | upstream |\n"
    "|---:|---|---|---|---:|---:|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|---|\n";

static void externals_cell(report_buf *b, const report_summary *s, const json_t *c) {
  report_buf_puts(b, " ");
  int first = 1;
  for (size_t i = 0; i < s->n_externals; i++) {
    const char *name = s->externals[i].name;
    const json_t *im = json_object_get(json_object_get(c, "impls"), name);
    if (!im) continue;
    double v = 0;
    char t[REPORT_NUM_CHARS] = "\xE2\x80\x94";
    if (report_doc_metric(c, name, "o", "rel_fro", &v)) report_num_format(t, v, 3);
    int pass = json_is_true(json_object_get(im, "pass"));
    report_buf_puts(b, first ? "" : "; ");
    report_escape_markdown_cell_z(b, name);
    report_buf_printf(b, " %s %s", t, pass ? "pass" : "**fail**");
    first = 0;
  }
  report_buf_puts(b, first ? "\xE2\x80\x94 |" : " |");
}

static void row(report_buf *b, const report_summary *s, size_t rank) {
  const report_case_view *v = &s->cases[s->order[rank]];
  const json_t *c = v->c, *in = report_doc_input(s->doc, c);
  report_buf_printf(b, "| %zu | %s |", rank + 1,
                    v->error ? "**ERROR**" : v->pass ? "pass" : "**FAIL**");
  cell(b, report_doc_str(c, "id"));
  cell(b, in ? report_doc_str(in, "name") : NULL);
  const json_t *sh = json_object_get(c, "shape");
  report_buf_printf(b, " %lld | %lld | %lld |", report_doc_int(sh, "T", 0),
                    report_doc_int(c, "chunk", 0), report_doc_int(c, "devices", 0));
  report_buf_puts(b, " ");
  report_escape_markdown_cell_z(b, report_doc_str(c, "prefix") ? report_doc_str(c, "prefix") : "\xE2\x80\x94");
  report_modes_append(b, c, s->modes, report_escape_markdown_cell_z);
  report_buf_puts(b, " | ");
  report_escape_markdown_cell_z(b, report_doc_str(c, "dtype"));
  report_buf_puts(b, "/");
  report_escape_markdown_cell_z(b, report_doc_str(c, "matmul_precision"));
  report_buf_puts(b, " |");
  if (v->deciding) {
    report_buf_puts(b, " ");
    report_escape_markdown_cell_z(b, report_doc_str(v->deciding, "name"));
    report_buf_puts(b, " (");
    report_escape_markdown_cell_z(b, report_doc_str(v->deciding, "metric"));
    report_buf_puts(b, ") |");
    cell_num(b, 1, v->value);
    cell_num(b, 1, v->limit);
    cell_num(b, 1, v->margin);
  } else {
    cell(b, v->error ? v->error : "no checks");
    report_buf_puts(b, " \xE2\x80\x94 | \xE2\x80\x94 | \xE2\x80\x94 |");
  }
  if (s->n_externals) externals_cell(b, s, c);
  /* judged: the fixture output the case is about (cases[].subject) against
   * the oracle and against the stock output upstream compares it with; else
   * affine-prefix against the oracle and against the scan */
  const char *subject = report_doc_str(c, "subject");
  metric_cell(b, c, "scan");
  metric_cell(b, c, subject ? subject : "affine-prefix");
  metric_cell(b, c, subject ? "subject_vs_against" : "affine_vs_scan");
  if (!v->upstream_n) report_buf_puts(b, " \xE2\x80\x94 |\n");
  else {
    int missed = !v->pass && v->upstream_pass > 0;
    report_buf_printf(b, " %supstream %d/%d pass / ours %s%s |\n", missed ? "**" : "",
                      v->upstream_pass, v->upstream_n, v->pass ? "pass" : "fail",
                      missed ? "**" : "");
  }
}

/* "value = V, limit L (M x the limit, pass). Limit: REASON" of a check. */
static void check_sentence(report_buf *b, const json_t *k, double value, double limit, double margin) {
  char v[REPORT_NUM_CHARS], l[REPORT_NUM_CHARS], m[REPORT_NUM_CHARS];
  report_num_format(v, value, 4);
  report_num_format(l, limit, 4);
  report_num_format(m, margin, 3);
  int pass = json_is_true(json_object_get(k, "pass"));
  report_buf_puts(b, ": ");
  report_escape_markdown_cell_z(b, report_doc_str(k, "name"));
  const char *where = report_doc_str(k, "where");
  if (json_integer_value(json_object_get(k, "nonfinite")) > 0 && where) {
    /* NaN or inf judged: the count and the first position, not a value */
    report_buf_puts(b, ": **fail**, ");
    report_escape_markdown_cell_z(b, where);
    return;
  }
  report_buf_puts(b, ", ");
  report_escape_markdown_cell_z(b, report_doc_str(k, "metric"));
  report_buf_printf(b, " = **%s**, limit **%s** (%s\xC3\x97 the limit, %s)", v, l, m, pass ? "pass" : "**fail**");
  /* a rule's reason once in the summary: a later mention names the rule */
  const char *reason = report_doc_str(k, "reason"), *rule = report_doc_str(k, "rule");
  report_buf said; /* " (rule RULE)", escaped as the summary writes it */
  report_buf_init(&said);
  if (rule) {
    report_buf_puts(&said, " (rule ");
    report_escape_markdown_cell_z(&said, rule);
    report_buf_puts(&said, ")");
  }
  if (reason && said.len && b->data && strstr(b->data, said.data)) {
    report_buf_puts(b, ". Limit: as above");
    report_buf_puts(b, said.data);
  } else if (reason) {
    report_buf_puts(b, ". Limit: ");
    report_escape_markdown_cell_z(b, reason);
    if (said.len) report_buf_puts(b, said.data);
  }
  report_buf_clear(&said);
}

/* The outputs the user came to judge come first: each external output's
 * verdict over its cases and the deciding check of its worst case. */
static void externals_headline(report_buf *b, const report_summary *s) {
  for (size_t i = 0; i < s->n_externals; i++) {
    const report_external_stat *x = &s->externals[i];
    report_buf_puts(b, "**External output ");
    report_escape_markdown_cell_z(b, x->name);
    if (x->fail) report_buf_printf(b, ": FAIL** in %zu of %zu cases. Deciding check of its worst case, ", x->fail, x->cases);
    else report_buf_printf(b, ": pass** in all %zu cases. Closest to its limit: case ", x->cases);
    report_escape_markdown_cell_z(b, report_doc_str(s->cases[x->worst].c, "id"));
    if (x->deciding) check_sentence(b, x->deciding, x->value, x->limit, x->margin);
    else report_buf_puts(b, ": no checks");
    report_buf_puts(b, ".\n\n");
  }
}

/* The verdict, the external outputs, the worst case and what upstream
 * would have missed. */
static void verdict_lines(report_buf *b, const json_t *doc, const report_summary *s) {
  report_buf_printf(b, "## %s ", s->pass ? "\xE2\x9C\x85" : "\xE2\x9D\x8C");
  report_escape_markdown_cell_z(b, report_doc_str(doc, "tool"));
  report_buf_printf(b, ": **%s**", s->pass ? "PASS" : "FAIL");
  const char *pm = report_doc_planted_mutant(doc);
  if (pm) {
    report_buf_puts(b, " with planted mutant `");
    report_escape_markdown_cell_z(b, pm);
    report_buf_printf(b, "` (%s)\n\n**Planted mutant ", s->pass ? "survived" : "killed");
    report_escape_markdown_cell_z(b, pm);
    report_buf_printf(b, " %s:** %s.", s->pass ? "survived" : "killed", REPORT_MUTANT_NOTE);
  }
  report_buf_puts(b, "\n\n");
  if (!s->n) report_buf_puts(b, "No cases were run.");
  else if (s->pass || !s->n_fail) report_buf_printf(b, "**All %zu cases within tolerance.**", s->n);
  else report_buf_printf(b, "**%zu of %zu cases out of tolerance.**", s->n_fail, s->n);
  long long ex = report_doc_int(doc, "exit_status", -1);
  if (ex >= 0) report_buf_printf(b, " Exit status %lld.", ex);
  report_buf_puts(b, "\n\n");
  externals_headline(b, s);
  if (s->worst != SIZE_MAX) {
    const report_case_view *w = &s->cases[s->worst];
    report_buf_puts(b, s->n_fail ? "**Deciding check** of the worst case, "
                                : "**Closest to its limit**: case ");
    report_escape_markdown_cell_z(b, report_doc_str(w->c, "id"));
    if (w->error) {
      report_buf_puts(b, ": could not be evaluated: ");
      report_escape_markdown_cell_z(b, w->error);
    }
    if (w->deciding) check_sentence(b, w->deciding, w->value, w->limit, w->margin);
    report_buf_puts(b, ".\n\n");
  }
  if (s->n_missed) {
    report_buf_printf(b, "> **Upstream would have missed it:** today's upstream checks pass %zu of "
                         "the %zu failing cases:", s->n_missed, s->n_fail);
    int first = 1;
    for (size_t i = 0; i < s->n_upstream; i++) {
      if (!s->upstream[i].missed) continue;
      report_buf_puts(b, first ? " " : "; ");
      report_escape_markdown_cell_z(b, s->upstream[i].name);
      report_buf_printf(b, " passes %zu", s->upstream[i].missed);
      first = 0;
    }
    report_buf_puts(b, ".\n\n");
  }
}

/* A line of the list: the label capitalised (ours, not the document's:
 * no escaping), then the first case and the text as cells. */
static void finding_line(report_buf *b, const report_finding *f) {
  char lab[96];
  snprintf(lab, sizeof lab, "%s", report_finding_label(f->text));
  if (lab[0] >= 'a' && lab[0] <= 'z') lab[0] = (char)(lab[0] - 'a' + 'A');
  report_buf_printf(b, "- **%s** (%zu case%s, first ", lab, f->cases, f->cases == 1 ? "" : "s");
  report_escape_fill(b, report_escape_markdown_cell_z, "%s): %s\n", f->first_id ? f->first_id : "?", f->text);
}

/* What the numbers mean beyond pass/fail: each distinct cases[].finding
 * once (report_findings.h). */
static void findings_lines(report_buf *b, const report_summary *s) {
  static const report_findings_style md = {"### Findings\n\n", finding_line,
                                           "- ... and %zu more distinct findings (cases[].finding).\n", "\n"};
  report_findings_list(b, s, &md);
}

/* "gdn-parity VERSION (GIT) . oracle ... . policy ..." */
static void provenance_line(report_buf *b, const json_t *doc) {
  report_escape_markdown_cell_z(b, report_doc_str(doc, "tool"));
  report_buf_puts(b, " ");
  report_escape_markdown_cell_z(b, report_doc_str(doc, "version"));
  const char *git = report_doc_str(doc, "git_commit");
  if (git) {
    report_buf_puts(b, " (");
    report_escape_markdown_cell_z(b, git);
    report_buf_puts(b, ")");
  }
  const json_t *o = json_object_get(doc, "oracle");
  if (o) {
    report_buf_puts(b, " \xC2\xB7 oracle ");
    report_escape_markdown_cell_z(b, report_doc_str(o, "tier") ? report_doc_str(o, "tier") : "?");
    long long pb = report_doc_int(o, "precision_bits", -1);
    if (pb > 0) report_buf_printf(b, " %lld bits", pb);
    char t[REPORT_NUM_CHARS];
    if (report_doc_num_text(o, "certified_bits", 4, t)) report_buf_printf(b, ", certified %s bits", t);
  } else report_buf_puts(b, " \xC2\xB7 no oracle");
  const char *pol = report_doc_str(json_object_get(doc, "policy"), "name");
  if (pol) {
    report_buf_puts(b, " \xC2\xB7 policy ");
    report_escape_markdown_cell_z(b, pol);
  }
  report_buf_puts(b, "\n\n");
}

static int tables(report_buf *b, const report_summary *s, gdn_error *e) {
  int rc;
  /* Tables: failing, then passing, rows until the byte budget is spent. */
  size_t shown = 0, n_pass = s->n - s->n_fail;
  int stopped = 0;
  report_buf r;
  report_buf_init(&r);
  for (int part = 0; part < 2 && !stopped; part++) {
    size_t from = part == 0 ? 0 : s->n_fail, to = part == 0 ? s->n_fail : s->n;
    if (from == to) continue;
    char head[96];
    snprintf(head, sizeof head, "### %s cases (%zu)\n\n", part == 0 ? "Failing" : "Passing",
             part == 0 ? s->n_fail : n_pass);
    const char *header = s->n_externals ? EXT_HEADER : HEADER;
    if (b->len + strlen(head) + strlen(header) + 1 + TAIL_RESERVE > REPORT_MARKDOWN_MAX_BYTES) {
      stopped = 1;
      break;
    }
    if (part == 1 && shown) report_buf_puts(b, "\n");
    report_buf_puts(b, head);
    report_buf_puts(b, header);
    for (size_t k = from; k < to; k++) {
      r.len = 0;
      row(&r, s, k);
      if (r.err.code || b->len + r.len + TAIL_RESERVE > REPORT_MARKDOWN_MAX_BYTES) {
        stopped = 1;
        break;
      }
      report_buf_append(b, r.data, r.len);
      shown++;
    }
  }
  rc = report_buf_status(&r, "rendering the Markdown summary", e);
  report_buf_clear(&r);
  if (shown < s->n)
    report_buf_printf(b, "\n... and %zu more cases (see the report).\n", s->n - shown);
  return rc;
}

int report_markdown_render(const json_t *doc, const char *html_relpath, report_buf *b,
                           gdn_error *e) {
  report_summary s;
  int rc = report_summary_load(doc, &s, e);
  if (rc) return rc;
  verdict_lines(b, doc, &s);
  report_audit_markdown(b, doc);
  findings_lines(b, &s);
  if (html_relpath && *html_relpath) {
    report_buf_puts(b, "Full report: [");
    report_escape_markdown_cell_z(b, html_relpath);
    report_buf_puts(b, "](");
    report_escape_url_path(b, html_relpath, strlen(html_relpath));
    report_buf_puts(b, ")\n\n");
  }
  provenance_line(b, doc);
  s.modes = report_modes_varying(&s);
  report_buf_puts(b, "Modes every case shares: ");
  if (!report_modes_common(b, &s, s.modes, report_escape_markdown_cell_z)) report_buf_puts(b, "none recorded");
  report_buf_puts(b, s.modes ? "; the prefix column adds the ones cases differ in.\n\n" : ".\n\n");
  rc = tables(b, &s, e);
  report_summary_clear(&s);
  if (rc) return rc;
  return report_buf_status(b, "rendering the Markdown summary", e);
}

int report_markdown_write(const json_t *doc, const char *path, const char *html_relpath,
                          gdn_error *e) {
  report_buf b;
  report_buf_init(&b);
  return report_buf_write_file(&b, report_markdown_render(doc, html_relpath, &b, e), path, e);
}
