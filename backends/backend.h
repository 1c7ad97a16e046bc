/* backend.h — the one interface every execution backend implements (version 2).
 *
 * A backend is a struct backend_ops in the table of backend.c plus whatever files it needs
 * (a backend of several files gets its own folder). docs/backends/writing-a-backend.md walks
 * through one; this header is the contract.
 *
 * Threading: every op is called on the loop thread and every callback is delivered on the loop
 * thread. Ops never block for long (no network round trip, no waiting for a child); anything
 * slow is asynchronous and completes through a callback, exactly once.
 *
 * Ownership: the daemon owns struct sandbox_spec / exec_spec and everything they point to; a
 * backend copies what it needs to keep past the call. A backend owns its private per-sandbox
 * state (struct backend_sandbox, defined by the backend) and per-exec state (its own struct
 * that begins with a struct backend_proc) and frees them in destroy / proc release.
 *
 * Objects and their life:
 *   sandbox  create (or adopt after a restart) -> ready -> destroy. While it lives the backend
 *            may report its link through spec->up (lost, reconnecting, back, gone): the daemon
 *            shows it as the sandbox's state and tells the owner (sandbox.state).
 *   exec     exec_start (or exec_adopt after a restart) hands out a struct backend_proc whose
 *            own ops (struct backend_proc_ops) do everything else to it. One backend may hand
 *            out procs of different kinds (docker: through the resident agent, or one `docker
 *            exec` each); the daemon never asks which. on_output*, then on_exit exactly once,
 *            then the daemon calls ops->release.
 *
 * What the daemon asks of a backend is in caps and in optional entries (NULL: not supported),
 * never in its name:
 *   caps & BACKEND_CAP_HOST   commands run on the host as the caller: the policy treats the
 *                             sandbox as host access, the host's shell and state directory
 *                             are used for `command` execs;
 *   caps & BACKEND_CAP_HOST_FS  commands see the host's file system (an isolated local
 *                             sandbox: read-only, in its own view): the daemon's `[exec]
 *                             shell` runs its `command` execs (exec_spec.path), resolved there;
 *   caps & BACKEND_CAP_ENDS_WITH_DAEMON  the sandbox is recorded (made anew after a restart)
 *                             but its processes cannot outlive the daemon: at shutdown its
 *                             execs are ended as host execs are (TERM, kill_grace_ms, KILL);
 *   caps & BACKEND_CAP_EXACT_ENV  the exec's environment is the daemon's whole answer;
 *   caps & BACKEND_CAP_OWN_HOME  execs get the HOME the sandbox reports at create
 *                             (sandbox_info.home: ssh, daytona), not the caller's; the daemon
 *                             sets it in their environment and the policy judges with it;
 *   spec_caps                 the caps of one sandbox, when they depend on its spec (local:
 *                             `isolation: "none"` has BACKEND_CAP_HOST, "namespaces" not);
 *   save / adopt              the sandbox outlives the daemon (recorded in sandboxes.json);
 *   exec_adopt                its execs do too: a restarted daemon takes them back;
 *   inspect_spec              facts the policy needs before it judges a spec (docker: named
 *                             volumes, which can bind host paths, and VolumesFrom
 *                             containers, whose mounts a sandbox would inherit);
 *   reap_orphans              backend resources of this daemon that no sandbox claims;
 *   cancel                    a create in progress can be abandoned and leaves nothing.
 */
#ifndef SANDBOXD_BACKEND_H
#define SANDBOXD_BACKEND_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "protocol/error.h"

struct backend_sandbox; /* backend-private, per sandbox */
struct backend_proc;
struct backend_proc_ops;

/* The head of every backend's per-exec struct: what the daemon holds and calls. */
struct backend_proc {
        const struct backend_proc_ops *ops;
};

/* State of a sandbox's link to where its commands run (a remote host, an in-sandbox agent),
 * reported by the backend through struct backend_upcalls. */
enum backend_link {
        BACKEND_LINK_LOST,         /* it dropped; the backend is about to restore it */
        BACKEND_LINK_RECONNECTING, /* restoring it (reason: the last attempt's error) */
        BACKEND_LINK_BACK,         /* restored: every exec goes on where it was */
        BACKEND_LINK_GONE,         /* the backend gave up: its execs have ended (lost) */
};

