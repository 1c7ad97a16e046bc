/* ssh_create.c — an ssh sandbox's life: create (credentials, connection, probe, the agent
 * installed if missing, started detached, its first READY), adopt after a daemon restart
 * (the running agent taken back), destroy (the agent stopped, its execs' trees killed, its
 * runtime directory removed; the installed agent stays cached).
 */
#include <sys/random.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/remote_sh.h"
#include "backends/ssh/ssh_int.h"

struct ssh_create {
        struct list link; /* in ssh_creates */
        struct backend_sandbox *sb;
        void *ctx;
        backend_progress_cb progress;
        backend_create_cb cb;
        char *workdir; /* requested */
        bool adopting, cancelled, agent_started;
        bool res[4]; /* resources asked for (cpus, memory_mb, pids, disk_mb): not enforceable */
        struct sbx_error err;
};

static struct list ssh_creates = {&ssh_creates, &ssh_creates}; /* creates and adopts in progress */

static void create_finish(struct ssh_create *c);

static void
create_fail(struct ssh_create *c, const char *what, const char *why)
{
        if (!c->err.code)
                sbx_error_backend(&c->err, SSH_BACKEND, "sandbox %s: %s: %s", c->sb->where, what,
                                  why);
        create_finish(c);
}

/* Whether the create goes on: false once cancelled (it has been finished). */
static bool
create_alive(struct ssh_create *c)
{
        if (!c->cancelled)
                return true;
        if (!c->err.code)
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                              "the creation of ssh sandbox %s was cancelled", c->sb->id);
        create_finish(c);
        return false;
}

static void
create_ignore_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
}

/* What the sandbox shows. */
json_t *
ssh_details(const struct backend_sandbox *sb)
{
        json_t *d = json_pack("{s:s?,s:s,s:i,s:s,s:s?,s:s?,s:s?,s:s?,s:s,s:s?}", "host_entry",
                              sb->h.name, "host", sb->h.host, "port", (int) sb->h.port, "user",
                              sb->h.user, "remote_os", sb->r_os, "remote_arch", sb->r_arch,
                              "remote_hostname", sb->r_hostname, "host_key", sb->fingerprint,
                              "host_key_policy", sb->h.accept_new ? "accept-new" : "strict",
                              "runtime_dir", sb->rt);

        if (sb->h.jump) {
                json_object_set_new(d, "jump_host", json_string(sb->h.jump));
                if (sb->jump_fingerprint)
                        json_object_set_new(d, "jump_host_key", json_string(sb->jump_fingerprint));
        }
        if (sb->plain) {
                json_object_set_new(d, "exec", json_string("plain exec channels"));
                json_object_set_new(d, "note", json_string(sb->plain_note));
        } else {
                json_object_set_new(d, "exec", json_string("sandboxd-agent"));
                json_object_set_new(d, "agent", json_string(sb->agent_path));
                json_object_set_new(d, "link",
                                    json_string(sb->bridge ? "sandboxd-agent --connect "
                                                             "(exec channel)"
                                                           : "direct-streamlocal"));
        }
        return d;
}

static json_t *
create_enforced(const struct ssh_create *c)
{
        static const char *const names[] = {"cpus", "memory_mb", "pids", "disk_mb"};
        json_t *e = json_object();

        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (c->res[i])
                        json_object_set_new(e, names[i], json_null()); /* not on a plain host */
        return e;
}

static void
create_free(struct ssh_create *c)
{
        list_del(&c->link);
        sbx_error_clear(&c->err);
        free(c->workdir);
        free(c);
}

