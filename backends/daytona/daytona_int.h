/* daytona_int.h — private to the Daytona backend (backends/daytona/). Loop thread only.
 *
 * Layers, bottom up:
 *   daytona_api.c      one REST call: URL, auth header, JSON, retries with backoff, error mapping
 *   daytona_ws.c       the WebSocket client of the log follow stream
 *   daytona_log.c      the log reader (labels, markers); daytona_cmd.c the shell text sent
 *   daytona_spec.c     the POST /sandbox body of a spec
 *   daytona_create.c   create/poll/toolbox set-up, adopt; daytona_sandbox.c the object, destroy
 *   daytona_wake.c     resume of a stopped sandbox; daytona_orphans.c start-up clean-up
 *   daytona_session.c  the session pool
 *   daytona_exec.c     execs: session command, log streaming with resume; daytona_ctl.c
 *                      kill, signal and stdin
 *   daytona_file.c     file.read / file.write through the toolbox file endpoints
 *   daytona.c          configuration and credentials, probe, the backend_ops table (the glue)
 */
#ifndef SANDBOXD_DAYTONA_INT_H
#define SANDBOXD_DAYTONA_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"
#include "backends/daytona/daytona.h"
#include "backends/http.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define DAYTONA_NAME        "daytona"
#define DAYTONA_DEFAULT_URL "https://app.daytona.io/api"
#define DAYTONA_MAX_BODY    (64u << 20)
#define DAYTONA_POOL_IDLE   4  /* idle sessions kept per sandbox */
#define DAYTONA_POOL_USES   64 /* commands per session before it is replaced */

/* Process-wide state: the configuration, the HTTP handle, live sandboxes, calls in flight. */
struct daytona_state {
        uv_loop_t *loop;
        struct http_multi *http;
        bool initialised;
        char *api_url;    /* without a trailing slash */
        char *auth;       /* "Authorization: Bearer <key>"; the key is never anywhere else */
        char *key;        /* the key itself, only to scrub it from server messages */
        char *key_source; /* where the key came from, for backend.list and hints */
        char *key_reason; /* why there is no usable key (NULL when there is one) */
        char *key_hint;
        char *target;   /* may be NULL: the organisation's default */
        char *image;    /* default image, or NULL */
        char *snapshot; /* default snapshot, or NULL (then Daytona's default) */
        char *network;  /* "none" | "bridge" */
        int64_t auto_stop, auto_archive, auto_delete, max_auto_stop;
        bool persistent;
        char *instance;
        char *remote_dir;
        int64_t create_timeout_s;
        int64_t retries;
        struct list sandboxes;
        struct list calls;
};

extern struct daytona_state daytona;

/* ---- daytona_api.c ---- */

/* The outcome of a call (all borrowed for the callback). */
struct daytona_res {
        long status;     /* HTTP status; 0 when no answer came */
        json_t *body;    /* the answer parsed as JSON, or NULL */
        const char *raw; /* the answer's bytes (buffered calls) */
        size_t len;
        const char *terr;   /* transport error, NULL when an answer came */
        bool ambiguous;     /* no clear answer: the server may have acted on the request */
        long retry_after_s; /* the answer's Retry-After (0: none) */
};

typedef void (*daytona_cb)(void *ctx, const struct daytona_res *res);

struct daytona_req {
        const char *method;
        const char *url; /* absolute; daytona_api_url / daytona_tb_url */
        json_t *json;    /* body sent as JSON (borrowed), or */
        const void *raw; /* raw body with content type ctype */
        size_t raw_len;
        const char *ctype;
        /* May it be sent again when the first attempt had no clear answer? GET, DELETE and
         * requests made idempotent by the caller: yes. */
        bool idempotent;
        long timeout_ms;            /* 0: 60 s */
        bool once;                  /* no retries (the probe: a quick answer is what is asked) */
        const char *const *headers; /* extra, NULL-terminated; may be NULL */
        /* Streamed answer: bytes as they come (data NULL: a retry starts over); the result
         * then has no raw. Return -1 to abort. */
        int (*on_data)(void *ctx, const char *data, size_t len);
};

struct daytona_call;

/* Starts a call, retrying transient failures (429 with Retry-After, 503, connection refused,
 * and for idempotent requests also resets, timeouts, 500, 502 and 504) with backoff, at most
 * daytona.retries times. cb runs once unless cancelled. Returns 0 (and *ret if non-NULL) or
 * negative errno. */
int daytona_call(const struct daytona_req *r, daytona_cb cb, void *ctx, struct daytona_call **ret);
/* daytona_call with the URL (stolen) set into r; a call that cannot start is reported to cb
 * at once (status 0, terr set) instead of a return value. */
void daytona_send(struct daytona_req *r, char *url, daytona_cb cb, void *ctx,
                  struct daytona_call **ret);
