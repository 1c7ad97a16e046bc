/* local.c — the local backend: commands as the caller on this machine, either isolated in
 * namespaces of their own (isolation "namespaces", the default where the kernel allows it:
 * nsbox.h) or directly on the host (isolation "none"), with per-sandbox cgroups where the
 * machine allows and rlimits otherwise (docs/backends/local.md).
 *
 * This file: the ops and the sandboxes; local_exec.c: execs on the host; local_file.c:
 * file.read/file.write (in an isolated sandbox's own view); nsbox*.c and init/: the isolation.
 * An isolated sandbox's execs go through its agent's session (backends/agent/).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/session.h"
#include "backends/backend.h"
#include "backends/caller_file.h"
#include "backends/cgroup.h"
#include "backends/local/local_int.h"
#include "backends/local/nsbox.h"
#include "backends/spawn.h"
#include "protocol/list.h"
#include "protocol/util.h"

enum local_iso { LOCAL_NONE, LOCAL_NAMESPACES };

static const char *const local_iso_names[] = {
        [LOCAL_NONE] = "none", [LOCAL_NAMESPACES] = "namespaces"};

static struct {
        uv_loop_t *loop;
        uv_signal_t sigchld;
        json_t *cgroup_info;
        enum local_iso def;   /* [backend.local] isolation */
        bool fallback;        /* [backend.local] isolation_fallback = none */
        unsigned check_ms;    /* the bound on a workdir's check ([limits] file_timeout_s) */
        struct list all;      /* struct local_sb */
        struct list checks;   /* struct local_check waiting for their helper */
        struct list creates;  /* struct local_create waiting for their namespaces */
        struct list removals; /* struct local_removal waiting for their rm */
} local = {.all = {&local.all, &local.all},
           .checks = {&local.checks, &local.checks},
           .creates = {&local.creates, &local.creates},
           .removals = {&local.removals, &local.removals}};

/* A removal of the workdir made for a sandbox whose end waits for it (a failed or cancelled
 * create leaves no directory behind). */
struct local_removal {
        struct list node; /* in local.removals until its rm is reaped */
        pid_t pid;
        void (*done)(void *ctx);
        void *ctx;
};

/* A sandbox with its place in local.all (freed at shutdown when the daemon kept it). */
struct local_sb {
        struct list node;
        struct list execs; /* struct local_nsexec not ended yet (isolated) */
        struct backend_sandbox b;
};

/* A create (or an adopt, which makes the sandbox anew) waiting for its namespaces. */
struct local_create {
        struct list node; /* in local.creates while nb starts */
        struct nsbox *nb; /* starting; NULL until nsbox_start returns */
        struct backend_sandbox *b;
        void *ctx;
        backend_create_cb cb;
        json_t *enforced;
        const struct backend_upcalls *up;
        void *up_ctx;
        bool recreated;
        struct sbx_error err; /* why it failed, while the workdir made for it goes */
};

/* A create waiting for its workdir (or its owner's home) to be checked as its owner. */
struct local_check {
        struct list node;                /* in local.checks while its helper runs */
        struct caller_job *job;          /* that helper's */
        const struct sandbox_spec *spec; /* the daemon's, until cb */
        void *ctx;
        backend_create_cb cb;
        backend_workdir_cb preview; /* not a create: preview_workdir's */
        enum local_iso iso;
        bool recreated;
};

/* pid was a removal's rm: its waiter is told (true), or it was not one (false). */
static bool
local_removal_reaped(pid_t pid)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &local.removals)
        {
                struct local_removal *r = LIST_ENTRY(pos, struct local_removal, node);
                if (r->pid != pid)
                        continue;
                list_del(&r->node);
                r->done(r->ctx);
                free(r);
                return true;
        }
        return false;
}

static void
local_sigchld_cb(uv_signal_t *s, int signum)
{
        int status;
        pid_t pid;

        /* We are a child subreaper: reap everything, including orphaned grandchildren. */
        while ((pid = spawn_reap_other(&status)) > 0)
                if (!nsbox_reaped(pid, status) && !local_exec_reaped(pid, status) &&
                    !local_removal_reaped(pid))
                        local_file_reaped(pid, status);
}

static int
local_iso_parse(const char *v, enum local_iso *out)
{
        for (size_t i = 0; i < ARRAY_SIZE(local_iso_names); i++) {
                if (v && !strcmp(v, local_iso_names[i])) {
                        *out = (enum local_iso) i;
                        return 0;
                }
        }
        return -1;
}

/* The keys of [backend.local] (nsbox.c reads the paths, the set-up program and the tmpfs size;
 * the agent is linked into sandboxd-nsbox, so an `agent` key is unknown here). */
static const char *const local_keys[] = {
        "isolation",     "isolation_fallback", "hidden_paths", "writable_paths",
        "home_readonly", "tmpfs_size",         "nsbox",        NULL};

