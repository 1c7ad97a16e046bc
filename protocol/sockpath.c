/* sockpath.c — the default socket path, shared by sandboxd and sandboxctl. */
#include "protocol/sockpath.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

/* The default socket for euid. */
char *
sockpath_default(uid_t euid, const char *xdg_runtime_dir, bool *private_dir)
{
        *private_dir = false;
        if (euid == 0)
                return xstrdup(SOCKPATH_SYSTEM);
        if (xdg_runtime_dir && xdg_runtime_dir[0] == '/')
                return xasprintf("%s/sandboxd/sandboxd.sock", xdg_runtime_dir);
        /* No runtime directory (a plain su, cron, a container): a directory of our own in
         * /tmp, which both sides check before trusting it. */
        *private_dir = true;
        return xasprintf("/tmp/sandboxd-%u/sandboxd.sock", (unsigned) euid);
}

/* Checks the socket's directory. */
int
sockpath_check_dir(const char *path, uid_t uid, char **why)
{
        char *dir = xstrdup(path), *slash = strrchr(dir, '/');
        struct stat st;
        int r = 0;

        *why = NULL;
        if (slash && slash != dir)
                *slash = '\0';
        if (lstat(dir, &st) < 0) {
                r = -errno;
        } else if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 022)) {
                *why = xasprintf("'%s' is not a directory owned by uid %u and writable by it "
                                 "alone (%s uid %u, mode %03o): someone else may have put it "
                                 "there; remove it, or set XDG_RUNTIME_DIR or SANDBOXD_SOCKET",
                                 dir, (unsigned) uid, S_ISDIR(st.st_mode) ? "owner" : "a file of",
                                 (unsigned) st.st_uid, (unsigned) (st.st_mode & 0777));
                r = -EPERM;
        }
        free(dir);
        return r;
}
