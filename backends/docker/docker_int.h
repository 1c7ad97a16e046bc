/* docker_int.h — private to the docker backend (backends/docker/): docker.c (API calls,
 * events, probe, the vtable), docker_config.c, docker_create.c, docker_spec.c, docker_adopt.c,
 * docker_facts.c, docker_user.c, docker_exec.c, docker_attach.c, docker_hijack.c, docker_file.c,
 * docker_tar.c, docker_binds.c.
 *
 * Loop thread only. The backend keeps one process-wide state (struct docker_state) holding the
 * configuration, the shared HTTP multi handle and the list of live sandboxes.
 */
#ifndef SANDBOXD_DOCKER_INT_H
#define SANDBOXD_DOCKER_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/agent/proto.h"
#include "backends/backend.h"
#include "backends/http.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define DOCKER_API       "v1.41"
#define DOCKER_API_MIN   1.41
#define DOCKER_STATE_DIR "/tmp/.sandboxd"

struct docker_state {
        uv_loop_t *loop;
        struct http_multi *http;
        char *host;      /* as configured: unix:///path or tcp://host:port */
        char *sock_path; /* unix socket path, NULL for tcp */
        char *tcp_host;  /* tcp host, NULL for unix */
        int tcp_port;
        bool tls;
        char *base_url; /* "http://docker" or "https://host:port" */
        char *ca_file, *cert_file, *key_file;
        int64_t pids_limit;
        char *default_image;
        char *default_network;
        char *tmp_size;   /* tmpfs /tmp size option */
        char *instance;   /* optional sandboxd.instance label */
        char *runtime;    /* HostConfig.Runtime of new containers, NULL: dockerd's default */
        char *agent;      /* realpath of sandboxd-agent, NULL: every exec is a `docker exec` */
        char *agent_note; /* why there is no agent, for backend.list */
        unsigned agent_ping_ms, agent_link_timeout_ms, agent_reconnect_ms; /* 0: defaults */
        unsigned check_ms; /* the bound on resolving a host path ([limits] file_timeout_s) */
        /* Callers that are not root but may have root in the container (docker_user.c):
         * comma/blank lists, NULL for none. */
        char *root_users, *root_groups;
        struct list sandboxes;
        struct http_req *events;
        struct buf events_buf;
        uv_timer_t events_retry;
        bool events_timer_init;
        bool initialised;
};

extern struct docker_state docker;

/* docker_config.c: the [backend.docker] section. */
/* Parses config (borrowed) into d, reporting every problem; returns how many there were. The
 * fields it fills are freed by docker_config_free (d itself is the caller's). */
int docker_config_parse(json_t *config, struct docker_state *d, backend_config_report_fn report,
                        void *ctx);
void docker_config_free(struct docker_state *d);
/* backend_ops.validate. */
int docker_config_validate(json_t *config, backend_config_report_fn report, void *ctx);

struct backend_sandbox {
        struct list link;
        char *id;   /* sandbox id */
        char *cid;  /* container id */
        char *name; /* container name */
        char *workdir;
        char *image;
        char *state;              /* "running" | "exited" | "removed" | … */
        json_t *tmpfs;            /* array of tmpfs targets (archive API does not see them) */
        uint64_t oom_seen;        /* last oom_kill count read from the container's cgroup */
        struct buf dead_pidfiles; /* space-separated pid files to remove on the next helper */
        unsigned ndead;
        bool use_agent; /* the container runs sandboxd-agent (label sandboxd.agent) */
        /* The owner is neither root nor the daemon's uid: helpers run as the container's user
         * (user), and files are read and written by them, never by dockerd as root. */
        bool unprivileged;
        char *user; /* the container's Config.User as inspected ("": the image's, root) */
        int remaps; /* dockerd remapped users when it was made or adopted: 1, 0, -1 unknown */
        struct agent_session *session;  /* its session; NULL until the first use */
        struct docker_create *creating; /* the create waiting for the agent's first READY */
        const struct backend_upcalls *up;
        void *up_ctx;
        int refs;
        bool destroyed;
};

