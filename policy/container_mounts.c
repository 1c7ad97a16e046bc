/* container_mounts.c — mounts are judged by what they resolve to, whatever their form: binds
 * ("src:dst:mode" strings, mount.Mount objects, the protocol's mounts), named and anonymous
 * volumes with their driver and local-driver options (as requested and as inspected), tmpfs
 * options and VolumesFrom (the other container's mounts).
 *
 * A host path is normalised and resolved with realpath() (nearest existing parent for a missing
 * tail), and both forms are matched below AND above the protected paths (mounting /var exposes
 * /var/run/docker.sock); for a caller that is neither root nor the daemon's owner it is resolved
 * as that caller could (hostpath.c), never with the daemon's rights. For such a caller no host
 * path is accepted by Docker at all: Docker mounts it with root's rights, after the check (a
 * symlink swapped in between reaches any file), and root in the container could plant set-uid
 * files in it.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "policy/container_int.h"
#include "policy/hostpath.h"
#include "protocol/util.h"

static const char *const system_paths[] = {"/etc",
                                           "/proc",
                                           "/sys",
                                           "/dev",
                                           "/boot",
                                           "/lib",
                                           "/lib32",
                                           "/lib64",
                                           "/libx32",
                                           "/usr",
                                           "/bin",
                                           "/sbin",
                                           "/root",
                                           "/run",
                                           "/var/run",
                                           "/var/lib/docker",
                                           "/var/lib/containerd",
                                           "/var/lib/kubelet",
                                           "/var/lib/containers",
                                           "/var/log",
                                           NULL};
static const char *const socket_paths[] = {"/var/run/docker.sock",
                                           "/run/docker.sock",
                                           "/run/containerd/containerd.sock",
                                           "/var/run/containerd/containerd.sock",
                                           "/run/podman/podman.sock",
                                           "/var/run/podman/podman.sock",
                                           "/run/crio/crio.sock",
                                           "/var/run/crio/crio.sock",
                                           "/run/buildkit/buildkitd.sock",
                                           "/var/run/buildkit/buildkitd.sock",
                                           "/run/dockershim.sock",
                                           "/run/user/*/docker.sock",
                                           "/run/user/*/podman/podman.sock",
                                           "/run/user/*/buildkit/buildkitd.sock",
                                           NULL};
static const char *const cred_names[] = {".ssh",           ".aws",   ".gnupg", ".kube",
                                         ".docker",        ".azure", ".netrc", ".git-credentials",
                                         ".config/gcloud", NULL};
/* Binds' mode items (moby's Linux parser), and podman's own when judging its CLI. */
static const char *const bind_modes[] = {"ro",       "rw",         "z",      "Z",         "nocopy",
                                         "shared",   "rshared",    "slave",  "rslave",    "private",
                                         "rprivate", "consistent", "cached", "delegated", NULL};
static const char *const podman_modes[] = {"O",     "U",      "copy",  "exec",  "noexec",
                                           "suid",  "nosuid", "dev",   "nodev", "bind",
                                           "rbind", "idmap",  "chown", NULL};
/* mount(8) flags a local bind or overlay volume may carry; tmpfs adds its own. */
static const char *const flag_opts[] = {
        "ro",       "rw",         "nosuid",      "suid",          "nodev",
        "dev",      "noexec",     "exec",        "sync",          "async",
        "dirsync",  "noatime",    "atime",       "nodiratime",    "diratime",
        "relatime", "norelatime", "strictatime", "nostrictatime", "nosymfollow",
        "private",  "rprivate",   "slave",       "rslave",        "shared",
        "rshared",  NULL};
static const char *const tmpfs_flags[] = {"tmpcopyup", "notmpcopyup", NULL};
static const char *const tmpfs_keys[] = {"size",      "mode", "uid",  "gid", "nr_inodes",
                                         "nr_blocks", "huge", "mpol", NULL};
static const char *const netfs_types[] = {"nfs",        "nfs4",      "cifs",  "smb",
                                          "smb3",       "ceph",      "9p",    "sshfs",
                                          "fuse.sshfs", "glusterfs", "davfs", NULL};

static bool
in_list(const char *s, const char *const *l)
{
        for (; *l; l++)
                if (!strcmp(s, *l))
                        return true;
        return false;
}

/* ---- host paths ---- */

/* The first comps '/'-components of s into out; false if s has fewer. */
static bool
prefix_comps(const char *s, size_t comps, char *out, size_t outlen)
{
        size_t k = 0, seen = 0;

        for (; s[k]; k++)
                if (s[k] == '/' && ++seen > comps)
                        break;
        if (seen < comps || k >= outlen)
                return false;
        memcpy(out, s, k);
        out[k] = '\0';
        return true;
}

