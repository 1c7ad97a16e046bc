/* docker_attach.c — a docker sandbox's resident sandboxd-agent: the container's attach stream
 * as an agent transport (backends/agent/transport.h) and the sandbox's agent session
 * (backends/agent/session.h) on it.
 *
 * The container's main process is sandboxd-agent (mounted read-only from the host at
 * AGENT_PATH). POST /containers/{id}/attach (hijacked, plain or TLS: docker_hijack.c) carries
 * the session; Docker's 8-byte stdout frames are removed by the hijack, stderr is ignored. The
 * stream is reachable only through the Docker API: only the agent holds the container's stdio
 * (it is PID 1, not dumpable, and the container has no CAP_SYS_PTRACE), so nothing inside can
 * read or forge the daemon's messages. A READY from any pid but 1 is refused.
 *
 * When the attach breaks the session reconnects and resumes every exec; when the container is
 * gone or stopped, the session is closed with -32006 {state} (execs that never ran can then be
 * run again in a recreated container; the others died with the container's init).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/agent/session.h"
#include "backends/docker/docker_int.h"

struct docker_attach {
        struct agent_transport base;
        struct docker_hijack hj;
        int refs;
        struct backend_sandbox *sb;
        agent_connect_cb cb; /* until the upgrade is answered */
        void *cb_ctx;
        const struct agent_transport_cbs *tcbs;
        void *tctx;
        bool opened, started, closed;
        struct buf early; /* bytes that came with the upgrade's answer, before start */
};

static void
da_ref_cb(void *ctx)
{
        ((struct docker_attach *) ctx)->refs++;
}

static void
da_unref_cb(void *ctx)
{
        struct docker_attach *a = ctx;

        if (--a->refs > 0)
                return;
        docker_sandbox_unref(a->sb);
        buf_free(&a->early);
        buf_free(&a->hj.hs); /* an answer that was not an upgrade */
        free(a);
}

static void
da_open_cb(void *ctx)
{
        struct docker_attach *a = ctx;
        agent_connect_cb cb = a->cb;

        a->opened = true;
        a->cb = NULL;
        da_ref_cb(a);
        cb(a->cb_ctx, &a->base, NULL); /* the session sends SYNC and HELLO */
        if (a->sb->creating && !a->closed)
                docker_create_attached(a->sb->creating);
        da_unref_cb(a);
}

static void
da_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct docker_attach *a = ctx;

        if (stream != 1 || a->closed)
                return;
        if (a->started)
                a->tcbs->on_data(a->tctx, data, len);
        else
                buf_append(&a->early, data, len);
}

struct da_fail {
        struct backend_sandbox *sb;
        agent_connect_cb cb;
        void *cb_ctx;
        char *why;
};

/* Why the attach failed decides: a container that is gone or stopped ends the session. */
static void
da_inspected_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct da_fail *f = ctx;

        json_t *st = json_object_get(body, "State");
        const char *status_s = json_string_value(json_object_get(st, "Status"));

        if (status == 404)
                docker_sandbox_mark(f->sb, "removed");
        else if (status == 200 && !json_is_true(json_object_get(st, "Running")) &&
                 (!status_s || strcmp(status_s, "created") != 0)) /* not yet started is fine */
                docker_sandbox_mark(f->sb, "exited");
        if (f->cb)
                f->cb(f->cb_ctx, NULL, f->why);
        docker_sandbox_unref(f->sb);
        free(f->why);
        free(f);
}

/* Asks Docker whether the container still runs (one that does not ends the session); cb (may be
 * NULL) then hears why the attach failed. */
static void
da_check_container(struct backend_sandbox *sb, const char *why, agent_connect_cb cb, void *cb_ctx)
{
        struct da_fail *f = xcalloc(1, sizeof(*f));
        char *path = xasprintf("/containers/%s/json", sb->cid);

        f->sb = sb;
        docker_sandbox_ref(sb);
        f->cb = cb;
        f->cb_ctx = cb_ctx;
        f->why = xstrdup(why);
        if (docker_call("GET", path, NULL, NULL, 0, NULL, da_inspected_cb, f) < 0)
                da_inspected_cb(f, 0, NULL, NULL, 0, "cannot start an API request");
        free(path);
}

static void
da_end_cb(void *ctx, const char *error)
{
        struct docker_attach *a = ctx;
        agent_connect_cb cb = a->cb;
        char *why;

        if (a->opened) {
                /* Before the agent ever answered, an end usually means it died: see now,
                 * rather than after the READY timeout. */
                if (a->sb->creating && !a->closed)
                        da_check_container(a->sb, "the attach stream ended", NULL, NULL);
                if (a->started && !a->closed)
                        a->tcbs->on_end(a->tctx, error);
                return;
        }
        a->cb = NULL;
        why = xasprintf("cannot attach to the container: %s", error ? error : "no answer");
        da_check_container(a->sb, why, cb, a->cb_ctx);
        free(why);
        da_unref_cb(a); /* nobody got the transport: no close() will come */
}

static const struct docker_hijack_cbs da_hijack_cbs = {
        .ref = da_ref_cb,
        .unref = da_unref_cb,
        .on_open = da_open_cb,
        .on_data = da_data_cb,
        .on_end = da_end_cb,
};

