/* paths.c — paths as the kernel resolves them, and the rules about what may be written.
 *
 * A path is normalised lexically against the tracked cwd and home: "//", "/./", "..",
 * /proc/PID/root (the process's root, "/" for ours), /proc/self/cwd, and symlinks the same
 * command created earlier (ln -sf ~/.bashrc x; echo … > x writes ~/.bashrc). Above an unknown
 * home is "~/.." (an ancestor of the home directory). Devices are recognised by any name the
 * kernel gives them: /dev/sda, /dev/root, /dev/mapper/..., /dev/VG/LV, /dev/block/M:N,
 * /dev/disk/by-*, and the block-device trees of /sys.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

static bool
streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static bool
starts(const char *s, const char *pre)
{
        return strncmp(s, pre, strlen(pre)) == 0;
}

/* Whether path equals dir or lies below it. */
bool
paths_below(const char *path, const char *dir)
{
        size_t l = strlen(dir);

        if (streq(dir, "/"))
                return path[0] == '/';
        return !strncmp(path, dir, l) && (path[l] == '\0' || path[l] == '/');
}

/* Lexical normalisation of an absolute or "~"-based path (arena). */
static const char *
norm(struct eval *ev, const char *s)
{
        size_t n = strlen(s);
        char *out = arena_alloc(&ev->ar, n + 8);
        size_t o = 0, floor = 0; /* out[0..floor) cannot be popped */
        const char *p = s;

        if (s[0] == '~') {
                out[o++] = '~';
                floor = 1;
                p++;
        }
        while (*p) {
                while (*p == '/')
                        p++;
                size_t l = strcspn(p, "/");
                if (l == 0)
                        break;
                bool dot = l == 1 && p[0] == '.', dotdot = l == 2 && p[0] == '.' && p[1] == '.';
                if (dotdot && o > floor) {
                        while (o > floor && out[o - 1] != '/')
                                o--;
                        if (o > floor)
                                o--;
                } else if (dotdot && floor == 1) {
                        /* above an unknown home: keep the "..", nothing below it pops it */
                        memcpy(out + o, "/..", 3);
                        o += 3;
                        floor = o;
                } else if (!dot && !dotdot) {
                        out[o++] = '/';
                        memcpy(out + o, p, l);
                        o += l;
                }
                p += l;
        }
        if (o == 0)
                out[o++] = '/';
        out[o] = '\0';
        return out;
}

/* /proc/PID/root/X is X (every process here shares our root); /proc/self/cwd/X is cwd/X. */
static const char *
proc_magic(struct eval *ev, const char *p, bool *unknown)
{
        if (!starts(p, "/proc/"))
                return p;
        const char *q = p + 6;
        size_t l = strcspn(q, "/");
        bool self =
                (l == 4 && !strncmp(q, "self", 4)) || (l == 11 && !strncmp(q, "thread-self", 11));
        bool pid = l > 0 && strspn(q, "0123456789") == l;
        bool glob = l > 0 && strcspn(q, "*?[") < l;
        const char *rest = q + l;

        if (!(self || pid || glob))
                return p;
        if (starts(rest, "/root") && (rest[5] == '\0' || rest[5] == '/'))
                return norm(ev, rest[5] ? rest + 5 : "/");
        if (starts(rest, "/cwd") && (rest[4] == '\0' || rest[4] == '/')) {
                if (!self || !ev->cwd) {
                        *unknown = true;
                        return NULL;
                }
                size_t n = strlen(ev->cwd) + strlen(rest) + 2;
                char *j = arena_alloc(&ev->ar, n);
                snprintf(j, n, "%s/%s", ev->cwd, rest + 4);
                return norm(ev, j);
        }
        return p;
}

/* The path with earlier symlinks of this command followed (at most 8 hops). */
static const char *
follow_links(struct eval *ev, const char *p)
{
        for (int hop = 0; hop < 8; hop++) {
                const struct link *hit = NULL;
                for (size_t j = 0; j < ev->nlinks && !hit; j++)
                        if (paths_below(p, ev->links[j].path))
                                hit = &ev->links[j];
                if (!hit)
                        return p;
                const char *rest = p + strlen(hit->path);
                size_t n = strlen(hit->target) + strlen(rest) + 2;
                char *j = arena_alloc(&ev->ar, n);
                snprintf(j, n, "%s/%s", hit->target, rest);
                p = norm(ev, j);
        }
        return p;
}