/* One JSON API call's completion: status 0 and terr set on a transport failure; body is the
 * parsed JSON (borrowed, may be NULL), raw the bytes. */
typedef void (*docker_resp_cb)(void *ctx, long status, json_t *body, const char *raw, size_t len,
                               const char *terr);

/* Starts an API call to DOCKER_API/path (path starts with '/'); body (borrowed) is sent as
 * JSON when non-NULL, else raw/rawlen with content type ctype. Returns 0 or negative errno. */
int docker_call(const char *method, const char *path, json_t *body, const void *raw, size_t rawlen,
                const char *ctype, docker_resp_cb cb, void *ctx);
/* Opens a raw (TLS) connection to a tcp:// Docker host, for hijacked streams. */
int docker_connect_stream(const struct http_cbs *cbs, void *ctx, struct http_req **ret);
/* Fills err from a failed call (status/body/terr as in docker_resp_cb), prefixed with what. */
void docker_error(struct sbx_error *err, const char *what, long status, json_t *body,
                  const char *terr);
/* Fills s (caller's) for a request to url (borrowed, must outlive the request's start). */
void docker_spec_init(struct http_req_spec *s, const char *method, const char *url);
/* A GET without libcurl over the Unix socket (a docker_call over tcp), ending after timeout_ms;
 * for the probe and the start-up listing. Returns 0 or negative errno (then cb is not called). */
int docker_get(const char *path, unsigned timeout_ms, docker_resp_cb cb, void *ctx);
/* Starts or stops the event stream: it runs while docker.sandboxes is not empty. */
void docker_events_update(void);
/* inspect_spec (docker_facts.c): what the policy's container checks need before a create.
 * spec is the sandbox.create params object (borrowed): named volumes come from mounts[]
 * entries of type "volume", from docker.host_config Mounts (Type "volume") and Binds
 * ("name:/target"), containers from VolumesFrom, and then the volumes those containers mount.
 * cb gets a new object {"volumes": {name: GET /volumes/{name} body}, "containers": {name: GET
 * /containers/{name}/json body}} (what does not exist is left out: Docker would create a
 * volume empty, and refuse a missing container), or NULL and err. Needs init() first. */
void docker_inspect_spec(json_t *spec, void *ctx, backend_facts_cb cb);
/* The working directory an inspected container or image (body of GET /containers/{id}/json or
 * /images/{name}/json, borrowed) has: its Config.WorkingDir, "/" when empty (docker_facts.c). */
const char *docker_inspect_workdir(json_t *body);
/* backend_ops.preview_workdir (docker_facts.c). */
void docker_preview_workdir(const struct sandbox_spec *spec, void *ctx, backend_workdir_cb cb);
/* Marks a sandbox as unusable with state (e.g. "removed"). */
void docker_sandbox_mark(struct backend_sandbox *sb, const char *state);
/* Reference counting for sandboxes shared with pending operations. */
void docker_sandbox_ref(struct backend_sandbox *sb);
void docker_sandbox_unref(struct backend_sandbox *sb);

/* A hijacked Docker connection (docker_hijack.c), embedded in its owner. */
struct docker_hijack_cbs {
        void (*ref)(void *ctx); /* pins the owner while the handle or a request is pending */
        void (*unref)(void *ctx);
        void (*on_open)(void *ctx); /* the upgrade was accepted; writes may start */
        /* Stream bytes: stream 1 (stdout) or 2 (stderr); always 1 in raw (tty) mode. */
        void (*on_data)(void *ctx, int stream, const char *data, size_t len);
        /* The stream ended (error NULL) or could not be opened (error says why). The
         * connection is closed already; nothing follows. */
        void (*on_end)(void *ctx, const char *error);
};

struct docker_hijack {
        union {
                uv_handle_t h;
                uv_stream_t s;
                uv_pipe_t pipe;
                uv_tcp_t tcp;
        } conn;
        struct http_req *tls; /* over TLS: libcurl's connection, polled by us */
        struct list link;     /* over TLS: in the list of open ones */
        uv_poll_t poll;
        bool poll_init, connecting;
        struct buf tls_out;                  /* bytes not yet taken by the TLS layer */
        const struct docker_hijack_cbs *cbs; /* set by the owner before open */
        void *ctx;
        const char *what;
        char *request;
        uv_connect_t connect_req;
        uv_shutdown_t shutdown_req;
        struct buf hs;
        unsigned char fh[8];
        size_t fh_len;
        uint32_t frame_left;
        int frame_stream;
        bool conn_init, open, raw, reading, paused, shut, ended;
};

