/* Untrusted strings (docs/errors.md, catalogue of the hostile tests, rows
 * 12-15) and content (argv[1] gdn-parity, argv[2] gdn-fixture).  Strings
 * from a fixture are escaped wherever they are printed (core/gdn_text.h) and
 * output names with control characters refused; a fixture may not pull data
 * from other files; synth writes only what verify accepts; a saved results
 * document must mean something before a report is rebuilt from it.  Each
 * refusal has its negative control. */
#include <hdf5.h>
#include <jansson.h>

#include "../fixtures/h5_edit.h"
#include "hostile_util.h"

static char *parity, *fixture;
static char base[600]; /* imported: zero inputs (1,32,1,8), one output "ok" */

static void write_zeros_npy(const char *file, const int64_t *shape, int rank) {
  size_t size;
  unsigned char *b = hu_npy_zeros(shape, rank, &size);
  hu_write(file, b, size);
  free(b);
}

static void setup(void) {
  hu_scratch_make();
  const int64_t qk[4] = {1, 32, 1, 8}, gb[3] = {1, 32, 1}, ht[4] = {1, 1, 8, 8};
  write_zeros_npy(hu_path("q.npy"), qk, 4);
  write_zeros_npy(hu_path("k.npy"), qk, 4);
  write_zeros_npy(hu_path("v.npy"), qk, 4);
  write_zeros_npy(hu_path("g.npy"), gb, 3);
  write_zeros_npy(hu_path("beta.npy"), gb, 3);
  write_zeros_npy(hu_path("o.npy"), qk, 4);
  write_zeros_npy(hu_path("ht.npy"), ht, 4);
  static const char d[] =
      "{\"inputs\": {\"q\": \"q.npy\", \"k\": \"k.npy\", \"v\": \"v.npy\", \"g\": \"g.npy\", \"beta\": \"beta.npy\"},"
      " \"source\": \"cpu-dump\", \"chunk_size\": 16, \"l2norm_in_kernel\": 1,"
      " \"outputs\": {\"ok\": {\"o\": \"o.npy\", \"ht\": \"ht.npy\"}}}";
  hu_write(hu_path("d.json"), d, sizeof d - 1);
  snprintf(base, sizeof base, "%s", hu_path("base.h5"));
  hu_result r;
  char *av[] = {fixture, "import", "--describe", (char *)hu_path("d.json"), "--out", base, NULL};
  hu_run(&r, av, NULL);
  ck_assert_msg(r.status == 0, "import: %s", r.err);
}

static void set_root_string(const char *file, const char *name, const char *v) {
  hid_t f = h5e_open_rw(file);
  if (H5Aexists(f, name) > 0) H5Adelete(f, name);
  hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hid_t a = H5Acreate2(f, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge(a, 0);
  ck_assert_int_ge(H5Awrite(a, t, &v), 0);
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
  H5Fclose(f);
}

static int count_char(const char *s, char c) {
  int n = 0;
  for (; *s; s++) n += *s == c;
  return n;
}

static int has_control(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p < 0x20 && *p != '\n') || *p == 0x7f) return 1;
  return 0;
}

/* Row 12: a newline in an output name forged a PASS line; ANSI escapes
 * reached the terminal through info; an error quoting a fixture string
 * spanned lines. */
