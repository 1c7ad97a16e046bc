/* proc.h — execs: the job state machine (PENDING → POLICY → APPROVAL → STARTING → RUNNING →
 * EXITED/FAILED), output streaming and retention, and the process.* methods. Loop thread. */
#ifndef SANDBOXD_PROC_H
#define SANDBOXD_PROC_H

#include <sys/types.h>

#include <uv.h>

struct sandbox;

void proc_init(uv_loop_t *loop);
/* Kills every running exec of sb (or of every sandbox when sb is NULL); cb when none is left. */
void proc_kill_all(struct sandbox *sb, void (*cb)(void *ctx), void *ctx);
unsigned proc_count(void);
unsigned proc_running_count(void);
/* Processes of uid not yet ended. */
unsigned proc_running_uid(uid_t uid);
/* Frees retained processes and their spools (shutdown); those of execs that outlive the
 * daemon stay on disk for the next one. */
void proc_shutdown(void);

/* Execs that outlive the daemon (execrec.h), at start-up: load the records, take back those of
 * each re-adopted sandbox, then drop the records of sandboxes that are gone (not those of
 * kept_sandboxes, NULL-terminated ids whose backend could not be reached). */
void proc_restore_load(void);
void proc_restore_sandbox(struct sandbox *sb);
void proc_restore_finish(const char *const *kept_sandboxes);

#endif
