/* sockpath.h — where sandboxd listens and where its clients look (protocol §1, minus the
 * explicit --socket / $SANDBOXD_SOCKET and systemd's socket, which the callers handle). One
 * lookup for the daemon and sandboxctl, so that they cannot disagree. Pure apart from stat(). */
#ifndef SANDBOXD_SOCKPATH_H
#define SANDBOXD_SOCKPATH_H

#include <sys/types.h>

#include <stdbool.h>

/* The system daemon's socket. */
#define SOCKPATH_SYSTEM "/run/sandboxd/sandboxd.sock"

/* The default socket for euid (new string): SOCKPATH_SYSTEM for root, else
 * $XDG_RUNTIME_DIR/sandboxd/sandboxd.sock (xdg_runtime_dir, when absolute), else
 * /tmp/sandboxd-UID/sandboxd.sock. *private_dir is set when the path is that last one, whose
 * directory lives in a shared place and must be checked with sockpath_check_dir(). */
char *sockpath_default(uid_t euid, const char *xdg_runtime_dir, bool *private_dir);

/* Whether the directory of socket path is safe to listen in or connect through for uid: owned
 * by uid and writable by nobody else (anyone else could put their own socket there). 0, or
 * -EPERM with a sentence in *why (new). -ENOENT when it does not exist. */
int sockpath_check_dir(const char *path, uid_t uid, char **why);

#endif