/* Ends the create or adopt: the sandbox, or the error (and what was started goes). */
static void
create_finish(struct ssh_create *c)
{
        struct backend_sandbox *sb = c->sb;
        struct sandbox_info info = {0};
        char *argv[] = {"sh", "-c", (char *) ssh_sh_stop, "sh", sb->rt, (char *) remote_sh_kill,
                        NULL};

        sb->creating = NULL;
        if (c->err.code) {
                c->cb(c->ctx, NULL, NULL, &c->err);
                agent_session_close(sb->session, NULL, false);
                sb->session = NULL;
                if (c->agent_started && !c->adopting && ssh_conn_up(sb->conn))
                        ssh_run(sb->conn, argv, NULL, 0, NULL, create_ignore_cb);
                ssh_link_drop(sb);
                ssh_sandbox_unref(sb);
                create_free(c);
                return;
        }
        list_add_tail(&sshb.sandboxes, &sb->link);
        info.workdir = sb->workdir;
        info.runtime_dir = sb->rt;
        info.home = sb->r_home; /* from the remote's facts (HELLO, or the plain probe) */
        info.enforced = create_enforced(c);
        info.details = ssh_details(sb);
        c->cb(c->ctx, sb, &info, NULL);
        json_decref(info.enforced);
        json_decref(info.details);
        create_free(c);
}

/* The session's first READY. */
void
ssh_create_agent_ready(struct ssh_create *c, const char *error)
{
        if (!create_alive(c))
                return;
        if (error)
                create_fail(c, "cannot reach the sandboxd-agent started", error);
        else
                create_finish(c);
}

static void
create_open_session(struct ssh_create *c)
{
        struct backend_sandbox *sb = c->sb;

        sb->creating = c;
        if (c->progress)
                c->progress(c->ctx, "connect", "connecting to sandboxd-agent", -1, -1);
        ssh_agent_session(sb, c->adopting);
}

/* "workdir=DIR" and, with the agent, "listening on SOCK pid N". */
static void
create_started_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct ssh_create *c = ctx;
        struct backend_sandbox *sb = c->sb;
        const char *wd = out ? memmem(out, len, "workdir=", 8) : NULL;

        if (!create_alive(c))
                return;
        if (err || code != 0 || !wd) {
                create_fail(c, "cannot start sandboxd-agent",
                            err   ? err->message
                            : len ? out
                                  : "no answer");
                return;
        }
        c->agent_started = !sb->plain;
        wd += 8;
        free(sb->workdir);
        sb->workdir = xstrndup(wd, strcspn(wd, "\n"));
        if (sb->plain)
                create_finish(c);
        else
                create_open_session(c);
}

static void
create_start(struct ssh_create *c)
{
        struct backend_sandbox *sb = c->sb;
        char linger[16], secret[2 * SSH_SECRET_LEN + 2];
        char *argv[] = {"sh",
                        "-c",
                        (char *) ssh_sh_start,
                        "sh",
                        sb->plain ? "" : sb->agent_path,
                        sb->r_rtbase,
                        sb->rt,
                        c->workdir ? c->workdir : "",
                        linger,
                        NULL};

        for (size_t i = 0; i < SSH_SECRET_LEN; i++)
                snprintf(secret + 2 * i, 3, "%02x", sb->secret[i]);
        secret[2 * SSH_SECRET_LEN] = '\n';
        snprintf(linger, sizeof(linger), "%u", sshb.linger_s);
        if (c->progress)
                c->progress(c->ctx, "start",
                            sb->plain ? "preparing the runtime directory"
                                      : "starting sandboxd-agent",
                            -1, -1);
        ssh_run(sb->conn, argv, secret, sb->plain ? 0 : sizeof(secret) - 1, c, create_started_cb);
        explicit_bzero(secret, sizeof(secret));
}

/* Whether a script's last line is "ok". */
static bool
create_said_ok(const char *out, size_t len)
{
        while (len && out[len - 1] == '\n')
                len--;
        return len >= 2 && !memcmp(out + len - 2, "ok", 2) && (len == 2 || out[len - 3] == '\n');
}

static void
create_installed_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct ssh_create *c = ctx;

        if (!create_alive(c))
                return;
        if (err || code != 0 || !create_said_ok(out, len))
                create_fail(c, "cannot install sandboxd-agent", err ? err->message : out);
        else
                create_start(c);
}

