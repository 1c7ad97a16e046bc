/* sing_instance.c — a singularity sandbox is an Apptainer instance with a detached
 * sandboxd-agent in it.
 *
 *   apptainer instance start --containall --no-home --cleanenv --no-privs --writable-tmpfs …
 *       --bind AGENT:/.sandboxd/sandboxd-agent:ro IMAGE.sif sbxd-TAG-ID
 *   apptainer exec --cleanenv instance://NAME /.sandboxd/sandboxd-agent --detach
 *       --runtime-dir /tmp/.sandboxd --linger N --bridge
 *       (the 32-byte secret's line on its stdin, then the session's stream: stdin and stdout)
 *   apptainer exec --cleanenv instance://NAME /.sandboxd/sandboxd-agent --connect SOCK
 *       (every later stream: reconnects, and re-adoption after a restart)
 *
 * Apptainer ties every process it joins into an instance to the `apptainer exec` that started
 * it (PR_SET_PDEATHSIG): the agent daemonizes (fork, setsid, fork), which clears that, so a lost
 * pipe kills only the bridge (the starting process, or a --connect one); the session
 * reconnects through a new one and resumes every exec. Execs get their environment from the agent's
 * START (laid over the agent's own, itself made by --cleanenv), never from the daemon's.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/caller_file.h"
#include "backends/singularity/sing_int.h"
#include "policy/policy.h"
#include "protocol/error.h"

#define SING_LINGER_S "31536000" /* the agent lives as long as its instance */

enum create_phase { CP_BINDS, CP_IMAGE, CP_START, CP_SESSION, CP_DONE };

struct sing_create {
        struct backend_sandbox *sb;
        /* The create's spec, valid until cb (the daemon's create holds it), for the argv once
         * the bind sources are resolved. */
        const struct sandbox_spec *spec;
        enum create_phase phase;
        bool adopting, cancelled, started; /* started: the instance exists */
        void *ctx;
        backend_progress_cb progress;
        backend_create_cb cb;
        struct sing_cache_get *get;
        struct sing_run *run;
        struct sing_binds *binds; /* while the bind sources are resolved */
        struct caller_job *job;   /* while a local image's path is resolved */
        char *local_sif;          /* where it leads */
        char **argv;              /* instance start */
        json_t *enforced;
        json_t *requested; /* the spec's mounts as judged, for the re-check */
        json_t *real;      /* the binds as they will be made */
        bool host_access;
        struct sbx_error err;
};

/* ---- names ---- */

/* The instance of a sandbox. */
char *
sing_instance_name(const char *id)
{
        return xasprintf("sbxd-%s-%s", sing.tag, strncmp(id, "sbx_", 4) == 0 ? id + 4 : id);
}

/* The sandbox of an instance of ours. */
char *
sing_instance_id(const char *name)
{
        size_t n = strlen(sing.tag);

        if (strncmp(name, "sbxd-", 5) != 0 || strncmp(name + 5, sing.tag, n) != 0 ||
            name[5 + n] != '-' || !name[6 + n])
                return NULL;
        return xasprintf("sbx_%s", name + 6 + n);
}

/* ---- the instance start command line ---- */

struct argv_b {
        char **v;
        size_t n, cap;
};

static void
argv_add(struct argv_b *a, const char *s)
{
        if (a->n + 2 > a->cap) {
                a->cap = a->cap ? a->cap * 2 : 32;
                a->v = xrealloc(a->v, a->cap * sizeof(*a->v));
        }
        a->v[a->n++] = xstrdup(s);
        a->v[a->n] = NULL;
}

/* Frees an argv. */
void
sing_argv_free(char **argv)
{
        for (size_t i = 0; argv && argv[i]; i++)
                free(argv[i]);
        free(argv);
}

/* Apptainer splits --bind on ',' and ':': a path holding either cannot be said. */
static bool
bind_path_ok(const char *p)
{
        return p && p[0] == '/' && !strpbrk(p, ",:") && strlen(p) < PATH_MAX;
}

/* What a bind is made from: where each source leads (sing_instance_argv's paths), and the
 * binds as made. */
struct binds_out {
        json_t *paths, *real;
};

/* One bind, from where its source led when it was resolved (sing_binds.c; what is bound is
 * what is judged again), into --bind. */
static int
add_bind(struct argv_b *a, const struct binds_out *o, const char *param, const char *src,
         const char *dst, bool ro, struct sbx_error *err)
{
        const char *real;
        char *b;

        if (!bind_path_ok(src) || !bind_path_ok(dst)) {
                sbx_error_param(err, param,
                                "invalid params: %s: bind source and target must be absolute "
                                "paths without ',' or ':' (Apptainer's --bind separators)",
                                param);
                return -EINVAL;
        }
        real = json_string_value(json_object_get(o->paths, src));
        if (!real || !bind_path_ok(real)) {
                sbx_error_param(err, param,
                                "invalid params: %s: bind source '%s' does not exist or uid %u "
                                "cannot reach it%s",
                                param, src, (unsigned) geteuid(),
                                real ? " (where it leads holds ',' or ':')" : "");
                return -EINVAL;
        }
        b = xasprintf("%s:%s:%s", real, dst, ro ? "ro" : "rw");
        argv_add(a, "--bind");
        argv_add(a, b);
        free(b);
        json_array_append_new(o->real, json_pack("{s:s,s:s,s:s,s:b}", "type", "bind", "source",
                                                 real, "target", dst, "readonly", ro));
        return 0;
}

