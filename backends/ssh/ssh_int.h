/* ssh_int.h — private to the ssh backend (backends/ssh/). Loop thread only.
 *
 *   ssh.c         the vtable: configuration, probe, save, shutdown
 *   ssh_host.c    host entries and request sections -> struct ssh_host, who may use which
 *   ssh_dl.c      libssh through dlopen
 *   ssh_conn.c    one non-blocking connection (ssh_conn_int.h: what it shares with ssh_chan.c)
 *   ssh_chan.c    the channels of a connection
 *   ssh_agentauth.c  authentication through an ssh-agent, on a worker thread
 *   ssh_window.c  what a server made libssh hold for a channel the daemon is not reading
 *   ssh_jump.c    a stream to a host through a jump host's direct-tcpip channel
 *   ssh_hostkey.c known_hosts checks on bytes
 *   ssh_trust.c   a sandbox's keys and the judgement of host keys (its host's, its jump host's)
 *   ssh_link.c    a sandbox's connection (through a jump host, reconnects) and its agent
 *                 session over a channel
 *   ssh_remote.c  commands run on the remote host: probe, install, start and stop the agent
 *   ssh_create.c  create, adopt, destroy
 *   ssh_plain.c   execs as plain exec channels, where no agent runs
 */
#ifndef SANDBOXD_SSH_INT_H
#define SANDBOXD_SSH_INT_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/agent/session.h"
#include "backends/backend.h"
#include "backends/ssh/ssh_conn.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define SSH_BACKEND         "ssh"
#define SSH_SECRET_LEN      32
#define SSH_KEY_MAX         (64u << 10)       /* a private key file */
#define SSH_KH_MAX          (4u << 20)        /* a known_hosts file */
#define SSH_SOCKET_PATH_MAX ((size_t) 108)    /* sun_path, with its NUL */
#define SSH_HELPER_MAX      (64u << 20)       /* output a helper command may return */
#define SSH_REMOTE_DIR      ".cache/sandboxd" /* under the remote home, unless absolute */

/* Who and where: a host entry of the configuration, or a client's own host. */
struct ssh_host {
        char *name; /* the entry's name; NULL for a client's own host */
        char *host;
        unsigned port;
        char *user;
        char *identity_file; /* NULL: a client's host authenticated by its agent only */
        char *agent_socket;  /* a client's ssh-agent (connected as the client), or NULL */
        /* entry: a file the daemon reads and records accept-new keys in (NULL: the backend's
         * known_hosts); client: a file read as the client (NULL: its ~/.ssh/known_hosts) */
        char *known_hosts;
        bool accept_new;
        bool client;    /* files are read as the sandbox's owner */
        bool agent_off; /* always plain exec channels */
        char *remote_dir;
        char *jump;           /* the entry name of a jump host, or NULL */
        struct ssh_host *via; /* that entry (entries only: one hop, no jump of its own) */
};

struct ssh_state {
        uv_loop_t *loop;
        char *known_hosts;  /* the backend's own known_hosts (the daemon's) */
        char *client_hosts; /* patterns of hosts clients may name; NULL: none */
        char *agent;        /* this host's sandboxd-agent (Linux x86_64), or NULL */
        char *agent_note;   /* why there is none */
        char agent_sha[65];
        unsigned connect_ms, ping_ms, link_timeout_ms, reconnect_ms, file_timeout_ms;
        unsigned linger_s;
        json_t *defaults; /* [backend.ssh] itself: host_key_policy, remote_dir for entries */
        json_t *hosts;    /* entry name -> object of strings */
        const char *dl_error;
        struct list sandboxes;
        struct list destroying; /* struct ssh_destroy_op: destroys waiting for the host */
        bool initialised;
};

extern struct ssh_state sshb;

struct ssh_create;
struct ssh_jump;

struct backend_sandbox {
        struct list link; /* in sshb.sandboxes */
        int refs;
        char *id;
        struct ssh_host h;
        struct backend_identity who; /* the owner (copied) */
        ssh_key key;
        char *key_label;
        int agent_fd;      /* a client's ssh-agent, connected as the client and its; or -1 */
        char *agent_label; /* "the ssh-agent at /path", for messages */
        struct buf kh;     /* a client host's known_hosts, read as the owner */
        char *kh_label;
        char *where; /* "on HOST" for messages */
        struct ssh_conn *conn;
        struct ssh_jump *jump; /* the way to conn's host through h.via, or NULL */
        ssh_key jump_key;      /* h.via's key */
        char *jump_key_label;
        char *jump_fingerprint; /* of h.via's host key last accepted */
        bool conn_fresh;        /* up and not yet used by the agent session */
        struct list waiters;
        char *fingerprint; /* of the host key last accepted */
        /* the remote side, from the probe */
        char *r_os, *r_arch, *r_home, *r_user, *r_hostname, *r_uid, *r_rtbase;
        char *agent_path, *rt, *sock, *workdir;
        unsigned char secret[SSH_SECRET_LEN];
        bool plain, bridge, destroyed, installed;
        char *plain_note;
        char *cut_off; /* why its host (or jump host) was cut off: not connected to again */
        struct agent_session *session;
        struct ssh_create *creating;
        const struct backend_upcalls *up;
        void *up_ctx;
        struct buf lost; /* plain: pid files of execs lost with a link, killed on the next */
        struct list plain_queue; /* plain execs waiting for a channel */
        unsigned plain_running;
};