/* Cancels a call: no callback. */
void daytona_call_cancel(struct daytona_call *c);
/* Ends every call in flight with an error (shutdown). */
void daytona_call_end_all(const char *why);
/* Absolute URLs (new): the API's, and a sandbox's toolbox. fmt builds the path. */
char *daytona_api_url(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *daytona_tb_url(const struct backend_sandbox *sb, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* The server's message of a failed answer (static or borrowed), never NULL. */
const char *daytona_res_message(const struct daytona_res *res);
/* Fills err for a failed call: what names the operation. 401 and 403 become -32000 with a
 * reason and a hint, 404 of a sandbox (sandbox_call) -32006 {state: "removed"}, the rest
 * -32005 with the status and the server's message. The key never appears in a message. */
void daytona_error(struct sbx_error *err, const char *what, const struct daytona_res *res,
                   bool sandbox_call);
/* Whether an id from the server is safe in a URL path ([A-Za-z0-9._-], 1..128). */
bool daytona_id_ok(const char *id);
/* Whether url is https, or http to a loopback host (a bearer key must not travel in clear). */
bool daytona_url_ok(const char *url);

/* ---- daytona_sandbox.c, daytona_session.c, daytona_wake.c ---- */

/* A toolbox session (a shell in the sandbox); one command at a time. */
struct daytona_session {
        struct list link; /* in idle or draining; unlinked while a command uses it */
        char *id;
        char *cmd_id; /* the command it ran last (draining) */
        unsigned uses;
        unsigned polls;
        unsigned gen;     /* the sandbox's generation it belongs to */
        uv_timer_t timer; /* draining: the next look at its command */
        bool timer_init;
        struct daytona_call *call;
        struct backend_sandbox *sb; /* referenced */
};

struct backend_sandbox {
        struct list link;
        char *id;      /* sbx_… */
        char *dt_id;   /* Daytona's id */
        char *dt_name; /* Daytona's name */
        char *toolbox; /* <toolboxProxyUrl>/<dt_id> */
        char *workdir, *home, *user, *image, *snapshot;
        char *state; /* last Daytona state seen */
        bool persistent;
        int refs;
        bool destroyed;
        unsigned gen;         /* bumped when the toolbox restarted: older sessions are gone */
        struct list idle;     /* sessions ready for a command */
        struct list draining; /* sessions whose last command may not be over */
        struct list waiters;  /* daytona_wait: things waiting for the sandbox to be started */
        struct daytona_call *start_call;
        json_t *spent;                     /* ids of ended execs whose files may go */
        struct daytona_call *cleanup_call; /* their removal in flight */
        unsigned adopting;                 /* adopted execs still being looked for */
        bool sweep_wanted; /* exec_adopt_done came: sweep the sessions once they are found */
        uv_timer_t poll_timer;
        bool poll_timer_init, polling;
        unsigned polls;
        uint64_t poll_deadline;
};

/* Something waiting for the sandbox to run again (an exec that found it stopped). */
struct daytona_wait {
        struct list link;
        void (*cb)(void *ctx, const struct sbx_error *err);
        void *ctx;
};

/* What a Daytona state means here. */
enum daytona_class {
        DAYTONA_RUNNING,
        DAYTONA_STOPPED, /* start it to use it (stopped, archived, paused) */
        DAYTONA_BUSY,    /* on its way somewhere: look again */
        DAYTONA_FAILED,  /* errorReason says why */
        DAYTONA_GONE,
};
/* The class of a state and the sandbox.progress phase ("build" | "start") while in it. */
enum daytona_class daytona_state_class(const char *state, const char **phase);

/* A new sandbox object for sandboxd id (one reference). */
struct backend_sandbox *daytona_sandbox_new(const char *id);
void daytona_sandbox_ref(struct backend_sandbox *sb);
void daytona_sandbox_unref(struct backend_sandbox *sb);
/* Replaces a string field (v copied, may be NULL). */
void daytona_sandbox_set(char **field, const char *v);
/* Takes id, name, state, user and the toolbox URL from a Sandbox object; -EPROTO when it is
 * not a usable one, -EPERM when its toolboxProxyUrl would get the key in clear. */
int daytona_sandbox_take(struct backend_sandbox *sb, json_t *o, struct sbx_error *err);
/* Whether a Sandbox object carries label sandboxd.sandbox = sbx_id. */
bool daytona_sandbox_ours(json_t *o, const char *sbx_id);
/* Ends a resume under way and the housekeeping of a sandbox that goes (destroy, shutdown). */
void daytona_sandbox_quiesce(struct backend_sandbox *sb);
/* Starts the sandbox when Daytona stopped or archived it, then calls w->cb (err NULL when it
 * runs); w is linked until then. */
void daytona_sandbox_wake(struct backend_sandbox *sb, struct daytona_wait *w);
/* An exec of sb ended: its files in remote_dir are removed with the next batch. */
void daytona_sandbox_spent(struct backend_sandbox *sb, const char *exec_id);
/* Forgets the sessions: the sandbox restarted, its toolbox lost them. */
void daytona_sandbox_forget_sessions(struct backend_sandbox *sb);

/* A session for one command: an idle one (cb at once, returns NULL), else a new one (POST
 * /process/session; returns a handle for daytona_session_cancel until cb has run). */
typedef void (*daytona_session_cb)(void *ctx, struct daytona_session *s,
                                   const struct sbx_error *err);
struct daytona_session_req;
struct daytona_session_req *daytona_session_get(struct backend_sandbox *sb, void *ctx,
                                                daytona_session_cb cb);
/* The asker went away: no callback; a session made anyway joins the idle ones. */
void daytona_session_cancel(struct daytona_session_req *req);
/* Gives a session back after its command: cmd_id is looked at until its exit code shows,
 * then the session is idle again. healthy false: the session is dropped (DELETE). */
void daytona_session_put(struct daytona_session *s, const char *cmd_id, bool healthy);
/* The session (made by a previous daemon) of an adopted exec, in use (no list). */
struct daytona_session *daytona_session_adopt(struct backend_sandbox *sb, const char *id);
/* Deletes the sandboxd sessions of sb that are neither in keep (NULL-terminated ids) nor in
 * the pool and whose commands are over. */
void daytona_session_sweep(struct backend_sandbox *sb, const char *const *keep);

/* ---- daytona_spec.c ---- */

/* What a sandbox.create spec asks of Daytona. */
struct daytona_spec {
        json_t *body;   /* POST /sandbox (new) */
        json_t *labels; /* the labels in it (new reference) */
        bool persistent;
        const char *image, *snapshot; /* borrowed from the spec or the configuration */
};

/* The POST /sandbox body of spec; -EINVAL with a -32602 err for what Daytona cannot do. */
int daytona_spec_build(const struct sandbox_spec *spec, struct daytona_spec *out,
                       struct sbx_error *err);
/* What of the requested resources Daytona enforces (new object). */
json_t *daytona_spec_enforced(const struct sandbox_spec *spec);
/* The URL-escaped labels filter of a parked sandbox of spec's owner and name (new). */
char *daytona_spec_parked_query(const struct sandbox_spec *spec);

/* ---- daytona_create.c, daytona_sandbox.c, daytona_orphans.c: the backend_ops entries ---- */

void daytona_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                    backend_create_cb cb);
json_t *daytona_save(struct backend_sandbox *bsb);
void daytona_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx,
                   backend_create_cb cb);
