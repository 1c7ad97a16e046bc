/* proc.h — execs: the job state machine (PENDING → POLICY → APPROVAL → STARTING → RUNNING →
 * EXITED/FAILED), output streaming and retention, and the process.* methods. Loop thread. */
#ifndef SANDBOXD_PROC_H
#define SANDBOXD_PROC_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

struct backend_identity;
struct sandbox;
struct policy_ctx;

void proc_init(uv_loop_t *loop);
/* Kills every running exec of sb (or of every sandbox when sb is NULL); cb when none is left. */
void proc_kill_all(struct sandbox *sb, void (*cb)(void *ctx), void *ctx);
unsigned proc_count(void);
unsigned proc_running_count(void);
/* Requests waiting on uid's processes ((uid_t) -1: everyone's). */
unsigned proc_waiting_uid(uid_t uid);
/* Processes of uid not yet ended. */
unsigned proc_running_uid(uid_t uid);
/* Frees retained processes and their spools (shutdown); those of execs that outlive the
 * daemon stay on disk for the next one. */
void proc_shutdown(void);
/* The minimal environment (new object) of a command run as who: PATH, HOME, USER, LOGNAME,
 * LANG, TERM. */
json_t *proc_base_env(const struct backend_identity *who, bool pty);
/* The environment an exec in sb starts with (new object), with exec_env (borrowed, may be
 * NULL) on top. */
json_t *proc_exec_env(const struct sandbox *sb, json_t *exec_env, bool pty);
/* Fills ctx to judge a command in sb the way an exec with this cwd (NULL: the sandbox's) and
 * env (borrowed, may be NULL) would be judged; *env (new) must outlive the evaluation. */
void proc_policy_ctx(struct sandbox *sb, const char *cwd, json_t *exec_env, struct policy_ctx *ctx,
                     json_t **env);

/* Execs that outlive the daemon (execrec.h), at start-up: load the records, take back those of
 * each re-adopted sandbox, then drop the records of sandboxes that are gone (not those of
 * kept_sandboxes, NULL-terminated ids whose backend could not be reached). */
void proc_restore_load(void);
void proc_restore_sandbox(struct sandbox *sb);
void proc_restore_finish(const char *const *kept_sandboxes);

#endif
