/* proc_int.h — what the pieces of the exec module (daemon/proc*.c) share: the process and its
 * parts, and the functions one file calls in another. Internal to daemon/proc*.c; the API is
 * proc.h. Loop thread only. */
#ifndef SANDBOXD_PROC_INT_H
#define SANDBOXD_PROC_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"
#include "daemon/conn.h"
#include "daemon/proc.h"
#include "daemon/rpc.h"
#include "policy/policy.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define PROC_CHUNK  (64 * 1024)
#define PROC_ID_MAX 42 /* a client-chosen exec_id: "p_" and up to 40 of [A-Za-z0-9_-] */

enum proc_state {
        PROC_PENDING,
        PROC_POLICY,
        PROC_APPROVAL,
        PROC_STARTING,
        PROC_RUNNING,
        PROC_EXITED,
        PROC_FAILED,
};

struct pstream {
        uint64_t total; /* raw bytes seen */
        uint64_t own;   /* of those, lines the daemon wrote itself (notes), not the backend */
        struct spool *spool;
        struct buf head; /* first head_cap bytes (foreground only) */
        char *tail;      /* ring of the last tail_cap bytes */
        size_t tail_cap;
        size_t head_cap;
        uint64_t tail_total; /* bytes written into the ring */
        char carry[4];       /* incomplete UTF-8 sequence held back (text mode) */
        size_t ncarry;
};

struct proc;

/* A connection receiving a process's output notifications. */
struct proc_sub {
        struct list node; /* in proc->subs */
        struct conn_watch watch;
        struct conn *conn;
        struct proc *proc;
        bool foreground; /* the requester of a foreground exec: its close kills the tree */
        bool lagging;    /* notifications were skipped while its queue was full */
};

struct read_args {
        int stream;
        uint64_t offset;
        size_t max;
        bool base64;
};

enum proc_wait_kind {
        PROC_WAIT_EXIT,   /* process.wait */
        PROC_WAIT_READ,   /* process.read long-poll */
        PROC_WAIT_REPEAT, /* exec repeating a client-chosen exec_id: the foreground result */
};

/* A request waiting on a process. */
struct proc_waiter {
        struct read_args ra;
        struct list node;
        struct conn_watch watch; /* its connection: a client gone is not waited for */
        struct proc *proc;
        struct rpc_req *req;
        uv_timer_t timer;
        enum proc_wait_kind kind;
        bool done;
};

/* A process.write that came before its exec started (queued behind another command). */
struct proc_parked {
        struct list node;
        struct rpc_req *req;
        struct buf data;
        struct conn_acct *acct; /* data is charged to the writer's input budget */
        bool eof;
};

struct proc {
        struct list node;
        struct list lnode; /* in proc_live_list until it ends */
        struct list qnode; /* in sandbox->shell_queue while waiting for the shell */
        bool holds_shell;
        int refs;
        char id[PROC_ID_MAX + 1]; /* what clients name it: ours, or theirs (exec_id param) */
        char key[24];             /* ours, always: spool files, shell state, backends */
        bool started_sent;        /* exec.started went out */
        uid_t owner;
        struct sandbox *sb;
        enum proc_state state;
        char *command;
        json_t *argv;
        char *tag;
        char *cwd;
        json_t *env;         /* exec env override (owned, may be NULL) */
        uint64_t desc_bytes; /* of command/argv, env, cwd, tag: proc.c's, once computed */
        bool background, stream, base64, pty, stdin_open, merge;
        uint64_t timeout_ms;
        uint64_t max_output;
        struct buf stdin_data;
        uint64_t start_ns, started_wall, ended_wall;
        double duration_ms;
        struct pstream out[2];
        struct backend_proc *bp;
        const struct backend_ops *ops;
        int exit_code, sig;
        bool timed_out, oom, stdin_closed;
        bool recreated;      /* its sandbox's container was recreated to run it */
        struct rpc_req *req; /* foreground requester until answered */
        struct policy_result pr;
        const char *resolution;
        char *state_path;
        json_t *shell_base; /* command execs with state: the env it started from, before env */
        char *cwd_lost;     /* the removed cwd it was to start in (shellstate_cwd_gone) */
        bool cwd_noted;     /* and the caller was told where it runs instead */
        struct list subs;
        struct list waiters;
        struct list parked; /* struct proc_parked, until it starts or fails */
        uv_timer_t timer;
        bool paused;
        unsigned short rows, cols;
        /* Execs that outlive the daemon (execrec.h): its record is on disk. */
        bool persist;
        bool keep_files;      /* shutdown: record and spools stay for the next daemon */
        json_t *brecord;      /* the backend's save() (owned) */
        json_t *policy_saved; /* a restored exec's policy object (owned) */
        char *lost;           /* exec_exit.lost: how it ended is unknown */
};

/* proc.c: the registry and the lifecycle. */

/* Every process known, and those not yet ended (struct proc, by node and lnode). */
extern struct list proc_all;
extern struct list proc_live_list;
/* Where output spools and exec records live (owned; NULL before proc_init). */
extern char *proc_spool_dir;

/* Takes a reference on p; proc_unref drops one and frees p with the last. */
void proc_ref(struct proc *p);
void proc_unref(struct proc *p);
/* Close callback of p's timer: drops the reference the registry held. */
void proc_timer_close_cb(uv_handle_t *h);
/* Drops p from the registry (its record goes unless kept); freed once nothing refers to it. */
void proc_forget(struct proc *p);
/* Whether p has not ended yet. */
bool proc_live(const struct proc *p);
/* Whether p is left running at shutdown for the next daemon to take back: recorded, and its
 * sandbox's processes do not end with the daemon (BACKEND_CAP_ENDS_WITH_DAEMON). */
