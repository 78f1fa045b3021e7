#include "gdn_progress.h"

#include <time.h>
#include <unistd.h>

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gdn_progress_init(gdn_progress *p, FILE *f, int enabled) {
  p->f = enabled && f && isatty(fileno(f)) ? f : NULL;
  p->total = p->done = 0;
  p->t0 = p->t_step = mono();
  p->last = -1;
  p->shown = 0;
  p->what[0] = 0;
  p->t_draw = p->t0;
}

void gdn_progress_add(gdn_progress *p, int64_t n) {
  if (p && n > 0) p->total += n;
}

/* m:ss, or h:mm:ss from an hour. */
static void clock_text(char *buf, size_t n, double s) {
  long t = s > 0 ? (long)(s + 0.5) : 0;
  if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

void gdn_progress_format(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                            double last, const char *what) {
  char el[32], left[32] = "?";
  clock_text(el, sizeof el, elapsed);
  if (last >= 0 && total >= done) clock_text(left, sizeof left, last * (double)(total - done));
  snprintf(buf, n, "[%lld/%lld] %s | %s elapsed, ~%s left", (long long)(done + 1), (long long)total,
           what, el, left);
}

void gdn_progress_begin(gdn_progress *p, const char *what) {
  if (!p || !p->f) return;
  char line[160];
  p->t_step = p->t_draw = mono();
  snprintf(p->what, sizeof p->what, "%s", what);
  gdn_progress_format(line, sizeof line, p->done, p->total, p->t_step - p->t0, p->last, what);
  fprintf(p->f, "\r\033[K%s", line);
  fflush(p->f);
  p->shown = 1;
}

void gdn_progress_format_part(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                                 double step, double frac, const char *what) {
  char el[32], left[32] = "?";
  clock_text(el, sizeof el, elapsed);
  if (frac > 0) clock_text(left, sizeof left, step * (1 - frac) / frac);
  snprintf(buf, n, "[%lld/%lld] %s %d%% | %s elapsed, ~%s left in this step", (long long)(done + 1),
           (long long)total, what, (int)(100 * frac), el, left);
}

void gdn_progress_part(gdn_progress *p, int64_t done, int64_t total) {
  if (!p || !p->f || total <= 0) return;
  double t = mono();
  if (done < total && t - p->t_draw < 0.25) return;
  char line[192];
  double frac = done >= total ? 1.0 : done > 0 ? (double)done / (double)total : 0.0;
  gdn_progress_format_part(line, sizeof line, p->done, p->total, t - p->t0, t - p->t_step, frac, p->what);
  fprintf(p->f, "\r\033[K%s", line);
  fflush(p->f);
  p->t_draw = t;
  p->shown = 1;
}

void gdn_progress_oracle(void *arg, int64_t done, int64_t total) {
  gdn_progress_part(arg, done, total);
}

void gdn_progress_end(gdn_progress *p) {
  if (!p) return;
  p->done++;
  p->last = mono() - p->t_step;
}

void gdn_progress_clear(gdn_progress *p) {
  if (!p || !p->f || !p->shown) return;
  fputs("\r\033[K", p->f);
  fflush(p->f);
  p->shown = 0;
}
