/* docker_user.c — who a sandbox's container runs as.
 *
 * Without user-namespace remapping, root in a container is host root: its per-uid kernel
 * counters (inotify instances, …) are host root's, files it makes in a bind are root's, and a
 * kernel bug reachable from the container is reached as root. So for an owner that is neither
 * root nor the daemon's own uid the container — its agent, every exec, the file helpers — runs
 * as the owner's uid, gid and groups, with no capabilities at all (no-new-privileges keeps a
 * setuid binary of the image from getting them back), unless dockerd remaps users (GET /info:
 * SecurityOptions "name=userns" or "name=rootless") or the operator lists the owner in
 * root_users / root_groups. Such an owner gets its home as a tmpfs of its own, and its
 * working directory (the home unless the spec names one) owned by it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/docker/docker_int.h"
#include "policy/policy.h"

struct docker_owner {
        unsigned uid, gid;
        json_t *groups; /* supplementary gids, as strings (GroupAdd) */
        char *home;
        bool unprivileged, root_allowed;
        char *spec_user;        /* docker.user, NULL when not given */
        const char *spec_field; /* a docker.host_config field such an owner may not set */
        char *workdir;          /* the spec's, NULL when not given */
        json_t *give; /* [[dir, entry]]: a PUT archive at dir of a directory entry, each */
        void (*adopted)(struct docker_create *c); /* adopt: how it goes on */
};

/* HostConfig fields that hand a process privileges beyond its uid's: the daemon sets them for
 * an owner that runs as itself, a spec may not. */
static const char *const docker_user_fields[] = {"CapAdd", "GroupAdd", NULL};

/* Where a tmpfs home would hide or break what the container needs. */
static const char *const docker_system_dirs[] = {"/proc", "/sys",     "/dev",  "/etc",
                                                 "/usr",  "/bin",     "/sbin", "/lib",
                                                 "/run",  "/var/run", "/tmp",  NULL};

bool
docker_user_unprivileged(const struct backend_identity *owner)
{
        return owner && owner->uid != 0 && owner->uid != geteuid();
}

/* Whether path is prefix or below it. */
static bool
docker_path_under(const char *path, const char *prefix)
{
        size_t n = strlen(prefix);

        while (n > 1 && prefix[n - 1] == '/')
                n--;
        if (n == 1 && prefix[0] == '/')
                return true;
        return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Whether path is a mount target of hc (Mounts, Binds, Tmpfs) or below one. */
static bool
docker_on_mount(json_t *hc, const char *path)
{
        json_t *m;
        const char *k;
        size_t i;

        json_array_foreach(json_object_get(hc, "Mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Target"));
                if (t && docker_path_under(path, t))
                        return true;
        }
        json_array_foreach(json_object_get(hc, "Binds"), i, m)
        {
                const char *b = json_string_value(m), *c1 = b ? strchr(b, ':') : NULL;
                char *dst = c1 ? xstrndup(c1 + 1, strcspn(c1 + 1, ":")) : NULL;
                bool hit = dst && *dst && docker_path_under(path, dst);
                free(dst);
                if (hit)
                        return true;
        }
        json_object_foreach(json_object_get(hc, "Tmpfs"), k, m)
        {
                if (docker_path_under(path, k))
                        return true;
        }
        return false;
}