static size_t
ncomps(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                n += *s == '/';
        return n;
}

/* path is pat (a glob) or lies below it. */
static bool
glob_below(const char *path, const char *pat)
{
        char pre[PATH_MAX];

        return prefix_comps(path, ncomps(pat), pre, sizeof(pre)) &&
               fnmatch(pat, pre, FNM_PATHNAME) == 0;
}

/* path is an ancestor of something pat matches. */
static bool
glob_above(const char *path, const char *pat)
{
        char pre[PATH_MAX];
        size_t c = ncomps(path);

        if (strcmp(path, "/") == 0)
                return true;
        return ncomps(pat) > c && prefix_comps(pat, c, pre, sizeof(pre)) &&
               fnmatch(pre, path, FNM_PATHNAME) == 0;
}

static bool
hits(const char *path, const char *pat)
{
        return glob_below(path, pat) || glob_above(path, pat);
}

static bool
is_cred(struct eval *ev, const char *path)
{
        for (const char *const *c = cred_names; *c; c++) {
                size_t l = strlen(*c);
                for (const char *p = strstr(path, *c); p; p = strstr(p + 1, *c))
                        if (p > path && p[-1] == '/' && (p[l] == '/' || p[l] == '\0'))
                                return true;
        }
        if (strcmp(path, "/home") == 0 || fnmatch("/home/*", path, FNM_PATHNAME) == 0)
                return true;
        if (ev->home) {
                const char *h = analyze_path(ev, ev->home);
                size_t l = strlen(path);
                if (!strncmp(h, path, l) && (h[l] == '/' || h[l] == '\0'))
                        return true;
        }
        return false;
}

/* The key of an absolute host path in policy_ctx.host_paths (new), or NULL. */
char *
policy_host_path_key(const char *path)
{
        struct eval ev;
        const char *k;
        char *out;

        if (!path || path[0] != '/')
                return NULL;
        analyze_init(&ev, NULL, NULL, strlen(path));
        k = analyze_path(&ev, path);
        out = k ? xstrdup(k) : NULL;
        analyze_free(&ev);
        return out;
}

/* A path resolved before the judgement (policy_ctx.host_paths): NULL when the caller cannot
 * reach it, or when it was not resolved (then it is wanted). */
static const char *
resolved(struct eval *ev, const char *path)
{
        json_t *v = json_object_get(ev->ctx->host_paths, path);

        if (json_is_string(v))
                return analyze_path(ev, json_string_value(v));
        if (!v && ev->ctx->host_paths_wanted)
                json_object_set_new(ev->ctx->host_paths_wanted, path, json_null());
        return NULL;
}

/* Resolves symlinks the way the kernel will when Docker mounts the (lexically cleaned) path;
 * a missing tail is kept as written (Docker creates it). For a caller the daemon must not
 * resolve paths for with its own rights (ctx->resolve_as), as that caller could: NULL when a
 * directory on the way is closed to it. */
static const char *
resolve(struct eval *ev, const char *path)
{
        char buf[PATH_MAX], tmp[PATH_MAX];
        size_t n = strlen(path);

        if (ev->ctx && ev->ctx->host_paths)
                return resolved(ev, path);
        if (ev->ctx && ev->ctx->resolve_as)
                return hostpath_resolve_as(&ev->ctx->who, path, buf, sizeof(buf)) < 0
                               ? NULL
                               : analyze_path(ev, buf);
        if (n >= sizeof(tmp))
                return path;
        memcpy(tmp, path, n + 1);
        for (size_t cut = n;;) {
                tmp[cut] = '\0';
                if (realpath(cut ? tmp : "/", buf)) {
                        const char *rest = path + cut;
                        char *out = arena_alloc(&ev->ar, strlen(buf) + strlen(rest) + 2);
                        strcpy(out, buf);
                        if (*rest && strcmp(buf, "/") != 0)
                                strcat(out, rest);
                        else if (*rest)
                                strcpy(out, rest);
                        return analyze_path(ev, out);
                }
                char *slash = strrchr(tmp, '/');
                if (!slash || slash == tmp) {
                        if (cut == 0)
                                return path;
                        cut = 0;
                        continue;
                }
                cut = (size_t) (slash - tmp);
        }
}

