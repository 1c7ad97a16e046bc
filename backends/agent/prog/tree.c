/* tree.c — process trees from /proc (a session and everything descended from it, so a child
 * that called setsid is caught through its parent). The cgroup oom_kill counters: oom.c. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"

struct tree_proc {
        pid_t pid, ppid, sid;
        int mark;
};

static struct tree_proc *tree_procs;
static size_t tree_cap;

static int
tree_read(const char *name, struct tree_proc *p)
{
        char path[64], buf[512];
        const char *rp;
        char state;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%s/stat", name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = 0;
        rp = strrchr(buf, ')');
        if (!rp || sscanf(rp + 1, " %c %d %*d %d", &state, &p->ppid, &p->sid) != 3)
                return -1;
        if (state == 'Z' || state == 'X' || state == 'x')
                return -1;
        p->pid = atoi(name);
        p->mark = 0;
        return 0;
}

/* Fills tree_procs with every live process; returns the count. */
static size_t
tree_scan(void)
{
        struct dirent *d;
        size_t n = 0;
        DIR *dir = opendir("/proc");

        if (!dir)
                return 0;
        while ((d = readdir(dir))) {
                if (d->d_name[0] < '1' || d->d_name[0] > '9')
                        continue;
                if (n == tree_cap) {
                        tree_cap = tree_cap ? tree_cap * 2 : 512;
                        tree_procs = agent_realloc(tree_procs, tree_cap * sizeof(*tree_procs));
                }
                if (tree_read(d->d_name, &tree_procs[n]) == 0)
                        n++;
        }
        closedir(dir);
        return n;
}

/* Compares pids (qsort, bsearch). */
int
agent_pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

static int
tree_proc_cmp(const void *a, const void *b)
{
        return agent_pid_cmp(&((const struct tree_proc *) a)->pid,
                             &((const struct tree_proc *) b)->pid);
}

static int
tree_marked(size_t n, pid_t pid)
{
        struct tree_proc key = {.pid = pid};
        struct tree_proc *p = bsearch(&key, tree_procs, n, sizeof(key), tree_proc_cmp);

        return p && p->mark;
}

/* Marks members of the sessions sids[0..nsids) (sorted), the pids in seen (sorted: members
 * of an earlier scan, whose parent may be gone since) and their descendants. */
static void
tree_mark(size_t n, const pid_t *sids, size_t nsids, const pid_t *seen, size_t nseen)
{
        pid_t self = getpid();
        size_t i;
        int changed = 1;

        for (i = 0; i < n; i++)
                tree_procs[i].mark =
                        bsearch(&tree_procs[i].sid, sids, nsids, sizeof(pid_t), agent_pid_cmp) ||
                        (nseen &&
                         bsearch(&tree_procs[i].pid, seen, nseen, sizeof(pid_t), agent_pid_cmp));
        while (changed) {
                changed = 0;
                for (i = 0; i < n; i++) {
                        if (tree_procs[i].mark || !tree_marked(n, tree_procs[i].ppid))
                                continue;
                        tree_procs[i].mark = changed = 1;
                }
        }
        for (i = 0; i < n; i++)
                if (tree_procs[i].pid == self || tree_procs[i].pid <= 1)
                        tree_procs[i].mark = 0;
}

/* Signals the trees; with seen, its members are remembered for the next scan. */
static uint32_t
tree_signal(const pid_t *sids, size_t nsids, struct agent_pids *seen, int sig)
{
        size_t i, n = tree_scan();
        uint32_t alive = 0;

        qsort(tree_procs, n, sizeof(*tree_procs), tree_proc_cmp);
        tree_mark(n, sids, nsids, seen ? seen->pids : NULL, seen ? seen->n : 0);
        if (seen)
                seen->n = 0;
        for (i = 0; i < n; i++) {
                if (!tree_procs[i].mark)
                        continue;
                alive++;
                if (sig > 0)
                        kill(tree_procs[i].pid, sig);
                if (seen && seen->n < AGENT_MAX_SEEN)
                        seen->pids[seen->n++] = tree_procs[i].pid; /* sorted: scan order */
        }
        return alive;
}

/* Signals the trees of sessions sids. */
uint32_t
agent_tree_signal(const pid_t *sids, size_t nsids, int sig)
{
        return tree_signal(sids, nsids, NULL, sig);
}

/* Signals one session's tree and whatever was in it at the last call (a process that called
 * setsid stays caught after its parent died). */
uint32_t
agent_tree_track(pid_t sid, struct agent_pids *seen, int sig)
{
        return agent_sid_ok(sid) ? tree_signal(&sid, 1, seen, sig) : 0;
}

/* Whether sid is a session that may be signalled (not ours, not init's). */
int
agent_sid_ok(pid_t sid)
{
        return sid > 1 && sid != getsid(0);
}

/* Signals one session's tree. */
uint32_t
agent_sid_signal(pid_t sid, int sig)
{
        return agent_sid_ok(sid) ? agent_tree_signal(&sid, 1, sig) : 0;
}
