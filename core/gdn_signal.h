/* gdn_signal: temporary files that an interrupted run must not leave behind.
 *
 * gdn_atomic registers each temporary it creates and unregisters it once it
 * is renamed or removed.  The first registration installs handlers for
 * SIGINT, SIGTERM and SIGHUP (only where the disposition is still SIG_DFL: a
 * signal the caller ignores, as under nohup, stays ignored, and a handler of
 * the host program is left alone).  The handler is async-signal-safe: it
 * unlink(2)s every registered path, restores SIG_DFL and re-raises the
 * signal, so the process still dies of it (exit status 128 + signal in a
 * shell) and the destination of an unfinished write is never touched -- it
 * keeps its old bytes, since only rename(2) ever replaces it.
 *
 * SIGKILL cannot be caught: a temporary "<dest>.tmp.XXXXXX" may then remain
 * beside the destination; the destination itself is still intact.
 *
 * Registration is for the thread that writes (all writers here write from
 * one thread); the handler may run on any thread.  Slots are lock-free
 * atomic pointers, so a signal arriving mid-registration sees either the
 * old or the new state, never a torn one.
 */
#ifndef GDN_SIGNAL_H
#define GDN_SIGNAL_H

#include <signal.h>

#include "gdn_error.h"

#define GDN_SIGNAL_MAX_TEMPS 32

/* Registers path (the string must stay valid until unregistered).
 * GDN_ERR_INTERNAL when all slots are taken. */
int gdn_signal_register_temp(const char *path, gdn_error *e);
/* Forgets path (the same pointer that was registered); a no-op if absent. */
void gdn_signal_unregister_temp(const char *path);
/* Number of registered temporaries (tests). */
int gdn_signal_temp_count(void);

/* Blocks SIGINT, SIGTERM and SIGHUP, saving the old mask in *old, so that a
 * temporary can be created and registered without a signal in between. */
void gdn_signal_block(sigset_t *old);
void gdn_signal_restore(const sigset_t *old);

#endif
