/* session.h — the daemon's side of a sandboxd-agent: the shared exec engine of every backend
 * that runs its commands through the agent (docker today; ssh, singularity, namespace-isolated
 * local sandboxes, kubernetes next).
 *
 * A session is the agent of one sandbox as seen from the daemon. It owns the link (over any
 * struct agent_transport, transport.h) and outlives it: when the link breaks it asks its
 * owner for a new transport (cbs->connect), with backoff, and resumes every exec where it was
 * — the agent kept their output and exits (backends/agent/proto.h). Execs are struct
 * backend_proc handles (backend.h) whose ops are the session's own, so a backend hands them
 * out from its exec_start as they are:
 *
 *     return agent_exec_start(sb->session, spec, cbs, ctx, ret, err);
 *
 * Link states reach the owner through cbs->on_link (map them to backend_upcalls->link).
 * Loop thread only. The owner holds one reference (agent_session_new); agent_session_close or
 * agent_session_detach gives it back, and no owner callback follows either.
 */
#ifndef SANDBOXD_AGENT_SESSION_H
#define SANDBOXD_AGENT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "backends/agent/transport.h"
#include "backends/backend.h"
#include "protocol/error.h"

struct agent_session;

/* What READY said. */
struct agent_ready {
        uint32_t version;
        uint32_t pid;      /* the agent's pid where it runs (1: a container's init) */
        uint64_t instance; /* random per agent process */
        bool detached;
};

struct agent_session_cbs {
        /* Opens a transport to the agent: cb(cb_ctx, t, NULL) or cb(cb_ctx, NULL, why). A
         * failure the owner knows is final (the container is gone) is told with
         * agent_session_close instead, before or after cb. */
        void (*connect)(void *ctx, agent_connect_cb cb, void *cb_ctx);
        /* The link changed. BACK comes for the first READY and, after a loss, once the agent
         * has answered the PING that follows READY and the resumes (reason NULL); GONE is
         * last (docs/backends/agent.md, "Giving up"). */
        void (*on_link)(void *ctx, enum backend_link state, const char *reason);
        /* READY arrived: NULL accepts, else why the agent is refused (the session goes). May
         * be NULL. */
        const char *(*check_ready)(void *ctx, const struct agent_ready *r);
};

struct agent_session_config {
        const char *backend; /* for errors: {backend, detail} */
        const char *where;   /* "in the container", "on the host" — for errors */
        /* Detached agents: the secret given to sandboxd-agent --detach (copied); NULL on
         * stdio, where only the daemon holds the stream. */
        const unsigned char *secret;
        size_t secret_len;
        unsigned ready_timeout_ms;     /* connect + READY; default 10000 */
        unsigned ping_interval_ms;     /* default 5000 */
        unsigned link_timeout_ms;      /* nothing heard for this long: lost; default 20000 */
        unsigned reconnect_timeout_ms; /* give up after this long without a link; 60000 */
        /* The daemon is re-adopting this sandbox's execs (exec_adopt): the agent keeps every
         * exec until agent_session_adopt_done, instead of killing those nobody resumed. */
        bool adopting;
};

/* A new session (not connected yet). Copies cfg. */
struct agent_session *agent_session_new(uv_loop_t *loop, const struct agent_session_config *cfg,
                                        const struct agent_session_cbs *cbs, void *ctx);
/* Connects; execs may be started at once (they wait for READY). */
void agent_session_open(struct agent_session *s);
/* Whether the session still carries (or is restoring) its link. */
bool agent_session_alive(const struct agent_session *s);
/* Why it is gone (borrowed) or NULL. */
const char *agent_session_error(const struct agent_session *s);
/* The owner's final word: execs that never ran end with err (copied; NULL: a backend error
 * naming the link), those that did with SIGKILL when killed (their processes are known to be
 * dead) or as lost. Drops the owner's reference; no owner callback follows. */
void agent_session_close(struct agent_session *s, const struct sbx_error *err, bool killed);
/* Daemon shutdown: the link goes, every exec stays in the agent for the next daemon. Execs
 * still held by the daemon are released by it as usual. Drops the owner's reference. */
void agent_session_detach(struct agent_session *s);
/* Restarts reconnecting at once (after GONE: a new attempt, e.g. for a new exec). */
void agent_session_retry(struct agent_session *s);
/* Every exec the daemon had is adopted (agent_exec_adopt): others may be killed. */
void agent_session_adopt_done(struct agent_session *s);

/* Starts an exec (spec->exec_id is its durable name). Fails at once only for what can be
 * known here (argv empty or too large, name invalid, session gone). */
int agent_exec_start(struct agent_session *s, const struct exec_spec *spec,
                     const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                     struct sbx_error *err);
/* Takes back an exec of a previous daemon by name, its output from offsets[2]. */
int agent_exec_adopt(struct agent_session *s, const struct exec_spec *spec,
                     const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                     struct backend_proc **ret, struct sbx_error *err);

/* A helper exec: runs argv with stdin in (copied), collects its stdout (at most 64 MiB,
 * stderr dropped); cb gets the exit code (-1 with err when it could not run). */
typedef void (*agent_helper_cb)(void *ctx, int exit_code, const char *out, size_t len,
                                const struct sbx_error *err);
void agent_helper(struct agent_session *s, char *const *argv, const void *in, size_t inlen,
                  void *ctx, agent_helper_cb cb);

#endif
