/* cgroup.c — per-sandbox cgroups on v1 (memory/pids/cpu hierarchies) or v2 (delegated subtree).
 *
 * Layout: v1 creates <mount of ctrl>/<own path>/sandboxd/<name> in each of the memory, pids and
 * cpu hierarchies the daemon can write to. v2 creates <own cgroup>/sandboxd/<name>. Because of
 * v2's no-internal-processes rule, enabling controllers in <own cgroup>'s subtree_control fails
 * with EBUSY while the daemon itself lives in <own cgroup>; the probe then moves the daemon
 * (its whole thread group) into the leaf <own cgroup>/daemon and retries, which is what systemd
 * recommends for a service with Delegate=yes. If other processes share <own cgroup>, the
 * controllers stay off and the cgroup is used only to track and kill processes.
 *
 * State: one probe result per process (loop thread only). Directories that could not be removed
 * yet (processes still exiting) are kept on a retry list that every cgroup_create and
 * cgroup_destroy (even with NULL) works through. */
#include "backends/cgroup.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/util.h"

#define CG_SUBDIR        "sandboxd"
#define CG_LEAF          "daemon"
#define CG_NAME_MAX      64
#define CG_PROCS_MAX     (1 << 20) /* bytes of cgroup.procs read at most */
#define CG_KILL_PASSES   16
#define CG_RMDIR_TRIES   20
#define CG_CPU_PERIOD    100000
#define CG_GRAVEYARD_MAX 256

enum cg_ctrl { CG_MEMORY, CG_PIDS, CG_CPU, CG_NCTRL };

static const char *const cg_ctrl_names[CG_NCTRL] = {"memory", "pids", "cpu"};

struct cg_state {
        bool probed;
        int version;          /* 0: unavailable */
        char *base[CG_NCTRL]; /* v1: <mnt><own>/sandboxd per usable controller, else NULL */
        char *base2;          /* v2: <own>/sandboxd */
        bool avail[CG_NCTRL];
        bool has_kill;  /* v2 cgroup.kill */
        char *moved_to; /* v2: the leaf the daemon moved into, NULL if it did not */
        char *reason;   /* NULL when everything is available */
};

struct cgroup {
        int version;
        char *dirs[CG_NCTRL]; /* v1: per controller (NULL if absent); v2: dirs[0] */
        char *procs[CG_NCTRL + 1];
        const char *track; /* borrowed from dirs: the hierarchy used to list processes */
        const char *mem;   /* borrowed from dirs: where memory.* lives, NULL without */
};

static struct cg_state cg;
static char *cg_graveyard[CG_GRAVEYARD_MAX];

static void cg_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
cg_reason(const char *fmt, ...)
{
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = xvasprintf(fmt, ap);
        va_end(ap);
        if (cg.reason) {
                char *both = xasprintf("%s; %s", cg.reason, s);

                free(s);
                s = both;
        }
        free(cg.reason);
        cg.reason = s;
}

/* ---- small file helpers ---- */

static int
cg_write(const char *dir, const char *file, const char *val)
{
        char *path = xasprintf("%s/%s", dir, file);
        int fd, rc = 0;

        fd = open(path, O_WRONLY | O_CLOEXEC);
        free(path);
        if (fd < 0)
                return -errno;
        if (write(fd, val, strlen(val)) < 0)
                rc = -errno;
        close(fd);
        return rc;
}

/* Reads dir/file (or the path alone when file is NULL) into a new string; NULL on failure. */
static char *
cg_read(const char *dir, const char *file)
{
        char *path = file ? xasprintf("%s/%s", dir, file) : xstrdup(dir);
        struct buf b = {0};
        char chunk[4096];
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        free(path);
        if (fd < 0)
                return NULL;
        while (b.len < CG_PROCS_MAX && (n = read(fd, chunk, sizeof(chunk))) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                buf_append(&b, chunk, (size_t) n);
        }
        close(fd);
        buf_append(&b, "", 1);
        return b.data;
}