/* Records the owner and what the spec asks about users (spec is only valid now). */
void
docker_user_note(struct docker_create *c, const struct sandbox_spec *spec)
{
        struct docker_owner *o = xcalloc(1, sizeof(*o));
        const struct backend_identity *who = spec->owner;
        json_t *hc = json_object_get(spec->section, "host_config");
        const char *user = json_string_value(json_object_get(spec->section, "user"));
        const char *k;
        json_t *v;

        c->owner = o;
        o->groups = json_array();
        o->give = json_array();
        o->unprivileged = docker_user_unprivileged(who);
        o->spec_user = user ? xstrdup(user) : NULL;
        o->workdir = spec->workdir ? xstrdup(spec->workdir) : NULL;
        /* null and [] ask for nothing; any spelling Docker would read counts */
        json_object_foreach(hc, k, v) for (const char *const *f = docker_user_fields; *f; f++)
        {
                bool empty = json_is_null(v) || (json_is_array(v) && !json_array_size(v));
                if (!strcasecmp(k, *f) && !empty && !o->spec_field)
                        o->spec_field = *f;
        }
        if (!who)
                return;
        o->uid = (unsigned) who->uid;
        o->gid = (unsigned) who->gid;
        o->home = who->home ? xstrdup(who->home) : NULL;
        for (size_t i = 0; i < who->ngroups; i++)
                if (who->groups[i] != who->gid)
                        json_array_append_new(o->groups, json_sprintf("%u", who->groups[i]));
        o->root_allowed = o->unprivileged &&
                          backend_identity_listed(docker.root_users, docker.root_groups, who);
}

void
docker_user_free(struct docker_create *c)
{
        if (!c->owner)
                return;
        json_decref(c->owner->groups);
        json_decref(c->owner->give);
        free(c->owner->home);
        free(c->owner->spec_user);
        free(c->owner->workdir);
        free(c->owner);
        c->owner = NULL;
}

/* -32602 for what the spec asks that an owner running as itself may not have. */
static int
docker_user_refuse(struct docker_create *c, const char *param, const char *what)
{
        struct docker_owner *o = c->owner;

        sbx_error_param(&c->err, param,
                        "%s: uid %u is not root and this dockerd does not remap users (root in "
                        "the container would be host root), so its container runs as "
                        "%u:%u with no capabilities; leave %s out, or the operator can run "
                        "dockerd with userns-remap or list the caller in [backend.docker] "
                        "root_users / root_groups",
                        what, o->uid, o->uid, o->gid, param);
        return -EPERM;
}

/* Whether the spec's docker.user names the owner itself ("UID" or "UID:GID"). */
static bool
docker_user_is_owner(const struct docker_owner *o, const char *user)
{
        char self[64], selfg[64];

        snprintf(self, sizeof(self), "%u", o->uid);
        snprintf(selfg, sizeof(selfg), "%u:%u", o->uid, o->gid);
        return !strcmp(user, self) || !strcmp(user, selfg);
}

/* Whether the merged HostConfig still drops every capability and keeps no-new-privileges: a
 * spelling dockerd reads as on (policy_secopt_nnp), and none it reads as off or refuses (its
 * last entry wins). */
static bool
docker_user_hardened(json_t *hc)
{
        bool all = false, nnp = false, off = false;
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(hc, "CapDrop"), i, e) all =
                all || (json_is_string(e) && !strcasecmp(json_string_value(e), "ALL"));
        json_array_foreach(json_object_get(hc, "SecurityOpt"), i, e)
        {
                int b = json_is_string(e) ? policy_secopt_nnp(json_string_value(e)) : -1;
                nnp = nnp || b == 1;
                off = off || b == 0 || b == -1;
        }
        return all && nnp && !off;
}

/* The owner's home as a tmpfs of its own (when it is a path a tmpfs may cover); returns
 * whether it made one. */
static bool
docker_user_home(struct docker_create *c, json_t *hc)
{
        struct docker_owner *o = c->owner;
        json_t *tmpfs = json_object_get(hc, "Tmpfs");

        if (!o->home || o->home[0] != '/' || !o->home[1] || strstr(o->home, "/.") ||
            docker_on_mount(hc, o->home))
                return false;
        for (const char *const *d = docker_system_dirs; *d; d++)
                if (docker_path_under(o->home, *d))
                        return false;
        if (!json_is_object(tmpfs))
                json_object_set_new(hc, "Tmpfs", tmpfs = json_object());
        json_object_set_new(tmpfs, o->home,
                            json_sprintf("rw,exec,nosuid,nodev,size=%s,uid=%u,gid=%u,mode=0700",
                                         docker.tmp_size, o->uid, o->gid));
        return true;
}