/* Rule id for one normalised host path, NULL when it is fine. */
static const char *
mount_rule(struct eval *ev, const char *p)
{
        const char *ws = ev->ctx ? ev->ctx->workspace : NULL;

        if (strcmp(p, "/") == 0)
                return "container.mount-root";
        for (const char *const *s = socket_paths; *s; s++)
                if (hits(p, *s))
                        return "container.mount-socket";
        for (const char *const *s = system_paths; *s; s++)
                if (hits(p, *s))
                        return "container.mount-system";
        if (ev->ctx && ev->ctx->protected_paths)
                for (const char *const *s = ev->ctx->protected_paths; *s; s++)
                        if (hits(p, analyze_path(ev, *s)))
                                return "container.mount-self";
        if (is_cred(ev, p))
                return "container.mount-credential";
        if (ws && ws[0] == '/' && glob_below(p, analyze_path(ev, ws)))
                return NULL;
        return "container.mount-host";
}

static int
severity(const char *rule)
{
        if (!rule)
                return 0;
        return builtin_find(rule)->verdict == POLICY_DENY ? 2 : 1;
}

/* The path as an absolute, lexically normalised one, or NULL (a finding was added). JSON specs
 * take absolute paths only (Docker expands nothing); the CLI's `~/x` and `./x` are resolved as
 * the shell and the docker CLI would. */
static const char *
host_path_abs(struct cjudge *j, const char *param, const char *src)
{
        struct eval *ev = j->ev;

        if (!src || !*src) {
                cj_invalid(j, param, "empty host path");
                return NULL;
        }
        if (src[0] == '/')
                return analyze_path(ev, src);
        if (!j->cli) {
                cj_invalid(j, param, "'%s' is not an absolute host path", src);
                return NULL;
        }
        if (src[0] == '~' && (src[1] == '\0' || src[1] == '/') && ev->home)
                return analyze_path(ev, cj_fmt(j, "%s%s", ev->home, src + 1));
        if (src[0] == '.' && ev->cwd)
                return analyze_path(ev, src);
        /* ~user, a relative or Windows path, an unknown cwd: it could be any host path. */
        cj_add(j, "container.mount-unresolved", src);
        return NULL;
}

/* Judges a host path that will show inside the container. */
void
mount_host_path(struct cjudge *j, const char *param, const char *src)
{
        struct eval *ev = j->ev;
        const char *lex, *res, *r1, *r2, *r;

        ev->host_access = true;
        if (j->unprivileged) {
                /* Nothing is resolved for such a caller: the answer would tell what lies in
                 * directories it may not read. */
                cj_add(j, "container.mount-unprivileged", src && *src ? src : param);
                return;
        }
        if (!(lex = host_path_abs(j, param, src)))
                return;
        if (!(res = resolve(ev, lex))) {
                /* It may be any path: the caller cannot say where it leads, nor can we. */
                cj_add(j, "container.mount-unresolved", lex);
                return;
        }
        r1 = mount_rule(ev, lex);
        r2 = mount_rule(ev, res);
        r = severity(r2) > severity(r1) ? r2 : r1;
        if (r)
                cj_add(j, r, strcmp(lex, res) ? res : lex);
}

/* ---- volumes ---- */

/* Docker's name rule for volumes and containers. */
bool
policy_container_name_ok(const char *name)
{
        return mount_volume_name_ok(name);
}

/* Docker's local volume name rule. */
bool
mount_volume_name_ok(const char *name)
{
        static const char alnum[] =
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        size_t n = strlen(name);

        return n >= 2 && n <= 255 && strchr(alnum, name[0]) &&
               strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
                       n;
}

/* An absolute container path. */
bool
mount_target_ok(const char *target)
{
        return target && target[0] == '/' && strlen(target) < PATH_MAX;
}

/* One item of a comma list as "key" and "value" (NULL without '='). */
static const char *
item_key(struct cjudge *j, const char *item, const char **val)
{
        const char *eq = strchr(item, '=');

        *val = eq ? eq + 1 : NULL;
        return eq ? arena_strndup(&j->ev->ar, item, (size_t) (eq - item)) : item;
}

/* One tmpfs option. */
bool
mount_tmpfs_option_ok(const char *opt)
{
        const char *eq = strchr(opt, '=');

        if (!eq)
                return in_list(opt, flag_opts) || in_list(opt, tmpfs_flags);
        for (const char *const *k = tmpfs_keys; *k; k++)
                if (strlen(*k) == (size_t) (eq - opt) && !strncmp(opt, *k, (size_t) (eq - opt)))
                        return eq[1] != '\0' && !strpbrk(eq + 1, ",\\");
        return false;
}

/* Each comma-separated item passes ok(); the first one that does not is reported. */
static bool
items_ok(struct cjudge *j, const char *list, bool (*ok)(struct cjudge *, const char *))
{
        char *dup = arena_strdup(&j->ev->ar, list), *save = NULL;

        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
                if (!ok(j, t)) {
                        cj_add(j, "container.volume-option", t);
                        return false;
                }
        return true;
}