static int
local_cfg_isolation(json_t *config, enum local_iso *def, bool *fallback, struct sbx_error *err)
{
        const char *iso = json_string_value(json_object_get(config, "isolation"));
        const char *fb = json_string_value(json_object_get(config, "isolation_fallback"));

        *def = LOCAL_NAMESPACES; /* where unavailable: isolation_fallback, else no */
        if (iso && local_iso_parse(iso, def) < 0) {
                sbx_error_param(err, "isolation",
                                "[backend.local] isolation = '%s' is not valid: expected "
                                "namespaces or none",
                                iso);
                return -1;
        }
        if (fb && strcmp(fb, "none") && strcmp(fb, "off")) {
                sbx_error_param(err, "isolation_fallback",
                                "[backend.local] isolation_fallback = '%s' is not valid: expected "
                                "none or off",
                                fb);
                return -1;
        }
        *fallback = fb && !strcmp(fb, "none");
        return 0;
}

/* backend_ops.validate: the known keys and the isolation values (the paths are checked by
 * init, which needs the programs and the file system). */
static int
local_validate(json_t *config, backend_config_report_fn report, void *ctx)
{
        int n = backend_config_known(config, "local", local_keys, report, ctx);
        struct sbx_error e = {0};
        enum local_iso def;
        bool fallback;

        if (local_cfg_isolation(config, &def, &fallback, &e) < 0) {
                report(ctx, json_string_value(json_object_get(e.data, "param")), e.message);
                n++;
        }
        sbx_error_clear(&e);
        return n;
}

static int
local_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        const char *drain = json_string_value(json_object_get(config, "drain_grace_ms"));
        const char *ft = json_string_value(json_object_get(config, "file_timeout_ms"));

        if (local_cfg_isolation(config, &local.def, &local.fallback, err) < 0 ||
            nsbox_init(loop, config, err) < 0)
                return -1;
        local.loop = loop;
        local_exec_init(loop, drain ? strtoull(drain, NULL, 10) : 250);
        local_file_init(loop, ft ? strtoull(ft, NULL, 10) : 0);
        local.check_ms = ft && strtoul(ft, NULL, 10) ? (unsigned) strtoul(ft, NULL, 10) : 60000;
        uv_signal_init(loop, &local.sigchld);
        uv_signal_start(&local.sigchld, local_sigchld_cb, SIGCHLD);
        uv_unref((uv_handle_t *) &local.sigchld);
        local.cgroup_info = cgroup_probe();
        return 0;
}

static void local_sb_free(struct backend_sandbox *b);

static void
local_shutdown(void)
{
        struct list *pos, *tmp;

        /* Creates still waiting for their check end with the daemon, like those starting. */
        LIST_FOREACH_SAFE(pos, tmp, &local.checks)
        {
                struct local_check *k = LIST_ENTRY(pos, struct local_check, node);
                list_del(&k->node);
                caller_job_cancel(k->job);
                if (k->preview)
                        k->preview(k->ctx, NULL);
                free(k);
        }
        nsbox_shutdown();
        /* Removals still running end with the daemon: nobody waits for them any more. */
        LIST_FOREACH_SAFE(pos, tmp, &local.removals)
        {
                list_del(pos);
                free(LIST_ENTRY(pos, struct local_removal, node));
        }
        /* Sandboxes the daemon kept for the next start (isolated ones are recreated then). */
        LIST_FOREACH_SAFE(pos, tmp, &local.all)
        local_sb_free(&LIST_ENTRY(pos, struct local_sb, node)->b);
        local_file_shutdown();
        uv_close((uv_handle_t *) &local.sigchld, NULL);
        json_decref(local.cgroup_info);
        local.cgroup_info = NULL;
}

/* The isolation a spec gets (section: its "local" object, may be NULL); *asked says whether it
 * named one; 0, or -1 when namespaces are wanted but unavailable (reason/hint set). */
static int
local_isolation(json_t *section, enum local_iso *iso, bool *asked, const char **reason,
                const char **hint)
{
        const char *v = json_string_value(json_object_get(section, "isolation"));

        *asked = v != NULL;
        *iso = local.def;
        if (v && local_iso_parse(v, iso) < 0)
                *iso = LOCAL_NAMESPACES; /* the policy refused it already: fail closed */
        *reason = *iso == LOCAL_NAMESPACES ? nsbox_unavailable(hint) : NULL;
        if (!*reason)
                return 0;
        if (!*asked && local.fallback) {
                *iso = LOCAL_NONE; /* the operator's choice: [backend.local] isolation_fallback */
                return 0;
        }
        return -1;
}

