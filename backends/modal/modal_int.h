/* modal_int.h — private to the Modal backend (backends/modal/).
 *
 * Layers: modal_mode (pure: credentials and the mode decision), modal_pb / modal_grpc /
 * modal_rpc (protobuf, gRPC over HTTP/2, Modal's auth and retries), modal_direct + modal_dexec
 * (Modal's own API: sandboxes, and execs through the task command router), modal_gateway (the
 * managed gateway's REST API: sandboxes and execs), modal_exec (what both modes' execs share:
 * the wrapper that records the exec's pid and hands the shell state back in-band), and
 * modal.c, the thin glue to struct backend_ops that dispatches on the sandbox's mode.
 *
 * Loop thread only. One process-wide state (struct modal_state).
 */
#ifndef SANDBOXD_MODAL_INT_H
#define SANDBOXD_MODAL_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"
#include "backends/http.h"
#include "backends/modal/modal_mode.h"
#include "backends/modal/modal_rpc.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define MODAL_STATE_DIR    "/tmp/.sandboxd" /* inside the sandbox: pid and state files */
#define MODAL_MARKER_LEN   36               /* "\036SBX" + 32 hex: the in-band state marker */
#define MODAL_READY_TTL_MS 10000            /* a passed readiness check is trusted this long */
#define MODAL_HELPER_MAX   (64u << 20)      /* output a helper exec may return */

struct modal_state {
        uv_loop_t *loop;
        struct http_multi *http;
        bool initialised;
        enum modal_mode configured;
        char *app, *image, *network, *instance;
        uint64_t max_lifetime_s, create_timeout_s, drain_grace_ms;
        /* direct */
        struct modal_api *api; /* for the current credentials; sandboxes keep their own ref */
        json_t *app_ids;       /* "url|app" -> app id */
        /* managed */
        char *gw_url, *gw_token, *gw_config_error, *gw_ready_path;
        uint64_t gw_ready_timeout_ms, gw_poll_ms;
        bool gw_ready;
        uint64_t gw_ready_at; /* monotonic ms of the last passed check */
        char *gw_ready_error; /* the last check's failure */
        bool gw_checking;
        struct list gw_waiters;
        struct list sandboxes;
};

extern struct modal_state modal;

struct modal_mode_ops;
struct modal_proc;

struct backend_sandbox {
        struct list link;
        int refs;
        char *id; /* sbx_… */
        enum modal_mode mode;
        const struct modal_mode_ops *mops;
        char *remote_id; /* Modal sandbox id, or the gateway's */
        char *workdir, *image;
        bool gone;
        /* direct */
        struct modal_api *api;
        char *app_id, *task_id;
        struct modal_router *router;
        /* managed */
        char *idem_key;
        json_t *create_body; /* what was POSTed, for re-adoption by the same key */
};

/* A sandbox create or adopt in progress, shared by both modes. Everything of the spec it
 * needs is copied (the spec is borrowed only for the create call). */
struct gw_call;

struct modal_create {
        struct list link; /* in modal.c's creates in progress, for cancel */
        struct backend_sandbox *sb;
        void *ctx;
        backend_progress_cb progress;
        backend_create_cb cb;
        char *id, *image, *workdir, *app;
        enum modal_mode requested;
        int64_t milli_cpu, memory_mb, disk_mb;
        bool pids_requested;
        uint64_t lifetime_s;
        uint64_t deadline_ms; /* monotonic */
        bool block_network, adopting;
        json_t *record; /* adopt: the saved record (owned) */
        /* direct: what the steps found */
        char *environment, *builder_version, *image_id, *last_entry;
        struct modal_rpc *rpc;
        bool rpc_keep; /* rpc's answer names what a cancel must terminate: wait for it */
        /* managed: the gateway call in flight */
        struct gw_call *gw_req;
        /* cancel: c->err says so; the mode abandons what it waits for, or its next step ends */
        bool cancelled;
        struct sbx_error err;
};

/* Helper exec: a short command whose stdout is collected (no wrapper, no state). */
typedef void (*modal_helper_cb)(void *ctx, int exit_code, const char *out, size_t len,
                                const struct sbx_error *err);