/* Calls from a backend up to the daemon about one sandbox (ctx: spec->up_ctx). Valid from
 * create/adopt until destroy is called; never from inside an op the daemon is calling. */
struct backend_upcalls {
        void (*link)(void *up_ctx, enum backend_link state, const char *reason);
};

/* Who a sandbox or exec acts for (from SO_PEERCRED / SO_PEERGROUPS). */
struct backend_identity {
        uid_t uid;
        gid_t gid;
        gid_t *groups; /* supplementary groups */
        size_t ngroups;
        const char *user; /* login name, may be NULL */
        const char *home; /* home directory, may be NULL */
};

/* Resource limits requested by a client; 0 = not requested. */
struct backend_resources {
        double cpus;
        int64_t memory_mb;
        int64_t pids;
        int64_t disk_mb;
};

/* sandbox.create, validated and merged with defaults by the daemon. */
struct sandbox_spec {
        const char *id;      /* "sbx_…" */
        const char *name;    /* unique per owner */
        const char *image;   /* may be NULL */
        const char *workdir; /* may be NULL: backend default */
        const char *network; /* "none" | "bridge" | "host" | NULL (backend default) */
        json_t *env;         /* object of strings, borrowed, never NULL */
        json_t *labels;      /* object of strings, borrowed, never NULL */
        json_t *mounts;      /* array, borrowed, never NULL */
        json_t *section; /* the backend's own section ("docker": {...}), borrowed, may be NULL */
        struct backend_resources res;
        uint64_t timeout_s;    /* maximum lifetime (0: none); the daemon enforces it, a cloud
                                  backend also hands it to the provider as a backstop */
        const char *state_dir; /* this sandbox's private directory on the host (exists, 0700) */
        const struct backend_identity *owner;
        bool no_pull; /* docker: an image not on the host fails the create instead of a pull */
        /* docker: the image found must be listed under the name asked for (RepoTags or
         * RepoDigests), not matched by an ID prefix */
        bool image_named;
        /* The host paths the policy judged, resolved as the owner before the judgement (path
         * as written -> where it leads, or null; borrowed, may be NULL): a backend binds what
         * they lead to and never resolves a client's path again with the daemon's rights. */
        json_t *host_paths;
        const struct backend_upcalls *up; /* may be NULL (tests); see struct backend_upcalls */
        void *up_ctx;
};

/* What a backend reports about a created sandbox. */
struct sandbox_info {
        char *workdir;    /* new; effective working directory */
        char *image;      /* new; may be NULL */
        bool host_access; /* does anything from the host show inside */
        json_t *enforced; /* new; object: limit name -> mechanism ("cgroup", "rlimit", …)
                             or null when requested but not enforceable; may be NULL */
        json_t *details;  /* new; backend-specific extra fields; may be NULL */
        /* Where `command` execs leave their shell-state files inside the sandbox (borrowed,
         * the backend's; NULL: BACKEND_RUNTIME_DIR). Not used for BACKEND_CAP_HOST backends
         * (the host state directory). */
        const char *runtime_dir;
        /* The isolation in force, shown in the sandbox object (borrowed; NULL: none shown). */
        const char *isolation;
        /* The HOME its execs get (borrowed): a BACKEND_CAP_OWN_HOME backend's remote account's.
         * NULL: the caller's (the daemon sets HOME to it). */
        const char *home;
        /* adopt made the sandbox anew (what ran in it is gone): the sandbox object says
         * sandbox_recreated: true. */
        bool recreated;
};

/* The default runtime directory inside a sandbox (see sandbox_info.runtime_dir). */
#define BACKEND_RUNTIME_DIR "/tmp/.sandboxd"

enum backend_stream {
        BACKEND_STDOUT = 0,
        BACKEND_STDERR = 1,
};

/* One exec, fully resolved by the daemon. */
struct exec_spec {
        const char *exec_id; /* "p_…" */
        char *const *argv;   /* NULL-terminated; for command execs see shell_* below */
        const char *path;    /* the program when it is not argv[0] (the local backend's
                              * configured shell, argv[0] then its name); NULL otherwise, and
                              * always for backends that run argv[0] by PATH in a sandbox */
        char *const *envp;   /* NULL-terminated "K=V", complete (no inheritance) */
        const char *cwd;     /* absolute, may be NULL: sandbox workdir */
        bool pty;
        unsigned short pty_rows, pty_cols;
        bool stdin_open;        /* keep stdin open for process.write */
        const void *stdin_data; /* initial stdin bytes (closed after unless stdin_open) */
        size_t stdin_len;
        bool merge_stderr; /* stderr goes to the stdout stream */
        /* Shell-state capture: when non-NULL the exec is `command` run through the shell
         * wrapper (backends/shell.h); the backend makes state_path's directory writable for the
         * child, and after the exit hands back the file's content in exec_exit.state (at most
         * SHELL_STATE_MAX bytes, else state_too_big) and removes the file. Remote backends
         * also provide bash's start-up file beside it (shell_bash_init_path). */
        const char *state_path;
        const struct backend_identity *who;
};