static unsigned
local_spec_caps(json_t *spec)
{
        enum local_iso iso;
        const char *reason, *hint;
        bool asked;

        local_isolation(json_object_get(spec, "local"), &iso, &asked, &reason, &hint);
        return BACKEND_CAP_EXACT_ENV | BACKEND_CAP_HOST_FS |
               (iso == LOCAL_NONE ? BACKEND_CAP_HOST : BACKEND_CAP_ENDS_WITH_DAEMON);
}

static void
local_probe(void *ctx, backend_probe_cb cb)
{
        const char *hint = NULL, *why = nsbox_unavailable(&hint);
        json_t *ns = nsbox_details();
        json_t *d;

        json_object_set_new(ns, "available", json_boolean(!why));
        if (why)
                json_object_set_new(ns, "reason", json_string(why));
        if (why)
                json_object_set_new(ns, "hint", json_string(hint));
        d = json_pack("{s:O,s:b,s:{s:s,s:s?,s:o}}", "cgroups",
                      local.cgroup_info ? local.cgroup_info : json_null(), "runs_as_caller",
                      geteuid() == 0, "isolation", "default", local_iso_names[local.def],
                      "fallback", local.fallback ? "none" : NULL, "namespaces", ns);
        cb(ctx, true, NULL, NULL, d);
}

static int
local_check_spec(const struct sandbox_spec *spec, enum local_iso iso, struct sbx_error *err)
{
        if (iso == LOCAL_NONE && spec->network && strcmp(spec->network, "host")) {
                sbx_error_param(err, "network",
                                "invalid params: a local sandbox with isolation \"none\" cannot "
                                "restrict the network (network \"%s\"); use isolation "
                                "\"namespaces\" or backend \"docker\"",
                                spec->network);
                return -1;
        }
        if (iso == LOCAL_NAMESPACES && spec->network && !strcmp(spec->network, "bridge")) {
                sbx_error_param(err, "network",
                                "invalid params: a local sandbox has network \"none\" (loopback "
                                "only, the default) or \"host\"; use backend \"docker\" for a "
                                "bridge");
                return -1;
        }
        if (json_array_size(spec->mounts)) {
                sbx_error_param(err, "mounts",
                                "invalid params: the local backend has no mounts: an isolated "
                                "sandbox sees the host read-only with its workdir and [backend."
                                "local] writable_paths writable; use backend \"docker\" for more");
                return -1;
        }
        if (spec->image) {
                sbx_error_param(err, "image",
                                "invalid params: the local backend runs on the host and takes "
                                "no image; use backend \"docker\"");
                return -1;
        }
        return 0;
}

static void
local_limits(struct backend_sandbox *b, const struct sandbox_spec *spec, json_t *enforced)
{
        const struct backend_resources *r = &spec->res;

        /* What the cgroup could not enforce falls back to an rlimit where one exists. */
        if (r->memory_mb && !json_is_string(json_object_get(enforced, "memory_mb"))) {
                b->limits.as_bytes = (uint64_t) r->memory_mb << 20;
                b->use_limits = true;
                json_object_set_new(enforced, "memory_mb", json_string("rlimit"));
        }
        if (r->pids && !json_is_string(json_object_get(enforced, "pids"))) {
                b->limits.nproc = (uint64_t) r->pids;
                b->use_limits = true;
                json_object_set_new(enforced, "pids", json_string("rlimit-per-uid"));
        }
        if (r->cpus && !json_object_get(enforced, "cpus"))
                json_object_set_new(enforced, "cpus", json_null());
        if (r->disk_mb)
                json_object_set_new(enforced, "disk_mb", json_null());
}

/* A new sandbox of spec's owner with its cgroup and limits; *enforced new. */
static struct backend_sandbox *
local_sb_new(const struct sandbox_spec *spec, const char *wd, json_t **enforced)
{
        struct local_sb *s = xcalloc(1, sizeof(*s));
        struct backend_sandbox *b = &s->b;

        list_add_tail(&local.all, &s->node);
        list_init(&s->execs);
        b->id = xstrdup(spec->id);
        b->workdir = xstrdup(wd);
        b->who = *spec->owner;
        b->who.groups = xcalloc(spec->owner->ngroups + 1, sizeof(gid_t));
        if (spec->owner->ngroups)
                memcpy(b->who.groups, spec->owner->groups, spec->owner->ngroups * sizeof(gid_t));
        b->who.user = spec->owner->user ? xstrdup(spec->owner->user) : NULL;
        b->who.home = spec->owner->home ? xstrdup(spec->owner->home) : NULL;
        *enforced = NULL;
        if (spec->res.memory_mb || spec->res.pids || spec->res.cpus)
                b->cg = cgroup_create(spec->id, &spec->res, enforced);
        if (!*enforced)
                *enforced = json_object();
        local_limits(b, spec, *enforced);
        return b;
}