/* The protocol's mounts: bind -> --bind, tmpfs -> --scratch; volumes are docker's. */
static int
add_mounts(struct argv_b *a, const struct sandbox_spec *spec, const struct binds_out *o,
           struct sbx_error *err)
{
        json_t *m;
        size_t i;

        json_array_foreach(spec->mounts, i, m)
        {
                const char *type = json_string_value(json_object_get(m, "type"));
                const char *src = json_string_value(json_object_get(m, "source"));
                const char *dst = json_string_value(json_object_get(m, "target"));
                char param[48];
                snprintf(param, sizeof(param), "mounts[%zu]", i);
                if (type && !strcmp(type, "bind")) {
                        if (add_bind(a, o, param, src, dst,
                                     json_is_true(json_object_get(m, "readonly")), err) < 0)
                                return -EINVAL;
                } else if (type && !strcmp(type, "tmpfs") && bind_path_ok(dst)) {
                        argv_add(a, "--scratch");
                        argv_add(a, dst);
                } else {
                        sbx_error_param(err, param,
                                        "invalid params: %s: the singularity backend takes bind "
                                        "mounts (host directories) and tmpfs mounts (--scratch); "
                                        "named volumes are docker's",
                                        param);
                        return -EINVAL;
                }
        }
        return 0;
}

/* singularity.binds: ["src[:dst[:ro|rw]]"], Apptainer's own spelling. */
static int
add_section_binds(struct argv_b *a, json_t *binds, const struct binds_out *o, struct sbx_error *err)
{
        json_t *b;
        size_t i;

        if (binds && !json_is_array(binds)) {
                sbx_error_param(err, "singularity.binds",
                                "invalid params: singularity.binds must be an array of "
                                "\"src[:dst[:ro|rw]]\"");
                return -EINVAL;
        }
        json_array_foreach(binds, i, b)
        {
                const char *s = json_string_value(b);
                char param[48], *src, *dst, *mode;
                int rc;
                snprintf(param, sizeof(param), "singularity.binds[%zu]", i);
                src = xstrdup(s ? s : "");
                dst = strchr(src, ':');
                mode = dst ? strchr(dst + 1, ':') : NULL;
                if (dst)
                        *dst++ = '\0';
                if (mode)
                        *mode++ = '\0';
                if (mode && strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0) {
                        sbx_error_param(err, param, "invalid params: %s: mode '%s' is not ro or rw",
                                        param, mode);
                        rc = -EINVAL;
                } else {
                        rc = add_bind(a, o, param, src, dst && *dst ? dst : src,
                                      mode && !strcmp(mode, "ro"), err);
                }
                free(src);
                if (rc < 0)
                        return rc;
        }
        return 0;
}

/* The section: {overlay: bool, writable_tmpfs: bool, binds: [...]}, nothing else. */
static int
check_section(json_t *sec, struct sbx_error *err)
{
        static const char *const keys[] = {"overlay", "writable_tmpfs", "binds", NULL};
        const char *k;
        json_t *v;

        json_object_foreach(sec, k, v)
        {
                if (!strv_contains(keys, k)) {
                        sbx_error_param(err, k,
                                        "invalid params: singularity.%s is not a field of the "
                                        "singularity section (overlay, writable_tmpfs, binds)",
                                        k);
                        return -EINVAL;
                }
                if (strcmp(k, "binds") != 0 && !json_is_boolean(v)) {
                        sbx_error_param(err, k,
                                        "invalid params: singularity.%s must be true or false "
                                        "(an overlay is made per sandbox in the scratch "
                                        "directory; a host path is not accepted)",
                                        k);
                        return -EINVAL;
                }
        }
        return 0;
}

static int
add_network(struct argv_b *a, const struct sandbox_spec *spec, struct sbx_error *err)
{
        const char *net = spec->network ? spec->network : sing.default_network;

        if (!strcmp(net, "none")) {
                argv_add(a, "--net");
                argv_add(a, "--network");
                argv_add(a, "none");
        } else if (!strcmp(net, "bridge")) {
                if (geteuid() != 0) {
                        sbx_error_param(err, "network",
                                        "invalid params: network \"bridge\" needs Apptainer run "
                                        "as root; use \"none\" or \"host\"");
                        return -EINVAL;
                }
                argv_add(a, "--net");
                argv_add(a, "--network");
                argv_add(a, "bridge");
        } /* "host": Apptainer's own default, no flag */
        return 0;
}