static bool
tmpfs_item_ok(struct cjudge *j, const char *t)
{
        return mount_tmpfs_option_ok(t);
}

static bool
bind_item_ok(struct cjudge *j, const char *t)
{
        if (!strcmp(t, "shared") || !strcmp(t, "rshared"))
                cj_add(j, "container.propagation", t);
        return !strcmp(t, "bind") || !strcmp(t, "rbind") || in_list(t, flag_opts);
}

static bool
has_item(const char *list, const char *want, bool prefix)
{
        size_t n = strlen(want);

        for (const char *p = list; p && *p;) {
                size_t l = strcspn(p, ",");
                if ((l == n || (prefix && l > n && p[n] == '=')) && !strncmp(p, want, n))
                        return true;
                p += l + (p[l] == ',');
        }
        return false;
}

/* A directory list of overlay ("a:b"): every member a non-empty path. */
static bool
overlay_dirs_ok(const char *v)
{
        size_t n = strlen(v);

        return n && v[0] != ':' && v[n - 1] != ':' && !strstr(v, "::");
}

/* overlay: lowerdir=a:b, upperdir=x and workdir=y are host paths; an overlay without a
 * lowerdir, or with an empty directory in a list, is not judged (the kernel's reading of it
 * is not ours to guess) and refused. */
static void
overlay_opts(struct cjudge *j, const char *param, const char *o)
{
        char *dup = arena_strdup(&j->ev->ar, o ? o : ""), *save = NULL;
        bool lower = false;

        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                const char *v, *k = item_key(j, t, &v);
                if (strchr(t, '\\') ||
                    (v && strcmp(k, "lowerdir") && strcmp(k, "upperdir") && strcmp(k, "workdir") &&
                     strcmp(k, "index") && strcmp(k, "xino") && strcmp(k, "metacopy") &&
                     strcmp(k, "redirect_dir")) ||
                    (!v && !in_list(k, flag_opts) && strcmp(k, "volatile") &&
                     strcmp(k, "userxattr"))) {
                        cj_add(j, "container.volume-option", t);
                        continue;
                }
                if (!v || (strcmp(k, "lowerdir") && strcmp(k, "upperdir") && strcmp(k, "workdir")))
                        continue;
                if (!overlay_dirs_ok(v)) {
                        cj_add(j, "container.volume-option", t);
                        continue;
                }
                lower |= !strcmp(k, "lowerdir");
                char *dirs = arena_strdup(&j->ev->ar, v), *s2 = NULL;
                for (char *d = strtok_r(dirs, ":", &s2); d; d = strtok_r(NULL, ":", &s2))
                        mount_host_path(j, cj_fmt(j, "%s.o.%s", param, k), d);
        }
        if (!lower)
                cj_add(j, "container.volume-option", "overlay without lowerdir");
}

/* The local driver's options: only a plain volume, tmpfs, a bind (judged as one) and overlay
 * (its directories judged) are accepted; a filesystem on a device or a network share is not. */
static void
local_opts(struct cjudge *j, const char *param, json_t *opts)
{
        static const char *const keys[] = {"type", "o", "device", "size", NULL};
        const char *k, *type, *o, *dev;
        json_t *v;

        json_object_foreach(opts, k, v)
        {
                if (!in_list(k, keys))
                        cj_add(j, "container.volume-option", k);
                else if (!json_is_string(v))
                        cj_invalid(j, cj_fmt(j, "%s.%s", param, k), "must be a string");
        }
        type = json_string_value(json_object_get(opts, "type"));
        o = json_string_value(json_object_get(opts, "o"));
        dev = json_string_value(json_object_get(opts, "device"));
        if (!type && !o && !dev)
                return;
        if ((type && in_list(type, netfs_types)) || has_item(o, "addr", true)) {
                cj_add(j, "container.volume-netfs", type ? type : o);
        } else if (type && !strcmp(type, "tmpfs")) {
                if (dev && strcmp(dev, "tmpfs") != 0)
                        cj_add(j, "container.volume-option", cj_fmt(j, "device=%s", dev));
                if (o)
                        items_ok(j, o, tmpfs_item_ok);
        } else if (has_item(o, "bind", false) || has_item(o, "rbind", false) ||
                   (type && !strcmp(type, "none"))) {
                if (o)
                        items_ok(j, o, bind_item_ok);
                mount_host_path(j, cj_fmt(j, "%s.device", param), dev);
        } else if (type && !strcmp(type, "overlay")) {
                overlay_opts(j, param, o);
        } else {
                j->ev->host_access = true;
                cj_add(j, "container.volume-device", dev ? dev : type ? type : o);
        }
}

