/* sing_int.h — private to the singularity backend (the files of backends/singularity/).
 *
 * The backend drives the Apptainer (or SingularityCE) CLI: every call is a child process
 * (sing_run.c) with an environment of our making, never the daemon's. Images are SIF files in
 * a capped cache (sing_cache.c, verified by sing_sif.c), sandboxes are instances
 * (sing_instance.c) whose commands run through a detached sandboxd-agent reached over the
 * pipes of `apptainer exec instance://NAME sandboxd-agent --connect SOCK`; file ops are helper
 * execs through that agent (backends/remote_file.c). singularity.c holds the configuration, probe
 * and the backend_ops table. Loop thread only, except the hashing work of sing_sif.c.
 */
#ifndef SANDBOXD_SING_INT_H
#define SANDBOXD_SING_INT_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/agent/session.h"
#include "backends/backend.h"
#include "protocol/list.h"
#include "protocol/sha256.h"
#include "protocol/util.h"

/* Where the agent is bound into each instance (read-only), and its runtime directory there. */
#define SING_AGENT_PATH  "/.sandboxd/sandboxd-agent"
#define SING_RUNTIME_DIR "/tmp/.sandboxd"
#define SING_AGENT_SOCK  SING_RUNTIME_DIR "/agent.sock"
#define SING_SECRET_LEN  32

struct sing_state {
        uv_loop_t *loop;
        bool initialised;
        char *exe_cfg;       /* [backend.singularity] executable, NULL: look on PATH */
        char *path;          /* PATH for the lookup and for the tool's own environment */
        char *home, *user;   /* the daemon user's, for the tool's environment */
        char *scratch;       /* scratch directory (chosen at init) */
        char *scratch_how;   /* why that one: "configured", "/scratch", "state directory" */
        char *cache_dir;     /* scratch/cache: the SIF cache */
        char *tmp_dir;       /* scratch/tmp: APPTAINER_TMPDIR */
        char *overlay_dir;   /* scratch/overlays: per-sandbox overlays */
        char *agent;         /* realpath of sandboxd-agent, NULL: unavailable */
        char *agent_note;    /* why there is none */
        char *default_image; /* "docker://debian:bookworm-slim" */
        char *default_network;
        char tag[9];        /* of the daemon instance: names its instances */
        bool limits;        /* --memory/--cpus/--pids-limit are applied */
        char *limits_note;  /* why not */
        uint64_t cache_max; /* bytes */
        uint64_t build_timeout_ms, start_timeout_ms, stop_timeout_s;
        uint64_t file_timeout_ms; /* a bind source's lookup ([limits] file_timeout_s) */
        struct list sandboxes;
};

extern struct sing_state sing;

/* ---- singularity.c ---- */

/* The tool to run (new): the configured path, else apptainer, else singularity on PATH; NULL
 * with *why (new) set when there is none. */
char *singularity_find_exe(char **why);
/* The complete environment of every tool call (NULL-terminated, static, built at init). */
char *const *singularity_env(void);
/* Sets err to -32000 backend unavailable {backend, reason, hint}. */
void singularity_unavailable(struct sbx_error *err, const char *reason, const char *hint);

/* ---- sing_run.c: one tool call ---- */

struct sing_run;
/* A line the tool wrote (stdout or stderr, without its newline; borrowed). */
typedef void (*sing_line_cb)(void *ctx, const char *line);
/* The call ended: exit code (-1 when it could not run or was killed: why says it), its stdout
 * (at most 4 MiB, borrowed) and a message for errors (borrowed): the tool's last FATAL or
 * ERROR line, else its last line of stderr. */
typedef void (*sing_done_cb)(void *ctx, int code, const char *out, size_t len, const char *why);

/* Runs argv (argv[0] the tool) with singularity_env(), in's bytes on its stdin (then EOF), for
 * at most timeout_ms (then its process group is killed). line may be NULL. done is called
 * exactly once, never before this returns; the handle is valid until then. */
struct sing_run *sing_run_start(char *const *argv, const void *in, size_t inlen,
                                unsigned timeout_ms, sing_line_cb line, sing_done_cb done,
                                void *ctx);
/* Kills the call (done follows with code -1) and forgets line: nothing but done follows. */
void sing_run_cancel(struct sing_run *r);

/* ---- sing_binds.c: the bind sources, resolved off the loop ---- */

struct sing_binds;
/* The sources resolved: paths (object, borrowed for the call: each source as written -> where
 * it leads, or null when the daemon's user cannot reach it), or err (-32005 naming a source
 * that did not answer within file_timeout_ms; paths NULL). */
typedef void (*sing_binds_cb)(void *ctx, json_t *paths, const struct sbx_error *err);
/* Resolves every bind source of spec (mounts[] binds, singularity.binds) in helpers. NULL
 * when spec binds no host path (cb is not called); else cb follows exactly once, from the
 * loop, unless sing_binds_cancel comes first. */
struct sing_binds *sing_binds_resolve(const struct sandbox_spec *spec, void *ctx, sing_binds_cb cb);
/* Abandons the lookups: their helpers are killed, no callback follows. */
void sing_binds_cancel(struct sing_binds *b);
/* Sets err to -32005 "host path 'P' did not answer within N s: a hung mount? …" for a path
 * whose helper did not answer (why: caller_path_cb's error). */