static void
local_sb_free(struct backend_sandbox *b)
{
        struct local_sb *s = LIST_ENTRY(b, struct local_sb, b);

        list_del(&s->node);
        /* Execs whose end never came (released at shutdown): their session is closed. */
        while (!list_empty(&s->execs)) {
                struct list *n = s->execs.next;
                list_del(n);
                free(n);
        }
        cgroup_destroy(b->cg);
        free(b->id);
        free(b->workdir);
        free(b->fresh);
        free(b->who.groups);
        free((char *) b->who.user);
        free((char *) b->who.home);
        free(s);
}

/* ---- on the host (isolation "none") ---- */

static void
local_create_host(const struct sandbox_spec *spec, const char *wd, void *ctx, backend_create_cb cb)
{
        struct sandbox_info info = {0};
        struct backend_sandbox *b = local_sb_new(spec, wd, &info.enforced);

        info.workdir = b->workdir;
        info.host_access = true;
        info.isolation = "none";
        cb(ctx, b, &info, NULL);
        json_decref(info.enforced);
}

static void local_remove_fresh(struct backend_sandbox *b, void (*done)(void *ctx), void *ctx);

/* The workdir the caller named must be a directory it can reach; without one, its home when
 * it is one (accounts such as nobody have none: "/" rather than fail). */
static char *local_default_workdir(const struct sandbox_spec *spec, enum local_iso iso,
                                   bool home_is_dir);

static void
local_host_checked(struct local_check *lc, const char *real, bool is_dir)
{
        const struct sandbox_spec *spec = lc->spec;
        struct sbx_error err = {0};

        if (!spec->workdir) {
                char *wd = local_default_workdir(spec, LOCAL_NONE, is_dir);
                local_create_host(spec, wd, lc->ctx, lc->cb);
                free(wd);
                return;
        }
        if (is_dir) {
                local_create_host(spec, spec->workdir, lc->ctx, lc->cb);
                return;
        }
        /* One answer for "absent" and "not yours to reach": the caller learns nothing more. */
        sbx_error_param(&err, "workdir",
                        "invalid params: workdir '%s' is not a directory that uid %u can reach "
                        "(absent, not a directory, or not searchable by it): name a directory "
                        "of yours",
                        spec->workdir, (unsigned) spec->owner->uid);
        lc->cb(lc->ctx, NULL, NULL, &err);
        sbx_error_clear(&err);
}

/* ---- isolated (isolation "namespaces") ---- */

/* A home an isolated sandbox gets whether or not it exists on the host (its private one). */
static bool
local_home_known(const char *home)
{
        return !strncmp(home, "/home/", 6) || !strcmp(home, "/root");
}

/* Where the workdir made for an isolated sandbox shows inside it (new): ~/work in its private
 * home, or /tmp/work when it gets none. Not its host path: that is in the daemon's state
 * directory, which the policy protects (and which is hidden inside). */
static char *
local_fresh_inside(const char *home, bool home_is_dir)
{
        if (home && strcmp(home, "/") && (local_home_known(home) || home_is_dir))
                return xasprintf("%s/work", home);
        return xstrdup("/tmp/work");
}

/* The workdir of a sandbox that named none (new), as its owner's home checked says: with
 * isolation "none" the home (or "/" when it is no directory), isolated ~/work inside. */
static char *
local_default_workdir(const struct sandbox_spec *spec, enum local_iso iso, bool home_is_dir)
{
        if (iso == LOCAL_NAMESPACES)
                return local_fresh_inside(spec->owner->home, home_is_dir);
        return xstrdup(home_is_dir ? spec->owner->home : "/");
}

/* The workdir of an isolated sandbox that named none: <state dir>/work, the owner's. */
static char *
local_fresh_workdir(const struct sandbox_spec *spec, struct sbx_error *err)
{
        char *wd = xasprintf("%s/work", spec->state_dir);
        uid_t uid = geteuid() == 0 ? spec->owner->uid : geteuid();
        gid_t gid = geteuid() == 0 ? spec->owner->gid : getegid();
        struct stat st;

        if ((mkdir(wd, 0700) < 0 && errno != EEXIST) || lstat(wd, &st) < 0 ||
            !S_ISDIR(st.st_mode) || (st.st_uid != uid && lchown(wd, uid, gid) < 0)) {
                sbx_error_backend(err, "local", "cannot make the sandbox's workdir '%s': %s", wd,
                                  strerror(errno ? errno : ENOTDIR));
                free(wd);
                return NULL;
        }
        return wd;
}

/* An isolated create that failed (lc->err) ends, once what was made for it is gone. */
static void
local_create_failed(void *ctx)
{
        struct local_create *lc = ctx;

        local_sb_free(lc->b);
        lc->cb(lc->ctx, NULL, NULL, &lc->err);
        sbx_error_clear(&lc->err);
        json_decref(lc->enforced);
        free(lc);
}