/* Normalised absolute path for s, or NULL. */
const char *
paths_resolve(struct eval *ev, const char *s)
{
        const char *p;
        bool unknown = false;

        if (!s || !*s)
                return NULL;
        if (s[0] == '/' || s[0] == '~') {
                p = norm(ev, s);
        } else {
                if (!ev->cwd)
                        return NULL;
                size_t n = strlen(ev->cwd) + strlen(s) + 2;
                char *j = arena_alloc(&ev->ar, n);
                snprintf(j, n, "%s/%s", ev->cwd, s);
                p = norm(ev, j);
        }
        for (int round = 0; round < 4 && p; round++) {
                const char *q = follow_links(ev, proc_magic(ev, p, &unknown));
                if (unknown)
                        return NULL;
                if (q == p)
                        break;
                p = q;
        }
        return p;
}

/* ---- targets of destructive commands ---- */

static const char *const sysroots[] = {
        "/bin",      "/boot",      "/dev",     "/etc",     "/home",      "/lib",
        "/lib32",    "/lib64",     "/libx32",  "/media",   "/mnt",       "/opt",
        "/proc",     "/root",      "/run",     "/sbin",    "/snap",      "/srv",
        "/sys",      "/usr",       "/var",     "/usr/bin", "/usr/lib",   "/usr/local",
        "/usr/sbin", "/usr/share", "/var/lib", "/var/log", "/usr/lib64", "/usr/include",
        NULL};

/* path is the home directory or one of its ancestors (an unknown home's too). */
static bool
home_hit(struct eval *ev, const char *path)
{
        const char *homes[] = {ev->home, ev->acct_home};

        if (path[0] == '~') {
                /* "~", "~/..", "~/../..": the home directory or above it */
                const char *r = path + 1;
                while (starts(r, "/.."))
                        r += 3;
                return *r == '\0';
        }
        for (size_t j = 0; j < ARRAY_SIZE(homes); j++) {
                if (!homes[j] || homes[j][0] != '/')
                        continue;
                const char *h = norm(ev, homes[j]);
                if (!streq(h, "/") && paths_below(h, path))
                        return true;
        }
        return false;
}

static bool
protected_hit(struct eval *ev, const char *path, bool ancestor)
{
        if (!ev->ctx || !ev->ctx->protected_paths)
                return false;
        for (const char *const *pp = ev->ctx->protected_paths; *pp; pp++) {
                const char *d = norm(ev, *pp);
                if (paths_below(path, d) || (ancestor && paths_below(d, path)))
                        return true;
        }
        return false;
}

/* path is below /root, the home of the root caller (ctx->caller_root): its own, not the
 * system's. */
static bool
root_own(struct eval *ev, const char *path)
{
        return ev->ctx && ev->ctx->caller_root && ev->ctx->home &&
               streq(norm(ev, ev->ctx->home), "/root") && paths_below(path, "/root");
}

/* What deleting or changing path (recursively, when ancestor) would hit. */
enum target
paths_classify_path(struct eval *ev, const char *path, bool ancestor)
{
        if (streq(path, "/"))
                return T_ROOT;
        if (analyze_in(path, sysroots) && !root_own(ev, path))
                return T_SYSTEM;
        if (home_hit(ev, path))
                return T_HOME;
        if (protected_hit(ev, path, ancestor))
                return T_SELF;
        return T_NONE;
}

static enum target
classify_dynamic(const char *s)
{
        static const char *const homes[] = {"$HOME", "${HOME}", "~", NULL};

        for (const char *const *h = homes; *h; h++) {
                size_t l = strlen(*h);
                if (strncmp(s, *h, l) != 0)
                        continue;
                const char *r = s + l;
                if (!*r || streq(r, "/") || streq(r, "/*") || streq(r, "/.*"))
                        return T_HOME;
        }
        return T_NONE;
}