static void
da_start(struct agent_transport *t, const struct agent_transport_cbs *cbs, void *ctx)
{
        struct docker_attach *a = (struct docker_attach *) t;

        a->tcbs = cbs;
        a->tctx = ctx;
        a->started = true;
        if (a->early.len) {
                struct buf b = a->early;
                a->early = (struct buf){0};
                cbs->on_data(ctx, b.data, b.len);
                buf_free(&b);
        }
}

static void
da_send(struct agent_transport *t, const void *data, size_t len)
{
        docker_hijack_send(&((struct docker_attach *) t)->hj, data, len);
}

static size_t
da_queued(const struct agent_transport *t)
{
        return docker_hijack_queued(&((const struct docker_attach *) t)->hj);
}

static void
da_pause(struct agent_transport *t)
{
        docker_hijack_pause(&((struct docker_attach *) t)->hj);
}

static void
da_resume(struct agent_transport *t)
{
        docker_hijack_resume(&((struct docker_attach *) t)->hj);
}

static void
da_close(struct agent_transport *t)
{
        struct docker_attach *a = (struct docker_attach *) t;

        a->closed = true;
        docker_hijack_close(&a->hj);
        da_unref_cb(a);
}

static const struct agent_transport_ops da_ops = {
        .kind = "docker attach",
        .start = da_start,
        .send = da_send,
        .queued = da_queued,
        .pause = da_pause,
        .resume = da_resume,
        .close = da_close,
};

/* The session's connect: a new attach to the container. */
static void
da_connect(void *ctx, agent_connect_cb cb, void *cb_ctx)
{
        struct backend_sandbox *sb = ctx;
        struct docker_attach *a = xcalloc(1, sizeof(*a));
        char *path = xasprintf("/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1", sb->cid);
        int rc;

        a->base.ops = &da_ops;
        a->refs = 1;
        a->sb = sb;
        docker_sandbox_ref(sb);
        a->cb = cb;
        a->cb_ctx = cb_ctx;
        a->hj.cbs = &da_hijack_cbs;
        a->hj.ctx = a;
        rc = docker_hijack_open(&a->hj, "attach", path, NULL, false);
        free(path);
        if (rc < 0) {
                char *why = xasprintf("cannot attach to the container: %s",
                                      rc == -EAFNOSUPPORT ? "plain tcp:// needs a numeric address"
                                                          : strerror(-rc));
                da_unref_cb(a);
                cb(cb_ctx, NULL, why);
                free(why);
        }
}

static void
da_link_cb(void *ctx, enum backend_link state, const char *reason)
{
        struct backend_sandbox *sb = ctx;

        if (sb->creating) {
                docker_create_agent_ready(sb->creating, state == BACKEND_LINK_BACK ? NULL : reason);
                return;
        }
        if (sb->up && sb->up->link)
                sb->up->link(sb->up_ctx, state, reason);
}

/* With another process as the container's init (an image entrypoint that does not exec, PidMode
 * host) the stream would not be private: other processes share the agent's stdio. */
static const char *
da_check_ready(void *ctx, const struct agent_ready *r)
{
        static char why[160];

        if (r->pid == 1)
                return NULL;
        snprintf(why, sizeof(why),
                 "sandboxd-agent runs as pid %u, not as the container's init (pid 1), so other "
                 "processes share its request stream",
                 r->pid);
        return why;
}

static const struct agent_session_cbs da_session_cbs = {
        .connect = da_connect,
        .on_link = da_link_cb,
        .check_ready = da_check_ready,
};

/* Opens (or reopens, when the last one gave up) the sandbox's agent session. */
struct agent_session *
docker_agent_session(struct backend_sandbox *sb, bool adopting)
{
        struct agent_session_config cfg = {
                .backend = "docker",
                .where = "in the container",
                .ping_interval_ms = docker.agent_ping_ms,
                .link_timeout_ms = docker.agent_link_timeout_ms,
                .reconnect_timeout_ms = docker.agent_reconnect_ms,
                .adopting = adopting,
        };

        if (agent_session_alive(sb->session))
                return sb->session;
        docker_agent_close(sb, NULL, false);
        sb->session = agent_session_new(docker.loop, &cfg, &da_session_cbs, sb);
        agent_session_open(sb->session);
        return sb->session;
}

/* Ends the sandbox's session (err NULL: the sandbox is going away). */
void
docker_agent_close(struct backend_sandbox *sb, const struct sbx_error *err, bool killed)
{
        struct agent_session *s = sb->session;

        sb->session = NULL;
        if (s)
                agent_session_close(s, err, killed);
}

/* The container is no longer running: what ran in it died with its init. */
void
docker_agent_container_gone(struct backend_sandbox *sb)
{
        struct sbx_error err = {0};
        char *why;

        if (sb->creating) { /* the agent died before its first READY: the create fails */
                why = xasprintf("the container is %s: its main process, the agent, ended",
                                sb->state);
                docker_create_agent_ready(sb->creating, why);
                free(why);
                return;
        }
        if (!sb->session)
                return;
        sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", sb->state),
                      "docker container of sandbox %s is %s", sb->id, sb->state);
        docker_agent_close(sb, &err, true);
        sbx_error_clear(&err);
}