/* The owner's rm emptied the workdir made for the sandbox; the directory itself is in the
 * sandbox's state directory, which only the daemon may change: an rmdir, which removes an
 * empty directory and nothing else. */
static void
local_create_removed(void *ctx)
{
        struct local_create *lc = ctx;

        if (lc->b->fresh) /* not empty (rm failed): the daemon says its state dir stays */
                (void) rmdir(lc->b->fresh);
        local_create_failed(lc);
}

/* A new sandbox's create failed or was cancelled (lc->err): the workdir made for it goes
 * first. A sandbox made anew after a restart keeps its workdir: what the caller left in it
 * before the restart is still its own. */
static void
local_create_undo(struct local_create *lc)
{
        if (lc->recreated)
                local_create_failed(lc);
        else
                local_remove_fresh(lc->b, local_create_removed, lc);
}

static void
local_ns_ready_cb(void *ctx, struct nsbox *nb, const struct sbx_error *err)
{
        struct local_create *lc = ctx;
        struct backend_sandbox *b = lc->b;
        struct sandbox_info info = {0};

        list_del(&lc->node);
        b->creating = NULL;
        if (err) {
                sbx_error_set(&lc->err, err->code, json_incref(err->data), "%s", err->message);
                local_create_undo(lc);
                return;
        }
        b->nb = nb;
        nsbox_set_upcalls(nb, lc->up, lc->up_ctx);
        info.workdir = b->workdir;
        info.host_access = b->network_host;
        info.enforced = lc->enforced;
        info.details = nsbox_info(nb);
        info.isolation = "namespaces";
        info.recreated = lc->recreated;
        lc->cb(lc->ctx, b, &info, NULL);
        json_decref(info.details);
        json_decref(lc->enforced);
        free(lc);
}

/* A workdir the client named that leads (real: resolved as the caller) to a place of the
 * sandbox's own is refused at once: no sandbox is started for it. sandboxd-nsbox checks the
 * path it opens again (a symlink changed in between); one that cannot be resolved is its to
 * report. */
static int
local_check_place(const struct sandbox_spec *spec, const char *real, struct sbx_error *err)
{
        int place;

        if (!spec->workdir || !real || !(place = nsinit_place(real)))
                return 0;
        nsbox_place_error("workdir", spec->workdir, place, err);
        return -1;
}

static void
local_create_ns(struct local_check *k, const char *real, bool is_dir)
{
        const struct sandbox_spec *spec = k->spec;
        void *ctx = k->ctx;
        backend_create_cb cb = k->cb;
        struct local_create *lc;
        struct sbx_error err = {0};
        char *fresh = NULL;
        struct nsbox_request req = {.spec = spec};
        struct nsbox *nb;
        json_t *enforced;

        if (local_check_place(spec, real, &err) < 0) {
                cb(ctx, NULL, NULL, &err);
                sbx_error_clear(&err);
                return;
        }
        fresh = spec->workdir ? NULL : local_fresh_workdir(spec, &err);
        if (!spec->workdir && !fresh) {
                cb(ctx, NULL, NULL, &err);
                sbx_error_clear(&err);
                return;
        }
        lc = xcalloc(1, sizeof(*lc));
        lc->b = local_sb_new(spec, spec->workdir ? spec->workdir : fresh, &enforced);
        lc->b->fresh = fresh;
        lc->b->network_host = spec->network && !strcmp(spec->network, "host");
        lc->b->creating = lc;
        lc->ctx = ctx;
        lc->cb = cb;
        lc->enforced = enforced;
        lc->up = spec->up;
        lc->up_ctx = spec->up_ctx;
        lc->recreated = k->recreated;
        req.workdir = fresh ? fresh : spec->workdir;
        if (fresh) { /* then the check was of the owner's home */
                free(lc->b->workdir);
                lc->b->workdir = local_default_workdir(spec, LOCAL_NAMESPACES, is_dir);
                req.inside = lc->b->workdir;
        }
        req.network_host = lc->b->network_host;
        req.limits = lc->b->use_limits ? &lc->b->limits : NULL;
        req.cgroup_procs = lc->b->cg ? cgroup_procs_files(lc->b->cg) : NULL;
        list_add_tail(&local.creates, &lc->node);
        nb = nsbox_start(&req, local_ns_ready_cb, lc);
        if (nb) /* else lc is gone already: its cb came with the error */
                lc->nb = nb;
}

/* ---- the check, off the loop ---- */

static void (*const local_checked[])(struct local_check *, const char *, bool) = {
        [LOCAL_NONE] = local_host_checked,
        [LOCAL_NAMESPACES] = local_create_ns,
};

/* A preview's check answered: the workdir the create would choose, or none when the create
 * would fail (a workdir named that is no directory, a home that does not answer). */
