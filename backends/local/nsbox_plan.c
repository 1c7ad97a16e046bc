/* nsbox_plan.c — what a namespace sandbox sees, decided by the daemon before the clone
 * (nsbox.h; every choice is explained in docs/backends/local.md):
 *
 *   /            the host's root, read-only, nosuid, nodev
 *   /dev         a tmpfs with null, zero, full, random, urandom, tty, a devpts of its own,
 *                /dev/shm (tmpfs) and the usual links
 *   /proc        the sandbox's pid namespace only
 *   /tmp /var/tmp /run   private tmpfs (the host's resolv.conf is kept when it lives in /run)
 *   /home /root  empty: other users' homes (and those elsewhere in the passwd database), the
 *                daemon's state and socket directories are covered by empty tmpfs
 *   $HOME        a private tmpfs of the caller's (caches work, nothing persists), with the
 *                configured files of the real home read-only ([backend.local] home_readonly)
 *   workdir      the host directory, writable (given at create, or a fresh one in the
 *                sandbox's state directory); [backend.local] writable_paths too
 *   hidden       [backend.local] hidden_paths (~/.ssh, ~/.aws, …) wherever they show
 *
 * Landlock allows writes below /tmp, /var/tmp, /run, /dev, /proc, $HOME, the workdir and the
 * writable paths, and nowhere else.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/nsbox.h"
#include "protocol/util.h"

#define NSB_AGENT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *const nsb_steps[] = NSINIT_STEP_NAMES;

static const char *const nsb_dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

static const struct {
        const char *dst, *target;
} nsb_dev_links[] = {
        {"/dev/ptmx", "pts/ptmx"},          {"/dev/fd", "/proc/self/fd"},
        {"/dev/stdin", "/proc/self/fd/0"},  {"/dev/stdout", "/proc/self/fd/1"},
        {"/dev/stderr", "/proc/self/fd/2"},
};

/* A plan being built: full when something did not fit (the create fails, nothing is cut). */
struct pb {
        struct nsinit_plan *p;
        bool full;
};

static uint32_t
pb_str(struct pb *b, const char *s)
{
        size_t n = strlen(s) + 1;
        uint32_t off = b->p->pool_used;

        if (!b->p->pool_used)
                off = b->p->pool_used = 1; /* offset 0 means "none" */
        if (n > sizeof(b->p->pool) - off) {
                b->full = true;
                return 0;
        }
        memcpy(b->p->pool + off, s, n);
        b->p->pool_used = off + (uint32_t) n;
        return off;
}

static struct nsinit_op *
pb_op(struct pb *b, enum nsinit_op_type type, const char *dst, const char *data)
{
        static struct nsinit_op spare;
        struct nsinit_op *op;

        if (b->p->nops == NSINIT_MAX_OPS) {
                b->full = true;
                return memset(&spare, 0, sizeof(spare));
        }
        op = &b->p->ops[b->p->nops++];
        op->type = (uint8_t) type;
        op->dst = pb_str(b, dst);
        op->data = data ? pb_str(b, data) : 0;
        op->src = -1;
        return op;
}

static int32_t
pb_src(struct pb *b, const char *path, bool optional)
{
        if (b->p->nsrc == NSINIT_MAX_SRC) {
                b->full = true;
                return 0;
        }
        b->p->src[b->p->nsrc].path = pb_str(b, path);
        b->p->src[b->p->nsrc].optional = optional;
        return (int32_t) b->p->nsrc++;
}

static void
pb_rw(struct pb *b, const char *path)
{
        if (b->p->nrw == NSINIT_MAX_RW) {
                b->full = true;
                return;
        }
        b->p->rw[b->p->nrw++] = pb_str(b, path);
}

/* A bind of the host path src on dst (the same path unless given). */
static void
pb_bind(struct pb *b, const char *src, const char *dst, bool rdonly, bool optional)
{
        struct nsinit_op *op = pb_op(b, NSI_BIND, dst ? dst : src, NULL);

        op->src = pb_src(b, src, optional);
        op->rdonly = rdonly;
        op->optional = optional;
        op->mkdir = 1;
}

static void
pb_tmpfs(struct pb *b, const char *dst, const char *opts, bool optional)
{
        struct nsinit_op *op = pb_op(b, NSI_TMPFS, dst, opts);

        op->optional = optional;
        op->mkdir = !optional;
}