int docker_hijack_open(struct docker_hijack *hj, const char *what, const char *path,
                       const char *body, bool raw);
void docker_hijack_send(struct docker_hijack *hj, const void *data, size_t len);
void docker_hijack_send2(struct docker_hijack *hj, const void *a, size_t alen, const void *b,
                         size_t blen);
size_t docker_hijack_queued(const struct docker_hijack *hj);
void docker_hijack_shutdown(struct docker_hijack *hj);
void docker_hijack_pause(struct docker_hijack *hj);
void docker_hijack_resume(struct docker_hijack *hj);
void docker_hijack_close(struct docker_hijack *hj);
/* Ends every stream over TLS with why (owners hear on_end); before the HTTP handle goes. */
void docker_hijack_end_all(const char *why);

/* A create or adopt in flight (docker_create.c, docker_spec.c, docker_adopt.c). */
struct docker_create {
        struct backend_sandbox *sb;
        void *ctx;
        backend_progress_cb progress;
        backend_create_cb cb;
        char *image;
        json_t *body;      /* container create body */
        json_t *approved;  /* target -> the bind source approved (resolved as the owner) */
        json_t *requested; /* the spec as approved, for the policy comparison */
        const struct backend_identity *owner_id; /* spec->owner: as whom paths are resolved */
        struct docker_recheck *rechecks;         /* the bind sources resolved again */
        size_t nrechecks, rechecks_pending;
        void (*binds_checked)(struct docker_create *c);
        json_t *insp;   /* the created container's inspect, held during the re-check */
        json_t *paths;  /* the host paths as resolved for the judgement, and what they
                           led to as themselves: the read-back's (never resolved anew) */
        json_t *layers; /* pull: layer id -> [current, total] */
        json_t *enforced;
        struct buf line;
        char *pull_error;
        bool host_access;
        bool adopting;
        bool cancelled;
        bool no_pull;     /* an image not on the host fails the create (spec->no_pull) */
        bool image_named; /* the image found must carry its name (spec->image_named) */
        bool preview;     /* check_spec's body: nothing of the host is looked at (bind
                             sources stay as given: the policy judged them as the caller) */
        bool want_start;  /* agent mode: start once the attach is open (`docker start -a`) */
        bool starting;    /* the start call is in flight */
        bool agent_early; /* the agent answered (or failed: agent_error) before the start did */
        struct docker_owner *owner; /* who the container runs as (docker_user.c) */
        char *agent_error;
        struct list link;      /* in docker_creates while its cb is pending */
        struct http_req *pull; /* the image pull in flight */
        struct sbx_error err;
};

/* Creates and adopts whose cb is pending (docker_create.c), for cancel(ctx). */
extern struct list docker_creates;

/* docker_create.c: the steps of a create that an adopt shares, and two backend_ops. */
/* A new sandbox (one reference, the caller's) in state "creating"; id borrowed. */
struct backend_sandbox *docker_sandbox_new(const char *id);
/* Fails c (cb gets c->err), removing a container it made; frees c. */
void docker_create_fail(struct docker_create *c);
/* Fills c->err from a failed call (as docker_error) and fails c. */
void docker_create_fail_call(struct docker_create *c, const char *what, long status, json_t *body,
                             const char *terr);
/* The sandbox runs: listed, the event stream on, cb told; frees c. */
void docker_create_done(struct docker_create *c);
/* Starts c's stopped or created container (attached first with the agent). */
void docker_launch(struct docker_create *c);
void docker_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                   backend_create_cb cb);
void docker_cancel(void *ctx);

/* docker_spec.c: the container body and the read-back. */
/* What resources.* docker enforces for spec (borrowed): a new object. */
json_t *docker_create_enforced(const struct sandbox_spec *spec);
/* The create body for spec (borrowed; new, or NULL and err); sets c->approved and
 * c->requested. */