static void
local_preview_checked(struct local_check *k, bool is_dir, const char *error)
{
        char *wd = NULL;

        if (!error && k->spec->workdir)
                wd = is_dir ? xstrdup(k->spec->workdir) : NULL;
        else if (!error)
                wd = local_default_workdir(k->spec, k->iso, is_dir);
        k->preview(k->ctx, wd);
        free(wd);
}

/* The workdir's (or home's) check answered: real and is_dir as caller_path_resolve tells
 * them; error when it did not answer in time (a hung mount: the create fails, naming it). */
static void
local_checked_cb(void *ctx, const char *real, bool is_dir, const char *error)
{
        struct local_check *k = ctx;
        const struct sandbox_spec *spec = k->spec;
        struct sbx_error err = {0};

        list_del(&k->node);
        if (k->preview) {
                local_preview_checked(k, is_dir, error);
        } else if (error) {
                sbx_error_backend(&err, "local",
                                  "the %s '%s' did not answer: %s ([limits] file_timeout_s): "
                                  "name a directory on a file system that answers%s",
                                  spec->workdir ? "workdir" : "home directory",
                                  spec->workdir ? spec->workdir : spec->owner->home, error,
                                  spec->workdir ? "" : " as the workdir");
                k->cb(k->ctx, NULL, NULL, &err);
                sbx_error_clear(&err);
        } else {
                local_checked[k->iso](k, real, is_dir);
        }
        free(k);
}

/* What to check: the workdir the caller named, else its home, unless the answer is known (an
 * isolated sandbox's fresh workdir shows in a home below /home or in /root whatever it is). */
static const char *
local_check_path(const struct sandbox_spec *spec, enum local_iso iso)
{
        const char *home = spec->owner->home;

        if (spec->workdir)
                return spec->workdir;
        if (iso == LOCAL_NAMESPACES && home && local_home_known(home))
                return NULL;
        return home;
}

/* Checks the workdir the caller named (else its home) as the caller, in a helper: the loop
 * never touches a path a caller controls (a FUSE or NFS mount that never answers). */
static void
local_check(struct local_check *k)
{
        const struct sandbox_spec *spec = k->spec;
        const char *path = local_check_path(spec, k->iso);
        /* A root caller of a root daemon: the daemon's rights are the caller's (and a daemon
         * in a user namespace whose setgroups is denied could not take them anew). */
        const struct backend_identity *as = spec->owner->uid == 0 ? NULL : spec->owner;

        list_init(&k->node);
        if (!path || path[0] != '/') {
                local_checked_cb(k, NULL, false, NULL); /* no home: nothing to check */
                return;
        }
        list_add_tail(&local.checks, &k->node);
        k->job = caller_path_resolve(local.loop, as, path, local.check_ms, k, local_checked_cb);
}

static void
local_create_as(const struct sandbox_spec *spec, void *ctx, backend_create_cb cb, bool recreated)
{
        struct sbx_error err = {0};
        const char *reason, *hint;
        enum local_iso iso;
        bool asked;

        if (local_isolation(spec->section, &iso, &asked, &reason, &hint) < 0) {
                sbx_error_set(&err, SBX_E_BACKEND_UNAVAILABLE,
                              json_pack("{s:s,s:s,s:s}", "backend", "local", "reason", reason,
                                        "hint", hint),
                              "backend unavailable: local sandboxes with isolation "
                              "\"namespaces\" cannot be made here: %s (%s)",
                              reason, hint);
        } else if (local_check_spec(spec, iso, &err) == 0) {
                struct local_check *k = xcalloc(1, sizeof(*k));
                *k = (struct local_check){
                        .spec = spec, .ctx = ctx, .cb = cb, .iso = iso, .recreated = recreated};
                local_check(k);
                return;
        }
        cb(ctx, NULL, NULL, &err);
        sbx_error_clear(&err);
}

/* backend_ops.preview_workdir: the check a create makes, without the create. */
static void
local_preview_workdir(const struct sandbox_spec *spec, void *ctx, backend_workdir_cb cb)
{
        struct sbx_error err = {0};
        const char *reason, *hint;
        struct local_check *k;
        enum local_iso iso;
        bool asked;

        if (local_isolation(spec->section, &iso, &asked, &reason, &hint) < 0 ||
            local_check_spec(spec, iso, &err) < 0) {
                sbx_error_clear(&err);
                cb(ctx, NULL); /* the create would fail */
                return;
        }
        k = xcalloc(1, sizeof(*k));
        *k = (struct local_check){.spec = spec, .ctx = ctx, .preview = cb, .iso = iso};
        local_check(k);
}

static void
local_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
             backend_create_cb cb)
{
        local_create_as(spec, ctx, cb, false);
}