static void
pb_dev(struct pb *b, const char *size)
{
        char *o = xasprintf("mode=1777,size=%s", size);

        pb_tmpfs(b, "/dev", "mode=0755,size=256k", false);
        for (size_t i = 0; i < ARRAY_SIZE(nsb_dev_nodes); i++) {
                char *dst = xasprintf("/dev/%s", nsb_dev_nodes[i]);
                char *src = xasprintf("/dev/%s", nsb_dev_nodes[i]);
                pb_op(b, NSI_DEV, dst, src);
                free(dst);
                free(src);
        }
        pb_op(b, NSI_DEVPTS, "/dev/pts", NULL)->mkdir = 1;
        pb_tmpfs(b, "/dev/shm", o, false);
        for (size_t i = 0; i < ARRAY_SIZE(nsb_dev_links); i++)
                pb_op(b, NSI_SYMLINK, nsb_dev_links[i].dst, nsb_dev_links[i].target);
        free(o);
}

/* /tmp, /var/tmp, /run, and the host's resolv.conf when /run holds it (systemd-resolved). */
static void
pb_scratch(struct pb *b, const char *size)
{
        char *o = xasprintf("mode=1777,size=%s", size);
        char real[PATH_MAX];

        pb_op(b, NSI_PROC, "/proc", NULL);
        pb_tmpfs(b, "/tmp", o, false);
        pb_tmpfs(b, "/var/tmp", o, true);
        pb_tmpfs(b, "/run", "mode=0755,size=1m", true);
        if (realpath("/etc/resolv.conf", real) && !strncmp(real, "/run/", 5))
                pb_bind(b, real, NULL, true, true);
        free(o);
}

static int
pb_by_length(const void *a, const void *b)
{
        size_t la = strlen(*(char *const *) a), lb = strlen(*(char *const *) b);

        return la < lb ? -1 : la > lb;
}

/* Whether path is one of the n in v. */
static bool
pb_listed(char *const *v, size_t n, const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(v[i], path))
                        return true;
        return false;
}

/* Directories covered by an empty tmpfs (writable until the binds inside them are made, then
 * read-only): /home, /root and cfg->cover, parents first, each once. The caller's home is none
 * of them: its own tmpfs (pb_home) covers it; a mount each saved, which a create pays. */
static void
pb_covers(struct pb *b, const struct nsbox_config *cfg, const char *home, char ***out)
{
        static const char *const fixed[] = {"/home", "/root"};
        size_t n = ARRAY_SIZE(fixed);
        char **c;

        for (char **s = cfg->cover; s && *s; s++)
                n++;
        c = xcalloc(n + 1, sizeof(*c));
        n = 0;
        for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
                if (!pb_listed(c, n, fixed[i]) && (!home || strcmp(home, fixed[i])))
                        c[n++] = xstrdup(fixed[i]);
        for (char **s = cfg->cover; s && *s; s++)
                if (!pb_listed(c, n, *s) && (!home || strcmp(home, *s)))
                        c[n++] = xstrdup(*s);
        qsort(c, n, sizeof(*c), pb_by_length);
        for (size_t i = 0; i < n; i++)
                pb_tmpfs(b, c[i], "mode=0755,size=1m", true);
        *out = c;
}

static void
pb_home(struct pb *b, const struct nsinit_plan *p, const char *home, const struct nsbox_config *cfg)
{
        char *o;

        if (!home || !strcmp(home, "/"))
                return;
        o = xasprintf("mode=0700,uid=%u,gid=%u,size=%s", p->uid, p->gid, cfg->tmpfs_size);
        pb_tmpfs(b, home, o, true);
        b->p->ops[b->p->nops - 1].mkdir = 1;
        pb_rw(b, home);
        free(o);
        for (char **f = cfg->home_ro; f && *f; f++) {
                char *path = xasprintf("%s/%s", home, *f);
                pb_bind(b, path, NULL, true, true);
                free(path);
        }
}

/* "~/x" in the caller's home (NULL when it has none), else the path itself (new). */
static char *
pb_expand(const char *path, const char *home)
{
        if (strncmp(path, "~/", 2) != 0)
                return xstrdup(path);
        if (!home || !strcmp(home, "/"))
                return NULL;
        return xasprintf("%s/%s", home, path + 2);
}