/* ---- ssh.c ---- */
void ssh_sandbox_ref(struct backend_sandbox *sb);
void ssh_sandbox_unref(struct backend_sandbox *sb);
/* The sandbox's agent session, opened now if there is none or the last gave up. */
struct agent_session *ssh_agent_session(struct backend_sandbox *sb, bool adopting);

/* ---- ssh_host.c ---- */
void ssh_host_clear(struct ssh_host *h);
/* The host of a sandbox.create "ssh" section (borrowed, may be NULL) for owner: a host entry
 * it may use, or its own host where clients may name one. -32602 / -32010 with err. */
int ssh_host_resolve(json_t *section, const struct backend_identity *owner, struct ssh_host *h,
                     struct sbx_error *err);
/* The host entry name (for a jump host); -ENOENT with err when there is none. */
int ssh_host_entry(const char *name, struct ssh_host *h, struct sbx_error *err);
/* Checks [backend.ssh] and every host entry; -EINVAL with err naming the key. */
int ssh_host_check_config(json_t *config, struct sbx_error *err);
/* The record of h for save() (new) and back (0, or -EINVAL with err). */
json_t *ssh_host_save(const struct ssh_host *h);
int ssh_host_load(json_t *rec, const struct backend_identity *owner, struct ssh_host *h,
                  struct sbx_error *err);

/* ---- ssh_trust.c ---- */
typedef void (*ssh_conn_ready_cb)(void *ctx, struct ssh_conn *c, const char *error);
/* Reads the keys (the entry's and its jump host's, or a client host's key and known_hosts)
 * for sb; cb(ctx, NULL, NULL) or the error. */
void ssh_trust_credentials(struct backend_sandbox *sb, void *ctx, ssh_conn_ready_cb cb);
/* The host key of h (sb's host, or its jump host h.via) against h's known_hosts under h's
 * policy; *fp gets its fingerprint (new). NULL, or why it is refused (new). */
char *ssh_trust_check(struct backend_sandbox *sb, const struct ssh_host *h, ssh_key key, char **fp);
/* The host key algorithms to offer for h: those of its known keys, or NULL (new). */
char *ssh_trust_algorithms(const struct backend_sandbox *sb, const struct ssh_host *h);

/* ---- ssh_link.c ---- */
/* An authenticated connection for sb: the one it has, or a new one. cb may run before this
 * returns. */
void ssh_link_conn(struct backend_sandbox *sb, void *ctx, ssh_conn_ready_cb cb);
/* Drops sb's connection (the next use makes a new one). */
void ssh_link_drop(struct backend_sandbox *sb);
/* The agent session's callbacks (connect over a channel, link states). */
extern const struct agent_session_cbs ssh_link_session_cbs;

/* ---- ssh_remote.c ---- */
/* Runs argv (quoted for the login shell) in an exec channel of c with stdin in (copied);
 * cb gets the exit status (-1 and err when it could not run) and stdout (stderr is appended to
 * err's message on failure). The agent_helper_cb shape. */
void ssh_run(struct ssh_conn *c, char *const *argv, const void *in, size_t inlen, void *ctx,
             agent_helper_cb cb);
/* A helper command in the sandbox: through its agent, or an exec channel where none runs. */
void ssh_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
                void *ctx, agent_helper_cb cb);
/* The remote scripts (sh), with their argv layouts. */
extern const char ssh_sh_probe[];   /* REMOTE_DIR VERSION HASH -> key=value lines */
extern const char ssh_sh_install[]; /* DIR HASH, binary on stdin -> "ok" */
extern const char ssh_sh_start[];   /* AGENT|"" RTBASE RT WORKDIR LINGER, secret on stdin */
extern const char ssh_sh_stop[];    /* RT KILL: stops the agent, kills what is left, removes RT */
extern const char ssh_sh_reap[];    /* RT KILL: kills the trees of plain execs' pid files */
/* The remote facts of a sandbox (strings of struct backend_sandbox): which the probe gives,
 * which the sandbox's record keeps. NULL-terminated. */
enum { SSH_FACT_PROBE = 1, SSH_FACT_RECORD = 2, SSH_FACT_BOTH = 3 };
struct ssh_fact {
        const char *key;
        size_t off;
        unsigned where;
};
extern const struct ssh_fact ssh_facts[];
#define SSH_FACT(sb, f) ((char **) ((char *) (sb) + (f)->off))
/* Fills sb's remote facts from the probe's output; -EINVAL when it is not that output. */
int ssh_remote_parse_probe(struct backend_sandbox *sb, const char *out, size_t len);

/* ---- ssh_create.c ---- */
void ssh_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                backend_create_cb cb);
void ssh_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb);
void ssh_cancel(void *ctx);
void ssh_destroy(struct backend_sandbox *sb, void *ctx, backend_done_cb cb);
/* Shutdown: destroys still waiting for their host end now, with an error. */
void ssh_destroy_abandon(void);
/* The session's first READY (error NULL) or why it never came, for a creating sandbox. */
void ssh_create_agent_ready(struct ssh_create *c, const char *error);
/* What backend.list / sandbox.get show about sb (new). */
json_t *ssh_details(const struct backend_sandbox *sb);

/* ---- ssh_plain.c ---- */
int ssh_plain_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                    const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                    struct sbx_error *err);
/* A new connection: the trees of execs lost with the last one are killed now. */
void ssh_plain_reap_lost(struct backend_sandbox *sb);

#endif