/* Only isolated sandboxes are recorded: a restarted daemon makes them anew (their processes
 * ended with the old one; the workdir made for them stays). Host sandboxes are not kept. */
static json_t *
local_save(struct backend_sandbox *b)
{
        return b->nb ? json_pack("{s:s}", "isolation", "namespaces") : NULL;
}

static void
local_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb)
{
        local_create_as(spec, ctx, cb, true);
}

static int
local_exec_adopt(struct backend_sandbox *b, const struct exec_spec *spec, json_t *record,
                 const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                 struct backend_proc **ret, struct sbx_error *err)
{
        sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "recreated"),
                      "its sandbox was made anew when the daemon restarted, and its processes "
                      "ended with the previous daemon");
        return -ESRCH;
}

/* Removes the workdir made for a sandbox, as its owner (never with the daemon's rights in a
 * tree the caller controls). done (NULL: not waited for; the SIGCHLD handler reaps it) once
 * its rm has ended, or at once when there is none or it cannot start. */
static void
local_remove_fresh(struct backend_sandbox *b, void (*done)(void *ctx), void *ctx)
{
        char *argv[] = {"rm", "-rf", "--one-file-system", "--", b->fresh, NULL};
        char *envp[] = {"PATH=/usr/bin:/bin", NULL};
        struct spawn_opts o = {.argv = argv, .envp = envp, .cwd = "/", .keep_fd = -1};
        struct spawn_result res;
        struct sbx_error err = {0};
        struct local_removal *r;

        o.who = geteuid() == 0 ? &b->who : NULL;
        if (!b->fresh || spawn_start(&o, &res, &err) < 0) {
                sbx_error_clear(&err);
                if (done)
                        done(ctx);
                return;
        }
        close(res.stdout_fd);
        if (res.stderr_fd >= 0)
                close(res.stderr_fd);
        if (!done)
                return;
        r = xcalloc(1, sizeof(*r));
        *r = (struct local_removal){.pid = res.pid, .done = done, .ctx = ctx};
        list_add_tail(&local.removals, &r->node);
}

struct local_destroy {
        struct backend_sandbox *b;
        void *ctx;
        backend_done_cb cb;
};

/* The sandbox is gone and so is what was in the workdir made for it (its owner's rm has ended):
 * the directory itself, in the daemon's state directory, goes with an rmdir (an empty
 * directory and nothing else); then the daemon is told, and may remove the rest. */
static void
local_destroyed(void *ctx)
{
        struct local_destroy *d = ctx;

        if (d->b->fresh) /* not empty (rm failed): the daemon says its state dir stays */
                (void) rmdir(d->b->fresh);
        local_sb_free(d->b);
        d->cb(d->ctx, NULL);
        free(d);
}

static void
local_stopped_cb(void *ctx)
{
        struct local_destroy *d = ctx;

        local_remove_fresh(d->b, local_destroyed, d);
}

static void
local_destroy(struct backend_sandbox *b, void *ctx, backend_done_cb cb)
{
        struct local_destroy *d = xcalloc(1, sizeof(*d));

        d->b = b;
        d->ctx = ctx;
        d->cb = cb;
        if (b->nb)
                nsbox_stop(b->nb, local_stopped_cb, d);
        else
                local_stopped_cb(d);
}

static void
local_cancelled_error(struct sbx_error *err, const char *id)
{
        sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                      "creating sandbox %s was cancelled", id);
}

/* A cancelled isolated create: its namespaces are gone (every process in them reaped); the
 * workdir made for it goes before the create ends. */
static void
local_ns_cancelled_cb(void *ctx)
{
        struct local_create *lc = ctx;

        local_cancelled_error(&lc->err, lc->b->id);
        local_create_undo(lc);
}

/* backend_ops.cancel: a create still checking its workdir stops its helper; one starting its
 * namespaces kills them and removes the workdir made for it; then cb says "cancelled". */
static void
local_cancel(void *ctx)
{
        struct list *pos, *tmp;
        struct sbx_error err = {0};

        LIST_FOREACH_SAFE(pos, tmp, &local.checks)
        {
                struct local_check *k = LIST_ENTRY(pos, struct local_check, node);
                if (k->preview || k->ctx != ctx)
                        continue;
                list_del(&k->node);
                caller_job_cancel(k->job);
                local_cancelled_error(&err, k->spec->id);
                k->cb(k->ctx, NULL, NULL, &err);
                sbx_error_clear(&err);
                free(k);
                return;
        }
        LIST_FOREACH_SAFE(pos, tmp, &local.creates)
        {
                struct local_create *lc = LIST_ENTRY(pos, struct local_create, node);
                if (lc->ctx != ctx)
                        continue;
                list_del(&lc->node);
                lc->b->creating = NULL;
                nsbox_cancel(lc->nb, local_ns_cancelled_cb, lc);
                return;
        }
}