/* How an exec ended. */
struct exec_exit {
        int exit_code;     /* valid when signal == 0 */
        int signal;        /* terminating signal number, 0 if exited normally */
        bool oom_killed;   /* the kernel killed it for memory */
        const char *state; /* shell state captured by the wrapper, borrowed, may be NULL */
        size_t state_len;
        bool state_too_big; /* the wrapper wrote more than SHELL_STATE_MAX bytes: not read */
        /* Set when the exec could not be started after exec_start returned 0 (the container
         * vanished, the backend connection failed, …): the process never ran, no output was
         * delivered and the other fields are meaningless. Borrowed, NULL normally. */
        const struct sbx_error *error;
        /* Set when the backend lost track of an exec that did run (the link to it was lost for
         * good, or the agent running it restarted): how it ended is unknown, the other fields
         * are meaningless. Borrowed, NULL normally. */
        const char *lost;
};

/* Callbacks from a running exec to the daemon (loop thread). ctx is the daemon's job. */
struct backend_exec_cbs {
        /* Output bytes of one stream, in order. The data is borrowed for the call. */
        void (*on_output)(void *ctx, enum backend_stream stream, const char *data, size_t len);
        /* The process has ended and all its output has been delivered (or the drain grace after
         * the main process ended has passed). Called exactly once; no callback follows. */
        void (*on_exit)(void *ctx, const struct exec_exit *ex);
};

/* Completion of an asynchronous sandbox create. On failure info is NULL and err set. */
typedef void (*backend_create_cb)(void *ctx, struct backend_sandbox *bsb,
                                  const struct sandbox_info *info, const struct sbx_error *err);
/* Completion of destroy / kill_tree / file ops: err NULL on success. */
typedef void (*backend_done_cb)(void *ctx, const struct sbx_error *err);
/* kill_tree completion: survivors is how many processes of the tree are still alive. */
typedef void (*backend_kill_cb)(void *ctx, int survivors, const struct sbx_error *err);
/* file_read completion: data borrowed for the call; size is the file's total size. */
typedef void (*backend_read_cb)(void *ctx, const char *data, size_t len, uint64_t size, bool eof,
                                const struct sbx_error *err);
/* Progress notification while creating (image pull, …). */
typedef void (*backend_progress_cb)(void *ctx, const char *phase, const char *message,
                                    int64_t current, int64_t total);
/* probe completion. reason, hint and details are the operator's (they may name the daemon's
 * paths and environment); see backend_probe_public for what other callers see. */
typedef void (*backend_probe_cb)(void *ctx, bool available, const char *reason, const char *hint,
                                 json_t *details /* steals */);

/* The reason and hint of an unavailable backend that a caller who is neither root nor the
 * daemon's owner is shown: what is missing and what the operator must do, with nothing of the
 * daemon's paths, home, environment or sockets. Put in details (under "public", which the
 * daemon takes out); without it such a caller gets a generic pair naming the backend. */
void backend_probe_public(json_t *details, const char *reason, const char *hint);

/* What a file op will really touch, once the backend has resolved the path as the caller. */
struct backend_file_target {
        const char *path; /* absolute, symlinks and ".." resolved */
        bool exists;      /* false: the op creates it */
        unsigned nlink;   /* hard links of the existing file */
};
/* The daemon's answer to a backend_judge_fn: deny NULL means go ahead; otherwise the backend
 * touches nothing and completes the op with deny (borrowed for the call). */
typedef void (*backend_verdict_cb)(void *op, const struct sbx_error *deny);
/* Asks the daemon (ctx: the op's ctx) to judge t before anything is opened for writing or
 * read; done(op, …) may run before this returns or much later (an approval). A backend whose
 * paths are host paths calls it exactly once per op, after resolving and before touching the
 * file, while it holds what it resolved (so what is judged is what is opened); backends whose
 * paths live in an isolated sandbox may skip it (the daemon judged the requested path). */