/* --memory, --cpus, --pids-limit where the host applies them; enforced says which. */
static void
add_limits(struct argv_b *a, const struct backend_resources *r, json_t *enforced)
{
        char v[32];

        if (r->memory_mb) {
                snprintf(v, sizeof(v), "%lldM", (long long) r->memory_mb);
                if (sing.limits) {
                        argv_add(a, "--memory");
                        argv_add(a, v);
                }
                json_object_set_new(enforced, "memory_mb",
                                    sing.limits ? json_string("cgroup") : json_null());
        }
        if (r->cpus > 0) {
                snprintf(v, sizeof(v), "%g", r->cpus);
                if (sing.limits) {
                        argv_add(a, "--cpus");
                        argv_add(a, v);
                }
                json_object_set_new(enforced, "cpus",
                                    sing.limits ? json_string("cgroup") : json_null());
        }
        if (r->pids) {
                snprintf(v, sizeof(v), "%lld", (long long) r->pids);
                if (sing.limits) {
                        argv_add(a, "--pids-limit");
                        argv_add(a, v);
                }
                json_object_set_new(enforced, "pids",
                                    sing.limits ? json_string("cgroup") : json_null());
        }
        if (r->disk_mb)
                json_object_set_new(enforced, "disk_mb", json_null());
}

/* The instance start command line. */
char **
sing_instance_argv(const char *exe, const struct sandbox_spec *spec, const char *sif,
                   const char *name, const char *overlay, json_t *paths, json_t *enforced,
                   json_t *real, struct sbx_error *err)
{
        const struct binds_out o = {paths, real};
        static const char *const fixed[] = {
                "instance", "start", "--containall", "--no-home", "--cleanenv", "--no-privs", NULL};
        struct argv_b a = {0};
        json_t *sec = spec->section, *wt = json_object_get(sec, "writable_tmpfs");
        char *agent = xasprintf("%s:%s:ro", sing.agent ? sing.agent : "", SING_AGENT_PATH);
        int rc = check_section(sec, err);

        argv_add(&a, exe);
        for (size_t i = 0; fixed[i]; i++)
                argv_add(&a, fixed[i]);
        if (overlay) {
                argv_add(&a, "--overlay");
                argv_add(&a, overlay);
        } else if (!wt || json_is_true(wt)) {
                argv_add(&a, "--writable-tmpfs");
        }
        if (rc == 0)
                rc = add_network(&a, spec, err);
        add_limits(&a, &spec->res, enforced);
        argv_add(&a, "--bind");
        argv_add(&a, agent);
        free(agent);
        if (rc == 0)
                rc = add_mounts(&a, spec, &o, err);
        if (rc == 0)
                rc = add_section_binds(&a, json_object_get(sec, "binds"), &o, err);
        argv_add(&a, sif);
        argv_add(&a, name);
        if (rc < 0) {
                sing_argv_free(a.v);
                return NULL;
        }
        return a.v;
}

/* ---- sandboxes ---- */

static struct backend_sandbox *
sing_sandbox_new(const char *id, const char *exe)
{
        struct backend_sandbox *sb = xcalloc(1, sizeof(*sb));
        size_t n = 0;

        sb->refs = 1;
        sb->id = xstrdup(id);
        sb->instance = sing_instance_name(id);
        sb->exe = xstrdup(exe);
        sb->agent_argv[n++] = xstrdup(exe);
        sb->agent_argv[n++] = xstrdup("exec");
        sb->agent_argv[n++] = xstrdup("--cleanenv");
        sb->agent_argv[n++] = xasprintf("instance://%s", sb->instance);
        sb->agent_argv[n++] = xstrdup(SING_AGENT_PATH);
        sb->agent_argv[n++] = xstrdup("--connect");
        sb->agent_argv[n++] = xstrdup(SING_AGENT_SOCK);
        list_add_tail(&sing.sandboxes, &sb->link);
        return sb;
}

/* Drops a reference. */
void
sing_sandbox_unref(struct backend_sandbox *sb)
{
        if (!sb || --sb->refs > 0)
                return;
        list_del(&sb->link);
        for (size_t i = 0; sb->agent_argv[i]; i++)
                free(sb->agent_argv[i]);
        free(sb->id);
        free(sb->instance);
        free(sb->exe);
        free(sb->sif);
        free(sb->key);
        free(sb->image);
        free(sb->workdir);
        free(sb->overlay);
        free(sb);
}

/* While a create waits for its agent, every connect is `--detach --bridge`: it starts the
 * detached agent (its secret's line first on stdin) and bridges to it, or, once that agent
 * runs, only bridges; afterwards a connect is `--connect` (a dead agent is not replaced: its
 * execs would be lost unsaid). */