/* The targets of the writable named volumes of hc: Docker makes a new volume's root root's. The
 * policy lets such an owner mount only volumes of its own (policy/container_mounts.c). */
static void
docker_user_volumes(json_t *hc, json_t *give)
{
        json_t *m;
        size_t i;

        json_array_foreach(json_object_get(hc, "Mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                const char *dst = json_string_value(json_object_get(m, "Target"));
                if (t && !strcmp(t, "volume") && dst && strcmp(dst, "/") != 0 &&
                    !json_is_true(json_object_get(m, "ReadOnly")))
                        json_array_append_new(give, json_pack("[s,s]", dst, "/"));
        }
        json_array_foreach(json_object_get(hc, "Binds"), i, m)
        {
                /* "name:/target[:opts]"; one whose source is a path is a bind */
                const char *b = json_string_value(m), *c1 = b ? strchr(b, ':') : NULL;
                const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c1 || b[0] == '/' || c1[1] != '/' || !c1[2] || (c2 && strstr(c2, "ro")))
                        continue;
                json_array_append_new(give,
                                      json_pack("[s%,s]", c1 + 1,
                                                c2 ? (size_t) (c2 - c1 - 1) : strlen(c1 + 1), "/"));
        }
}

/* Whether the owner's workdir is in the image's filesystem (an archive PUT must give it). */
static bool
docker_user_image_workdir(const struct docker_owner *o, json_t *hc)
{
        return o->workdir && strcmp(o->workdir, "/") != 0 && !docker_on_mount(hc, o->workdir);
}

/* Refuses a workdir that cannot be given: dockerd refuses an archive PUT into a read-only
 * rootfs ("container rootfs is marked read-only"), so say so before anything is made; 0 or
 * -EPERM and c->err. */
static int
docker_user_ro_workdir(struct docker_create *c, json_t *hc)
{
        struct docker_owner *o = c->owner;

        if (!docker_user_image_workdir(o, hc) ||
            !json_is_true(json_object_get(hc, "ReadonlyRootfs")))
                return 0;
        sbx_error_param(&c->err, "workdir",
                        "workdir '%s' is in the image's filesystem and "
                        "docker.host_config.ReadonlyRootfs is true: uid %u's container runs as "
                        "%u:%u and cannot be given that directory; put the workdir on a volume "
                        "or tmpfs mount (docker.host_config.Mounts, Binds or Tmpfs) or leave "
                        "ReadonlyRootfs out",
                        o->workdir, o->uid, o->uid, o->gid);
        return -EPERM;
}

/* Whether the tmpfs options opts (comma separated) set key ("uid" or "gid"). */
static bool
docker_tmpfs_sets(const char *opts, const char *key)
{
        size_t n = strlen(key);

        for (const char *p = opts; *p; p += strcspn(p, ","), p += *p == ',')
                if (!strncmp(p, key, n) && p[n] == '=')
                        return true;
        return false;
}

/* A HostConfig.Tmpfs mount at the owner's workdir is mounted only at start (an archive PUT
 * cannot reach it): its root is the owner's by the mount's own uid=/gid= options, unless the
 * spec set them. */
static void
docker_user_tmpfs_workdir(const struct docker_owner *o, json_t *hc)
{
        json_t *tmpfs = json_object_get(hc, "Tmpfs");
        const char *opts =
                o->workdir ? json_string_value(json_object_get(tmpfs, o->workdir)) : NULL;
        char more[64] = "";
        size_t n;

        if (!opts)
                return;
        if (!docker_tmpfs_sets(opts, "uid"))
                snprintf(more, sizeof(more), ",uid=%u", o->uid);
        n = strlen(more);
        if (!docker_tmpfs_sets(opts, "gid"))
                snprintf(more + n, sizeof(more) - n, ",gid=%u", o->gid);
        if (!more[0])
                return;
        /* no comma before the first option */
        json_object_set_new(tmpfs, o->workdir,
                            json_sprintf("%s%s", opts, opts[0] ? more : more + 1));
}