void sing_hung_path(struct sbx_error *err, const char *path, const char *why);

/* ---- sing_sif.c: SIF files ---- */

struct sing_sif_facts {
        bool exists;
        uint64_t size;
        dev_t dev;
        ino_t ino;
        int64_t mtime_ns, ctime_ns;
        char sha256[65]; /* "" when not hashed */
        char error[160]; /* why it is no valid SIF, "" when it is */
};

/* Checks a SIF global header (the first 128 bytes of a file of size bytes): 0, or -EINVAL
 * with why (at least 160 bytes) saying what is wrong. Pure. */
int sing_sif_header_check(const unsigned char *head, size_t len, uint64_t size, char *why);
typedef void (*sing_sif_cb)(void *ctx, const struct sing_sif_facts *f);
/* On a worker thread: stats path, checks its header and, when hash, digests the whole file.
 * cb on the loop thread. */
void sing_sif_inspect(const char *path, bool hash, void *ctx, sing_sif_cb cb);
/* On a worker thread: removes path and everything below it (overlays); cb may be NULL. */
void sing_sif_remove_tree(const char *path, void (*cb)(void *ctx), void *ctx);

/* ---- sing_cache.c: the SIF cache ---- */

/* The image is ready: path of its SIF file (borrowed for the call) and the key to release it
 * with (borrowed), or err. */
typedef void (*sing_image_cb)(void *ctx, const char *sif, const char *key,
                              const struct sbx_error *err);
struct sing_cache_get;
/* Loads the index (start-up; a damaged index is set aside, never trusted). */
void sing_cache_init(void);
void sing_cache_shutdown(void);
/* Finds or builds ref's SIF (one build per image however many creates want it), verified, and
 * holds it (sing_cache_release) so that it is not evicted. progress may be called before cb.
 * The handle is valid until cb; sing_cache_get_cancel abandons it (cb follows with an error). */
struct sing_cache_get *sing_cache_get(const char *exe, const char *ref, void *ctx,
                                      backend_progress_cb progress, sing_image_cb cb);
void sing_cache_get_cancel(struct sing_cache_get *g);
/* Holds (adopt) or releases an entry; releasing may evict down to the cap. */
void sing_cache_hold(const char *key);
void sing_cache_release(const char *key);
/* {cache_dir, cache_bytes, cache_cap_bytes, cache_entries} into details. */
void sing_cache_details(json_t *details);
/* The entries (new), and with prune the removal of those not in use: all of them, or only
 * down to the cap. */
json_t *sing_cache_list(bool prune, bool all);

/* ---- sing_instance.c: instances ---- */

struct backend_sandbox {
        struct list link;
        int refs;
        char *id;       /* sandbox id */
        char *instance; /* instance name */
        char *exe;      /* the tool that started it */
        char *sif;      /* image file */
        char *key;      /* cache key, NULL for a local .sif */
        char *image;    /* as requested */
        char *workdir;
        char *overlay; /* per-sandbox overlay directory, or NULL */
        unsigned char secret[SING_SECRET_LEN];
        char *agent_argv[8]; /* the --connect bridge */
        struct agent_session *session;
        const struct backend_upcalls *up;
        void *up_ctx;
        struct sing_create *creating; /* until the create or adopt completes */
        bool destroyed;
        bool gone; /* the instance was stopped behind our back */
};

/* Sets err to -32006 {state: "gone"} for a sandbox whose instance is gone. */
void sing_sandbox_gone_error(const struct backend_sandbox *sb, struct sbx_error *err);

/* The instance name of a sandbox id (new): sbxd-TAG-SUFFIX. */
char *sing_instance_name(const char *id);
/* The sandbox id an instance name of this daemon stands for (new), or NULL. */
char *sing_instance_id(const char *name);
/* The `instance start` argv (new, NULL-terminated, free with sing_argv_free), or NULL with
 * err set (-32602 naming the param) for what cannot be expressed. paths (borrowed) is where
 * each bind source leads (sing_binds_cb's; a source not in it, or null, cannot be bound: it
 * is never resolved here). enforced gets the limits, real (an array) the binds as made:
 * {type, source (resolved), target, readonly}. */
char **sing_instance_argv(const char *exe, const struct sandbox_spec *spec, const char *sif,
                          const char *name, const char *overlay, json_t *paths, json_t *enforced,
                          json_t *real, struct sbx_error *err);
void sing_argv_free(char **argv);
/* Starts the sandbox's agent and session; cb as for backend create. */
void sing_instance_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                          backend_create_cb cb);
void sing_instance_cancel(void *ctx);
void sing_instance_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx,
                         backend_create_cb cb);
json_t *sing_instance_save(struct backend_sandbox *sb);
void sing_instance_destroy(struct backend_sandbox *sb, void *ctx, backend_done_cb cb);
void sing_instance_reap(const char *const *known_ids, void *ctx, backend_reaped_cb cb);
void sing_sandbox_unref(struct backend_sandbox *sb);
/* The sandbox's session (reopened when the last one gave up). */
struct agent_session *sing_session(struct backend_sandbox *sb, bool adopting);

#endif