static void
sess_connect_starting(struct backend_sandbox *sb, agent_connect_cb cb, void *cb_ctx)
{
        char *inst = xasprintf("instance://%s", sb->instance);
        char *argv[] = {sb->exe,         "exec",        "--cleanenv",    inst,
                        SING_AGENT_PATH, "--detach",    "--runtime-dir", SING_RUNTIME_DIR,
                        "--linger",      SING_LINGER_S, "--bridge",      NULL};
        char hex[2 * SING_SECRET_LEN + 2];

        for (size_t i = 0; i < SING_SECRET_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", sb->secret[i]);
        hex[2 * SING_SECRET_LEN] = '\n';
        agent_transport_spawn_first(sing.loop, argv, singularity_env(), hex, sizeof(hex) - 1,
                                    cb_ctx, cb);
        memset(hex, 0, sizeof(hex));
        free(inst);
}

static void
sess_connect(void *ctx, agent_connect_cb cb, void *cb_ctx)
{
        struct backend_sandbox *sb = ctx;

        if (sb->creating && !sb->creating->adopting)
                sess_connect_starting(sb, cb, cb_ctx);
        else
                agent_transport_spawn(sing.loop, sb->agent_argv, singularity_env(), cb_ctx, cb);
}

static void create_session_state(struct sing_create *c, enum backend_link st, const char *why);

/* Apptainer's answer when the instance was stopped behind our back (`instance stop`, a node
 * reboot, the cluster's cleanup): nothing will bring it back, so the session ends now rather
 * than after the reconnect timeout, with -32006 for execs that never ran. */
#define SING_GONE_WORDS "no instance found"

static void
sess_instance_gone(struct backend_sandbox *sb, const char *reason)
{
        struct sbx_error err = {0};
        char *why = xasprintf("Apptainer instance %s is gone (%s)", sb->instance, reason);

        sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "gone"), "%s", why);
        agent_session_close(sb->session, &err, true);
        sb->session = NULL;
        sb->gone = true;
        sbx_error_clear(&err);
        if (sb->up && sb->up->link)
                sb->up->link(sb->up_ctx, BACKEND_LINK_GONE, why);
        free(why);
}

static void
sess_link(void *ctx, enum backend_link st, const char *reason)
{
        struct backend_sandbox *sb = ctx;

        if (sb->creating) {
                create_session_state(sb->creating, st, reason);
                return;
        }
        if (st == BACKEND_LINK_RECONNECTING && reason && strstr(reason, SING_GONE_WORDS)) {
                sess_instance_gone(sb, reason);
                return;
        }
        if (sb->up && sb->up->link)
                sb->up->link(sb->up_ctx, st, reason);
}

/* Only the detached agent holds the secret's session: another on the socket is refused. */
static const char *
sess_check_ready(void *ctx, const struct agent_ready *r)
{
        return r->detached ? NULL : "the agent in the instance is not the detached one";
}

static const struct agent_session_cbs sess_cbs = {
        .connect = sess_connect,
        .on_link = sess_link,
        .check_ready = sess_check_ready,
};

/* The sandbox's session. */
struct agent_session *
sing_session(struct backend_sandbox *sb, bool adopting)
{
        struct agent_session_config cfg = {
                .backend = "singularity",
                .where = "in the Apptainer instance",
                .secret = sb->secret,
                .secret_len = sizeof(sb->secret),
                .ready_timeout_ms = sing.start_timeout_ms,
                .adopting = adopting,
        };

        if (agent_session_alive(sb->session))
                return sb->session;
        if (sb->session)
                agent_session_close(sb->session, NULL, false);
        sb->session = agent_session_new(sing.loop, &cfg, &sess_cbs, sb);
        agent_session_open(sb->session);
        return sb->session;
}

/* ---- create ---- */

static void
create_free(struct sing_create *c)
{
        sing_argv_free(c->argv);
        free(c->local_sif);
        json_decref(c->enforced);
        json_decref(c->requested);
        json_decref(c->real);
        sbx_error_clear(&c->err);
        free(c);
}

static void
create_report(struct sing_create *c)
{
        struct backend_sandbox *sb = c->sb;
        struct sandbox_info info = {0};
        json_t *details = json_pack("{s:s,s:s}", "instance", sb->instance, "sif", sb->sif);

        if (sb->overlay)
                json_object_set_new(details, "overlay", json_string(sb->overlay));
        sb->creating = NULL;
        info.workdir = sb->workdir;
        info.image = sb->image;
        info.host_access = c->host_access;
        info.enforced = c->enforced;
        info.details = details;
        c->cb(c->ctx, sb, &info, NULL);
        json_decref(details);
        create_free(c);
}

static void
create_stopped_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_create *c = ctx;
        struct backend_sandbox *sb = c->sb;

        (void) code;
        c->run = NULL;
        if (sb->overlay && !c->adopting)
                sing_sif_remove_tree(sb->overlay, NULL, NULL);
        sing_cache_release(sb->key);
        sb->creating = NULL;
        c->cb(c->ctx, NULL, NULL, &c->err);
        sing_sandbox_unref(sb);
        create_free(c);
}

/* The create fails with c->err: what was made goes. */
static void
create_abort(struct sing_create *c)
{
        struct backend_sandbox *sb = c->sb;
        char *argv[] = {sb->exe, "instance", "stop", "--force", sb->instance, NULL};

        if (sb->session) {
                agent_session_close(sb->session, NULL, true);
                sb->session = NULL;
        }
        if (!c->started || c->adopting) {
                create_stopped_cb(c, 0, NULL, 0, "");
                return;
        }
        c->run = sing_run_start(argv, NULL, 0, sing.start_timeout_ms, NULL, create_stopped_cb, c);
}