static void
pb_identity(struct nsinit_plan *p, const struct backend_identity *who)
{
        if (geteuid() != 0) {
                /* Unprivileged: the one uid and gid the daemon has is all a map may hold. */
                p->uid = (uint32_t) geteuid();
                p->gid = (uint32_t) getegid();
                return;
        }
        p->uid = (uint32_t) who->uid;
        p->gid = (uint32_t) who->gid;
        p->set_groups = 1;
        for (size_t i = 0; i < who->ngroups && p->ngroups < NSINIT_MAX_GROUP; i++) {
                bool dup = who->groups[i] == who->gid;
                for (uint32_t k = 0; k < p->ngroups && !dup; k++)
                        dup = p->groups[k] == (uint32_t) who->groups[i];
                if (!dup)
                        p->groups[p->ngroups++] = (uint32_t) who->groups[i];
        }
}

static void
pb_hostname(struct pb *b, const char *name)
{
        char h[64];
        size_t n = 0;

        for (const char *s = name ? name : "sandbox"; *s && n < sizeof(h) - 1; s++)
                h[n++] = (char) (strchr("._", *s) ? '-' : *s);
        h[n] = '\0';
        b->p->hostname = pb_str(b, n ? h : "sandbox");
}

static void
pb_agent(struct pb *b)
{
        static const char *const argv[] = {"sandboxd-agent", "--runtime-dir", BACKEND_RUNTIME_DIR};

        for (size_t i = 0; i < ARRAY_SIZE(argv); i++)
                b->p->argv[i] = pb_str(b, argv[i]);
        b->p->envp[0] = pb_str(b, NSB_AGENT_PATH);
}

static void
pb_strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static void
pb_limits(struct nsinit_plan *p, const struct spawn_limits *l)
{
        p->nofile_soft = spawn_child_nofile_soft();
        if (!l)
                return;
        p->rlimit[NSI_RL_AS] = l->as_bytes;
        p->rlimit[NSI_RL_NPROC] = l->nproc;
        p->rlimit[NSI_RL_CPU] = l->cpu_s;
        p->rlimit[NSI_RL_NOFILE] = l->nofile;
}

/* The tree, in order: system mounts, covers, the home, the workdir and writable paths, the
 * covers made read-only, then what is hidden. */
static void
pb_tree(struct pb *b, const struct nsbox_request *req, const struct nsbox_config *cfg)
{
        const char *home = req->spec->owner->home;
        struct nsinit_op *op;
        char **covers = NULL, *h;

        pb_src(b, req->workdir, false); /* source 0: errors name it as the workdir */
        /* One the client named must not replace a place of the sandbox's own (nsinit_place);
         * the fresh one in the state directory is the daemon's. */
        b->p->src[0].placed = !req->inside;
        pb_dev(b, cfg->tmpfs_size);
        pb_scratch(b, cfg->tmpfs_size);
        pb_covers(b, cfg, home && strcmp(home, "/") ? home : NULL, &covers);
        pb_home(b, b->p, home, cfg);
        op = pb_op(b, NSI_BIND, req->inside ? req->inside : req->workdir, NULL);
        op->src = 0;
        op->mkdir = 1;
        for (char **w = cfg->writable; w && *w; w++) {
                pb_bind(b, *w, NULL, false, true);
                b->p->src[b->p->nsrc - 1].placed = !b->full;
                pb_rw(b, *w);
        }
        /* (The home is no cover: its tmpfs stays writable.) Not optional: a cover that a bind
         * above it uncovered is hidden again, or the sandbox is not made. */
        for (size_t i = 0; covers && covers[i]; i++)
                pb_op(b, NSI_RDONLY, covers[i], NULL);
        /* Last: a secret below the workdir or a writable path is hidden there too. */
        for (char **s = cfg->hidden; s && *s; s++) {
                if ((h = pb_expand(*s, home))) {
                        pb_op(b, NSI_HIDE, h, NULL);
                        free(h);
                }
        }
        pb_strv_free(covers);
}

/* Fills the plan. */
int
nsbox_plan_build(struct nsinit_plan *p, const struct nsbox_request *req,
                 const struct nsbox_config *cfg, struct sbx_error *err)
{
        static const char *const rw[] = {"/tmp", "/var/tmp", "/run", "/dev", "/proc"};
        struct pb b = {.p = p};

        memset(p, 0, sizeof(*p));
        p->magic = NSINIT_MAGIC;
        p->version = NSINIT_VERSION;
        p->new_net = !req->network_host;
        pb_identity(p, req->spec->owner);
        pb_hostname(&b, req->spec->name);
        pb_agent(&b);
        pb_limits(p, req->limits);
        for (size_t i = 0; i < ARRAY_SIZE(rw); i++)
                pb_rw(&b, rw[i]);
        pb_rw(&b, req->inside ? req->inside : req->workdir);
        pb_tree(&b, req, cfg);
        p->size = (uint32_t) (offsetof(struct nsinit_plan, pool) + p->pool_used);
        if (b.full) {
                sbx_error_backend(err, "local",
                                  "the sandbox's mount plan is too large (more than %d steps, %d "
                                  "paths or %u bytes of paths): shorten [backend.local] "
                                  "hidden_paths, writable_paths or home_readonly",
                                  NSINIT_MAX_OPS, NSINIT_MAX_SRC, NSINIT_POOL);
                return -1;
        }
        return 0;
}