/* What a destructive operand would hit, looking through globs (/ *, ~/ *, /etc/ *). */
/* The directory a glob's matches are in, resolved (its part before the first pattern
 * character, up to the last '/'), or NULL when unknown. */
const char *
paths_glob_dir(struct eval *ev, const char *s)
{
        size_t g = strcspn(s, "*?[");
        const char *slash = NULL;

        for (size_t k = 0; k < g; k++)
                if (s[k] == '/')
                        slash = s + k;
        return paths_resolve(ev, slash ? arena_strndup(&ev->ar, s, slash - s + 1) : ".");
}

static enum target classify_here(struct eval *ev, const struct word *w, bool ancestor);

/* Whether s is relative to a cwd a failed cd may have left elsewhere (ev->cwd_alt). */
bool
paths_cwd_uncertain(struct eval *ev, const char *s)
{
        return ev->cwd_alt && s[0] != '/' && s[0] != '~';
}

/* With the home not known (ctx->home_unknown: a sandbox whose execs get a remote account's
 * HOME, judged before it is made), a path deleted or changed that is nothing else may be that
 * home: asked (home.unknown), never allowed for not knowing. */
static void
home_unknown_hit(struct eval *ev, const struct word *w)
{
        const char *p;

        if (!ev->ctx || !ev->ctx->home_unknown || (w->flags & (W_DYN | W_OVERFLOW | W_TREE)))
                return;
        p = w->flags & W_GLOB ? paths_glob_dir(ev, w->s) : paths_resolve(ev, w->s);
        if (p && p[0] == '/' && !streq(p, "/"))
                analyze_add(ev, -1, "home.unknown", p, p);
}

/* What w hits; a relative path after a cd that may have failed is judged in both places. */
enum target
paths_classify(struct eval *ev, const struct word *w, bool ancestor)
{
        enum target t = classify_here(ev, w, ancestor);

        if (t == T_NONE && paths_cwd_uncertain(ev, w->s) && !(w->flags & W_DYN)) {
                const char *cwd = ev->cwd, *alt = ev->cwd_alt;
                ev->cwd = alt;
                ev->cwd_alt = NULL;
                t = classify_here(ev, w, ancestor);
                ev->cwd = cwd;
                ev->cwd_alt = alt;
        }
        if (t == T_NONE)
                home_unknown_hit(ev, w);
        return t;
}

static enum target
classify_here(struct eval *ev, const struct word *w, bool ancestor)
{
        const char *s = w->s;

        if (w->flags & W_OVERFLOW)
                return T_ROOT; /* bash would run every word; they cannot all be known */
        if (w->flags & W_TREE) {
                /* find -exec {}: the start and below; with tests only some (as -delete) */
                struct word st = fsops_tree_start(ev, w);
                enum target t = paths_classify(ev, &st, true);
                if (!(w->flags & W_SOME) || t == T_SELF)
                        return t;
                /* some files: START/…/NAME as the glob it is (rm -rf on it), else none */
                struct word g = {.s = w->s, .flags = W_GLOB};
                return w->flags & W_GLOB ? paths_classify(ev, &g, ancestor) : T_NONE;
        }
        if (w->flags & W_DYN)
                return classify_dynamic(s);
        if (w->flags & W_GLOB) {
                const char *p = paths_glob_dir(ev, s);
                return p ? paths_classify_path(ev, p, true) : T_NONE;
        }
        const char *p = paths_resolve(ev, s);
        return p ? paths_classify_path(ev, p, ancestor) : T_NONE;
}

/* The workspace (or, without one, the starting cwd) contains path strictly. */
bool
paths_in_workspace(struct eval *ev, const char *path)
{
        if (!ev->ws || !path)
                return false;
        const char *w = norm(ev, ev->ws);
        return !streq(w, "/") && paths_below(path, w) && !streq(path, w);
}

/* ---- devices ---- */

/* Directories of /dev whose entries are not disks. */
static const char *const dev_dirs_safe[] = {
        "pts",  "shm", "fd",        "net", "mqueue", "input", "snd", "dri",      "bus",
        "char", "cpu", "hugepages", "usb", "serial", "vfio",  "v4l", "dma_heap", NULL};