static void
create_fail(struct sing_create *c, const char *what, const char *why)
{
        char *detail = xasprintf("%s%s%s", what, why && *why ? ": " : "", why ? why : "");

        if (!c->err.code)
                sbx_error_set(&c->err, SBX_E_BACKEND,
                              json_pack("{s:s,s:s}", "backend", "singularity", "detail", detail),
                              "%s", detail);
        free(detail);
        create_abort(c);
}

static void
create_cancelled(struct sing_create *c)
{
        sbx_error_clear(&c->err);
        sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                      "the create of sandbox %s was cancelled", c->sb->id);
        create_abort(c);
}

static void
create_session_state(struct sing_create *c, enum backend_link st, const char *why)
{
        if (st == BACKEND_LINK_BACK) {
                c->phase = CP_DONE;
                if (c->cancelled)
                        create_cancelled(c);
                else
                        create_report(c);
        } else if (st == BACKEND_LINK_GONE) {
                create_fail(c, "the agent in the instance did not answer", why);
        } else if (c->progress) {
                c->progress(c->ctx, "agent", why ? why : "reconnecting to the agent", -1, -1);
        }
}

/* The agent starts with the session's first connect (sess_connect). */
static void
create_agent(struct sing_create *c)
{
        c->phase = CP_SESSION;
        sing_session(c->sb, c->adopting);
}

static void
create_started_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_create *c = ctx;

        c->run = NULL;
        if (code == 0)
                c->started = true;
        if (c->cancelled) {
                create_cancelled(c);
                return;
        }
        if (code != 0) {
                create_fail(c, "apptainer instance start failed", why);
                return;
        }
        create_agent(c);
}

/* Judged again as it will be bound: a bind whose source resolves to something the policy
 * rejects (a symlink swapped since the spec was judged) fails the create. Both judgements
 * take the sources as they were resolved (paths): nothing is looked up here. */
static int
create_recheck(struct sing_create *c, json_t *paths)
{
        json_t *real = json_pack("{s:s,s:O}", "backend", "singularity", "mounts", c->real);
        json_t *hp = backend_rejudge_paths(paths);
        int rc =
                backend_rejudge("singularity", c->requested, real, hp,
                                "a bind resolves to a host path the policy refuses", &c->err, NULL);

        c->host_access = json_array_size(c->real) > 0;
        json_decref(hp);
        json_decref(real);
        return rc;
}

static void
create_start(struct sing_create *c)
{
        char *msg = xasprintf("starting instance %s", c->sb->instance);

        if (c->progress)
                c->progress(c->ctx, "start", msg, -1, -1);
        free(msg);
        c->phase = CP_START;
        c->run =
                sing_run_start(c->argv, NULL, 0, sing.start_timeout_ms, NULL, create_started_cb, c);
}

static void
create_image_cb(void *ctx, const char *sif, const char *key, const struct sbx_error *err)
{
        struct sing_create *c = ctx;
        struct backend_sandbox *sb = c->sb;
        size_t n = 0;

        c->get = NULL;
        if (err) {
                sbx_error_clear(&c->err);
                c->err.code = err->code;
                c->err.message = xstrdup(err->message);
                c->err.data = json_incref(err->data);
                create_abort(c);
                return;
        }
        sb->sif = xstrdup(sif);
        sb->key = key ? xstrdup(key) : NULL;
        if (c->cancelled) {
                create_cancelled(c);
                return;
        }
        while (c->argv[n + 1])
                n++;
        free(c->argv[n - 1]); /* the image's place, known now */
        c->argv[n - 1] = xstrdup(sif);
        create_start(c);
}

static void
create_local_sif_cb(void *ctx, const struct sing_sif_facts *f)
{
        struct sing_create *c = ctx;
        struct sbx_error err = {0};

        if (f->error[0]) {
                sbx_error_param(&err, "image", "invalid params: image '%s': %s", c->sb->image,
                                f->error);
                create_image_cb(c, NULL, NULL, &err);
                sbx_error_clear(&err);
                return;
        }
        create_image_cb(c, c->local_sif, NULL, NULL);
}

/* Where a local image leads, resolved in a helper (caller_path_cb): its header is read next,
 * on a worker thread, from there. */
static void
create_local_resolved_cb(void *ctx, const char *real, bool is_dir, const char *error)
{
        struct sing_create *c = ctx;
        const char *image = c->sb->image;
        struct sbx_error err = {0};

        c->job = NULL;
        if (error)
                sing_hung_path(&err, image, error);
        else if (!real)
                sbx_error_param(&err, "image",
                                "invalid params: image '%s': No such file or directory (or uid "
                                "%u cannot reach it)",
                                image, (unsigned) geteuid());
        if (err.code) {
                create_image_cb(c, NULL, NULL, &err);
                sbx_error_clear(&err);
                return;
        }
        c->local_sif = xstrdup(real);
        sing_sif_inspect(c->local_sif, false, c, create_local_sif_cb);
}

/* The cache's progress (ctx: the create) to the daemon's. */
static void
create_progress_cb(void *ctx, const char *phase, const char *message, int64_t current,
                   int64_t total)
{
        struct sing_create *c = ctx;

        c->progress(c->ctx, phase, message, current, total);
}