typedef void (*backend_judge_fn)(void *ctx, const struct backend_file_target *t,
                                 backend_verdict_cb done, void *op);

struct backend_file_write {
        const char *path;
        const void *data;
        size_t len;
        int mode; /* -1: default 0644 for new files */
        bool append;
        bool mkdir;
};

/* Per-exec operations (the ops of the struct backend_proc an exec_start handed out). */
struct backend_proc_ops {
        /* Queues stdin bytes; eof closes stdin after them. Fails with -EPIPE if closed. */
        int (*write)(struct backend_proc *p, const void *data, size_t len, bool eof);
        /* Sends sig to the exec's whole process tree. */
        int (*signal)(struct backend_proc *p, int sig);
        /* TERM, grace_ms, KILL the whole tree; cb once nothing is left (or it gave up). */
        void (*kill)(struct backend_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb);
        /* Backpressure: stop / restart delivering the exec's output. */
        void (*pause)(struct backend_proc *p);
        void (*resume)(struct backend_proc *p);
        int (*resize)(struct backend_proc *p, unsigned short rows, unsigned short cols);
        /* What exec_adopt needs to take this exec back after a daemon restart (new object), or
         * NULL when it cannot outlive the daemon. May be NULL. */
        json_t *(*save)(struct backend_proc *p);
        /* Frees the handle: after on_exit, or at shutdown while it runs (it is then left to
         * run when save() gave a record, else killed). */
        void (*release)(struct backend_proc *p);
};

enum backend_caps {
        BACKEND_CAP_HOST = 1u << 0, /* commands run on the host, as the caller */
        /* an exec's environment is exactly the one the daemon gives it (no image adds its
         * own): the policy may take a variable it does not set as unset */
        BACKEND_CAP_EXACT_ENV = 1u << 1,
        /* the configuration may hold named sub-sections [backend.NAME.SUB] (ssh's host
         * entries): the daemon hands them over under "sections", their keys' lines as
         * "SUB.key" for validate's reports */
        BACKEND_CAP_SECTIONS = 1u << 2,
        /* commands see the host's file system (BACKEND_CAP_HOST implies it): the daemon's
         * [exec] shell runs `command` execs */
        BACKEND_CAP_HOST_FS = 1u << 3,
        /* a recorded sandbox whose processes end with the daemon: at shutdown its execs are
         * killed (TERM, kill_grace_ms, KILL) rather than left for the next daemon */
        BACKEND_CAP_ENDS_WITH_DAEMON = 1u << 4,
        /* execs get a HOME of the sandbox's own (the remote account's: sandbox_info.home),
         * not the caller's: the policy does not know it before the sandbox is made */
        BACKEND_CAP_OWN_HOME = 1u << 5,
};

typedef void (*backend_facts_cb)(void *ctx, json_t *facts /* steals, may be NULL */,
                                 const struct sbx_error *err);
/* preview_workdir's answer: the workdir (borrowed for the call) or NULL: not known. */
typedef void (*backend_workdir_cb)(void *ctx, const char *workdir);
typedef void (*backend_reaped_cb)(void *ctx, int removed, const struct sbx_error *err);
/* A problem found in a [backend.NAME] section: key is the key at fault (NULL: the section as
 * a whole), message says what is wrong and what is expected, naming section and key. Both
 * borrowed for the call. */
typedef void (*backend_config_report_fn)(void *ctx, const char *key, const char *message);

struct backend_ops {
        const char *name;
        unsigned caps; /* enum backend_caps */
        /* The caps of a sandbox made from spec (sandbox.create params, borrowed; NULL: the
         * default sandbox's), when they depend on it. NULL: caps. See backend_caps(). */
        unsigned (*spec_caps)(json_t *spec);
        /* The workdir create would give a sandbox of spec (borrowed until cb), found as
         * create finds it (local: the home checked as its owner) but making nothing: cb gets
         * it, or NULL when only the create can tell or it would fail; exactly once, maybe
         * before this returns, at shutdown too. policy.check judges the default sandbox with
         * it before the sandbox exists. May be NULL: never known (an image's WorkingDir, a
         * remote home). */
        void (*preview_workdir)(const struct sandbox_spec *spec, void *ctx, backend_workdir_cb cb);