/* A volume with its driver and options. */
void
mount_volume(struct cjudge *j, const char *param, const char *name, const char *driver,
             json_t *opts)
{
        const char *drivers = j->ev->ctx ? j->ev->ctx->volume_drivers : NULL;

        if (driver && *driver && strcmp(driver, "local") != 0) {
                if (cj_listed(drivers, driver))
                        j->ev->host_access = true; /* accepted unchecked: assume the worst */
                else
                        cj_add(j, "container.volume-driver",
                               cj_fmt(j, "%s%s%s", driver, name ? " " : "", name ? name : ""));
                return;
        }
        if (json_is_null(opts) || !opts)
                return;
        if (!json_is_object(opts)) {
                cj_invalid(j, param, "driver options must be an object of strings");
                return;
        }
        local_opts(j, param, opts);
}

/* A named volume: as it exists (Docker uses it as it is) and as requested (Docker creates it
 * so when it does not exist). */
static void
volume_named(struct cjudge *j, const char *param, const char *name, const char *driver,
             json_t *opts)
{
        json_t *v = json_object_get(j->volumes, name);

        const char *owner =
                json_string_value(json_object_get(json_object_get(v, "Labels"), "sandboxd.owner"));

        /* Another user's volume is refused as such: what it is made of is not theirs to
         * learn from the findings. */
        if (v && j->unprivileged && (!owner || strcmp(owner, cj_fmt(j, "%u", j->uid)) != 0))
                cj_add(j, "container.volume-foreign", name);
        else if (v)
                mount_volume(j, cj_fmt(j, "%s (volume %s as it exists)", param, name), name,
                             json_string_value(json_object_get(v, "Driver")),
                             json_object_get(v, "Options"));
        mount_volume(j, param, name, driver, opts);
}

/* ---- Binds ---- */

static bool
mode_ok(struct cjudge *j, const char *mode)
{
        char *dup = arena_strdup(&j->ev->ar, mode), *save = NULL;

        if (!*mode)
                return false;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
                if (!in_list(t, bind_modes) && !(j->cli && in_list(t, podman_modes)) &&
                    !(j->cli && !strncmp(t, "idmap=", 6)))
                        return false;
        return true;
}

/* "src:dst[:mode]", "dst" (an anonymous volume), as moby's Linux parser splits them. */
static void
bind_one(struct cjudge *j, const char *param, json_t *e, const char *driver)
{
        const char *b = json_string_value(e);
        char *dup = arena_strdup(&j->ev->ar, b ? b : ""), *parts[4] = {0};
        size_t n = 0;

        if (j->cli && b && isalpha((unsigned char) b[0]) && b[1] == ':' &&
            (b[2] == '\\' || b[2] == '/')) {
                /* C:\… or C:/…: a Windows host path (Docker Desktop), any host path here */
                cj_add(j, "container.mount-unresolved", b);
                return;
        }

        for (char *p = dup; p && n < 4; n++) {
                parts[n] = p;
                if ((p = strchr(p, ':')))
                        *p++ = '\0';
        }
        const char *src = n >= 2 ? parts[0] : NULL, *dst = n >= 2 ? parts[1] : parts[0];
        if (n > 3 || !*parts[0] || (n == 2 && mode_ok(j, parts[1])) ||
            (n == 3 && !mode_ok(j, parts[2])) || !mount_target_ok(dst)) {
                cj_invalid(j, param, "'%s' is not \"src:dst[:mode]\" with an absolute dst", b);
                return;
        }
        if (n == 3 && (has_item(parts[2], "shared", false) || has_item(parts[2], "rshared", false)))
                cj_add(j, "container.propagation", b);
        if (!src)
                mount_volume(j, param, NULL, driver, NULL);
        else if (src[0] == '/' || (j->cli && (src[0] == '~' || src[0] == '.')))
                mount_host_path(j, param, src);
        else if (mount_volume_name_ok(src))
                volume_named(j, param, src, driver, NULL);
        else if (j->cli)
                cj_add(j, "container.mount-unresolved", src);
        else
                cj_invalid(j, param, "'%s' is neither an absolute host path nor a volume name",
                           src);
}

typedef void (*mount_fn)(struct cjudge *j, const char *param, json_t *e, const char *driver);

/* Calls fn for each entry of a mount list (an array of at most CONTAINER_MAX_MOUNTS). */
static void
mount_each(struct cjudge *j, const char *param, json_t *list, mount_fn fn, const char *driver)
{
        json_t *e;
        size_t i;

        if (list && !json_is_array(list) && !json_is_null(list)) {
                cj_invalid(j, param, "must be an array");
                return;
        }
        if (json_array_size(list) > CONTAINER_MAX_MOUNTS) {
                cj_invalid(j, param, "more than %d entries", CONTAINER_MAX_MOUNTS);
                return;
        }
        json_array_foreach(list, i, e) fn(j, cj_fmt(j, "%s[%zu]", param, i), e, driver);
}