/* docker://, oras://, library:// references, a bare name meaning docker://, or a local .sif. */
static char *
create_ref(const char *image, struct sbx_error *err)
{
        static const char *const schemes[] = {"docker://", "oras://", "library://", NULL};
        const char *sep = strstr(image, "://");

        size_t n = strlen(image);

        if (image[0] == '/')
                return xstrdup(image);
        if (!sep && n > 4 && !strcmp(image + n - 4, ".sif")) {
                sbx_error_param(err, "image",
                                "invalid params: image '%s': a local .sif image must be given "
                                "by its absolute path",
                                image);
                return NULL;
        }
        if (!sep)
                return xasprintf("docker://%s", image);
        for (size_t i = 0; schemes[i]; i++)
                if (!strncmp(image, schemes[i], strlen(schemes[i])) && image[strlen(schemes[i])])
                        return xstrdup(image);
        sbx_error_param(err, "image",
                        "invalid params: image '%s': the singularity backend builds docker://, "
                        "oras:// and library:// references or uses a local .sif file",
                        image);
        return NULL;
}

static int
create_prepare(struct sing_create *c, const struct sandbox_spec *spec)
{
        struct backend_sandbox *sb = c->sb;
        json_t *sec = spec->section;

        sb->image = create_ref(spec->image ? spec->image : sing.default_image, &c->err);
        if (!sb->image || check_section(sec, &c->err) < 0)
                return -EINVAL;
        if (json_is_true(json_object_get(sec, "overlay"))) {
                sb->overlay = xasprintf("%s/%s", sing.overlay_dir, sb->id);
                if (mkdir(sb->overlay, 0700) < 0 && errno != EEXIST) {
                        sbx_error_backend(&c->err, "singularity", "cannot create overlay %s: %s",
                                          sb->overlay, strerror(errno));
                        return -errno;
                }
        }
        return 0;
}

/* The image: a local SIF file as it is, or the cache's build of a reference. */
static void
create_image(struct sing_create *c)
{
        c->phase = CP_IMAGE;
        if (c->sb->image[0] == '/') /* as the daemon's user, the owner's (create_usable) */
                c->job = caller_path_resolve(sing.loop, NULL, c->sb->image,
                                             (unsigned) sing.file_timeout_ms, c,
                                             create_local_resolved_cb);
        else
                c->get = sing_cache_get(c->sb->exe, c->sb->image, c,
                                        c->progress ? create_progress_cb : NULL, create_image_cb);
}

/* The bind sources are resolved (sing_binds_cb): the command line, judged again, then the
 * image. */
static void
create_binds_cb(void *ctx, json_t *paths, const struct sbx_error *err)
{
        struct sing_create *c = ctx;
        struct backend_sandbox *sb = c->sb;

        c->binds = NULL;
        if (err) {
                sbx_error_set(&c->err, err->code, json_incref(err->data), "%s", err->message);
                create_abort(c);
                return;
        }
        c->real = json_array();
        c->argv = sing_instance_argv(sb->exe, c->spec, "<image>", sb->instance, sb->overlay, paths,
                                     c->enforced, c->real, &c->err);
        if (!c->argv || create_recheck(c, paths) < 0) {
                create_abort(c);
                return;
        }
        create_image(c);
}

/* The create's checks that need no tool call: who, the tool, the agent. */
static char *
create_usable(const struct sandbox_spec *spec, struct sbx_error *err)
{
        char *why = NULL, *exe, *reason;

        if (spec->owner && spec->owner->uid != geteuid()) {
                reason = xasprintf("the singularity backend runs Apptainer as the daemon's user "
                                   "(uid %u), never on behalf of uid %u",
                                   (unsigned) geteuid(), (unsigned) spec->owner->uid);
                singularity_unavailable(err, reason,
                                        "run a sandboxd of your own (as your user, e.g. "
                                        "systemctl --user start sandboxd) for Apptainer sandboxes");
                free(reason);
                return NULL;
        }
        if (!sing.agent) {
                singularity_unavailable(err, sing.agent_note,
                                        "install sandboxd-agent (make install) or set "
                                        "[backend.singularity] agent = PATH");
                return NULL;
        }
        exe = singularity_find_exe(&why);
        if (!exe)
                singularity_unavailable(err, why,
                                        "install Apptainer, or set [backend.singularity] "
                                        "executable = /path/to/apptainer");
        free(why);
        return exe;
}

/* Creates a sandbox: image, instance, agent, session. */
void
sing_instance_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                     backend_create_cb cb)
{
        struct sing_create *c = xcalloc(1, sizeof(*c));
        char *exe = create_usable(spec, &c->err);

        c->ctx = ctx;
        c->progress = progress;
        c->cb = cb;
        c->enforced = json_object();
        if (!exe) {
                cb(ctx, NULL, NULL, &c->err);
                create_free(c);
                return;
        }
        c->sb = sing_sandbox_new(spec->id, exe);
        free(exe);
        c->sb->creating = c;
        c->sb->up = spec->up;
        c->sb->up_ctx = spec->up_ctx;
        c->sb->workdir = xstrdup(spec->workdir ? spec->workdir : "/tmp");
        c->requested = json_pack("{s:s,s:O}", "backend", "singularity", "mounts", spec->mounts);
        if (spec->section)
                json_object_set(c->requested, "singularity", spec->section);
        if (getrandom(c->sb->secret, sizeof(c->sb->secret), 0) != sizeof(c->sb->secret))
                abort(); /* the kernel's CSPRNG does not fail for 32 bytes */
        if (create_prepare(c, spec) < 0) {
                create_abort(c);
                return;
        }
        c->spec = spec;
        c->phase = CP_BINDS;
        c->binds = sing_binds_resolve(spec, c, create_binds_cb);
        if (!c->binds) { /* nothing to resolve */
                json_t *none = json_object();
                create_binds_cb(c, none, NULL);
                json_decref(none);
        }
}

