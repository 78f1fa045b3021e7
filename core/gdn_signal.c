#include "gdn_signal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { N_SIGNALS = sizeof cleanup_signals / sizeof cleanup_signals[0] };

/* Lock-free pointers: the handler reads them while the writer may be
 * changing one. */
static _Atomic(const char *) temps[GDN_SIGNAL_MAX_TEMPS];
static atomic_int installed;

static void on_signal(int sig) {
  int saved_errno = errno;
  for (int i = 0; i < GDN_SIGNAL_MAX_TEMPS; i++) {
    const char *p = atomic_exchange(&temps[i], NULL);
    if (p) unlink(p);
  }
  /* Die of the same signal, as if we had never caught it. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  pthread_sigmask(SIG_UNBLOCK, &s, NULL);
  raise(sig);
  errno = saved_errno; /* only reached if the signal was blocked elsewhere */
}

static void install(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&installed, &expected, 1)) return;
  for (int i = 0; i < N_SIGNALS; i++) {
    struct sigaction old;
    if (sigaction(cleanup_signals[i], NULL, &old)) continue;
    /* Respect SIG_IGN (nohup) and a host program's own handler. */
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_signal;
      sigfillset(&sa.sa_mask); /* no second signal while cleaning up */
      sa.sa_flags = 0;
      sigaction(cleanup_signals[i], &sa, NULL);
    }
  }
}

int gdn_signal_register_temp(const char *path, gdn_error *e) {
  install();
  for (int i = 0; i < GDN_SIGNAL_MAX_TEMPS; i++) {
    const char *expected = NULL;
    if (atomic_compare_exchange_strong(&temps[i], &expected, path)) return GDN_OK;
  }
  return gdn_error_set(e, GDN_ERR_INTERNAL, "more than %d output files open at once (writing %s)",
                       GDN_SIGNAL_MAX_TEMPS, path);
}

void gdn_signal_unregister_temp(const char *path) {
  if (!path) return;
  for (int i = 0; i < GDN_SIGNAL_MAX_TEMPS; i++) {
    const char *expected = path;
    if (atomic_compare_exchange_strong(&temps[i], &expected, NULL)) return;
  }
}

int gdn_signal_temp_count(void) {
  int n = 0;
  for (int i = 0; i < GDN_SIGNAL_MAX_TEMPS; i++) n += atomic_load(&temps[i]) != NULL;
  return n;
}

void gdn_signal_block(sigset_t *old) {
  sigset_t s;
  sigemptyset(&s);
  for (int i = 0; i < N_SIGNALS; i++) sigaddset(&s, cleanup_signals[i]);
  pthread_sigmask(SIG_BLOCK, &s, old);
}

void gdn_signal_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }
