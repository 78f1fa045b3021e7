/* Escaping of document strings into HTML text and attributes, XML, Markdown
 * table cells and link targets: the only barrier between a case id or a
 * fixture path and the markup of a report. */
#include <check.h>
#include <string.h>

#include "report_escape.h"
#include "../check_runner.h"

typedef void (*esc_fn)(report_buf *, const char *, size_t);

static void expect(esc_fn f, const char *in, size_t n, const char *want) {
  report_buf b;
  report_buf_init(&b);
  f(&b, in, n);
  ck_assert_int_eq(b.err.code, GDN_OK);
  ck_assert_msg(b.len == strlen(want) && !memcmp(b.data, want, b.len),
                "escaping \"%s\": got \"%s\", want \"%s\"", in, b.data ? b.data : "", want);
  report_buf_clear(&b);
}
#define EXPECT(f, in, want) expect(f, in, strlen(in), want)

#define FFFD "\xEF\xBF\xBD"

START_TEST(html_text) {
  EXPECT(report_escape_html_text, "<script>alert(\"x&y\")</script>",
         "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;");
  EXPECT(report_escape_html_text, "it's", "it&#39;s");
  /* Entities already in the data are data: escaped again, not trusted. */
  EXPECT(report_escape_html_text, "&amp;", "&amp;amp;");
  /* Text keeps tab and newline. */
  EXPECT(report_escape_html_text, "a\tb\nc", "a\tb\nc");
  EXPECT(report_escape_html_text, "", "");
}
END_TEST

START_TEST(html_attr) {
  EXPECT(report_escape_html_attr, "a\"b'c\nd\te", "a&quot;b&#39;c&#10;d&#9;e");
  EXPECT(report_escape_html_attr, "x onmouseover=alert(1) \"", "x onmouseover=alert(1) &quot;");
  EXPECT(report_escape_html_attr, "<&>", "&lt;&amp;&gt;");
}
END_TEST

START_TEST(utf8) {
  /* Valid non-ASCII passes through byte for byte in every format. */
  const char *u = "\xCE\x94o \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80";
  EXPECT(report_escape_html_text, u, u);
  EXPECT(report_escape_html_attr, u, u);
  EXPECT(report_escape_xml_text, u, u);
  EXPECT(report_escape_markdown_cell, u, u);
  /* Invalid sequences: one U+FFFD per offending byte, the rest kept. */
  EXPECT(report_escape_html_text, "a\xFF" "b", "a" FFFD "b");
  EXPECT(report_escape_html_text, "\xC0\xAF", FFFD FFFD);         /* overlong '/' */
  EXPECT(report_escape_html_text, "\xED\xA0\x80", FFFD FFFD FFFD); /* a surrogate */
  EXPECT(report_escape_html_text, "x\xE2\x82", "x" FFFD FFFD);     /* truncated */
  EXPECT(report_escape_html_text, "\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* > U+10FFFF */
  /* Controls that HTML cannot show and an embedded NUL. */
  EXPECT(report_escape_html_text, "a\x01" "b\x7F" "c\xC2\x85", "a" FFFD "b" FFFD "c" FFFD);
  expect(report_escape_html_text, "a\0b", 3, "a" FFFD "b");
}
END_TEST

START_TEST(xml) {
  EXPECT(report_escape_xml_text, "a<b & \"c\" 'd'>", "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  EXPECT(report_escape_xml_attr, "l1\nl2\r\tx", "l1&#10;l2&#13;&#9;x");
  EXPECT(report_escape_xml_text, "l1\nl2", "l1\nl2");
  /* Outside XML 1.0's Char production even as a reference: replaced. */
  EXPECT(report_escape_xml_text, "a\x08" "b", "a" FFFD "b");
  EXPECT(report_escape_xml_attr, "\xEF\xBF\xBE", FFFD); /* U+FFFE */
  expect(report_escape_xml_attr, "\0", 1, FFFD);
  /* DEL is a legal XML character. */
  EXPECT(report_escape_xml_text, "\x7F", "\x7F");
}
END_TEST

START_TEST(markdown) {
  EXPECT(report_escape_markdown_cell, "a|b", "a\\|b");
  EXPECT(report_escape_markdown_cell, "*x* _y_ [l](u) `c` ~s~ \\",
         "\\*x\\* \\_y\\_ \\[l\\](u) \\`c\\` \\~s\\~ \\\\");
  /* GitHub renders inline HTML: neutralised as entities. */
  EXPECT(report_escape_markdown_cell, "<img src=x onerror=alert(1)>&",
         "&lt;img src=x onerror=alert(1)&gt;&amp;");
  /* A newline would end the table row. */
  EXPECT(report_escape_markdown_cell, "two\nlines\r\tend", "two lines  end");
  EXPECT(report_escape_markdown_cell, "quotes \"stay\" 'as is'", "quotes \"stay\" 'as is'");
}
END_TEST

START_TEST(url) {
  EXPECT(report_escape_url_path, "my report (1).html", "my%20report%20%281%29.html");
  EXPECT(report_escape_url_path, "out/r\xC3\xBC.html", "out/r%C3%BC.html");
  EXPECT(report_escape_url_path, "a_b-c.d~e", "a_b-c.d~e");
  EXPECT(report_escape_url_path, "x?y#z&w", "x%3Fy%23z%26w");
}
END_TEST

START_TEST(nul_terminated_helpers) {
  report_buf b;
  report_buf_init(&b);
  report_escape_html_text_z(&b, NULL); /* NULL appends nothing */
  report_escape_html_text_z(&b, "<");
  report_escape_html_attr_z(&b, "\"");
  report_escape_xml_text_z(&b, "&");
  report_escape_xml_attr_z(&b, "'");
  report_escape_markdown_cell_z(&b, "|");
  ck_assert_str_eq(b.data, "&lt;&quot;&amp;&#39;\\|");
  report_buf_clear(&b);
  report_buf_clear(&b); /* safe twice */
}
END_TEST

/* report_escape_fill: literal text kept, each %s escaped by the function
 * given (NULL passed on to it), %% a percent, a lone % kept. */
static void dash_for_null(report_buf *b, const char *s) { report_escape_html_text_z(b, s ? s : "-"); }

START_TEST(fill) {
  report_buf b;
  report_buf_init(&b);
  report_escape_fill(&b, report_escape_html_text_z, "<code>%s</code> at %s, 100%% % done", "a<b", "x&y");
  ck_assert_str_eq(b.data, "<code>a&lt;b</code> at x&amp;y, 100% % done");
  report_buf_clear(&b);
  report_escape_fill(&b, dash_for_null, "[%s|%s]%", (const char *)NULL, "\"q\"");
  ck_assert_str_eq(b.data, "[-|&quot;q&quot;]%");
  report_buf_clear(&b);
  /* negative control: the escaping is the function's, so an unescaping
   * one gives markup the first check would reject */
  report_escape_fill(&b, report_buf_puts, "<code>%s</code>", "a<b");
  ck_assert_str_eq(b.data, "<code>a<b</code>");
  ck_assert_str_ne(b.data, "<code>a&lt;b</code>");
  report_buf_clear(&b);
  report_escape_fill(&b, report_escape_markdown_cell_z, "| %s |", "a|b");
  ck_assert_str_eq(b.data, "| a\\|b |");
  ck_assert_int_eq(b.err.code, GDN_OK);
  report_buf_clear(&b);
}
END_TEST

CKR_MAIN("escape", "escape", 0, html_text, html_attr, utf8, xml, markdown, url, nul_terminated_helpers, fill)