/* Abandons a create (or adopt) in progress. */
void
sing_instance_cancel(void *ctx)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sing.sandboxes)
        {
                struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                struct sing_create *c = sb->creating;
                if (!c || c->ctx != ctx || c->cancelled)
                        continue;
                c->cancelled = true;
                if (c->get) {
                        sing_cache_get_cancel(c->get); /* its cb fails the create */
                } else if (c->run) {
                        sing_run_cancel(c->run);
                } else if (c->binds) {
                        sing_binds_cancel(c->binds);
                        c->binds = NULL;
                        create_cancelled(c);
                } else if (c->job) {
                        caller_job_cancel(c->job);
                        c->job = NULL;
                        create_cancelled(c);
                } else if (c->phase == CP_SESSION) {
                        create_cancelled(c);
                }
                return;
        }
}

/* ---- save, adopt ---- */

/* What adopt needs. */
json_t *
sing_instance_save(struct backend_sandbox *sb)
{
        char hex[2 * SING_SECRET_LEN + 1];

        for (size_t i = 0; i < SING_SECRET_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", sb->secret[i]);
        return json_pack("{s:s,s:s,s:s,s:s?,s:s,s:s,s:s?,s:s}", "instance", sb->instance, "exe",
                         sb->exe, "sif", sb->sif, "key", sb->key, "image", sb->image, "workdir",
                         sb->workdir, "overlay", sb->overlay, "secret", hex);
}

static int
adopt_secret(struct backend_sandbox *sb, const char *hex)
{
        if (!hex || strlen(hex) != 2 * SING_SECRET_LEN ||
            strspn(hex, "0123456789abcdef") != 2 * SING_SECRET_LEN)
                return -EINVAL;
        for (size_t i = 0; i < SING_SECRET_LEN; i++) {
                unsigned v;
                sscanf(hex + 2 * i, "%2x", &v);
                sb->secret[i] = (unsigned char) v;
        }
        return 0;
}

/* Whether `instance list --json` shows our instance running from our image. */
static bool
adopt_listed(const char *out, size_t len, const char *name, const char *sif)
{
        json_t *doc = json_loadb(out, len, 0, NULL), *i;
        size_t k;
        bool found = false;

        json_array_foreach(json_object_get(doc, "instances"), k, i)
        {
                const char *n = json_string_value(json_object_get(i, "instance"));
                const char *img = json_string_value(json_object_get(i, "img"));
                if (n && !strcmp(n, name) && img && !strcmp(img, sif))
                        found = true;
        }
        json_decref(doc);
        return found;
}

static void
adopt_listed_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_create *c = ctx;
        struct backend_sandbox *sb = c->sb;

        c->run = NULL;
        if (c->cancelled) {
                create_cancelled(c);
                return;
        }
        if (code != 0) {
                create_fail(c, "apptainer instance list failed", why);
                return;
        }
        if (!adopt_listed(out, len, sb->instance, sb->sif)) {
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "gone"),
                              "Apptainer instance %s is gone", sb->instance);
                create_abort(c);
                return;
        }
        sing_cache_hold(sb->key);
        c->host_access = true; /* as recorded: the spec was judged when it was made */
        c->phase = CP_SESSION;
        sing_session(sb, true);
}

static int
adopt_record(struct backend_sandbox *sb, json_t *record)
{
        const char *sif = json_string_value(json_object_get(record, "sif"));
        const char *key = json_string_value(json_object_get(record, "key"));
        const char *image = json_string_value(json_object_get(record, "image"));
        const char *wd = json_string_value(json_object_get(record, "workdir"));
        const char *ov = json_string_value(json_object_get(record, "overlay"));
        const char *inst = json_string_value(json_object_get(record, "instance"));

        if (!sif || !image || !wd || !inst || strcmp(inst, sb->instance) != 0 ||
            adopt_secret(sb, json_string_value(json_object_get(record, "secret"))) < 0)
                return -EINVAL;
        sb->sif = xstrdup(sif);
        sb->key = key ? xstrdup(key) : NULL;
        sb->image = xstrdup(image);
        sb->workdir = xstrdup(wd);
        sb->overlay = ov ? xstrdup(ov) : NULL;
        return 0;
}