static const char *const dev_harmless[] = {"null",    "zero",   "full",   "random", "urandom",
                                           "tty",     "stdout", "stderr", "stdin",  "ptmx",
                                           "console", "kmsg",   NULL};
static const char *const dev_block[] = {"sd",   "hd",     "vd",    "xvd",   "nvme", "mmcblk", "md",
                                        "dm-",  "loop",   "nbd",   "sr",    "zram", "ram",    "rbd",
                                        "drbd", "bcache", "pmem",  "mtd",   "ubi",  "nand",   "fd0",
                                        "fd1",  "disk",   "rdisk", "cciss", "ida",  "scd",    NULL};

static enum devkind
dev_name(const char *name)
{
        if (analyze_in(name, dev_harmless) || starts(name, "tty") || starts(name, "pts"))
                return DEV_HARMLESS;
        if (streq(name, "root") || streq(name, "mem") || streq(name, "kmem") || streq(name, "port"))
                return DEV_BLOCK;
        for (const char *const *b = dev_block; *b; b++)
                if (starts(name, *b))
                        return DEV_BLOCK;
        return DEV_OTHER;
}

/* What kind of device path is. */
enum devkind
paths_device(const char *path)
{
        if (starts(path, "/sys/block/") || starts(path, "/sys/class/block/") ||
            starts(path, "/sys/dev/block/") ||
            (starts(path, "/sys/devices/") && strstr(path, "/block/")))
                return DEV_BLOCK;
        if (!starts(path, "/dev/") || !path[5])
                return DEV_NONE;
        const char *rest = path + 5;
        if (starts(rest, "tcp/") || starts(rest, "udp/"))
                return DEV_NET;
        size_t l = strcspn(rest, "/");
        if (rest[l] == '\0')
                return dev_name(rest);
        char dir[32];
        if (l >= sizeof(dir))
                return DEV_OTHER;
        memcpy(dir, rest, l);
        dir[l] = '\0';
        if (streq(dir, "fd") || streq(dir, "pts") || streq(dir, "shm") || streq(dir, "mqueue"))
                return streq(dir, "shm") || streq(dir, "mqueue") ? DEV_NONE : DEV_HARMLESS;
        if (analyze_in(dir, dev_dirs_safe))
                return DEV_OTHER;
        /* mapper/X, disk/by-X/Y, block/M:N, VG/LV: a volume */
        return DEV_BLOCK;
}

/* ---- write rules ---- */

static const char *const cred_dirs[] = {
        ".ssh",           ".aws",       ".gnupg", ".kube", ".azure", ".docker", ".password-store",
        ".config/gcloud", ".config/gh", NULL};
static const char *const cred_files[] = {".netrc",  ".git-credentials", ".pgpass",
                                         ".pypirc", "credentials",      "authorized_keys",
                                         ".npmrc",  ".vault-token",     NULL};
static const char *const startup_files[] = {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
        ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc",
        ".tcshrc", ".login", ".xprofile", ".xinitrc", ".xsession", ".xsessionrc",
        ".pam_environment", "config.fish", ".gitconfig",
        /* programs that run commands from their rc file when they start */
        ".vimrc", ".gvimrc", ".exrc", ".nvimrc", ".emacs", ".tmux.conf", ".screenrc", ".gdbinit",
        ".lldbinit", ".psqlrc", ".sqliterc", ".my.cnf", ".irbrc", ".pryrc", ".Rprofile",
        ".pythonrc", ".wgetrc", ".curlrc", ".condarc", "sitecustomize.py", "usercustomize.py",
        NULL};
/* Directories (as path components) whose files run at login, at start or on a schedule. */
static const char *const startup_dirs[] = {"/.config/autostart/",
                                           "/.config/systemd/user/",
                                           "/.config/environment.d/",
                                           "/.config/fish/",
                                           "/.local/share/systemd/user/",
                                           "/.config/upstart/",
                                           "/.bashrc.d/",
                                           "/.git/hooks/",
                                           "/.config/git/",
                                           "/.config/nvim/",
                                           "/.vim/",
                                           "/.emacs.d/",
                                           "/.config/emacs/",
                                           "/.ipython/",
                                           "/.jupyter/",
                                           "/.config/pip/",
                                           "/.pip/",
                                           "/.cargo/",
                                           "/.config/tmux/",
                                           NULL};