static void
create_install(struct ssh_create *c)
{
        struct backend_sandbox *sb = c->sb;
        char *dir = xstrndup(sb->agent_path, strlen(sb->agent_path) - strlen("/sandboxd-agent"));
        char *argv[] = {"sh", "-c", (char *) ssh_sh_install, "sh", dir, sshb.agent_sha, NULL};
        struct buf bin = {0};
        char b[65536], *msg;
        ssize_t n;
        int fd = open(sshb.agent, O_RDONLY | O_CLOEXEC);

        while (fd >= 0 && (n = read(fd, b, sizeof(b))) > 0)
                buf_append(&bin, b, (size_t) n);
        if (fd >= 0)
                close(fd);
        msg = xasprintf("installing sandboxd-agent (%zu KiB) in %s", bin.len >> 10, dir);
        if (c->progress)
                c->progress(c->ctx, "install", msg, -1, -1);
        ssh_run(sb->conn, argv, bin.data, bin.len, c, create_installed_cb);
        free(msg);
        free(dir);
        buf_free(&bin);
}

/* Agent or plain exec channels, and where the runtime directory goes. */
static int
create_decide(struct ssh_create *c)
{
        struct backend_sandbox *sb = c->sb;
        bool linux64 = !strcmp(sb->r_os, "Linux") && !strcmp(sb->r_arch, "x86_64");

        sb->rt = xasprintf("%s/%s", sb->r_rtbase, sb->id);
        sb->sock = xasprintf("%s/agent.sock", sb->rt);
        if (strlen(sb->sock) > 107) {
                create_fail(c, "cannot place the agent's socket",
                            "the runtime directory's path is too long for a Unix socket "
                            "(108 bytes)");
                return -1;
        }
        sb->plain = !linux64 || !sshb.agent || sb->h.agent_off;
        if (sb->plain) {
                char *why = sb->h.agent_off ? xstrdup("agent = off for this host")
                            : !sshb.agent   ? xstrdup(sshb.agent_note)
                                            : xasprintf("no sandboxd-agent for %s %s (this "
                                                          "daemon has one for Linux x86_64)",
                                                        sb->r_os, sb->r_arch);
                sb->plain_note = xasprintf(
                        "%s: every command runs in its own exec channel and session on the remote "
                        "side (killed there by process group); slower than the agent, and a "
                        "dropped link ends the commands that were running",
                        why);
                free(why);
        }
        if (!sb->plain && !strstr(sb->agent_path, "/agent-")) {
                create_fail(c, "cannot place the agent", "the probe gave no agent path");
                return -1;
        }
        return 0;
}

static void
create_probed_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct ssh_create *c = ctx;
        struct backend_sandbox *sb = c->sb;

        if (!create_alive(c))
                return;
        if (err || code != 0 || ssh_remote_parse_probe(sb, out, len) < 0) {
                create_fail(c, "cannot look at the system",
                            err   ? err->message
                            : len ? out
                                  : "no answer");
                return;
        }
        if (create_decide(c) < 0)
                return;
        if (!sb->plain && !sb->installed && !memmem(out, len, "sha=1", 5))
                create_fail(c, "cannot install sandboxd-agent",
                            "the remote host has no sha256sum to check it with (install "
                            "coreutils, or set agent = off for this host)");
        else if (!sb->plain && !sb->installed)
                create_install(c);
        else
                create_start(c);
}

static void
create_connected_cb(void *ctx, struct ssh_conn *conn, const char *error)
{
        struct ssh_create *c = ctx;
        struct backend_sandbox *sb = c->sb;
        char tag[32];
        char *argv[] = {"sh",           "-c", (char *) ssh_sh_probe, "sh", sb->h.remote_dir, tag,
                        sshb.agent_sha, NULL};

        if (!create_alive(c))
                return;
        if (error) {
                create_fail(c, "cannot connect", error);
                return;
        }
        snprintf(tag, sizeof(tag), "%s-%.12s", SANDBOXD_VERSION, sshb.agent_sha);
        if (c->progress)
                c->progress(c->ctx, "probe", "looking at the remote system", -1, -1);
        ssh_run(conn, argv, NULL, 0, c, create_probed_cb);
}

static void
adopt_reaped_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct ssh_create *c = ctx;

        if (!create_alive(c))
                return;
        if (err)
                create_fail(c, "cannot clean up after the last daemon", err->message);
        else
                create_finish(c);
}

