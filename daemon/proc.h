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
/* Frees retained processes and their spools (shutdown). */
void proc_shutdown(void);

#endif