START_TEST(fixture_strings_escaped) {
  hu_result r;
  /* negative control: the intact fixture is judged (zero inputs, zero
   * output: exact) */
  char *c1[] = {parity, "check", base, "--oracle", "dd", NULL};
  hu_run(&r, c1, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "PASS: "), "control: %d %s %s", r.status, r.out, r.err);
  const char *evil = hu_scratch_copy(base, "evil.h5");
  hid_t f = h5e_open_rw(evil);
  ck_assert_int_ge(H5Lmove(f, "outputs/ok", f, "outputs/a\nPASS: 1 case, 0 failed\n", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Fclose(f);
  char *a1[] = {parity, "check", (char *)evil, "--oracle", "dd", NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "output name with a newline", "control character 0x0a", "a\\nPASS: 1 case", hu_dir, NULL, NULL, 0);
  ck_assert_msg(!strstr(r.out, "PASS") && count_char(r.err, '\n') == 1, "forged line: out %s err %s", r.out, r.err);
  /* an attribute with an ANSI escape and a newline: info shows it escaped */
  const char *ansi = hu_scratch_copy(base, "ansi.h5");
  set_root_string(ansi, "notes", "line1\nfake: line\x1b[2J\x1b[31mred");
  char *a2[] = {fixture, "info", (char *)ansi, NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(!has_control(r.out), "info printed a control byte: %s", r.out);
  ck_assert_msg(strstr(r.out, "notes line1\\nfake: line\\x1b[2J\\x1b[31mred\n"), "%s", r.out);
  /* an error quoting a fixture string: one line */
  set_root_string(ansi, "source", "tpu\n\x1b[32mPASS");
  char *a3[] = {fixture, "verify", (char *)ansi, NULL};
  hu_run(&r, a3, NULL);
  hu_expect_refusal(&r, 2, "source with escapes", "attribute source 'tpu\\n\\x1b[32mPASS'", NULL, hu_dir, NULL, NULL, 0);
  ck_assert_msg(count_char(r.err, '\n') == 1 && !has_control(r.err), "%s", r.err);
  /* negative control: plain notes pass through info verbatim */
  set_root_string(ansi, "source", "cpu-dump");
  set_root_string(ansi, "notes", "plain words, caf\xc3\xa9");
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "notes plain words, caf\xc3\xa9\n"), "%s %s", r.out, r.err);
  /* import refuses such a name before writing */
  static const char d[] =
      "{\"inputs\": {\"q\": \"q.npy\", \"k\": \"k.npy\", \"v\": \"v.npy\", \"g\": \"g.npy\", \"beta\": \"beta.npy\"},"
      " \"source\": \"cpu-dump\", \"chunk_size\": 16, \"l2norm_in_kernel\": 1,"
      " \"outputs\": {\"x\\u001b[0m\": {\"o\": \"o.npy\"}}}";
  hu_write(hu_path("d2.json"), d, sizeof d - 1);
  char *a4[] = {fixture, "import", "--describe", (char *)hu_path("d2.json"), "--out", (char *)hu_path("n.h5"), NULL};
  hu_run(&r, a4, NULL);
  hu_expect_refusal(&r, 2, "import of a name with ESC", "control character 0x1b", NULL, hu_dir, hu_path("n.h5"), NULL, 0);
}
END_TEST

/* Row 13: external links, external raw storage and virtual datasets made
 * the loader read other files (/etc/passwd as q; fill values for a missing
 * source).  Each is refused naming the dataset. */