/* An exec in an isolated sandbox: oom_killed as on the host, when the sandbox's cgroup counted
 * an OOM kill while it ran (the agent sees only its main process, a shell whose child was
 * killed exits 137). The sandbox's cgroup outlives its execs: they end with its session. */
struct local_nsexec {
        struct list node; /* first: freed as a list node by local_sb_free */
        const struct backend_exec_cbs *cbs;
        void *ctx;
        const struct cgroup *cg;
        uint64_t oom_before;
        bool shell; /* a `command` exec in the configured shell (exec_spec.path) */
};

static void
local_ns_output(void *ctx, enum backend_stream s, const char *data, size_t len)
{
        struct local_nsexec *x = ctx;

        x->cbs->on_output(x->ctx, s, data, len);
}

/* The configured shell could not be executed: it must be where the sandbox sees it. */
static void
local_ns_shell_hint(const struct sbx_error *in, struct sbx_error *out)
{
        sbx_error_set(out, in->code, json_incref(in->data),
                      "%s: [exec] shell must be a program an isolated sandbox sees (the host's "
                      "root, read-only; not below /tmp, /var/tmp, /run, a home or [backend."
                      "local] hidden_paths), or the sandbox must ask for isolation \"none\"",
                      in->message);
}

static void
local_ns_exit(void *ctx, const struct exec_exit *ex)
{
        struct local_nsexec *x = ctx;
        struct exec_exit e = *ex;
        const struct backend_exec_cbs *cbs = x->cbs;
        void *octx = x->ctx;
        struct sbx_error hinted = {0};
        const char *param =
                e.error ? json_string_value(json_object_get(e.error->data, "param")) : NULL;

        if (!e.error && !e.lost && x->cg && cgroup_oom_kills(x->cg) > x->oom_before)
                e.oom_killed = true;
        if (x->shell && param && !strcmp(param, "argv")) {
                local_ns_shell_hint(e.error, &hinted);
                e.error = &hinted;
        }
        list_del(&x->node);
        free(x);
        cbs->on_exit(octx, &e);
        sbx_error_clear(&hinted);
}

static const struct backend_exec_cbs local_ns_cbs = {local_ns_output, local_ns_exit};

static int
local_exec(struct backend_sandbox *b, const struct exec_spec *spec,
           const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
           struct sbx_error *err)
{
        struct agent_session *s;
        struct local_nsexec *x;
        int r;

        if (!b->nb)
                return local_exec_start(b, spec, cbs, ctx, ret, err);
        s = nsbox_session(b->nb);
        if (!s) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "exited"),
                              "the local sandbox '%s' is gone: its PID 1 exited", b->id);
                return -ESRCH;
        }
        x = xcalloc(1, sizeof(*x));
        *x = (struct local_nsexec){.cbs = cbs,
                                   .ctx = ctx,
                                   .cg = b->cg,
                                   .oom_before = b->cg ? cgroup_oom_kills(b->cg) : 0,
                                   .shell = spec->path != NULL};
        list_add_tail(&LIST_ENTRY(b, struct local_sb, b)->execs, &x->node);
        r = agent_exec_start(s, spec, &local_ns_cbs, x, ret, err);
        if (r < 0) {
                list_del(&x->node);
                free(x);
        }
        return r;
}

/* ---- files (local_file.c) ---- */

/* The identity file ops run as. */
const struct backend_identity *
local_identity(struct backend_sandbox *b)
{
        return geteuid() == 0 ? &b->who : NULL;
}

/* Where an isolated sandbox's file ops run. */
bool
local_file_ns(struct backend_sandbox *b, struct local_file_ns *ns)
{
        if (!b->nb)
                return false;
        ns->userns = nsbox_userns(b->nb);
        ns->mntns = nsbox_mntns(b->nb);
        ns->who = b->who;
        ns->set_groups = geteuid() == 0;
        if (!ns->set_groups) {
                ns->who.uid = geteuid();
                ns->who.gid = getegid();
                ns->who.ngroups = 0;
        }
        return true;
}

const struct backend_ops local_backend_ops = {
        .name = "local",
        .caps = BACKEND_CAP_HOST | BACKEND_CAP_HOST_FS | BACKEND_CAP_EXACT_ENV,
        .spec_caps = local_spec_caps,
        .preview_workdir = local_preview_workdir,
        .init = local_init,
        .validate = local_validate,
        .probe = local_probe,
        .create = local_create,
        .cancel = local_cancel,
        .save = local_save,
        .adopt = local_adopt,
        .destroy = local_destroy,
        .exec_start = local_exec,
        .exec_adopt = local_exec_adopt,
        .file_read = local_file_read,
        .file_write = local_file_write,
        .shutdown = local_shutdown,
};