/* Plain execs never outlive the daemon: the trees of the last one are killed now. */
static void
adopt_plain_conn_cb(void *ctx, struct ssh_conn *conn, const char *error)
{
        struct ssh_create *c = ctx;
        char *argv[] = {"sh", "-c", (char *) ssh_sh_reap, "sh", c->sb->rt, (char *) remote_sh_kill,
                        NULL};

        if (!create_alive(c))
                return;
        if (error)
                create_fail(c, "cannot connect", error);
        else
                ssh_run(conn, argv, NULL, 0, c, adopt_reaped_cb);
}

static void
create_creds_cb(void *ctx, struct ssh_conn *conn, const char *error)
{
        struct ssh_create *c = ctx;

        if (!create_alive(c))
                return;
        if (error) {
                create_fail(c, "cannot use its credentials", error);
                return;
        }
        if (c->progress)
                c->progress(c->ctx, "connect", c->sb->where, -1, -1);
        if (c->adopting && c->sb->plain)
                ssh_link_conn(c->sb, c, adopt_plain_conn_cb);
        else if (c->adopting)
                create_open_session(c);
        else
                ssh_link_conn(c->sb, c, create_connected_cb);
}

static void
create_copy_owner(struct backend_sandbox *sb, const struct backend_identity *o)
{
        sb->who.uid = o->uid;
        sb->who.gid = o->gid;
        sb->who.ngroups = o->ngroups;
        sb->who.groups = o->ngroups ? xcalloc(o->ngroups, sizeof(gid_t)) : NULL;
        if (o->ngroups)
                memcpy(sb->who.groups, o->groups, o->ngroups * sizeof(gid_t));
        sb->who.user = o->user ? xstrdup(o->user) : NULL;
        sb->who.home = o->home ? xstrdup(o->home) : NULL;
}

static struct ssh_create *
create_new(const struct sandbox_spec *spec, void *ctx, backend_create_cb cb)
{
        struct ssh_create *c = xcalloc(1, sizeof(*c));
        struct backend_sandbox *sb = xcalloc(1, sizeof(*sb));

        sb->refs = 1;
        sb->agent_fd = -1;
        list_init(&sb->link);
        list_init(&sb->waiters);
        list_init(&sb->plain_queue);
        sb->id = xstrdup(spec->id);
        sb->up = spec->up;
        sb->up_ctx = spec->up_ctx;
        create_copy_owner(sb, spec->owner);
        c->sb = sb;
        c->ctx = ctx;
        c->cb = cb;
        list_add_tail(&ssh_creates, &c->link);
        return c;
}

/* What the ssh backend cannot give is refused, never silently dropped. */
static int
create_check_spec(const struct sandbox_spec *spec, struct sbx_error *err)
{
        if (json_array_size(spec->mounts)) {
                sbx_error_param(err, "mounts",
                                "invalid params: mounts are not available on the ssh backend "
                                "(nothing of this host reaches the remote one); use file.write");
                return -EINVAL;
        }
        if (spec->image) {
                sbx_error_param(err, "image",
                                "invalid params: the ssh backend runs commands on the remote "
                                "host itself, there is no image to choose");
                return -EINVAL;
        }
        if (spec->network && strcmp(spec->network, "host")) {
                sbx_error_param(err, "network",
                                "invalid params: network '%s' cannot be enforced on a remote "
                                "host (commands use its network: \"host\")",
                                spec->network);
                return -EINVAL;
        }
        return 0;
}

static int
create_available(struct sbx_error *err)
{
        const char *reason = sshb.dl_error ? sshb.dl_error : "no ssh hosts are configured";

        if (!sshb.dl_error && (json_object_size(sshb.hosts) || sshb.client_hosts))
                return 0;
        sbx_error_set(err, SBX_E_BACKEND_UNAVAILABLE,
                      json_pack("{s:s,s:s,s:s}", "backend", SSH_BACKEND, "reason", reason, "hint",
                                sshb.dl_error ? "install libssh-4"
                                              : "add a [backend.ssh.NAME] section with host, "
                                                "user and identity_file (docs/backends/ssh.md)"),
                      "backend 'ssh' is unavailable: %s", reason);
        return -1;
}

