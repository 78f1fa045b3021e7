/* gdn_cli: table-driven command-line parsing shared by gdn-parity and
 * gdn-fixture.
 *
 * One table of gdn_cli_opt drives both the parser and the --help text, so the
 * two cannot drift apart.  Accepted forms: `--name value`, `--name=value`,
 * flags as `--name`; `--` ends options; everything else is positional.
 * Refused, as GDN_ERR_INPUT naming the option: an unknown option, a missing
 * value, a value given to a flag, an option given twice (last-wins would
 * hide the first: `check --fixture bad.h5 --fixture good.h5` must not judge
 * good.h5 alone), a separate value that looks like an option (`--json
 * --quiet` is a forgotten value, not a file named --quiet; write
 * `--json=--quiet` to mean one; negative numbers pass), and an option the
 * table marks for other commands.
 *
 * Value parsers below are strict: decimal only, no signs unless allowed, no
 * trailing characters, range-checked, and their messages name the option.
 */
#ifndef GDN_CLI_H
#define GDN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gdn_error.h"

typedef struct gdn_cli_opt {
  const char *name;    /* long name without the leading "--" */
  const char *metavar; /* NULL: a flag without a value */
  const char *help;    /* one line; "(default: ...)" belongs here */
  unsigned cmds;       /* bit set of the commands that take it; 0: every command */
} gdn_cli_opt;

#define GDN_CLI_MAX_OPTS 64
#define GDN_CLI_MAX_POS 16

typedef struct gdn_cli_args {
  const char *value[GDN_CLI_MAX_OPTS]; /* by table index; flags get "1"; NULL if absent */
  int n_pos;
  const char *pos[GDN_CLI_MAX_POS];
} gdn_cli_args;

/* Parses argv[first..argc).  The table ends with a {NULL} entry. */
int gdn_cli_parse(const gdn_cli_opt *table, int argc, char **argv, int first, gdn_cli_args *out,
                  gdn_error *e);
/* The same for command number `cmd` of cmd_names (NULL-terminated; bit
 * 1u << cmd in gdn_cli_opt.cmds): an option whose cmds excludes it is
 * refused, naming the commands it is for ("--seed does not apply to check
 * (it is for: run, sweep)"). */
int gdn_cli_parse_cmd(const gdn_cli_opt *table, const char *const *cmd_names, int cmd, int argc,
                      char **argv, int first, gdn_cli_args *out, gdn_error *e);

/* Index of option `name` in the table, or -1. */
int gdn_cli_index(const gdn_cli_opt *table, const char *name);
/* Value of option `name` (NULL when absent). */
const char *gdn_cli_get(const gdn_cli_opt *table, const gdn_cli_args *a, const char *name);

/* Writes "  --name METAVAR   help" lines for every option, aligned. */
void gdn_cli_print_options(const gdn_cli_opt *table, FILE *f);
/* The same, each option that not every command takes ending "(for: sweep,
 * check)" -- cmd_names as for gdn_cli_parse_cmd. */
void gdn_cli_print_options_cmd(const gdn_cli_opt *table, const char *const *cmd_names, FILE *f);

/* Strict scalar and list parsers.  `opt` names the option in messages. */
int gdn_cli_int64(const char *s, const char *opt, int64_t min, int64_t max, int64_t *out,
                  gdn_error *e);
int gdn_cli_uint64(const char *s, const char *opt, uint64_t *out, gdn_error *e);
/* Byte sizes: an integer with an optional K, M, G, T suffix (powers of 1024). */
int gdn_cli_bytes(const char *s, const char *opt, uint64_t *out, gdn_error *e);
/* "a,b,c" of integers in [min, max]; at most `cap` entries, no duplicates. */
int gdn_cli_int64_list(const char *s, const char *opt, int64_t min, int64_t max, int64_t *out,
                       size_t cap, size_t *n, gdn_error *e);
/* "a,b" of names from `choices` (NULL-terminated); stores choice indices. */
int gdn_cli_name_list(const char *s, const char *opt, const char *const *choices, int *out,
                      size_t cap, size_t *n, gdn_error *e);

#endif