/* Fits c->body to an owner that runs as itself; 0, or -EPERM and c->err. */
static int
docker_user_apply(struct docker_create *c)
{
        struct docker_owner *o = c->owner;
        json_t *hc = json_object_get(c->body, "HostConfig");
        bool home;

        if (o->spec_user && !docker_user_is_owner(o, o->spec_user))
                return docker_user_refuse(c, "docker.user", "docker.user names another user");
        if (o->spec_field) {
                char param[64];
                snprintf(param, sizeof(param), "docker.host_config.%s", o->spec_field);
                return docker_user_refuse(c, param,
                                          "added capabilities or groups would be more than the "
                                          "caller has");
        }
        if (!docker_user_hardened(hc))
                return docker_user_refuse(c, "docker.host_config",
                                          "CapDrop must keep ALL and SecurityOpt "
                                          "no-new-privileges");
        if (docker_user_ro_workdir(c, hc) < 0)
                return -EPERM;
        json_object_set_new(c->body, "User", json_sprintf("%u:%u", o->uid, o->gid));
        json_object_set_new(hc, "CapAdd", json_array());
        json_object_set(hc, "GroupAdd", o->groups);
        home = docker_user_home(c, hc);
        if (!o->workdir)
                json_object_set_new(c->body, "WorkingDir", json_string(home ? o->home : "/tmp"));
        if (docker_user_image_workdir(o, hc)) {
                char *entry = xasprintf("%s/", o->workdir + strspn(o->workdir, "/"));
                json_array_append_new(o->give, json_pack("[s,s]", "/", entry));
                free(entry);
        }
        docker_user_tmpfs_workdir(o, hc);
        docker_user_volumes(hc, o->give);
        return 0;
}

/* Whether a container's Config.User may be root, with or without a group: all but a uid in
 * digits that is not 0. "" is the image's user (root for most); runc reads "00" and "+0" as
 * uid 0 (strconv.Atoi), and a name is whatever uid the image's /etc/passwd gives it. */
static bool
docker_user_is_root(const char *u)
{
        size_t n = strcspn(u, ":");

        return n == 0 || strspn(u, "0123456789") != n || strspn(u, "0") == n;
}

/* An adopted container of an owner that must run as itself, found running as root (made before
 * the daemon ran such owners as themselves) on a dockerd that does not remap: not taken back.
 * -32006 drops its record, and the start-up orphan removal removes the container. */
static void
docker_user_adopt_judge(struct docker_create *c, bool remapped)
{
        if (remapped) {
                c->owner->adopted(c);
                return;
        }
        sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                      "docker container %s of sandbox %s runs as root for uid %u, which "
                      "must run as itself on this dockerd (docs/backends/docker.md, \"Who the "
                      "container runs as\"): not re-adopted",
                      c->sb->cid, c->sb->id, c->owner->uid);
        docker_create_fail(c);
}

/* Every create and adopt asks, so that sandbox.get can say whether uid 0 in the container is
 * host root; only an owner that must run as itself needs the answer to go on. */
static void
docker_user_info_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                    const char *terr)
{
        struct docker_create *c = ctx;
        struct docker_owner *o = c->owner;
        bool need = o->unprivileged && !o->root_allowed &&
                    (!o->adopted || docker_user_is_root(c->sb->user));

        if (docker_create_cancelled(c))
                return;
        if (status != 200 && need) {
                /* Not knowing means not remapped: the owner runs as itself. */
                docker_create_fail_call(c, "ask dockerd whether it remaps users (GET /info)",
                                        status, body, terr);
                return;
        }
        c->sb->remaps = status == 200 ? docker_info_note(body) : -1;
        if (o->adopted) {
                if (need)
                        docker_user_adopt_judge(c, c->sb->remaps == 1);
                else
                        o->adopted(c);
                return;
        }
        if (need && c->sb->remaps != 1 && docker_user_apply(c) < 0) {
                docker_create_fail(c);
                return;
        }
        docker_create_image(c);
}