/* What differs between the modes; modal.c dispatches through it. */
struct modal_mode_ops {
        const char *name;
        void (*create)(struct modal_create *c);
        void (*adopt)(struct modal_create *c);
        /* c->cancelled was just set: abandon the call in flight and finish c, or (a call whose
         * answer names a remote sandbox, a helper exec) let its end finish c. */
        void (*cancel)(struct modal_create *c);
        json_t *(*save)(struct backend_sandbox *sb);
        void (*destroy)(struct backend_sandbox *sb, void *ctx, backend_done_cb cb);
        int (*exec_start)(struct backend_sandbox *sb, const struct exec_spec *spec,
                          const struct backend_exec_cbs *cbs, void *ctx, struct modal_proc **ret,
                          struct sbx_error *err);
        int (*exec_write)(struct modal_proc *p, const void *data, size_t len, bool eof);
        int (*exec_signal)(struct modal_proc *p, int sig);
        void (*exec_kill)(struct modal_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb);
        void (*exec_pause)(struct modal_proc *p);
        void (*exec_resume)(struct modal_proc *p);
        void (*exec_release)(struct modal_proc *p);
        /* What exec_adopt takes back (new), or NULL; both NULL: execs end with the daemon. */
        json_t *(*exec_save)(struct modal_proc *p);
        int (*exec_adopt)(struct backend_sandbox *sb, const struct exec_spec *spec, json_t *record,
                          const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                          struct modal_proc **ret, struct sbx_error *err);
        void (*helper)(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
                       void *ctx, modal_helper_cb cb);
};

extern const struct modal_mode_ops modal_direct_ops;
extern const struct modal_mode_ops modal_managed_ops;

/* modal.c */
struct backend_sandbox *modal_sandbox_new(const char *id, enum modal_mode mode);
void modal_sandbox_ref(struct backend_sandbox *sb);
void modal_sandbox_unref(struct backend_sandbox *sb);
/* Ends a create/adopt: success when c->err is unset; otherwise a remote sandbox the create
 * made is terminated first, then cb. Frees c. */
void modal_create_finish(struct modal_create *c);
/* A destroy in progress, in either mode. */
struct modal_done {
        struct backend_sandbox *sb; /* the daemon's reference, dropped at the end */
        void *ctx;
        backend_done_cb cb;
};
struct modal_done *modal_done_new(struct backend_sandbox *sb, void *ctx, backend_done_cb cb);
/* The remote sandbox is gone (or why is the failure, for a -32005 error): cb, then frees d
 * and drops the sandbox. */
void modal_done_finish(struct modal_done *d, const char *why);
/* Sets c->err to a -32005 error "what: message" (message redacted already). */
void modal_create_fail(struct modal_create *c, const char *what, const char *message);
/* Runs the helper that creates MODAL_STATE_DIR and reports the effective workdir, then
 * finishes c (or fails it, after which the mode's failure path terminates the sandbox). */
void modal_create_probe_workdir(struct modal_create *c, void (*done)(struct modal_create *c));

/* The control-plane client for today's direct credentials (borrowed), or NULL when there are
 * none usable. */
struct modal_api *modal_direct_api(void);

/* Whether the gateway URL and token are configured (without error). */
bool modal_managed_configured(void);

/* modal_direct.c */
/* Terminates this daemon's Modal sandboxes (tag sandboxd.instance) not in known (borrowed). */
void modal_direct_reap(const char *const *known, void *ctx,
                       void (*cb)(void *ctx, int removed, const struct sbx_error *err));

/* modal_dexec.c: direct-mode execs through the task command router. */
int modal_dexec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                      const struct backend_exec_cbs *cbs, void *ctx, struct modal_proc **ret,
                      struct sbx_error *err);
int modal_dexec_write(struct modal_proc *p, const void *data, size_t len, bool eof);
int modal_dexec_signal(struct modal_proc *p, int sig);
void modal_dexec_kill(struct modal_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb);
void modal_dexec_pause(struct modal_proc *p);
void modal_dexec_resume(struct modal_proc *p);
void modal_dexec_release(struct modal_proc *p);
json_t *modal_dexec_save(struct modal_proc *p);
int modal_dexec_adopt(struct backend_sandbox *sb, const struct exec_spec *spec, json_t *record,
                      const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                      struct modal_proc **ret, struct sbx_error *err);
/* Daemon shutdown: execs with a record are no longer followed (they run on). */
void modal_dexec_detach_all(void);
void modal_dexec_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
                        void *ctx, modal_helper_cb cb);