/* HostConfig.Binds. */
void
mount_binds(struct cjudge *j, const char *param, json_t *binds, const char *driver)
{
        mount_each(j, param, binds, bind_one, driver);
}

/* ---- mount.Mount objects ---- */

static void
api_bind(struct cjudge *j, const char *param, json_t *m)
{
        static const char *const names[] = {
                "Propagation",          "NonRecursive",           "CreateMountpoint",
                "ReadOnlyNonRecursive", "ReadOnlyForceRecursive", NULL};
        static const char *const props[] = {"",       "private", "rprivate", "slave",
                                            "rslave", "shared",  "rshared",  NULL};
        json_t *bo = json_object_get(m, "BindOptions");
        const char *k, *prop;
        json_t *v;

        if (json_object_get(m, "VolumeOptions") || json_object_get(m, "TmpfsOptions")) {
                cj_invalid(j, param, "a bind mount takes BindOptions only");
                return;
        }
        if (bo && cj_object_ok(j, cj_fmt(j, "%s.BindOptions", param), bo, names, NULL)) {
                json_object_foreach(bo, k, v) if (strcmp(k, "Propagation") && !json_is_boolean(v))
                        cj_invalid(j, cj_fmt(j, "%s.BindOptions.%s", param, k),
                                   "must be a boolean");
                prop = json_string_value(json_object_get(bo, "Propagation"));
                if (json_object_get(bo, "Propagation") && (!prop || !in_list(prop, props)))
                        cj_invalid(j, cj_fmt(j, "%s.BindOptions.Propagation", param),
                                   "not a propagation mode");
                else if (prop && (!strcmp(prop, "shared") || !strcmp(prop, "rshared")))
                        cj_add(j, "container.propagation", prop);
        }
        mount_host_path(j, cj_fmt(j, "%s.Source", param),
                        json_string_value(json_object_get(m, "Source")));
}

/* VolumeOptions {NoCopy, Labels, Subpath, DriverConfig {Name, Options}}. */
static void
api_volume(struct cjudge *j, const char *param, json_t *m, const char *driver)
{
        static const char *const names[] = {"NoCopy", "Labels", "Subpath", "DriverConfig", NULL};
        static const char *const dnames[] = {"Name", "Options", NULL};
        json_t *vo = json_object_get(m, "VolumeOptions"), *dc = json_object_get(vo, "DriverConfig");
        const char *src = json_string_value(json_object_get(m, "Source"));
        const char *sub = json_string_value(json_object_get(vo, "Subpath")), *k;
        const char *p = cj_fmt(j, "%s.VolumeOptions", param);
        json_t *v;

        if (json_object_get(m, "BindOptions") || json_object_get(m, "TmpfsOptions")) {
                cj_invalid(j, param, "a volume mount takes VolumeOptions only");
                return;
        }
        if (vo && !cj_object_ok(j, p, vo, names, NULL))
                return;
        if ((json_object_get(vo, "NoCopy") && !json_is_boolean(json_object_get(vo, "NoCopy"))) ||
            (json_object_get(vo, "Labels") && !json_is_object(json_object_get(vo, "Labels"))) ||
            (json_object_get(vo, "Subpath") && !sub) ||
            (json_object_get(dc, "Name") && !json_is_string(json_object_get(dc, "Name")))) {
                cj_invalid(j, p,
                           "NoCopy is a boolean, Labels an object, Subpath and "
                           "DriverConfig.Name strings");
                return;
        }
        json_object_foreach(json_object_get(vo, "Labels"), k, v) if (!strncmp(k, "sandboxd.", 9))
                cj_invalid(j, cj_fmt(j, "%s.Labels.%s", p, k),
                           "sandboxd.* labels are the daemon's");
        if (sub &&
            (sub[0] == '/' || !strcmp(sub, "..") || !strncmp(sub, "../", 3) ||
             strstr(sub, "/../") || (strlen(sub) >= 3 && !strcmp(sub + strlen(sub) - 3, "/.."))))
                cj_invalid(j, cj_fmt(j, "%s.Subpath", p), "must stay inside the volume");
        if (dc && !cj_object_ok(j, cj_fmt(j, "%s.DriverConfig", p), dc, dnames, NULL))
                return;
        if (json_object_get(dc, "Name"))
                driver = json_string_value(json_object_get(dc, "Name"));
        if (src && *src && !mount_volume_name_ok(src))
                cj_invalid(j, cj_fmt(j, "%s.Source", param), "'%s' is not a volume name", src);
        else if (src && *src)
                volume_named(j, param, src, driver, json_object_get(dc, "Options"));
        else
                mount_volume(j, cj_fmt(j, "%s.DriverConfig.Options", p), NULL, driver,
                             json_object_get(dc, "Options"));
}