json_t *docker_body(struct docker_create *c, const struct sandbox_spec *spec,
                    struct sbx_error *err);
/* How many of an inspected container's mounts (insp borrowed) show something of the host. */
size_t docker_host_mounts(json_t *insp, bool agent);
/* docker_binds.c: checks the bind sources of the created container insp (borrowed): what
 * Docker reports must be what was approved, and each must still lead there resolved again as
 * the owner (a helper, off the loop, bounded by check_ms). done(c) follows, with c->err set
 * on a problem (-32001 for a swapped source, -32005 for one that did not answer). */
void docker_check_binds(struct docker_create *c, json_t *insp,
                        void (*done)(struct docker_create *c));
/* Whether a re-check was in flight; it is abandoned then (its helpers killed, no done). */
bool docker_check_binds_cancel(struct docker_create *c);
/* 0, or negative and c->err when the container is not what was approved; sets host_access. */
int docker_check_policy(struct docker_create *c, json_t *insp);
/* Records sb's tmpfs targets from its inspect (insp borrowed). */
void docker_note_tmpfs(struct backend_sandbox *sb, json_t *insp);

/* docker_user.c: who the container runs as. */
/* Notes what c needs later from spec (borrowed, only valid now): the owner, and what the spec
 * asks about the container's user. */
void docker_user_note(struct docker_create *c, const struct sandbox_spec *spec);
/* Decides who c's container runs as (asking dockerd whether it remaps users when the owner is
 * not root) and fits c->body to it, then goes on with docker_create_image(c); fails c when the
 * spec asks for a user or capabilities the owner may not have. */
void docker_user_decide(struct docker_create *c);
/* Adopt: goes on with next(c) once sb->user is known (docker_note_user), unless the container
 * runs as root for an owner that must run as itself on this dockerd: then c fails with -32006
 * {state: "removed"}. Needs docker_user_note first. */
void docker_user_adopt(struct docker_create *c, void (*next)(struct docker_create *c));
/* After the container is made: gives the owner its working directory when that is in the
 * image's filesystem, then goes on with docker_inspect_created(c). */
void docker_user_prepare(struct docker_create *c);
/* Frees c->owner. */
void docker_user_free(struct docker_create *c);
/* Whether owner (may be NULL: the daemon itself) is neither root nor the daemon's own uid. */
bool docker_user_unprivileged(const struct backend_identity *owner);
/* The user a helper exec of sb runs as: root for a privileged owner, else the container's. */
const char *docker_user_helper(const struct backend_sandbox *sb);
/* Records sb's Config.User from its inspect (insp borrowed). */
void docker_note_user(struct backend_sandbox *sb, json_t *insp);
/* Adds user (Config.User), uid and gid (when numeric) to a sandbox's details (d borrowed). */
void docker_user_details(const struct backend_sandbox *sb, json_t *d);

/* docker_info.c: GET /info. */
/* Whether body (a GET /info answer, borrowed) names userns remapping or rootless mode. */
bool docker_info_remaps(json_t *body);
/* Keeps NCPU, MemTotal and the remapping of body (a 200 answer, borrowed); returns the last. */
bool docker_info_note(json_t *body);
/* Whether dockerd remaps users as it last answered GET /info: 1, 0, -1 not known yet. */
int docker_info_remapped(void);
/* backend_ops.check_spec: what docker_user_apply would refuse for spec's owner (docker_user.c). */
int docker_check_spec(const struct sandbox_spec *spec, struct sbx_error *err);
/* Adds userns_remap (null until dockerd answered), ncpu and mem_total to d (borrowed). */
void docker_info_details(json_t *d);
/* Adds userns_remap (null: not known) of sb to its sandbox details d (borrowed). */
void docker_info_sandbox(const struct backend_sandbox *sb, json_t *d);

/* docker_create.c: the steps docker_user.c goes on with. */
void docker_create_image(struct docker_create *c);
void docker_inspect_created(struct docker_create *c);
/* Whether c was cancelled; if so it is failed (-32006 {state: "cancelled"}) and freed. */
bool docker_create_cancelled(struct docker_create *c);