static void
docker_user_ask(struct docker_create *c)
{
        if (docker_call("GET", "/info", NULL, NULL, 0, NULL, docker_user_info_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
}

void
docker_user_decide(struct docker_create *c)
{
        docker_user_ask(c);
}

void
docker_user_adopt(struct docker_create *c, void (*next)(struct docker_create *c))
{
        c->owner->adopted = next;
        docker_user_ask(c);
}

static void
docker_user_chowned_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                       const char *terr)
{
        struct docker_create *c = ctx;

        if (docker_create_cancelled(c))
                return;
        if (status != 200) {
                docker_create_fail_call(c, "give the caller its working directory and volumes",
                                        status, body, terr);
                return;
        }
        docker_user_prepare(c);
}

/* Directory entries owned by the owner, one archive PUT each: dockerd makes the working
 * directory (and parents it lacks, as root) or gives an existing one to the owner, and a PUT at
 * a volume's target with the entry "/" gives its root (also under ReadonlyRootfs). Only the
 * working directory when it is in the container's own filesystem, and the owner's writable
 * volumes (docker_user_apply): never a bind. */
void
docker_user_prepare(struct docker_create *c)
{
        struct docker_owner *o = c->owner;
        json_t *next = o ? json_array_get(o->give, 0) : NULL;
        struct buf tar = {0};
        char *q, *path;

        if (!next) {
                docker_inspect_created(c);
                return;
        }
        docker_tar_dir(&tar, json_string_value(json_array_get(next, 1)), 0755, o->uid, o->gid);
        docker_tar_end(&tar);
        q = http_escape(json_string_value(json_array_get(next, 0)));
        path = xasprintf("/containers/%s/archive?path=%s", c->sb->cid, q);
        json_array_remove(o->give, 0);
        if (docker_call("PUT", path, NULL, tar.data, tar.len, "application/x-tar",
                        docker_user_chowned_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(q);
        free(path);
        buf_free(&tar);
}

void
docker_note_user(struct backend_sandbox *sb, json_t *insp)
{
        const char *u = json_string_value(json_object_get(json_object_get(insp, "Config"), "User"));

        free(sb->user);
        sb->user = xstrdup(u ? u : "");
}

const char *
docker_user_helper(const struct backend_sandbox *sb)
{
        return sb->unprivileged && sb->user ? sb->user : "0";
}

void
docker_user_details(const struct backend_sandbox *sb, json_t *d)
{
        const char *u = sb->user && *sb->user ? sb->user : "0";
        unsigned uid, gid;
        char end;
        int n = sscanf(u, "%u:%u%c", &uid, &gid, &end);

        json_object_set_new(d, "user", json_string(u));
        if (n == 1 || n == 2)
                json_object_set_new(d, "uid", json_integer(uid));
        if (n == 2)
                json_object_set_new(d, "gid", json_integer(gid));
}

/* backend_ops.check_spec: the body a create would make for spec and what docker_user_apply
 * refuses in it for an owner that runs as itself (a ReadonlyRootfs workdir, docker.user,
 * added capabilities, hardening taken out). Whether dockerd remaps is as it last said; not
 * known, the owner runs as itself, as a create that cannot ask fails. */
int
docker_check_spec(const struct sandbox_spec *spec, struct sbx_error *err)
{
        struct docker_create c = {.image =
                                          spec->image ? (char *) spec->image : docker.default_image,
                                  .preview = true};
        int r = 0;

        c.approved = json_object();
        c.body = docker_body(&c, spec, err);
        if (!c.body) {
                r = -1;
        } else {
                docker_user_note(&c, spec);
                if (c.owner->unprivileged && !c.owner->root_allowed &&
                    docker_info_remapped() != 1 && docker_user_apply(&c) < 0) {
                        sbx_error_move(err, &c.err);
                        r = -1;
                }
        }
        docker_user_free(&c);
        json_decref(c.body);
        json_decref(c.requested);
        json_decref(c.paths);
        json_decref(c.approved);
        sbx_error_clear(&c.err);
        return r;
}