/* Below home: directories a login's PATH puts in front of /usr/bin (Debian's .profile). */
static const char *const startup_home[] = {"bin", ".local/bin", NULL};

/* With the home not known (ctx->home_unknown), a file in any DIR/bin or DIR/.local/bin may be
 * in the PATH of that home: judged as one. */
static bool
startup_unknown_home(struct eval *ev, const char *p)
{
        char pat[32];

        if (!ev->ctx || !ev->ctx->home_unknown)
                return false;
        for (const char *const *d = startup_home; *d; d++) {
                snprintf(pat, sizeof(pat), "/%s/", *d);
                if (strstr(p, pat))
                        return true;
        }
        return false;
}
static const char *const startup_abs[] = {"/etc/profile",
                                          "/etc/profile.d",
                                          "/etc/bash.bashrc",
                                          "/etc/environment",
                                          "/etc/cron.d",
                                          "/etc/crontab",
                                          "/etc/cron.daily",
                                          "/etc/cron.hourly",
                                          "/etc/cron.weekly",
                                          "/etc/cron.monthly",
                                          "/var/spool/cron",
                                          "/etc/systemd",
                                          "/etc/init.d",
                                          "/etc/rc.local",
                                          "/etc/xdg/autostart",
                                          "/etc/anacrontab",
                                          "/lib/systemd/system",
                                          "/usr/lib/systemd/system",
                                          NULL};
static const char *const sys_write[] = {
        "/etc",  "/usr", "/bin",  "/sbin",    "/lib",       "/lib32", "/lib64",   "/boot",
        "/root", "/sys", "/proc", "/var/lib", "/var/spool", "/opt",   "/var/log", NULL};
static const char *const power_files[] = {"/proc/sysrq-trigger", "/sys/power/state",
                                          "/sys/power/disk",     "/dev/watchdog",
                                          "/dev/watchdog0",      NULL};

static bool
has_component(const char *path, const char *const *names)
{
        for (const char *const *n = names; *n; n++) {
                size_t l = strlen(*n);
                for (const char *p = strstr(path, *n); p; p = strstr(p + 1, *n))
                        if (p > path && p[-1] == '/' && (p[l] == '/' || p[l] == '\0'))
                                return true;
        }
        return false;
}

/* Whether path is a credential file or lies in a credential directory (the lists above):
 * writes of one ask, and file.read (policy/pathcheck.c) asks before handing one out. */
bool
analyze_is_credential(const char *path)
{
        return has_component(path, cred_dirs) || analyze_in(analyze_base(path), cred_files);
}

static bool
is_startup(struct eval *ev, const char *key, const char *p)
{
        size_t kl = strlen(key);

        if (analyze_in(analyze_base(key), startup_files) || strstr(key, "/.git/config"))
                return true;
        /* a .pth file in site-packages runs its import lines at every python start */
        if (strstr(key, "/site-packages/") && kl > 4 && !strcmp(key + kl - 4, ".pth"))
                return true;
        const char *homes[] = {ev->home, ev->acct_home};
        if (p && startup_unknown_home(ev, p))
                return true;
        for (size_t i = 0; p && i < ARRAY_SIZE(homes); i++) {
                const char *h = homes[i];
                for (const char *const *d = startup_home; h && *d; d++) {
                        size_t hl = strlen(h), dl = strlen(*d);
                        if (!strncmp(p, h, hl) && p[hl] == '/' && !strncmp(p + hl + 1, *d, dl) &&
                            p[hl + 1 + dl] == '/')
                                return true;
                }
        }
        for (const char *const *d = startup_dirs; *d; d++)
                if (strstr(key, *d))
                        return true;
        for (const char *const *d = startup_abs; p && *d; d++)
                if (paths_below(p, *d))
                        return true;
        return false;
}