/* Whether word is one of the space/comma separated tokens of list. */
static bool
cg_has_token(const char *list, const char *word)
{
        size_t n = strlen(word);
        const char *p = list;

        while ((p = strstr(p, word)) != NULL) {
                bool start = p == list || p[-1] == ',' || isspace((unsigned char) p[-1]);
                bool end = p[n] == '\0' || p[n] == ',' || isspace((unsigned char) p[n]);

                if (start && end)
                        return true;
                p += n;
        }
        return false;
}

/* Value of "key N" in a flat-keyed file (memory.events, memory.oom_control); 0 if absent. */
static uint64_t
cg_keyed(const char *dir, const char *file, const char *key)
{
        char *s = cg_read(dir, file), *line, *save = NULL;
        unsigned long long v = 0;
        size_t n = strlen(key);

        for (line = s ? strtok_r(s, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
                if (strncmp(line, key, n) == 0 && line[n] == ' ') {
                        v = strtoull(line + n + 1, NULL, 10);
                        break;
                }
        }
        free(s);
        return v;
}

/* ---- where things are: /proc/self/mountinfo and /proc/self/cgroup ---- */

/* Finds the mount of fstype ("cgroup"/"cgroup2") carrying ctrl (NULL: any); new strings. */
static int
cg_find_mount(const char *fstype, const char *ctrl, char **mnt, char **root)
{
        char *s = cg_read("/proc/self/mountinfo", NULL), *line, *save = NULL;
        char r[4096], m[4096], type[64], opts[4096];
        int rc = -ENOENT;

        for (line = s ? strtok_r(s, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
                const char *dash = strstr(line, " - ");

                if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2 ||
                    sscanf(dash, " - %63s %*s %4095s", type, opts) != 2)
                        continue;
                if (strcmp(type, fstype) != 0 || (ctrl && !cg_has_token(opts, ctrl)))
                        continue;
                *mnt = xstrdup(m);
                *root = xstrdup(r);
                rc = 0;
                break;
        }
        free(s);
        return rc;
}

/* This process's path in the hierarchy holding ctrl (v1) or the unified one (ctrl NULL). */
static char *
cg_own_path(const char *ctrl)
{
        char *s = cg_read("/proc/self/cgroup", NULL), *line, *save = NULL, *res = NULL;

        for (line = s ? strtok_r(s, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

                if (!c2)
                        continue;
                *c2 = '\0';
                if (ctrl ? cg_has_token(c1 + 1, ctrl) : (c1[1] == '\0' && line[0] == '0')) {
                        res = xstrdup(c2 + 1);
                        break;
                }
        }
        free(s);
        return res;
}

/* <mount>/<own path>, or NULL when the own path is outside the mount's root. */
static char *
cg_own_dir(const char *fstype, const char *ctrl)
{
        char *mnt = NULL, *root = NULL, *own = NULL, *dir = NULL;
        size_t rl;

        if (cg_find_mount(fstype, ctrl, &mnt, &root) < 0 || !(own = cg_own_path(ctrl)))
                goto out;
        rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (strncmp(own, root, rl) != 0 || (own[rl] != '/' && own[rl] != '\0'))
                goto out;
        dir = xasprintf("%s%s", mnt, strcmp(own + rl, "/") == 0 ? "" : own + rl);
out:
        free(mnt);
        free(root);
        free(own);
        return dir;
}

static int
cg_mkdir(const char *dir)
{
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Checks that a child of base can be created and removed. */
static int
cg_try_child(const char *base)
{
        char *probe = xasprintf("%s/.probe-%d", base, (int) getpid());
        int rc = 0;

        if (mkdir(probe, 0755) < 0 && errno != EEXIST)
                rc = -errno;
        else if (rmdir(probe) < 0)
                rc = -errno;
        free(probe);
        return rc;
}

/* ---- probe ---- */

static void
cg_probe_v1(void)
{
        int c, rc;

        for (c = 0; c < CG_NCTRL; c++) {
                char *own = cg_own_dir("cgroup", cg_ctrl_names[c]), *base;

                if (!own) {
                        cg_reason("%s: no cgroup v1 hierarchy", cg_ctrl_names[c]);
                        continue;
                }
                base = xasprintf("%s/%s", own, CG_SUBDIR);
                free(own);
                if ((rc = cg_mkdir(base)) < 0 || (rc = cg_try_child(base)) < 0) {
                        cg_reason("%s: cannot create cgroups under %s: %s", cg_ctrl_names[c], base,
                                  strerror(-rc));
                        free(base);
                        continue;
                }
                cg.base[c] = base;
                cg.avail[c] = true;
                cg.version = 1;
        }
}

/* "+memory +pids +cpu" for the wanted controllers listed in controllers (new, may be ""). */
static char *
cg_v2_wanted(const char *controllers)
{
        struct buf b = {0};
        int c;

        for (c = 0; c < CG_NCTRL; c++) {
                if (controllers && cg_has_token(controllers, cg_ctrl_names[c]))
                        buf_appendf(&b, "%s+%s", b.len ? " " : "", cg_ctrl_names[c]);
        }
        buf_append(&b, "", 1);
        return b.data;
}

/* Enables want in own's subtree_control, moving the daemon into a leaf on EBUSY. */
static int
cg_v2_enable(const char *own, const char *want)
{
        char *leaf, pid[24];
        int rc;

        rc = cg_write(own, "cgroup.subtree_control", want);
        if (rc != -EBUSY)
                return rc;
        leaf = xasprintf("%s/%s", own, CG_LEAF);
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        if ((rc = cg_mkdir(leaf)) < 0 || (rc = cg_write(leaf, "cgroup.procs", pid)) < 0) {
                free(leaf);
                return rc;
        }
        cg.moved_to = leaf;
        return cg_write(own, "cgroup.subtree_control", want);
}

static void
cg_v2_controllers(const char *own, const char *base)
{
        char *ctrls = cg_read(own, "cgroup.controllers");
        char *want = cg_v2_wanted(ctrls), *have;
        int c, rc = 0;

        free(ctrls);
        if (*want && ((rc = cg_v2_enable(own, want)) < 0 ||
                      (rc = cg_write(base, "cgroup.subtree_control", want)) < 0))
                cg_reason("cannot enable controllers '%s' under %s: %s", want, own, strerror(-rc));
        have = cg_read(base, "cgroup.subtree_control");
        for (c = 0; c < CG_NCTRL; c++) {
                cg.avail[c] = have && cg_has_token(have, cg_ctrl_names[c]);
                if (!cg.avail[c])
                        cg_reason("%s: controller not delegated to %s", cg_ctrl_names[c], own);
        }
        free(have);
        free(want);
}

static void
cg_probe_v2(void)
{
        char *own = cg_own_dir("cgroup2", NULL), *base, *kill;
        int rc;

        if (!own) {
                cg_reason("no cgroup v2 hierarchy");
                return;
        }
        base = xasprintf("%s/%s", own, CG_SUBDIR);
        if ((rc = cg_mkdir(base)) < 0 || (rc = cg_try_child(base)) < 0) {
                cg_reason("cgroup v2: cannot create cgroups under %s: %s (no delegated subtree)",
                          base, strerror(-rc));
                free(base);
                free(own);
                return;
        }
        cg_v2_controllers(own, base);
        kill = xasprintf("%s/cgroup.kill", own);
        cg.has_kill = access(kill, F_OK) == 0;
        free(kill);
        cg.base2 = base;
        cg.version = 2;
        free(own);
}

static void
cg_reset(void)
{
        int c;

        for (c = 0; c < CG_NCTRL; c++) {
                free(cg.base[c]);
                cg.base[c] = NULL;
                cg.avail[c] = false;
        }
        free(cg.base2);
        free(cg.reason);
        cg.reason = NULL;
        cg.base2 = NULL;
        cg.version = 0;
        cg.has_kill = false;
}

static void
cg_probe_once(void)
{
        char *v1_reason;

        if (cg.probed)
                return;
        cg.probed = true;
        cg_reset();
        cg_probe_v1();
        if (cg.version == 1)
                return;
        /* No usable v1 controller: a (delegated) v2 subtree may still be there. */
        v1_reason = cg.reason;
        cg.reason = NULL;
        cg_reset();
        cg_probe_v2();
        if (cg.version == 0) {
                char *v2_reason = cg.reason;

                cg.reason = NULL;
                cg_reason("%s; %s", v1_reason ? v1_reason : "no cgroup v1 hierarchy",
                          v2_reason ? v2_reason : "no cgroup v2 hierarchy");
                free(v2_reason);
        }
        free(v1_reason);
}

/* Probes once (later calls report the first result). */
json_t *
cgroup_probe(void)
{
        json_t *o;

        cg_probe_once();
        o = json_pack("{s:o,s:b,s:b,s:b}", "version",
                      cg.version ? json_integer(cg.version) : json_null(), "memory",
                      cg.avail[CG_MEMORY], "pids", cg.avail[CG_PIDS], "cpu", cg.avail[CG_CPU]);
        if (cg.reason)
                json_object_set_new(o, "reason", json_string(cg.reason));
        if (cg.moved_to)
                json_object_set_new(o, "daemon_moved_to", json_string(cg.moved_to));
        return o;
}

/* ---- removal, with a retry list for directories whose processes are still exiting ---- */

static void
cg_graveyard_sweep(void)
{
        size_t i;

        for (i = 0; i < CG_GRAVEYARD_MAX; i++) {
                if (cg_graveyard[i] && (rmdir(cg_graveyard[i]) == 0 || errno == ENOENT)) {
                        free(cg_graveyard[i]);
                        cg_graveyard[i] = NULL;
                }
        }
}

/* Steals dir. */
static void
cg_graveyard_add(char *dir)
{
        size_t i;

        for (i = 0; i < CG_GRAVEYARD_MAX; i++) {
                if (!cg_graveyard[i]) {
                        cg_graveyard[i] = dir;
                        return;
                }
        }
        free(dir); /* full: leave the empty directory behind rather than grow without bound */
}

/* rmdir with a few 1 ms retries (SIGKILLed processes need a moment to leave); steals dir. */
static void
cg_remove(char *dir)
{
        int i;

        for (i = 0; i < CG_RMDIR_TRIES; i++) {
                if (rmdir(dir) == 0 || errno == ENOENT) {
                        free(dir);
                        return;
                }
                if (errno != EBUSY)
                        break;
                (void) poll(NULL, 0, 1);
        }
        cg_graveyard_add(dir);
}

/* ---- processes ---- */

static int
cg_pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

/* Sorted, de-duplicated pids of dir/cgroup.procs (v1 may list duplicates); *out new. */
static size_t
cg_pids(const char *dir, pid_t **out)
{
        char *s = dir ? cg_read(dir, "cgroup.procs") : NULL, *p, *end;
        size_t n = 0, cap = 16, i, u = 0;
        pid_t *v = xmalloc(cap * sizeof(*v));
        long x;

        for (p = s; p && *p; p = end) {
                x = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (x <= 0)
                        continue;
                if (n == cap)
                        v = xrealloc(v, (cap *= 2) * sizeof(*v));
                v[n++] = (pid_t) x;
        }
        free(s);
        qsort(v, n, sizeof(*v), cg_pid_cmp);
        for (i = 0; i < n; i++) {
                if (u == 0 || v[u - 1] != v[i])
                        v[u++] = v[i];
        }
        *out = v;
        return u;
}

static bool
cg_pid_in(const pid_t *v, size_t n, pid_t pid)
{
        return n && bsearch(&pid, v, n, sizeof(*v), cg_pid_cmp) != NULL;
}

/* One pass: signals every listed pid not in done; returns how many new ones were signalled
 * and adds them to *done. */
static int
cg_signal_pass(const struct cgroup *c, int sig, pid_t **done, size_t *ndone)
{
        pid_t *v;
        size_t n = cg_pids(c->track, &v), i;
        int sent = 0;

        for (i = 0; i < n; i++) {
                if (cg_pid_in(*done, *ndone, v[i]) || kill(v[i], sig) < 0)
                        continue;
                *done = xrealloc(*done, (*ndone + 1) * sizeof(**done));
                (*done)[(*ndone)++] = v[i];
                qsort(*done, *ndone, sizeof(**done), cg_pid_cmp);
                sent++;
        }
        free(v);
        return sent;
}

/* ---- public API ---- */

static bool
cg_name_ok(const char *name)
{
        size_t i, n = name ? strlen(name) : 0;

        if (n == 0 || n > CG_NAME_MAX || name[0] == '.')
                return false;
        for (i = 0; i < n; i++) {
                if (!isalnum((unsigned char) name[i]) && !strchr("._-", name[i]))
                        return false;
        }
        return true;
}

/* Creates dir for a new sandbox; an existing one (a leftover of a crashed daemon with the same
 * name) is emptied and reused. */
static int
cg_make(const char *dir)
{
        struct cgroup tmp = {.track = dir};
        pid_t *done = NULL;
        size_t ndone = 0;

        if (mkdir(dir, 0755) == 0)
                return 0;
        if (errno != EEXIST)
                return -errno;
        (void) cg_signal_pass(&tmp, SIGKILL, &done, &ndone);
        free(done);
        return 0;
}

static int
cg_limit_memory(const struct cgroup *c, int64_t mb)
{
        char v[32];
        int rc;

        if (!c->mem || mb <= 0 || mb > (INT64_MAX >> 20))
                return -EINVAL;
        snprintf(v, sizeof(v), "%lld", (long long) (mb << 20));
        if (c->version == 2) {
                if ((rc = cg_write(c->mem, "memory.max", v)) < 0)
                        return rc;
                (void) cg_write(c->mem, "memory.swap.max", "0");
                return 0;
        }
        if ((rc = cg_write(c->mem, "memory.limit_in_bytes", v)) < 0)
                return rc;
        /* Without this the limit only pushes pages to swap; absent without swap accounting. */
        rc = cg_write(c->mem, "memory.memsw.limit_in_bytes", v);
        return rc == -ENOENT ? 0 : rc;
}

static int
cg_limit_pids(const struct cgroup *c, int64_t pids)
{
        const char *dir = c->version == 2 ? c->dirs[0] : c->dirs[CG_PIDS];
        char v[32];

        if (!dir || pids <= 0)
                return -EINVAL;
        snprintf(v, sizeof(v), "%lld", (long long) pids);
        return cg_write(dir, "pids.max", v);
}

static int
cg_limit_cpu(const struct cgroup *c, double cpus)
{
        const char *dir = c->version == 2 ? c->dirs[0] : c->dirs[CG_CPU];
        long long quota;
        char v[64];
        int rc;

        if (!dir || !(cpus > 0) || cpus > 65536)
                return -EINVAL;
        quota = (long long) (cpus * CG_CPU_PERIOD);
        quota = MAX(quota, 1000);
        if (c->version == 2) {
                snprintf(v, sizeof(v), "%lld %d", quota, CG_CPU_PERIOD);
                return cg_write(dir, "cpu.max", v);
        }
        snprintf(v, sizeof(v), "%d", CG_CPU_PERIOD);
        if ((rc = cg_write(dir, "cpu.cfs_period_us", v)) < 0)
                return rc;
        snprintf(v, sizeof(v), "%lld", quota);
        return cg_write(dir, "cpu.cfs_quota_us", v);
}

/* Applies the requested limits and records each in enforced ("cgroup" or null). */
static void
cg_apply_limits(const struct cgroup *c, const struct backend_resources *res, json_t *enforced)
{
        if (res->memory_mb > 0 && c->mem && cg_limit_memory(c, res->memory_mb) == 0)
                json_object_set_new(enforced, "memory_mb", json_string("cgroup"));
        if (res->pids > 0 && cg.avail[CG_PIDS] && cg_limit_pids(c, res->pids) == 0)
                json_object_set_new(enforced, "pids", json_string("cgroup"));
        if (res->cpus > 0 && cg.avail[CG_CPU] && cg_limit_cpu(c, res->cpus) == 0)
                json_object_set_new(enforced, "cpus", json_string("cgroup"));
}

static json_t *
cg_enforced_nulls(const struct backend_resources *res)
{
        json_t *o = json_object();

        if (res && res->memory_mb > 0)
                json_object_set_new(o, "memory_mb", json_null());
        if (res && res->pids > 0)
                json_object_set_new(o, "pids", json_null());
        if (res && res->cpus > 0)
                json_object_set_new(o, "cpus", json_null());
        return o;
}

/* Creates the directories: one per usable v1 hierarchy, or the one v2 directory. */
static int
cg_make_dirs(struct cgroup *c, const char *name)
{
        size_t np = 0;
        int i;

        for (i = 0; i < CG_NCTRL; i++) {
                const char *base = c->version == 2 ? (i == 0 ? cg.base2 : NULL) : cg.base[i];
                char *dir;

                if (!base)
                        continue;
                dir = xasprintf("%s/%s", base, name);
                if (cg_make(dir) < 0) {
                        free(dir);
                        continue;
                }
                c->dirs[i] = dir;
                c->procs[np++] = xasprintf("%s/cgroup.procs", dir);
        }
        return np ? 0 : -ENOENT;
}

/* Creates the cgroup (see cgroup.h). */
struct cgroup *
cgroup_create(const char *name, const struct backend_resources *res, json_t **enforced)
{
        struct cgroup *c;

        *enforced = cg_enforced_nulls(res);
        cg_probe_once();
        cg_graveyard_sweep();
        if (cg.version == 0 || !cg_name_ok(name))
                return NULL;
        c = xcalloc(1, sizeof(*c));
        c->version = cg.version;
        if (cg_make_dirs(c, name) < 0) {
                cgroup_destroy(c);
                return NULL;
        }
        /* v2 keeps its single directory in dirs[0]; on v1 any hierarchy lists the same pids. */
        c->track = c->dirs[CG_PIDS]     ? c->dirs[CG_PIDS]
                   : c->dirs[CG_MEMORY] ? c->dirs[CG_MEMORY]
                                        : c->dirs[CG_CPU];
        c->mem = c->version == 2 ? (cg.avail[CG_MEMORY] ? c->dirs[0] : NULL) : c->dirs[CG_MEMORY];
        if (res)
                cg_apply_limits(c, res, *enforced);
        return c;
}

/* NULL-terminated cgroup.procs paths (borrowed). */
const char *const *
cgroup_procs_files(const struct cgroup *c)
{
        return (const char *const *) c->procs;
}

/* OOM kills so far. */
uint64_t
cgroup_oom_kills(const struct cgroup *c)
{
        if (!c || !c->mem)
                return 0;
        if (c->version == 2)
                return cg_keyed(c->mem, "memory.events", "oom_kill");
        return cg_keyed(c->mem, "memory.oom_control", "oom_kill");
}

/* Signals every process; SIGKILL repeats until no new process shows up (forks in flight). */
int
cgroup_signal_all(const struct cgroup *c, int sig)
{
        pid_t *done = NULL;
        size_t ndone = 0;
        int i, sent = 0, n;

        if (!c || !c->track)
                return 0;
        for (i = 0; i < (sig == SIGKILL ? CG_KILL_PASSES : 1); i++) {
                n = cg_signal_pass(c, sig, &done, &ndone);
                sent += n;
                if (n == 0)
                        break;
        }
        if (sig == SIGKILL && c->version == 2 && cg.has_kill)
                (void) cg_write(c->track, "cgroup.kill", "1");
        free(done);
        return sent;
}

/* Processes left in the cgroup. */
int
cgroup_count(const struct cgroup *c)
{
        pid_t *v;
        size_t n;

        if (!c || !c->track)
                return 0;
        n = cg_pids(c->track, &v);
        free(v);
        return (int) n;
}

/* Kills what is left and removes the directories; NULL only retries pending removals. */
void
cgroup_destroy(struct cgroup *c)
{
        int i;

        cg_graveyard_sweep();
        if (!c)
                return;
        (void) cgroup_signal_all(c, SIGKILL);
        for (i = 0; i < CG_NCTRL; i++) {
                if (c->dirs[i])
                        cg_remove(c->dirs[i]);
                free(c->procs[i]);
        }
        free(c);
}