void daytona_cancel(void *ctx);
void daytona_destroy(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb);
void daytona_sandbox_shutdown(void);

/* ---- daytona_exec.c ---- */

struct daytona_proc; /* daytona_exec.h; begins with the struct backend_proc the daemon holds */
extern const struct backend_proc_ops daytona_proc_ops; /* daytona.c */
struct backend_proc *daytona_exec_base(struct daytona_proc *p);

int daytona_exec_start(struct backend_sandbox *bsb, const struct exec_spec *spec,
                       const struct backend_exec_cbs *cbs, void *ctx, struct daytona_proc **ret,
                       struct sbx_error *err);
int daytona_exec_write(struct daytona_proc *p, const void *data, size_t len, bool eof);
int daytona_exec_signal(struct daytona_proc *p, int sig);
void daytona_exec_kill(struct daytona_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb);
void daytona_exec_pause(struct daytona_proc *p);
void daytona_exec_resume(struct daytona_proc *p);
int daytona_exec_resize(struct daytona_proc *p, unsigned short rows, unsigned short cols);
void daytona_exec_release(struct daytona_proc *p);
/* exec_adopt and its parts (after a daemon restart). */
json_t *daytona_exec_save(struct daytona_proc *p);
int daytona_exec_adopt(struct backend_sandbox *bsb, const struct exec_spec *spec, json_t *record,
                       const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                       struct daytona_proc **ret, struct sbx_error *err);
void daytona_exec_adopt_done(struct backend_sandbox *sb);
/* Sweeps the sessions of sb no exec uses (daytona_session_sweep). */
void daytona_exec_sweep(struct backend_sandbox *sb);
/* Ends every exec's stream (shutdown): they end with exec_exit.error. */
void daytona_exec_shutdown(void);

/* ---- daytona_file.c ---- */

void daytona_file_read(struct backend_sandbox *sb, const char *path, uint64_t offset,
                       size_t max_bytes, void *ctx, backend_judge_fn judge, backend_read_cb cb);
void daytona_file_write(struct backend_sandbox *sb, const struct backend_file_write *w, void *ctx,
                        backend_judge_fn judge, backend_done_cb cb);
/* Uploads data to path in the sandbox (POST /files/upload, multipart field "file"); *call is
 * the call in flight (cancellable). */
void daytona_upload(struct backend_sandbox *sb, const char *path, const void *data, size_t len,
                    void *ctx, daytona_cb cb, struct daytona_call **call);

#endif
