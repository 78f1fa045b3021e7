/* gdn-fixture's help is complete and accurate: `gdn-fixture --help` names
 * every subcommand, each `gdn-fixture CMD --help` lists exactly the options
 * CMD's parser knows (fix_cli.c: one table drives both), every option named
 * in a usage line exists, and the parser really takes each listed option
 * (needs a value exactly when help shows a METAVAR).  argv[1]: gdn-fixture. */
#include "fix_cli.h"
#include "hostile_util.h"
#include "../check_runner.h"

static char *exe;

START_TEST(main_help_names_every_command) {
  hu_result r;
  char *av[] = {exe, "--help", NULL};
  hu_run(&r, av, NULL);
  ck_assert_int_eq(r.status, 0);
  int n = 0;
  for (const fix_cli_command *c = fix_cli_commands; c->name; c++, n++) {
    char needle[64];
    snprintf(needle, sizeof needle, "\n  %s ", c->name);
    ck_assert_msg(strstr(r.out, needle), "--help lacks command %s:\n%s", c->name, r.out);
    ck_assert_msg(strstr(r.out, c->summary), "--help lacks the summary of %s", c->name);
  }
  ck_assert_int_eq(n, 5);
  ck_assert_ptr_nonnull(strstr(r.out, "exit status: 0 ok, 1 stale oracle (verify), 2 bad usage or input, 3 internal error"));
  /* -h and help are --help; no arguments is usage on stderr, exit 2 */
  char *av2[] = {exe, "-h", NULL}, *av3[] = {exe, NULL};
  hu_result r2;
  hu_run(&r2, av2, NULL);
  ck_assert_int_eq(r2.status, 0);
  ck_assert_str_eq(r2.out, r.out);
  hu_run(&r2, av3, NULL);
  ck_assert_int_eq(r2.status, 2);
  ck_assert_ptr_nonnull(strstr(r2.err, "usage: gdn-fixture COMMAND"));
}
END_TEST

START_TEST(each_command_help_matches_its_parser) {
  for (const fix_cli_command *c = fix_cli_commands; c->name; c++) {
    hu_result r;
    char *av[] = {exe, (char *)c->name, "--help", NULL};
    hu_run(&r, av, NULL);
    ck_assert_msg(r.status == 0, "%s --help: %d %s", c->name, r.status, r.err);
    ck_assert_msg(strstr(r.out, c->usage), "%s --help lacks its usage line", c->name);
    int n = 0;
    for (; c->opts[n].name; n++) {
      char needle[128];
      snprintf(needle, sizeof needle, "\n  --%s%s%s ", c->opts[n].name, c->opts[n].metavar ? " " : "",
               c->opts[n].metavar ? c->opts[n].metavar : "");
      ck_assert_msg(strstr(r.out, needle), "%s --help lacks '%s'", c->name, needle + 1);
      ck_assert_msg(strstr(r.out, c->opts[n].help), "%s --help lacks the help of --%s", c->name, c->opts[n].name);
      /* The parser knows it: given without its value it says so (not "unknown"). */
      char opt[80];
      snprintf(opt, sizeof opt, "--%s", c->opts[n].name);
      if (!strcmp(c->opts[n].name, "help")) continue;
      char *av2[] = {exe, (char *)c->name, opt, NULL};
      hu_result r2;
      hu_run(&r2, av2, NULL);
      ck_assert_msg(!strstr(r2.err, "unknown option"), "%s: parser does not know %s: %s", c->name, opt, r2.err);
      if (c->opts[n].metavar)
        ck_assert_msg(r2.status == 2 && strstr(r2.err, "needs a value"), "%s %s without a value: %d %s", c->name,
                      opt, r2.status, r2.err);
    }
    /* exactly those: one "  --" line per option */
    int lines = 0;
    for (const char *p = r.out; (p = strstr(p, "\n  --")); p++) lines++;
    ck_assert_msg(lines == n, "%s --help: %d option lines, %d options", c->name, lines, n);
    /* every --name in the usage line is an option of the table */
    for (const char *p = c->usage; (p = strstr(p, "--")); p += 2) {
      char nm[64];
      size_t k = 0;
      for (const char *q = p + 2; (*q >= 'a' && *q <= 'z') || *q == '-'; q++)
        if (k + 1 < sizeof nm) nm[k++] = *q;
      nm[k] = '\0';
      ck_assert_msg(gdn_cli_index(c->opts, nm) >= 0, "%s: usage names --%s, which its parser does not know", c->name, nm);
    }
    /* an option of no table is refused, exit 2, naming it */
    char *av3[] = {exe, (char *)c->name, "--no-such-option", NULL};
    hu_result r3;
    hu_run(&r3, av3, NULL);
    ck_assert_int_eq(r3.status, 2);
    ck_assert_msg(strstr(r3.err, "unknown option '--no-such-option'"), "%s", r3.err);
  }
}
END_TEST

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  exe = argv[1];
  Suite *s = suite_create("help");
  CKR_TCASE(s, "help", 120, main_help_names_every_command, each_command_help_matches_its_parser);
  return ckr_run(s);
}