/* TmpfsOptions {SizeBytes, Mode, Options [[flag] | [key, value]]}. */
static void
api_tmpfs(struct cjudge *j, const char *param, json_t *m)
{
        static const char *const names[] = {"SizeBytes", "Mode", "Options", NULL};
        json_t *to = json_object_get(m, "TmpfsOptions"), *o;
        const char *src = json_string_value(json_object_get(m, "Source"));
        size_t i;

        if ((src && *src) || json_object_get(m, "BindOptions") ||
            json_object_get(m, "VolumeOptions")) {
                cj_invalid(j, param, "a tmpfs mount takes no Source and TmpfsOptions only");
                return;
        }
        if (!to || !cj_object_ok(j, cj_fmt(j, "%s.TmpfsOptions", param), to, names, NULL))
                return;
        if ((json_object_get(to, "SizeBytes") &&
             !json_is_integer(json_object_get(to, "SizeBytes"))) ||
            (json_object_get(to, "Mode") && !json_is_integer(json_object_get(to, "Mode")))) {
                cj_invalid(j, cj_fmt(j, "%s.TmpfsOptions", param),
                           "SizeBytes and Mode are integers");
                return;
        }
        json_array_foreach(json_object_get(to, "Options"), i, o)
        {
                const char *k = json_string_value(json_array_get(o, 0));
                const char *v = json_string_value(json_array_get(o, 1));
                if (!k || json_array_size(o) > 2 || (json_array_size(o) == 2 && !v))
                        cj_invalid(j, cj_fmt(j, "%s.TmpfsOptions.Options[%zu]", param, i),
                                   "must be [flag] or [key, value]");
                else if (!mount_tmpfs_option_ok(v ? cj_fmt(j, "%s=%s", k, v) : k))
                        cj_add(j, "container.volume-option", k);
        }
}

static void
api_one(struct cjudge *j, const char *param, json_t *m, const char *driver)
{
        static const char *const names[] = {
                "Type",        "Source",        "Target",       "ReadOnly",     "Consistency",
                "BindOptions", "VolumeOptions", "TmpfsOptions", "ImageOptions", "ClusterOptions",
                NULL};
        static const char *const cons[] = {"",       "default",   "consistent",
                                           "cached", "delegated", NULL};
        const char *type = json_string_value(json_object_get(m, "Type"));
        const char *cons_v = json_string_value(json_object_get(m, "Consistency"));
        json_t *src = json_object_get(m, "Source");

        if (!cj_object_ok(j, param, m, names, NULL))
                return;
        if (!type || !*type || (src && !json_is_string(src)) ||
            !mount_target_ok(json_string_value(json_object_get(m, "Target"))) ||
            (json_object_get(m, "ReadOnly") && !json_is_boolean(json_object_get(m, "ReadOnly"))) ||
            (json_object_get(m, "Consistency") && (!cons_v || !in_list(cons_v, cons)))) {
                cj_invalid(j, param,
                           "needs a Type, a string Source, an absolute Target, a "
                           "boolean ReadOnly and a known Consistency");
        } else if (!strcmp(type, "bind")) {
                api_bind(j, param, m);
        } else if (!strcmp(type, "volume")) {
                api_volume(j, param, m, driver);
        } else if (!strcmp(type, "tmpfs")) {
                api_tmpfs(j, param, m);
        } else {
                /* npipe (a host named pipe), image, cluster: not accepted. */
                j->ev->host_access = true;
                cj_add(j, "container.mount-type", type);
        }
}

/* HostConfig.Mounts. */
void
mount_api(struct cjudge *j, const char *param, json_t *mounts, const char *driver)
{
        mount_each(j, param, mounts, api_one, driver);
}

/* ---- the protocol's mounts ---- */

