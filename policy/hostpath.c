/* hostpath.c — a host path resolved the way its caller could resolve it (hostpath.h). */
#include "policy/hostpath.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HOSTPATH_MAX_LINKS 40 /* the kernel's own limit on symlinks in one lookup */

/* Whether who may search the directory st (mode bits as the kernel applies them: the owner's
 * bits for the owner, the group's for a member, the others' for anyone else). ACLs are not
 * read: a directory only they open is taken as closed, which fails closed. */
static bool
may_search(const struct policy_who *who, const struct stat *st)
{
        mode_t bit = S_IXOTH;

        if (st->st_uid == who->uid) {
                bit = S_IXUSR;
        } else {
                bool member = st->st_gid == who->gid;
                for (size_t i = 0; !member && i < who->ngroups; i++)
                        member = who->groups[i] == st->st_gid;
                if (member)
                        bit = S_IXGRP;
        }
        return S_ISDIR(st->st_mode) && (st->st_mode & bit);
}

/* Drops the last component of the absolute path out ("/a/b" -> "/a", "/a" -> "/"). */
static void
pop(char *out)
{
        char *slash = strrchr(out, '/');

        if (slash == out)
                out[1] = '\0';
        else if (slash)
                *slash = '\0';
}

/* Appends "/" and n bytes of s to out (cap bytes); -ENAMETOOLONG when it does not fit. */
static int
push(char *out, size_t cap, const char *s, size_t n)
{
        size_t l = strlen(out);
        size_t sep = l > 1 ? 1 : 0;

        if (l + sep + n + 1 > cap)
                return -ENAMETOOLONG;
        if (sep)
                out[l++] = '/';
        memcpy(out + l, s, n);
        out[l + n] = '\0';
        return 0;
}

/* Replaces todo (from its component at comp) by the symlink target at path followed by the
 * rest of todo; an absolute target starts again from "/". */
static int
follow(const char *path, char *todo, size_t cap, const char *rest, char *out)
{
        char target[PATH_MAX], tail[PATH_MAX];
        ssize_t n = readlink(path, target, sizeof(target) - 1);

        if (n < 0)
                return -errno;
        target[n] = '\0';
        if (snprintf(tail, sizeof(tail), "%s", rest) >= (int) sizeof(tail) ||
            snprintf(todo, cap, "%s/%s", target, tail) >= (int) cap)
                return -ENAMETOOLONG;
        if (target[0] == '/')
                strcpy(out, "/");
        return 0;
}

/* Resolves path as who could; see hostpath.h. */
int
hostpath_resolve_as(const struct policy_who *who, const char *path, char *out, size_t cap)
{
        char todo[PATH_MAX];
        const char *p = todo;
        struct stat st;
        int links = 0, rc;

        if (cap < 2 || snprintf(todo, sizeof(todo), "%s", path) >= (int) sizeof(todo))
                return -ENAMETOOLONG;
        strcpy(out, "/");
        for (;;) {
                p += strspn(p, "/");
                size_t n = strcspn(p, "/");
                if (!n)
                        return 0;
                if (n == 1 && p[0] == '.') {
                        p += n;
                        continue;
                }
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        pop(out);
                        p += n;
                        continue;
                }
                /* The caller must be able to search the directory to look anything up in it. */
                if (stat(out, &st) < 0)
                        return -errno;
                if (!may_search(who, &st))
                        return -EACCES;
                size_t l = strlen(out);
                if ((rc = push(out, cap, p, n)) < 0)
                        return rc;
                if (lstat(out, &st) < 0) {
                        if (errno != ENOENT)
                                return -errno;
                        /* A missing tail stays as written (Docker and mkdir -p create it). */
                        return p[n] ? push(out, cap, p + n + 1, strlen(p + n + 1)) : 0;
                }
                if (!S_ISLNK(st.st_mode)) {
                        p += n;
                        continue;
                }
                /* /proc's links (self, PID/cwd, PID/root, PID/fd/N) say what they say about
                 * the daemon, or only to whoever may ptrace the process: not the caller's. */
                if (!strncmp(out, "/proc/", 6))
                        return -EACCES;
                if (++links > HOSTPATH_MAX_LINKS)
                        return -ELOOP;
                char link[PATH_MAX];
                snprintf(link, sizeof(link), "%s", out);
                out[l] = '\0';
                if ((rc = follow(link, todo, sizeof(todo), p + n, out)) < 0)
                        return rc;
                p = todo;
        }
}
