/* oom.c — the cgroup oom_kill counters that tell an exec killed for memory (cgroup v2's
 * memory.events, v1's memory.oom_control). */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"

/* The memory cgroup in a /proc/PID/cgroup text (cut up by the parse): v2 ("0::/path") or
 * v1's memory controller, which wins (hybrid: it is the one that counts OOM kills). */
int
agent_cgroup_parse(char *text, char *path, size_t n, int *v1)
{
        char *line, *save = NULL;

        *v1 = 0;
        path[0] = 0;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = 0;
                if (c1[1] == 0) {
                        snprintf(path, n, "%s", c2 + 1); /* v2 */
                } else if (strstr(c1 + 1, "memory")) {
                        snprintf(path, n, "%s", c2 + 1); /* v1 (or hybrid) */
                        *v1 = 1;
                        return 0;
                }
        }
        return path[0] ? 0 : -1;
}

static int
oom_cgroup_of(pid_t pid, char *path, size_t n, int *v1)
{
        char file[64], buf[4096];
        ssize_t r;
        int fd;

        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int) pid);
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (r <= 0)
                return -1;
        buf[r] = 0;
        return agent_cgroup_parse(buf, path, n, v1);
}

/* The counter file of pid's memory cgroup below root; root's own when pid's cgroup is not
 * visible there (outside our cgroup namespace), NULL when there is none. */
char *
agent_cgroup_events_at(const char *root, pid_t pid)
{
        static const char *const fallback[] = {"/memory.events", "/memory/memory.oom_control"};
        char cg[PATH_MAX] = "", file[2 * PATH_MAX + 64];
        struct stat st;
        int v1 = 0;

        if (oom_cgroup_of(pid, cg, sizeof(cg), &v1) == 0 && !strstr(cg, "..")) {
                snprintf(file, sizeof(file),
                         v1 ? "%s/memory%s/memory.oom_control" : "%s%s/memory.events", root,
                         strcmp(cg, "/") == 0 ? "" : cg);
                if (stat(file, &st) == 0)
                        return strdup(file);
        }
        for (size_t i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++) {
                snprintf(file, sizeof(file), "%s%s", root, fallback[i]);
                if (stat(file, &st) == 0)
                        return strdup(file);
        }
        return NULL;
}

/* The file whose oom_kill line counts pid's cgroup's OOM kills. */
char *
agent_cgroup_events(pid_t pid)
{
        return agent_cgroup_events_at("/sys/fs/cgroup", pid);
}

/* The oom_kill count in a memory.events / memory.oom_control file. */
uint64_t
agent_oom_count(const char *path)
{
        char buf[4096];
        const char *p = buf;
        ssize_t n;
        int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        while (p && *p) {
                if (strncmp(p, "oom_kill ", 9) == 0)
                        return strtoull(p + 9, NULL, 10);
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        return 0;
}