static void
note_written(struct eval *ev, const char *p)
{
        if (ev->nwritten >= 256) {
                ev->written_overflow = true;
                return;
        }
        arena_grow(&ev->ar, (void **) &ev->written, &ev->writtencap, ev->nwritten,
                   sizeof(struct written));
        ev->written[ev->nwritten].path = p;
        ev->written[ev->nwritten].content = NULL;
        ev->nwritten++;
}

/* Records what the last write of w holds. */
void
paths_note_content(struct eval *ev, const struct word *w, const char *content)
{
        const char *p = analyze_lit(w) ? paths_resolve(ev, w->s) : NULL;
        const char *key = p ? p : w->s;

        for (size_t j = ev->nwritten; j-- > 0;)
                if (streq(ev->written[j].path, key)) {
                        ev->written[j].content = content;
                        return;
                }
}

/* A write or delete of a device, a power switch or the daemon's own files; true: floor. */
static bool
write_floor(struct eval *ev, int k, const struct word *w, const char *p, bool del)
{
        enum devkind d = paths_device(p);

        if (d == DEV_HARMLESS)
                return true;
        if (d == DEV_NET) {
                analyze_add(ev, k, "net.dev-tcp", w->s, p);
                ev->units[k].net = true;
                return true;
        }
        if (d == DEV_BLOCK && !del) {
                analyze_add(ev, k, "floor.write-dev", w->s, p);
                return true;
        }
        if (d == DEV_OTHER && !del)
                analyze_add(ev, k, "write.device", w->s, p);
        if (analyze_in(p, power_files) && !del) {
                analyze_add(ev, k, "floor.power", w->s, p);
                return true;
        }
        if (protected_hit(ev, p, false)) {
                analyze_add(ev, k, "floor.self-protect", w->s, p);
                return true;
        }
        return false;
}

/* Judges one path the command writes (or deletes when del). */
void
paths_check_write(struct eval *ev, int k, const struct word *w, bool del)
{
        if (w->flags & W_TREE) {
                /* find -exec {}: any file below the start, as an archive extracted there */
                struct word st = fsops_tree_start(ev, w);
                paths_check_write(ev, k, &st, del);
                fsops_extract(ev, k, &st, false, w->s);
                return;
        }
        if (w->flags & W_DYN)
                return;
        const char *p = paths_resolve(ev, w->s);
        const char *key = p ? p : w->s;

        if (!del)
                note_written(ev, key);
        if (p && write_floor(ev, k, w, p, del))
                return;
        if (analyze_is_credential(key))
                analyze_add(ev, k, "write.credential", w->s, key);
        if (is_startup(ev, key, p))
                analyze_add(ev, k, "write.startup", w->s, key);
        for (const char *const *d = sys_write; p && *d && !root_own(ev, p); d++) {
                if (paths_below(p, *d)) {
                        analyze_add(ev, k, "write.system", w->s, p);
                        break;
                }
        }
}

/* Remembers LINK -> TARGET. */
void
paths_add_link(struct eval *ev, const struct word *target, const struct word *link)
{
        if (ev->nlinks >= POLICY_MAX_LINKS || !analyze_lit(target) || !analyze_lit(link))
                return;
        const char *t =
                target->s[0] == '/' || target->s[0] == '~' ? paths_resolve(ev, target->s) : NULL;
        const char *l = paths_resolve(ev, link->s);
        if (!t && l) {
                /* a relative target is relative to the link's directory */
                char *dir = arena_strdup(&ev->ar, l);
                char *slash = strrchr(dir, '/');
                if (slash)
                        *slash = '\0';
                size_t n = strlen(dir) + strlen(target->s) + 2;
                char *j = arena_alloc(&ev->ar, n);
                snprintf(j, n, "%s/%s", *dir ? dir : "", target->s);
                t = norm(ev, j);
        }
        /* ln never replaces a directory (it makes the link inside it): / , a system
         * directory, home and the daemon's paths exist, so `ln -s /tmp/e ~` leaves ~ as it is */
        if (!t || !l || streq(t, l) || paths_classify_path(ev, l, false) != T_NONE)
                return;
        ev->links[ev->nlinks].path = l;
        ev->links[ev->nlinks].target = t;
        ev->nlinks++;
}