/* docker_adopt.c: backend_ops entries. */
json_t *docker_save(struct backend_sandbox *bsb);
void docker_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb);
void docker_destroy(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb);
void docker_reap_orphans(const char *const *known_ids, void *ctx, backend_reaped_cb cb);

/* The sandbox's agent session over the attach stream (docker_attach.c). */
struct agent_session;
/* The session, opened now if there is none (or the last one gave up). adopting: the daemon
 * re-adopts execs first (agent_session_adopt_done). */
struct agent_session *docker_agent_session(struct backend_sandbox *sb, bool adopting);
/* Ends the session (err NULL: the sandbox is going away; killed: its processes are dead). */
void docker_agent_close(struct backend_sandbox *sb, const struct sbx_error *err, bool killed);
/* The container stopped or vanished (sb->state says which): the session ends with -32006. */
void docker_agent_container_gone(struct backend_sandbox *sb);
/* The first READY of a creating sandbox's agent (error NULL), or why it never came. */
void docker_create_agent_ready(struct docker_create *c, const char *error);
/* A creating sandbox's attach is open: the container may be started. */
void docker_create_attached(struct docker_create *c);

/* Helper execs: a small command in the container whose output is collected. */
typedef void (*docker_helper_cb)(void *ctx, int exit_code, const char *out, size_t len,
                                 const struct sbx_error *err);
/* Runs argv (borrowed) in sb with optional stdin, as root — as the container's user when the
 * owner is not root (docker_user_helper) —; cb gets stdout (stderr discarded). */
void docker_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
                   void *ctx, docker_helper_cb cb);

/* Exec engine (docker_exec.c), the backend_ops entries: through the agent when the container
 * runs one, else one `docker exec` each (their procs carry their own ops). */
int docker_exec_start(struct backend_sandbox *bsb, const struct exec_spec *spec,
                      const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                      struct sbx_error *err);
int docker_exec_adopt(struct backend_sandbox *bsb, const struct exec_spec *spec, json_t *record,
                      const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                      struct backend_proc **ret, struct sbx_error *err);
void docker_exec_adopt_done(struct backend_sandbox *bsb);

/* Files (docker_file.c), the backend_ops entries. */
void docker_file_read(struct backend_sandbox *sb, const char *path, uint64_t offset,
                      size_t max_bytes, void *ctx, backend_judge_fn judge, backend_read_cb cb);
void docker_file_write(struct backend_sandbox *sb, const struct backend_file_write *w, void *ctx,
                       backend_judge_fn judge, backend_done_cb cb);

/* Minimal ustar (docker_tar.c). */
struct docker_tar_entry {
        char name[1024];
        char link[1024];
        char type; /* '0' file, '2' symlink, '5' directory, … */
        uint64_t size;
        unsigned mode;
};
/* Appends a regular-file entry (GNU long name when > 100 bytes) and its padded data. */
void docker_tar_file(struct buf *out, const char *name, unsigned mode, const void *data,
                     size_t len);
/* Appends a directory entry owned by uid:gid. */
void docker_tar_dir(struct buf *out, const char *name, unsigned mode, unsigned uid, unsigned gid);
/* Appends the two zero blocks that end an archive. */
void docker_tar_end(struct buf *out);

/* Streaming reader: feed bytes; for the first regular/symlink/dir entry, on_entry is called
 * once, then on_data with its content. Returns 0, or -EINVAL for a malformed archive. */
struct docker_tar_reader {
        unsigned char hdr[512];
        size_t hdr_len;
        uint64_t left; /* bytes left of the current entry's data */
        uint64_t pad;  /* padding bytes to skip after it */
        char longname[1024];
        bool have_longname;
        bool skipping; /* current data is a long-name or pax record */
        bool collecting_long;
        size_t long_len;
        int entries;
        void (*on_entry)(void *ctx, const struct docker_tar_entry *e);
        void (*on_data)(void *ctx, const char *data, size_t len);
        void *ctx;
};
int docker_tar_feed(struct docker_tar_reader *r, const char *data, size_t len);

#endif
