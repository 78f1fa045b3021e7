/* Non-regular inputs: an input that is not a regular file (argv[1]
 * gdn-parity, argv[2] gdn-fixture).  A FIFO given as --readme, --grid or
 * --policy made the reader block for ever (fopen waits for a writer).  Every
 * file input of both tools is opened through gdn_path (core/gdn_path.h:
 * gdn_path_fopen_input, or gdn_path_check_input where a library opens the
 * file), so a FIFO, a folder and a character device (/dev/null) are each
 * refused: exit 2 within the limit, an error line naming the path, nothing
 * written.  The negative control: the same commands with regular files run
 * (exit 0). */
#include "hostile_util.h"

static char *parity, *fixture;

static void setup(void) { hu_scratch_make(); }

/* The files the commands read, regular: the control's inputs. */
static const char *grid_text = "{\"entries\": [{\"shape\": \"1,32,1,8\", \"chunk\": [16], \"devices\": [2]}]}";
static const char *readme_text = "# r\n\n## What a test must cover first\n\n| mutant | why it cannot be killed |\n"
                                 "|---|---|\n| `final-from-replay` | round-off |\n";

/* The commands, each with one input slot (X) that the test fills. */
enum { N_CMD = 11 };
static void command(int i, const char *x, char **av) {
  const char *g = hu_path("grid.json"), *rd = hu_path("README.md");
  const char *out = hu_path("out.html"), *h5 = hu_path("new.h5"), *dd = hu_path("dumps");
  char *const cmds[N_CMD][16] = {
      {parity, "coverage", "--grid", (char *)g, "--mutants", "scale-none", "--oracle", "dd", "--quiet", "--readme",
       (char *)x, NULL},
      {parity, "coverage", "--grid", (char *)x, "--mutants", "scale-none", "--oracle", "dd", "--quiet", "--readme",
       (char *)rd, NULL},
      {parity, "sweep", "--grid", (char *)x, "--oracle", "dd", "--quiet", NULL},
      {parity, "--shape", "1,32,1,8", "--chunk", "16", "--oracle", "dd", "--quiet", "--policy", (char *)x, NULL},
      {parity, "check", "--fixture", (char *)x, "--quiet", NULL},
      {parity, "report", (char *)x, "-o", (char *)out, NULL},
      {fixture, "verify", (char *)x, NULL},
      {fixture, "info", (char *)x, NULL},
      {fixture, "regen", (char *)x, "--oracle-bits", "64", NULL},
      {fixture, "import", (char *)dd, "--describe", (char *)x, "--out", (char *)h5, NULL},
      {fixture, "import", (char *)dd, "--out", (char *)h5, NULL}, /* x: dumps/q.npy */
  };
  memcpy(av, cmds[i], sizeof cmds[i]);
}

/* Regular inputs for every slot: grid, README, a fixture, a results
 * document, a policy, a dump folder with its description. */
static void make_inputs(void) {
  hu_write(hu_path("grid.json"), grid_text, strlen(grid_text));
  hu_write(hu_path("README.md"), readme_text, strlen(readme_text));
  hu_result r;
  char *s[] = {fixture, "synth", "--shape", "1,8,1,4", "--out", (char *)hu_path("fx.h5"), NULL};
  hu_run(&r, s, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *j[] = {parity, "--shape", "1,32,1,8", "--chunk", "16", "--oracle", "dd", "--quiet", "--json",
               (char *)hu_path("r.json"), NULL};
  hu_run(&r, j, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *p[] = {parity, "--print-policy", NULL};
  hu_run(&r, p, NULL);
  ck_assert_int_eq(r.status, 0);
  hu_write(hu_path("policy.json"), r.out, strlen(r.out));
  ck_assert_int_eq(mkdir(hu_path("dumps"), 0700), 0); /* import's folder: its files are checked first */
}

/* The regular file of slot i (the negative control), or NULL where the
 * control is not run here (the dump commands: the refusal is the point). */
static const char *regular(int i) {
  static const char *const names[N_CMD] = {"README.md", "grid.json", "grid.json", "policy.json", "fx.h5", "r.json",
                                           "fx.h5",     "fx.h5",     "fx.h5",     NULL,          NULL};
  return names[i] ? hu_path(names[i]) : NULL;
}

static void expect_refused(int i, const char *x, const char *kind) {
  char *av[16], out[512];
  command(i, x, av);
  snprintf(out, sizeof out, "%s", hu_path("out.html"));
  hu_result r;
  hu_run_ex(&r, av, NULL, 0, 0, 60);
  char what[128];
  snprintf(what, sizeof what, "command %d (%s %s) with %s", i, av[1], av[2], kind);
  hu_expect_refusal(&r, 2, what, x, "regular file", hu_dir, out, NULL, 0);
  ck_assert_msg(access(hu_path("new.h5"), F_OK) != 0, "%s: wrote new.h5", what);
}

START_TEST(non_regular_inputs_refused) {
  make_inputs();
  char fifo[512], folder[512], q[512]; /* copies: hu_path's buffers rotate */
  snprintf(fifo, sizeof fifo, "%s", hu_path("fifo"));
  snprintf(folder, sizeof folder, "%s", hu_path("folder"));
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  ck_assert_int_eq(mkdir(folder, 0700), 0);
  for (int i = 0; i < N_CMD - 1; i++) {
    expect_refused(i, fifo, "a FIFO");
    expect_refused(i, folder, "a folder");
    expect_refused(i, "/dev/null", "a character device");
  }
  /* A FIFO among the dumps import reads. */
  snprintf(q, sizeof q, "%s", hu_path("dumps/q.npy"));
  unlink(q);
  ck_assert_int_eq(mkfifo(q, 0600), 0);
  expect_refused(N_CMD - 1, q, "a FIFO dump");
  struct stat st;
  ck_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
  /* the control: the same commands on regular files are not refused */
  for (int i = 0; i < N_CMD; i++) {
    if (!regular(i)) continue;
    char *av[16], x[512];
    snprintf(x, sizeof x, "%s", regular(i));
    command(i, x, av);
    hu_result r;
    hu_run_ex(&r, av, NULL, 0, 0, 120);
    ck_assert_msg(r.status == 0, "control %d (%s %s): exit %d: %s", i, av[1], av[2], r.status, r.err);
  }
}
END_TEST

HU_MAIN("test_input_files GDN-PARITY GDN-FIXTURE", 2, (&parity, &fixture), "inputs", "inputs", setup, hu_scratch_remove, 600,
    non_regular_inputs_refused)