/* Whether w was written earlier in this command (and what it holds, when known). */
bool
paths_was_written(struct eval *ev, const struct word *w, const char **content)
{
        if (content)
                *content = NULL;
        if (w->flags & W_DYN)
                return false;
        const char *p = paths_resolve(ev, w->s);
        const char *key = p ? p : w->s;
        for (size_t j = ev->nwritten; j-- > 0;) {
                if (streq(ev->written[j].path, key)) {
                        if (content)
                                *content = ev->written[j].content;
                        return true;
                }
        }
        return ev->written_overflow && strchr(w->s, '/');
}

/* ---- secrets ---- */

static const char *const secret_dirs[] = {
        "/.aws/",   "/.gnupg/",          "/.config/gcloud/",
        "/.azure/", "/.password-store/", "/.local/share/keyrings/",
        NULL};
static const char *const secret_files[] = {
        ".netrc",       ".git-credentials", ".pgpass", ".pypirc",  ".npmrc",
        ".vault-token", "id_rsa",           "id_dsa",  "id_ecdsa", "id_ed25519",
        "id_ecdsa_sk",  "id_ed25519_sk",    NULL};
static const char *const secret_suffixes[] = {"/.kube/config",
                                              "/.docker/config.json",
                                              "/.config/gh/hosts.yml",
                                              "/etc/shadow",
                                              "/etc/gshadow",
                                              "/etc/sudoers",
                                              NULL};
static const char *const ssh_public[] = {"known_hosts",     "known_hosts.old",  "config",
                                         "authorized_keys", "authorized_keys2", NULL};
/* Directories that hold secrets: reading them whole (tar, scp -r, rsync) reads the secrets. */
static const char *const secret_holders[] = {
        ".ssh", ".aws", ".gnupg", ".config", ".kube", ".docker", ".azure", ".password-store", NULL};

static bool
ends(const char *s, const char *suf)
{
        size_t a = strlen(s), b = strlen(suf);

        return a >= b && !strcmp(s + a - b, suf);
}

static bool
proc_environ(const char *p)
{
        if (!starts(p, "/proc/") || !ends(p, "/environ"))
                return false;
        return !starts(p, "/proc/self/") && !starts(p, "/proc/thread-self/");
}

static bool
secret_path(const char *p)
{
        const char *b = analyze_base(p);
        const char *ssh = strstr(p, "/.ssh/");

        if (ssh && !ends(p, ".pub") && !analyze_in(b, ssh_public) && ssh[6])
                return true;
        if (analyze_in(b, secret_files) && !ends(p, ".pub"))
                return true;
        if (ends(p, "/.aws/credentials") || proc_environ(p) ||
            (starts(p, "/etc/ssh/ssh_host_") && ends(p, "_key")))
                return true;
        for (const char *const *s = secret_suffixes; *s; s++)
                if (ends(p, *s))
                        return true;
        for (const char *const *d = secret_dirs; *d; d++)
                if (strstr(p, *d))
                        return true;
        return false;
}

/* A key or credential file (or a directory holding them when ancestor); NULL if not. */
const char *
paths_secret(struct eval *ev, const char *s, bool ancestor)
{
        const char *p = s[0] == '@' || s[0] == '<' ? s + 1 : s;

        if (!*p)
                return NULL;
        const char *r = paths_resolve(ev, p);
        const char *key = r ? r : p;
        if (secret_path(key))
                return key;
        for (size_t j = 0; j < ev->nftaint; j++)
                if (streq(ev->ftaint[j], key))
                        return key; /* a copy of a secret made earlier in the command */
        if (!ancestor || !r)
                return NULL;
        if (paths_classify_path(ev, r, true) == T_HOME || streq(r, "/") || streq(r, "/home") ||
            streq(r, "/etc") || streq(r, "/root"))
                return r;
        for (const char *const *h = secret_holders; *h; h++) {
                size_t l = strlen(*h);
                size_t n = strlen(r);
                if (n > l && r[n - l - 1] == '/' && !strcmp(r + n - l, *h))
                        return r;
        }
        return NULL;
}
