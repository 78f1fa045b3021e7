/* Runs a program with arguments, capturing stdout and stderr (test helper). */
#ifndef CLI_RUN_H
#define CLI_RUN_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../run_capture.h"
#include "../scratch_dir.h"

typedef struct cli_result {
  int status; /* exit status, or 128 + signal */
  char out[1 << 16], err[1 << 16];
} cli_result;

/* argv[0] is the program; NULL-terminated. */
static void cli_run(cli_result *res, char *const argv[]) {
  run_capture c;
  run_capture_open(&c, "/tmp/gdn-cli");
  pid_t pid = fork();
  if (pid == 0) {
    run_capture_redirect(&c);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  run_capture_collect(&c, res->out, sizeof res->out, res->err, sizeof res->err);
}

/* The running test's scratch folder, for the files its runs write: made
 * and removed (with what is left in it) by the checked fixture
 * cli_scratch_make / cli_scratch_remove; cli_path names a file in it. */
static char *cli_dir;
__attribute__((unused)) static void cli_scratch_make(void) { cli_dir = scratch_mkdtemp("/tmp/gdn-cli"); }
__attribute__((unused)) static void cli_scratch_remove(void) {
  scratch_rmdir(cli_dir);
  free(cli_dir);
  cli_dir = NULL;
}
/* cli_dir/name (scratch_join: valid for the next 63 calls). */
__attribute__((unused)) static char *cli_path(const char *name) { return scratch_join(cli_dir, name); }

/* A run's four report files (--json, --report, --junit, --summary), each a
 * fresh temporary file named from prefix ("/tmp/gdn-cov"); abort()s if one
 * cannot be made (a test that cannot start fails). */
typedef struct cli_outs {
  char json[64], html[64], junit[64], md[64];
} cli_outs;

static inline void cli_outs_make(cli_outs *o, const char *prefix) {
  char *p[4] = {o->json, o->html, o->junit, o->md};
  for (int i = 0; i < 4; i++) {
    snprintf(p[i], sizeof o->json, "%.48s-XXXXXX", prefix);
    int fd = mkstemp(p[i]);
    if (fd < 0) {
      perror(p[i]);
      abort();
    }
    close(fd);
  }
}

static inline void cli_outs_unlink(const cli_outs *o) {
  unlink(o->json);
  unlink(o->html);
  unlink(o->junit);
  unlink(o->md);
}

#endif