        /* Process-wide setup with the daemon's [backend.NAME] config section (object of strings,
         * may be empty), to which the daemon adds "instance" (its state directory, unless the
         * section sets one), "drain_grace_ms" ([exec] drain_grace_ms), "file_timeout_ms"
         * (the bound of a file op), "state_dir" (the daemon's state directory), "daemon_socket"
         * (its socket: what local hides from its commands, with state_dir) and "config_file"
         * (the configuration file's path, when there is one: who may read a secret in it). A
         * backend with BACKEND_CAP_SECTIONS also finds its named sub-sections
         * [backend.NAME.SUB] there, as "sections": {SUB: {key: value}}. Unknown keys are
         * refused, as validate refuses them. Fails only for configuration errors (the first
         * one, in err). */
        int (*init)(uv_loop_t *loop, json_t *config, struct sbx_error *err);
        /* Checks a [backend.NAME] section (object of strings, borrowed; the file's keys, without
         * those the daemon adds) as init would parse it, with no side effect: nothing is kept,
         * created or contacted (files the section names may be read). report is called once
         * for every problem, unknown keys included; returns how many there were. The daemon
         * calls it whenever it loads the configuration (start, SIGHUP, --check-config), so a
         * bad section is found with its file and line before anything starts. NULL: the
         * section may hold only the daemon's own keys (ask_isolated). */
        int (*validate)(json_t *config, backend_config_report_fn report, void *ctx);
        /* Whether the backend can be used now; the answer arrives through cb. */
        void (*probe)(void *ctx, backend_probe_cb cb);

        /* Facts the policy needs to judge a sandbox.create spec (the params object, borrowed)
         * before anything is created, in the shape policy_eval_sandbox takes them
         * (policy/policy.h: {"volumes": {...}, "containers": {...}}). An error fails the
         * create (fail closed). Called again before a recreate. May be NULL. */
        void (*inspect_spec)(json_t *spec, void *ctx, backend_facts_cb cb);
        /* What a create of spec would refuse before it makes anything, beyond the policy's
         * checks (docker: what its container may not have for a caller that runs as itself),
         * for policy.check {sandbox: spec}: 0, or -1 with err as the create would fail.
         * Synchronous, asks nothing of the service. May be NULL. */
        int (*check_spec)(const struct sandbox_spec *spec, struct sbx_error *err);
        /* Creates a sandbox. progress may be called any number of times before cb. */
        void (*create)(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                       backend_create_cb cb);
        /* Abandons the create or adopt started with ctx: whatever it made is removed, then its
         * cb is called (with an error, SBX_E_UNUSABLE {state: "cancelled"}, unless it had
         * finished first). Only while that cb is pending. May be NULL. */
        void (*cancel)(void *ctx);
        /* What the backend needs to re-adopt this sandbox after a daemon restart (new object),
         * or NULL when it cannot be re-adopted (local sandboxes are simply recreated). */
        json_t *(*save)(struct backend_sandbox *bsb);
        /* Re-adopts a sandbox from save()'s record (borrowed); cb as for create. May be NULL. */
        void (*adopt)(const struct sandbox_spec *spec, json_t *record, void *ctx,
                      backend_create_cb cb);
        /* Destroys a sandbox; its execs have been killed by the daemon already. bsb is freed. */
        void (*destroy)(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb);
        /* Start-up, after re-adoption: removes what this daemon instance (config key
         * "instance") left on the backend for sandboxes it has no record of, i.e. whose id is
         * not in known_ids (NULL-terminated, borrowed for the call). cb gets how many were
         * removed. Called only when probe says the backend is available. May be NULL. */
        void (*reap_orphans)(const char *const *known_ids, void *ctx, backend_reaped_cb cb);

        /* Starts an exec. On success *ret holds the handle and cbs will be called later; on
         * failure (bad cwd, no such program, …) returns negative errno and sets err. */
        int (*exec_start)(struct backend_sandbox *bsb, const struct exec_spec *spec,
                          const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                          struct sbx_error *err);
        /* Takes back an exec a previous daemon started (record: what its proc's save()
         * returned; spec: exec_id, state_path, pty as at the start). Output continues from
         * offsets[stream] (what the daemon has kept); if the exec ended meanwhile, the rest of
         * its output and its real exit follow. An exec the backend no longer knows ends with
         * exec_exit.lost. May be NULL. */
        int (*exec_adopt)(struct backend_sandbox *bsb, const struct exec_spec *spec, json_t *record,
                          const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                          struct backend_proc **ret, struct sbx_error *err);
        /* Every recorded exec of bsb has been adopted: what nobody claimed may be killed. */
        void (*exec_adopt_done)(struct backend_sandbox *bsb);