bool proc_outlives_daemon(const struct proc *p);
/* Marks p exited or failed and takes it off the live list. */
void proc_set_ended(struct proc *p, enum proc_state state);
/* The process uid calls id (borrowed, may be NULL): its own first, then, for root, anyone's. */
struct proc *proc_find(uid_t uid, const char *id);

/* proc_output.c: output capture and streaming, and the results built from it. */

/* Raw bytes encoded for the wire, base64 or text (new string). */
json_t *proc_encode(bool base64, const char *data, size_t len);
/* Pauses p's output while a subscriber's queue is full, resumes it once none is. */
void proc_update_pause(struct proc *p);
/* Appends to line (borrowed) one exec.output notification, built by hand (the hot path). */
void proc_output_line(struct proc *p, int stream, const char *data, size_t len, uint64_t offset,
                      struct buf *line);
/* Streams a chunk at offset off to p's subscribers; flush sends a held-back UTF-8 tail too. */
void proc_stream_chunk(struct proc *p, int stream, const char *data, size_t len, uint64_t off,
                       bool flush);
/* The backend's output callback (ctx is p): spool, capture, stream, wake readers. */
void proc_output_cb(void *ctx, enum backend_stream stream, const char *data, size_t len);
/* Once it runs, says where an exec runs whose inherited cwd was removed. */
void proc_cwd_note(struct proc *p);
/* p's policy object (new). */
json_t *proc_policy_json(struct proc *p);
/* The exit fields of p's result (new object). */
json_t *proc_exit_fields(struct proc *p);
/* A foreground exec's result (new object): exit fields and its output. */
json_t *proc_result_json(struct proc *p);

/* proc_end.c: subscribers, and how an exec ends: exit, timeout, failure, recreation. */

/* Whether c already hears p's output (one subscription per connection). */
bool proc_subscribed(struct proc *p, const struct conn *c);
/* Sends p's output notifications to c (a reference is taken); foreground: c's close kills. */
void proc_subscribe(struct proc *p, struct conn *c, bool foreground);
/* Answers the process.read long-polls waiting on p. */
void proc_wake_readers(struct proc *p);
/* The backend's exit callback (ctx is p). */
void proc_exit_cb(void *ctx, const struct exec_exit *ex);
/* p's timeout_s ran out: its process tree is killed (t->data is p). */
void proc_timeout_cb(uv_timer_t *t);
/* Drops every subscriber of p. */
void proc_drop_subs(struct proc *p);
/* p will never run: its requester and waiters get err (borrowed, cleared); p is dropped. */
void proc_fail(struct proc *p, struct sbx_error *err);
/* Whether an exec that could not start because of err may run in a recreated container. */
bool proc_may_recreate(struct proc *p, const struct sbx_error *err);
/* Starts p again once its sandbox has a new container. */
void proc_wait_recreate(struct proc *p);

/* proc_start.c: environment, policy judging and approval, start. */

/* Starts p in its sandbox's backend (it holds the shell when it needs one). */
void proc_start(struct proc *p);
/* The sandbox an exec runs in was found or made (ctx is p): judge it, or fail with err. */
void proc_sandbox_cb(void *ctx, struct sandbox *sb, struct sbx_error *err);

/* proc_exec.c: the exec method: params, limits, client-chosen ids and repeats. */

/* The output_encoding values, NULL-terminated. */
extern const char *const proc_encodings[];
/* A new process of owner, named id (a client's choice, validated) or, when NULL, as its key. */
struct proc *proc_new(uid_t owner, const char *id);
/* Whether uid's spools were past max_spool_bytes_per_uid at the last sweep (its new execs then
 * keep no output). */
bool proc_spool_full(uid_t uid);
/* Answers req (borrowed) to a repeated exec: a foreground result or a background state. */
void proc_repeat_answer(struct proc *p, struct rpc_req *req);

/* proc_methods.c: process.list/read/signal/kill/wait/attach/resize, waiters, signal names. */

/* The process req's params name, checked against keys; NULL with err filled otherwise. */
struct proc *proc_from_params(struct rpc_req *req, const char *const *keys, struct sbx_error *err);
/* p's state as the protocol spells it (static string). */
const char *proc_state_name(const struct proc *p);
/* process.wait's answer for p (new object). */
json_t *proc_wait_json(struct proc *p);
/* Answers w once; the close of its timer frees it. */
void proc_waiter_answer(struct proc_waiter *w);
/* p will never run: a repeat waiting for its result gets err, other waiters its state. */
void proc_fail_waiters(struct proc *p, const struct sbx_error *err);
/* Holds req (borrowed until answered) until p is ready for kind, or timeout_ms passes. */
void proc_wait_on(struct proc *p, struct rpc_req *req, uint64_t timeout_ms,
                  const struct read_args *ra, enum proc_wait_kind kind);
/* "SIGTERM" for SIGTERM, "SIG<n>" for others, null for 0 (new). */
json_t *proc_signal_json(int sig);
/* The number of a signal spelt as proc_signal_json spells it (v borrowed); 0 if none. */
int proc_signal_number(json_t *v);

/* proc_stdin.c: process.write and the writes parked before an exec starts. */

/* Hands p's parked writes, in order, to its stdin (each request answered). */
void proc_flush_parked(struct proc *p);

/* proc_restore.c: execs that outlive the daemon (execrec.h). */

/* Exec records loaded at start, waiting for their sandbox (owned; NULL once finished). */
extern json_t *proc_restored;
/* Writes (or rewrites) the record of an exec that outlives the daemon. */
void proc_persist(struct proc *p);
/* A started exec whose backend can take it back after a restart is recorded. */
void proc_start_persist(struct proc *p);

#endif