static void
create_where(struct backend_sandbox *sb)
{
        free(sb->where);
        sb->where = sb->h.name ? xasprintf("on host '%s' (%s@%s:%u%s%s%s)", sb->h.name, sb->h.user,
                                           sb->h.host, sb->h.port,
                                           sb->h.jump ? " through jump host '" : "",
                                           sb->h.jump ? sb->h.jump : "", sb->h.jump ? "'" : "")
                               : xasprintf("on %s@%s:%u", sb->h.user, sb->h.host, sb->h.port);
}

/* Creates an ssh sandbox. */
void
ssh_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
           backend_create_cb cb)
{
        struct ssh_create *c = create_new(spec, ctx, cb);
        struct backend_sandbox *sb = c->sb;

        c->progress = progress;
        c->workdir = spec->workdir ? xstrdup(spec->workdir) : NULL;
        c->res[0] = spec->res.cpus > 0;
        c->res[1] = spec->res.memory_mb > 0;
        c->res[2] = spec->res.pids > 0;
        c->res[3] = spec->res.disk_mb > 0;
        if (create_available(&c->err) < 0 || create_check_spec(spec, &c->err) < 0 ||
            ssh_host_resolve(spec->section, spec->owner, &sb->h, &c->err) < 0) {
                sb->where = xstrdup("");
                create_finish(c);
                return;
        }
        create_where(sb);
        if (getrandom(sb->secret, sizeof(sb->secret), 0) != (ssize_t) sizeof(sb->secret)) {
                create_fail(c, "cannot make a secret for the agent", strerror(errno));
                return;
        }
        ssh_trust_credentials(sb, c, create_creds_cb);
}

/* The remote facts a record holds back into sb; -EINVAL when something is missing. */
static int
adopt_load(struct backend_sandbox *sb, json_t *rec)
{
        const char *secret = json_string_value(json_object_get(rec, "secret"));
        const char *agent = json_string_value(json_object_get(rec, "agent"));

        for (const struct ssh_fact *f = ssh_facts; f->key; f++) {
                const char *v = json_string_value(json_object_get(rec, f->key));
                if (!(f->where & SSH_FACT_RECORD))
                        continue;
                if (!v)
                        return -EINVAL;
                free(*SSH_FACT(sb, f));
                *SSH_FACT(sb, f) = xstrdup(v);
        }
        sb->plain = json_is_true(json_object_get(rec, "plain"));
        sb->bridge = json_is_true(json_object_get(rec, "bridge"));
        if ((!sb->plain && !agent) || !secret || strlen(secret) != 2 * SSH_SECRET_LEN)
                return -EINVAL;
        sb->agent_path = agent ? xstrdup(agent) : NULL;
        for (size_t i = 0; i < SSH_SECRET_LEN; i++)
                if (sscanf(secret + 2 * i, "%2hhx", &sb->secret[i]) != 1)
                        return -EINVAL;
        if (sb->plain)
                sb->plain_note = xstrdup("no sandboxd-agent: plain exec channels");
        return 0;
}

/* Takes back a sandbox of a previous daemon: its agent is still running (or gone). */
void
ssh_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb)
{
        struct ssh_create *c = create_new(spec, ctx, cb);
        struct backend_sandbox *sb = c->sb;

        c->adopting = true;
        sb->where = xstrdup("");
        if (create_available(&c->err) < 0 ||
            ssh_host_load(json_object_get(record, "host"), spec->owner, &sb->h, &c->err) < 0) {
                create_finish(c);
                return;
        }
        create_where(sb);
        if (adopt_load(sb, record) < 0) {
                create_fail(c, "cannot take back the sandbox", "its record is incomplete");
                return;
        }
        ssh_trust_credentials(sb, c, create_creds_cb);
}

/* Abandons the create in progress for the daemon's ctx (it ends at its next step). */
void
ssh_cancel(void *ctx)
{
        struct ssh_create *c = NULL;
        struct list *pos;

        for (pos = ssh_creates.next; pos != &ssh_creates && !c; pos = pos->next)
                if (LIST_ENTRY(pos, struct ssh_create, link)->ctx == ctx)
                        c = LIST_ENTRY(pos, struct ssh_create, link);
        if (!c || c->cancelled)
                return;
        c->cancelled = true;
        if (c->sb->creating == c) { /* waiting for the agent: stop now */
                c->sb->creating = NULL;
                create_alive(c);
        }
}