        /* File ops refuse what is not a regular file and never block the loop; judge: see
         * backend_judge_fn. */
        void (*file_read)(struct backend_sandbox *bsb, const char *path, uint64_t offset,
                          size_t max_bytes, void *ctx, backend_judge_fn judge, backend_read_cb cb);
        void (*file_write)(struct backend_sandbox *bsb, const struct backend_file_write *w,
                           void *ctx, backend_judge_fn judge, backend_done_cb cb);

        /* backend.cache: the backend's image cache (new object: {cache_dir, cache_bytes,
         * cache_cap_bytes, cache_entries, entries, removed}), after removing, with prune, the
         * entries no sandbox uses: all of them, or only down to the cap. May be NULL. */
        json_t *(*cache)(bool prune, bool all);

        /* Daemon shutdown: release process-wide resources (sandboxes with save() and their
         * adoptable execs are left running). May be NULL. */
        void (*shutdown)(void);
};

/* The caps of a sandbox of ops made from spec (spec_caps, else caps). */
unsigned backend_caps(const struct backend_ops *ops, json_t *spec);

/* Registry (backend.c). Names in protocol order. */
const struct backend_ops *backend_lookup(const char *name);
/* Every known backend, NULL-terminated. */
const struct backend_ops *const *backend_all(void);
/* For validate: reports each key of config (borrowed) that is neither in keys (NULL-terminated)
 * nor one every section may hold (BACKEND_COMMON_KEYS); returns how many. */
int backend_config_known(json_t *config, const char *backend, const char *const *keys,
                         backend_config_report_fn report, void *ctx);
/* A backend_config_report_fn for init (ctx: its struct sbx_error *): keeps the first problem,
 * as a -32602 error whose param is the key. */
void backend_config_first_error(void *ctx, const char *key, const char *message);
/* Counts what a backend's config parse reports, so that it can say how many problems there
 * were: report/ctx are validate's (or backend_config_first_error and init's err). */
struct backend_config_tally {
        backend_config_report_fn report;
        void *ctx;
        int n;
};
/* A backend_config_report_fn over a tally (ctx: struct backend_config_tally *). */
void backend_config_tally_cb(void *ctx, const char *key, const char *message);
/* Reports e under key (NULL: e's param), counts it and clears e. */
void backend_config_tally_error(struct backend_config_tally *t, const char *key,
                                struct sbx_error *e);
/* Keys of every [backend.NAME] section: ask_isolated (read by the daemon), and those the daemon
 * adds for init (see backend_ops.init; a file may set instance only where the backend lists
 * it). */
#define BACKEND_COMMON_KEYS                                                                        \
        "ask_isolated", "drain_grace_ms", "file_timeout_ms", "config_file", "state_dir",           \
                "daemon_socket", "instance"

/* Whether who's uid is in users or its gid or a supplementary group in groups: comma/blank
 * lists of names or numbers, "*" for anyone; either list may be NULL. */
bool backend_identity_listed(const char *users, const char *groups,
                             const struct backend_identity *who);

/* What a backend built (real), judged again by the built-in policy, must not be stricter than
 * what was judged (requested); both sandbox.create-shaped. Else -EPERM with err set (-32001,
 * data {verdict, resolution, findings}, message what). *host_access (may be NULL): real's.
 * host_paths (borrowed, may be NULL) is policy_ctx.host_paths for both: with it, no host path
 * is looked up on the filesystem (one not in it is judged unresolved). */
int backend_rejudge(const char *backend, json_t *requested, json_t *real, json_t *host_paths,
                    const char *what, struct sbx_error *err, bool *host_access);
/* The host_paths a backend_rejudge of what was made takes (new): each path of resolved (path
 * as written -> where it led, or null; borrowed) under its policy_host_path_key, and each
 * place one led to as itself (what the sandbox shows as its sources). */
json_t *backend_rejudge_paths(json_t *resolved);

extern const struct backend_ops local_backend_ops;

#endif