START_TEST(foreign_storage_refused) {
  hu_result r;
  char *c1[] = {fixture, "verify", base, NULL};
  hu_run(&r, c1, NULL);
  ck_assert_msg(r.status == 0, "control: %s", r.err);
  /* external link to the same data in the intact fixture */
  const char *el = hu_scratch_copy(base, "elink.h5");
  hid_t f = h5e_open_rw(el);
  ck_assert_int_ge(H5Ldelete(f, "inputs/q", H5P_DEFAULT), 0);
  ck_assert_int_ge(H5Lcreate_external(base, "inputs/q", f, "inputs/q", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Fclose(f);
  /* external raw storage: /etc/passwd read as q */
  const char *ex = hu_scratch_copy(base, "extern.h5");
  f = h5e_open_rw(ex);
  ck_assert_int_ge(H5Ldelete(f, "inputs/q", H5P_DEFAULT), 0);
  hsize_t dims[4] = {1, 32, 1, 8};
  hid_t sp = H5Screate_simple(4, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  ck_assert_int_ge(H5Pset_external(dcpl, "/etc/passwd", 0, 32 * 8 * 4), 0);
  hid_t d = H5Dcreate2(f, "inputs/q", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ck_assert_int_ge(d, 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  /* a virtual dataset whose source file is missing */
  const char *vd = hu_scratch_copy(base, "vds.h5");
  hid_t g = h5e_open_rw(vd);
  ck_assert_int_ge(H5Ldelete(g, "inputs/k", H5P_DEFAULT), 0);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  ck_assert_int_ge(H5Pset_virtual(dcpl, sp, "missing-source.h5", "/k", sp), 0);
  d = H5Dcreate2(g, "inputs/k", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ck_assert_int_ge(d, 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Fclose(g);
  H5Sclose(sp);
  H5Fclose(f);
  const char *files[] = {el, ex, vd};
  const char *why[] = {"an external link", "1 external file", "a virtual dataset"};
  for (int i = 0; i < 3; i++) {
    size_t n;
    unsigned char *b = hu_read(files[i], &n);
    char *av[] = {fixture, "verify", (char *)files[i], NULL};
    hu_run(&r, av, NULL);
    hu_expect_refusal(&r, 2, why[i], why[i], files[i], hu_dir, files[i], b, n);
    char *chk[] = {parity, "check", (char *)files[i], "--oracle", "dd", NULL};
    hu_run(&r, chk, NULL);
    hu_expect_refusal(&r, 2, why[i], why[i], "inputs/", hu_dir, files[i], b, n);
    free(b);
  }
}
END_TEST

/* Row 14: synth wrote what its own verify refused. */
START_TEST(synth_writes_only_valid_fixtures) {
  hu_result r;
  const char *out = hu_path("s.h5");
  char *a1[] = {fixture, "synth", "--shape", "1,8,1,4", "--model", "\xff\xfe", "--out", (char *)out, NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "--model not UTF-8", "model is not valid UTF-8", "0xff", hu_dir, out, NULL, 0);
  char *a2[] = {fixture, "synth", "--shape", "1,8,1,4", "--model", "qwen3.5-9b \xe2\x80\x94 layer 3", "--out",
                (char *)out, NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0, "control: %s", r.err);
  char *v[] = {fixture, "verify", (char *)out, NULL};
  hu_run(&r, v, NULL);
  ck_assert_msg(r.status == 0, "verify of synth's output: %s", r.err);
}
END_TEST

/* Row 15: report rebuilt PASS from documents that mean nothing. */
START_TEST(results_validator_strict) {
  char res[600];
  snprintf(res, sizeof res, "%s", hu_path("r.json")); /* hu_path()'s buffers rotate */
  hu_result r;
  char *a0[] = {parity, "--shape", "1,32,1,8", "--chunk", "16", "--oracle", "dd", "--quiet", "--json", (char *)res, NULL};
  hu_run(&r, a0, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  json_error_t je;
  const char *what[] = {"tool", "negative", "no impls", "no cases"};
  const char *needle[] = {"not 'gdn-parity'", "metrics are never negative", "no \"impls\"", "cases is empty"};
  for (int i = 0; i < 4; i++) {
    json_t *doc = json_load_file(res, 0, &je);
    ck_assert_ptr_nonnull(doc);
    json_t *c0 = json_array_get(json_object_get(doc, "cases"), 0);
    if (i == 0) json_object_set_new(doc, "tool", json_string("other"));
    if (i == 1) json_object_set_new(json_object_get(json_object_get(json_object_get(c0, "impls"), "scan"), "o"),
                                    "max_abs", json_real(-1.0));
    if (i == 2) json_object_del(c0, "impls");
    if (i == 3) json_array_clear(json_object_get(doc, "cases"));
    char bad[600];
    snprintf(bad, sizeof bad, "%s", hu_path("bad.json"));
    ck_assert_int_eq(json_dump_file(doc, bad, JSON_INDENT(1)), 0);
    json_decref(doc);
    char *av[] = {parity, "report", (char *)bad, "-o", (char *)hu_path("x.html"), NULL};
    hu_run(&r, av, NULL);
    hu_expect_refusal(&r, 2, what[i], needle[i], bad, hu_dir, hu_path("x.html"), NULL, 0);
  }
  /* negative control: the document as written */
  char *c1[] = {parity, "report", (char *)res, "-o", (char *)hu_path("x.html"), NULL};
  hu_run(&r, c1, NULL);
  ck_assert_msg(r.status == 0 && access(hu_path("x.html"), F_OK) == 0, "control: %s", r.err);
}
END_TEST

HU_MAIN("test_untrusted GDN-PARITY GDN-FIXTURE", 2, (&parity, &fixture), "untrusted", "untrusted", setup, NULL, 300,
    fixture_strings_escaped, foreign_storage_refused, synth_writes_only_valid_fixtures, results_validator_strict)