static void
protocol_one(struct cjudge *j, const char *param, json_t *m, const char *driver)
{
        static const char *const names[] = {"type", "source", "target", "readonly", NULL};
        const char *type = json_string_value(json_object_get(m, "type"));
        json_t *src = json_object_get(m, "source"), *ro = json_object_get(m, "readonly");

        if (!cj_object_ok(j, param, m, names, NULL))
                return;
        if (!type || (src && !json_is_string(src)) || (ro && !json_is_boolean(ro)) ||
            !mount_target_ok(json_string_value(json_object_get(m, "target")))) {
                cj_invalid(j, param,
                           "needs a type, a string source, an absolute target and a "
                           "boolean readonly");
        } else if (!strcmp(type, "bind")) {
                mount_host_path(j, cj_fmt(j, "%s.source", param), json_string_value(src));
        } else if (!strcmp(type, "volume")) {
                if (!json_string_value(src) || !mount_volume_name_ok(json_string_value(src)))
                        cj_invalid(j, cj_fmt(j, "%s.source", param), "needs a volume name");
                else
                        volume_named(j, param, json_string_value(src), NULL, NULL);
        } else if (!strcmp(type, "tmpfs")) {
                if (src && json_string_length(src))
                        cj_invalid(j, cj_fmt(j, "%s.source", param), "a tmpfs has no source");
        } else {
                cj_invalid(j, cj_fmt(j, "%s.type", param), "'%s' is not bind, volume or tmpfs",
                           type);
        }
}

/* The protocol's mounts. */
void
mount_protocol(struct cjudge *j, const char *param, json_t *mounts)
{
        mount_each(j, param, mounts, protocol_one, NULL);
}

/* ---- tmpfs, VolumesFrom ---- */

/* HostConfig.Tmpfs. */
void
mount_tmpfs_map(struct cjudge *j, const char *param, json_t *tmpfs)
{
        const char *path;
        json_t *v;

        json_object_foreach(tmpfs, path, v)
        {
                if (!mount_target_ok(path))
                        cj_invalid(j, cj_fmt(j, "%s.%s", param, path), "must be an absolute path");
                else if (*json_string_value(v))
                        items_ok(j, json_string_value(v), tmpfs_item_ok);
        }
}

/* A volume of the other container: it must have been inspected too (its options decide). */
static void
from_volume(struct cjudge *j, const char *param, json_t *m)
{
        const char *name = json_string_value(json_object_get(m, "Name"));

        if (!name || !json_object_get(j->volumes, name)) {
                cj_add(j, j->cli ? "container.cli-unknown" : "container.volumes-from",
                       cj_fmt(j, "%s: volume %s (not inspected)", param, name ? name : "?"));
                return;
        }
        volume_named(j, param, name, json_string_value(json_object_get(m, "Driver")), NULL);
}

/* The other container's mounts, as it has them. */
static void
from_one(struct cjudge *j, const char *param, const char *name, json_t *c)
{
        const char *owner = json_string_value(json_object_get(
                json_object_get(json_object_get(c, "Config"), "Labels"), "sandboxd.owner"));
        json_t *m;
        size_t i;

        if (!c) {
                if (j->cli)
                        cj_add(j, "container.cli-unknown", cj_fmt(j, "--volumes-from %s", name));
                else
                        cj_add(j, "container.volumes-from", cj_fmt(j, "%s (not inspected)", name));
                return;
        }
        if (j->unprivileged && (!owner || strcmp(owner, cj_fmt(j, "%u", j->uid)) != 0)) {
                cj_add(j, "container.volumes-from", cj_fmt(j, "%s (another user's)", name));
                return;
        }
        json_array_foreach(json_object_get(c, "Mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                const char *p = cj_fmt(j, "%s (%s's mount %zu)", param, name, i);
                if (t && !strcmp(t, "bind"))
                        mount_host_path(j, p, json_string_value(json_object_get(m, "Source")));
                else if (t && !strcmp(t, "volume"))
                        from_volume(j, p, m);
                else if (!t || strcmp(t, "tmpfs") != 0)
                        cj_add(j, "container.mount-type", t ? t : "(none)");
        }
}

/* HostConfig.VolumesFrom: "name[:ro|rw]". */
void
mount_volumes_from(struct cjudge *j, const char *param, json_t *from)
{
        static const char *const modes[] = {"ro", "rw", "z", "Z", NULL};
        json_t *e;
        size_t i;

        if (json_array_size(from) > CONTAINER_MAX_FROM) {
                cj_invalid(j, param, "more than %d entries", CONTAINER_MAX_FROM);
                return;
        }
        json_array_foreach(from, i, e)
        {
                const char *s = json_string_value(e), *p = cj_fmt(j, "%s[%zu]", param, i);
                char *name = arena_strndup(&j->ev->ar, s, strcspn(s, ":"));
                const char *mode = s[strlen(name)] ? s + strlen(name) + 1 : "ro";
                const char *bare = name[0] == '/' ? name + 1 : name;
                j->ev->host_access = true;
                if (!mount_volume_name_ok(bare) || !in_list(mode, modes)) {
                        cj_invalid(j, p, "'%s' is not \"container[:ro|rw]\"", s);
                        continue;
                }
                from_one(j, p, bare, json_object_get(j->containers, bare));
        }
}