static const char *
pb_op_name(uint8_t type)
{
        static const char *const names[] = {
                [NSI_TMPFS] = "a tmpfs on", [NSI_BIND] = "a bind on",
                [NSI_DEV] = "a device on",  [NSI_PROC] = "procfs on",
                [NSI_DEVPTS] = "devpts on", [NSI_SYMLINK] = "a symlink at",
                [NSI_RDONLY] = "read-only", [NSI_HIDE] = "hide",
        };

        return type < ARRAY_SIZE(names) && names[type] ? names[type] : "step";
}

/* Why nsinit_place refused path (its answer: 1 + 2 * place + inside), as -32602 for param. */
void
nsbox_place_error(const char *param, const char *path, int place, struct sbx_error *err)
{
        static const struct {
                const char *dir;
                int below_ok;
        } places[] = NSINIT_PLACES;
        int i = (place - 1) / 2;
        bool wd = !strcmp(param, "workdir");
        const char *what = wd ? "workdir" : "[backend.local] writable_paths:";
        const char *fix = wd ? "use a directory below /tmp or in your home"
                             : "remove it from [backend.local] writable_paths";

        if (i < 0 || (size_t) i >= ARRAY_SIZE(places))
                i = 0;
        if (place % 2 == 0)
                sbx_error_param(err, param,
                                "invalid params: %s '%s' leads into %s, which the sandbox has of "
                                "its own: the host's would show its sockets, devices or kernel "
                                "files: %s",
                                what, path, places[i].dir, fix);
        else
                sbx_error_param(err, param,
                                "invalid params: %s '%s' is, or is above, %s, which the sandbox "
                                "has of its own: binding it would put the host's %s in its "
                                "place: %s",
                                what, path, places[i].dir, places[i].dir, fix);
}

/* A report as an error. */
void
nsbox_plan_error(const struct nsinit_plan *p, const struct nsinit_msg *r, struct sbx_error *err)
{
        const char *step =
                r->step > 0 && (size_t) r->step < ARRAY_SIZE(nsb_steps) && nsb_steps[r->step]
                        ? nsb_steps[r->step]
                        : "execute sandboxd-nsbox";
        int i = r->index;

        if (r->step == NSI_STEP_HIDDEN && i >= 0 && (uint32_t) i < p->nsrc)
                sbx_error_param(err, i == 0 ? "workdir" : "writable_paths",
                                "invalid params: %s '%s' is, under another name, one of [backend."
                                "local] hidden_paths or inside one: name a directory outside them",
                                i == 0 ? "workdir" : "path", p->pool + p->src[i].path);
        else if (r->step == NSI_STEP_PLACE && i >= 0 && (uint32_t) i < p->nsrc)
                nsbox_place_error(i == 0 ? "workdir" : "writable_paths", p->pool + p->src[i].path,
                                  r->err, err);
        else if (r->step == NSI_STEP_SOURCE && i == 0)
                sbx_error_param(err, "workdir", "invalid params: workdir '%s': %s",
                                p->pool + p->src[0].path, strerror(r->err));
        else if (r->step == NSI_STEP_SOURCE && i > 0 && (uint32_t) i < p->nsrc)
                sbx_error_backend(err, "local", "sandbox set-up: open '%s': %s",
                                  p->pool + p->src[i].path, strerror(r->err));
        else if (r->step == NSI_STEP_OP && i >= 0 && (uint32_t) i < p->nops)
                sbx_error_backend(err, "local", "sandbox set-up: %s %s '%s': %s", step,
                                  pb_op_name(p->ops[i].type), p->pool + p->ops[i].dst,
                                  strerror(r->err));
        else
                sbx_error_backend(err, "local", "sandbox set-up: %s: %s", step, strerror(r->err));
}

/* The writable paths as the sandbox sees them. */
json_t *
nsbox_plan_writable(const struct nsinit_plan *p)
{
        json_t *a = json_array();

        for (uint32_t i = 0; i < p->nrw; i++)
                json_array_append_new(a, json_string(p->pool + p->rw[i]));
        return a;
}