/* Beyond the stop script's own worst case (its flock waits 10 s for the agent to exit), on
 * top of a connection and a link timeout: a host that answers nothing for that long is not
 * waited for (a hung sshd, a target leg behind a jump host that swallows everything, which
 * no TCP timeout of ours sees). */
#define SSH_DESTROY_SLACK_MS 10000

struct ssh_destroy_op {
        struct list link; /* in sshb.destroying until it answers */
        struct backend_sandbox *sb;
        void *ctx;
        backend_done_cb cb;
        uv_timer_t timer;
        const char *cause; /* why it was cut short, or NULL */
        bool answered;
};

static void
destroy_free_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
destroy_done_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *herr)
{
        struct ssh_destroy_op *d = ctx;
        struct sbx_error err = {0};

        if (d->answered)
                return;
        d->answered = true;
        list_del(&d->link);
        if (herr || code != 0)
                sbx_error_backend(&err, SSH_BACKEND,
                                  "cannot stop the sandbox's agent and remove %s %s: %s (an agent "
                                  "nobody talks to exits after %u s)",
                                  d->sb->rt, d->sb->where,
                                  d->cause ? d->cause
                                  : herr   ? herr->message
                                  : len    ? out
                                           : "it failed",
                                  sshb.linger_s);
        ssh_link_drop(d->sb); /* closed before the answer: nothing of it outlives that */
        d->cb(d->ctx, err.code ? &err : NULL);
        sbx_error_clear(&err);
        ssh_sandbox_unref(d->sb);
        uv_close((uv_handle_t *) &d->timer, destroy_free_cb);
}

static void
destroy_conn_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct ssh_destroy_op *d = ctx;
        struct sbx_error err = {0};
        char *argv[] = {"sh", "-c", (char *) ssh_sh_stop, "sh", d->sb->rt, (char *) remote_sh_kill,
                        NULL};

        if (!error) {
                ssh_run(c, argv, NULL, 0, d, destroy_done_cb);
                return;
        }
        sbx_error_backend(&err, SSH_BACKEND, "%s", error);
        destroy_done_cb(d, -1, NULL, 0, &err);
        sbx_error_clear(&err);
}

/* Ends d with cause: its connection goes, and with it the command or the wait. */
static void
destroy_cut(struct ssh_destroy_op *d, const char *cause)
{
        struct backend_sandbox *sb = d->sb;

        d->cause = cause;
        ssh_sandbox_ref(sb); /* the answer drops the daemon's reference inside the drop */
        ssh_link_drop(sb);   /* the command's channel, or the waiter, answers now */
        ssh_sandbox_unref(sb);
}

static void
destroy_timeout_cb(uv_timer_t *t)
{
        destroy_cut(t->data, "no answer from the host in time (a hung sshd, or a link that "
                             "swallows everything)");
}

/* Shutdown: the destroys still waiting (each answers at once, leaving the list). */
void
ssh_destroy_abandon(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sshb.destroying)
        destroy_cut(LIST_ENTRY(pos, struct ssh_destroy_op, link), "the daemon is stopping");
}

/* Destroys: its execs were killed by the daemon already. */
void
ssh_destroy(struct backend_sandbox *sb, void *ctx, backend_done_cb cb)
{
        struct ssh_destroy_op *d = xcalloc(1, sizeof(*d));

        d->sb = sb; /* the daemon's reference, dropped at the end */
        d->ctx = ctx;
        d->cb = cb;
        list_add_tail(&sshb.destroying, &d->link);
        uv_timer_init(sshb.loop, &d->timer);
        d->timer.data = d;
        uv_timer_start(&d->timer, destroy_timeout_cb,
                       (uint64_t) sshb.connect_ms + sshb.link_timeout_ms + SSH_DESTROY_SLACK_MS, 0);
        sb->destroyed = true;
        list_del(&sb->link);
        agent_session_close(sb->session, NULL, true);
        sb->session = NULL;
        ssh_link_conn(sb, d, destroy_conn_cb);
}
