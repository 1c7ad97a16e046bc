/* peer.c — whether a peer process belongs to the daemon's own process trees (see peer.h). */
#include "daemon/peer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/util.h"

#define PEER_MAX_DEPTH  4096 /* ancestors walked; deeper is "cannot tell" */
#define PEER_CGROUP_MAX 65536

/* Reads a small /proc file into buf (NUL-terminated); its length or -1. */
static ssize_t
peer_read(pid_t pid, const char *file, char *buf, size_t size)
{
        char path[64];
        ssize_t n, got = 0;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        while ((size_t) got < size - 1 && (n = read(fd, buf + got, size - 1 - (size_t) got)) > 0)
                got += n;
        close(fd);
        buf[got] = '\0';
        return got;
}

/* The parent of pid from /proc/PID/stat ("pid (comm) state ppid …"; comm may hold ')'). */
static int
peer_ppid(pid_t pid, pid_t *ppid)
{
        char buf[1024], *rp;
        int v;

        if (peer_read(pid, "stat", buf, sizeof(buf)) <= 0 || !(rp = strrchr(buf, ')')) ||
            sscanf(rp + 1, " %*c %d", &v) != 1)
                return -1;
        *ppid = (pid_t) v;
        return 0;
}

/* Whether the cgroup text names a container. */
bool
peer_cgroup_match(const char *text, const char *const *ids)
{
        for (; ids && *ids; ids++)
                if (**ids && strstr(text, *ids))
                        return true;
        return false;
}

/* One walk up from pid: 1 reached the daemon, 0 reached the top, -1 could not read a step. */
static int
peer_walk(pid_t pid, pid_t daemon_pid)
{
        pid_t cur = pid;

        for (int depth = 0; depth < PEER_MAX_DEPTH; depth++) {
                if (cur == daemon_pid)
                        return 1;
                if (cur <= 1)
                        return 0;
                if (peer_ppid(cur, &cur) < 0)
                        return -1;
        }
        return -1;
}

/* Why pid is one of ours, or NULL. */
const char *
peer_inside(pid_t pid, pid_t daemon_pid, const char *const *container_ids)
{
        int r = -1;
        char *cg;
        ssize_t n;
        bool in;

        if (pid <= 0)
                return "its pid is not visible to the daemon";
        /* An ancestor that exits during the walk breaks it: walk again (fresh parents). */
        for (int tries = 0; tries < 3 && r < 0; tries++)
                r = peer_walk(pid, daemon_pid);
        if (r != 0)
                return r > 0 ? "it was started by the daemon"
                             : "its ancestry cannot be read (it is gone, or hidden)";
        cg = xmalloc(PEER_CGROUP_MAX);
        n = peer_read(pid, "cgroup", cg, PEER_CGROUP_MAX);
        in = n > 0 && peer_cgroup_match(cg, container_ids);
        free(cg);
        if (n <= 0)
                return "its cgroup cannot be read";
        return in ? "it runs in one of the daemon's containers" : NULL;
}