/* modal_gateway.c */
/* The readiness check (cached MODAL_READY_TTL_MS); cb when known. */
void modal_gateway_check(void *ctx, void (*cb)(void *ctx));
/* Daemon shutdown: gateway calls in flight end with an error. */
void modal_gateway_shutdown(void);

/* modal_exec.c: what execs of both modes share. */

/* The in-band state of an exec: the wrapper prints MARKER, the blob's length and a newline,
 * then the blob, on one stream after the command is done. The filter holds back what may be
 * the start of the marker, takes the blob out, and passes everything else on. */
struct modal_sfilter {
        char marker[MODAL_MARKER_LEN + 1];
        size_t mlen;
        int phase; /* 0 output, 1 length digits, 2 blob, 3 after the blob */
        struct buf held;
        char digits[24];
        size_t ndigits;
        uint64_t blob_left;
        struct buf state;
};

typedef void (*modal_out_fn)(void *ctx, const char *data, size_t len);

void modal_sfilter_init(struct modal_sfilter *f);
void modal_sfilter_feed(struct modal_sfilter *f, const char *data, size_t len, modal_out_fn out,
                        void *ctx);
/* The stream ended: held bytes were output after all. */
void modal_sfilter_end(struct modal_sfilter *f, modal_out_fn out, void *ctx);
void modal_sfilter_free(struct modal_sfilter *f);
/* The complete blob, or NULL. */
const char *modal_sfilter_state(const struct modal_sfilter *f, size_t *len);

/* What execs of both modes share: the head of each mode's per-exec state. A user exec hands
 * its output and exit to the daemon (cbs); a helper collects stdout for hcb. */
struct modal_proc {
        struct backend_proc head;   /* what the daemon holds: ops = modal_proc_ops */
        struct backend_sandbox *sb; /* referenced */
        const struct modal_mode_ops *mops;
        char *exec_id;
        struct backend_exec_cbs cbs;
        void *ctx;
        bool helper;
        modal_helper_cb hcb;
        void *hctx;
        struct buf hout;
        struct modal_sfilter sf;
        struct sbx_error fail; /* why it never ran or was lost */
};

/* The per-exec ops of every modal exec (modal.c): they dispatch to the mode's. */
extern const struct backend_proc_ops modal_proc_ops;

/* Fills the head (takes a reference on sb). */
void modal_proc_init(struct modal_proc *p, struct backend_sandbox *sb,
                     const struct modal_mode_ops *mops, char *exec_id /* steals */);
/* Frees what the head holds (drops the reference on sb). */
void modal_proc_clear(struct modal_proc *p);
/* Output bytes: to the daemon, or (helper, stdout only, bounded) collected. */
void modal_proc_output(struct modal_proc *p, enum backend_stream s, const char *data, size_t len);
/* The end of a user exec: on_exit with the in-band state and p->fail. */
void modal_proc_exit(struct modal_proc *p, int exit_code, int sig);
/* The end of a user exec that was lost track of (exec_exit.lost = why, static). */
void modal_proc_lost(struct modal_proc *p, const char *why);
/* The end of a helper: hcb with its output (or p->fail). */
void modal_proc_helper_end(struct modal_proc *p, int exit_code, const char *out, size_t len);

/* The argv that runs spec->argv under the wrapper (new, shell_argv_free): it records its pid in
 * pidfile, runs the command, then prints f's marker and the state file (state_path, may be
 * NULL) on fd state_fd (1 or 2). Entries of envp (the exec's environment, also passed as
 * such) whose names the wrapper's /bin/sh would drop — bash's BASH_FUNC_f%% — reach the
 * command through `env` when the sandbox has it. */
char **modal_exec_wrap(char *const *argv, char *const *envp, const char *pidfile,
                       const struct modal_sfilter *f, const char *state_path, int state_fd);
/* argv as one sh command line, each word single-quoted (new). */
char *modal_sh_quote_argv(char *const *argv);
/* "KEY=VALUE" list into a map for TaskExecStart env (appends map entries to b). */
void modal_env_entries(struct buf *b, uint32_t field, char *const *envp);
/* s as UTF-8 (new): other bytes become U+FFFD, as protobuf strings must be UTF-8. */
char *modal_text(const char *s);

#endif