/* Takes back a recorded instance. */
void
sing_instance_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx,
                    backend_create_cb cb)
{
        struct sing_create *c = xcalloc(1, sizeof(*c));
        const char *exe = json_string_value(json_object_get(record, "exe"));

        c->ctx = ctx;
        c->cb = cb;
        c->adopting = true;
        c->enforced = json_object();
        c->sb = sing_sandbox_new(spec->id, exe ? exe : "");
        c->sb->creating = c;
        c->sb->up = spec->up;
        c->sb->up_ctx = spec->up_ctx;
        if (!exe || adopt_record(c->sb, record) < 0) {
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "invalid"),
                              "the record of sandbox %s is not a singularity record", spec->id);
                create_abort(c);
                return;
        }
        char *argv[] = {c->sb->exe, "instance", "list", "--json", c->sb->instance, NULL};
        c->run = sing_run_start(argv, NULL, 0, sing.start_timeout_ms, NULL, adopt_listed_cb, c);
}

/* ---- destroy, orphans ---- */

struct sing_stop {
        struct backend_sandbox *sb;
        void *ctx;
        backend_done_cb cb;
};

static void
destroy_removed_cb(void *ctx)
{
        struct sing_stop *s = ctx;

        s->cb(s->ctx, NULL);
        sing_sandbox_unref(s->sb);
        free(s);
}

static void
destroy_stopped_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_stop *s = ctx;
        struct backend_sandbox *sb = s->sb;
        struct sbx_error err = {0};

        if (code != 0 && !strstr(why, "no instance found")) {
                sbx_error_backend(&err, "singularity", "apptainer instance stop %s failed: %s",
                                  sb->instance, why);
                s->cb(s->ctx, &err);
                sbx_error_clear(&err);
                sing_cache_release(sb->key);
                sing_sandbox_unref(sb);
                free(s);
                return;
        }
        sing_cache_release(sb->key);
        if (sb->overlay) {
                sing_sif_remove_tree(sb->overlay, destroy_removed_cb, s);
                return;
        }
        destroy_removed_cb(s);
}

/* Stops the instance (its processes die with it) and removes the overlay. */
void
sing_instance_destroy(struct backend_sandbox *sb, void *ctx, backend_done_cb cb)
{
        struct sing_stop *s = xcalloc(1, sizeof(*s));
        char t[16];
        char *argv[] = {sb->exe, "instance", "stop", "--timeout", t, sb->instance, NULL};

        snprintf(t, sizeof(t), "%llu", (unsigned long long) sing.stop_timeout_s);
        sb->destroyed = true;
        if (sb->session) {
                agent_session_close(sb->session, NULL, true);
                sb->session = NULL;
        }
        s->sb = sb;
        s->ctx = ctx;
        s->cb = cb;
        sing_run_start(argv, NULL, 0, (sing.stop_timeout_s + 30) * 1000, NULL, destroy_stopped_cb,
                       s);
}

struct sing_reap {
        void *ctx;
        backend_reaped_cb cb;
        int pending, removed;
        char **known;
};

static void
reap_step(struct sing_reap *r)
{
        if (--r->pending > 0)
                return;
        r->cb(r->ctx, r->removed, NULL);
        sing_argv_free(r->known);
        free(r);
}

static void
reap_stopped_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_reap *r = ctx;

        if (code == 0)
                r->removed++;
        reap_step(r);
}

static void
reap_one(struct sing_reap *r, const char *exe, const char *name)
{
        char *id = sing_instance_id(name), *ov;
        char *argv[] = {(char *) exe, "instance", "stop", "--force", (char *) name, NULL};

        if (!id || strv_contains((const char *const *) r->known, id)) {
                free(id);
                return;
        }
        ov = xasprintf("%s/%s", sing.overlay_dir, id);
        sing_sif_remove_tree(ov, NULL, NULL);
        free(ov);
        free(id);
        r->pending++;
        sing_run_start(argv, NULL, 0, sing.start_timeout_ms, NULL, reap_stopped_cb, r);
}

static void
reap_listed_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_reap *r = ctx;
        json_t *doc = code == 0 ? json_loadb(out, len, 0, NULL) : NULL, *i;
        char *exe = singularity_find_exe(NULL);
        size_t k;

        json_array_foreach(json_object_get(doc, "instances"), k, i)
        {
                const char *n = json_string_value(json_object_get(i, "instance"));
                if (n && exe)
                        reap_one(r, exe, n);
        }
        json_decref(doc);
        free(exe);
        reap_step(r);
}

/* Stops this daemon's instances that no sandbox claims. */
void
sing_instance_reap(const char *const *known_ids, void *ctx, backend_reaped_cb cb)
{
        struct sing_reap *r = xcalloc(1, sizeof(*r));
        char *exe = singularity_find_exe(NULL);
        size_t n = 0;

        r->ctx = ctx;
        r->cb = cb;
        r->pending = 1;
        while (known_ids && known_ids[n])
                n++;
        r->known = xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                r->known[i] = xstrdup(known_ids[i]);
        if (!exe) {
                reap_step(r);
                return;
        }
        char *argv[] = {exe, "instance", "list", "--json", NULL};
        sing_run_start(argv, NULL, 0, sing.start_timeout_ms, NULL, reap_listed_cb, r);
        free(exe);
}
