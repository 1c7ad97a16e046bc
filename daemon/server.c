/* server.c — listener, socket activation, peer credentials, connection limits. */
#include "daemon/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon/conn.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/sandbox.h"
#include "protocol/util.h"

static uv_pipe_t server_pipe;
static bool server_is_open;
static bool server_from_systemd;
static char *server_path; /* our own socket file to unlink, NULL when handed over */

/* Whether the peer may use the daemon at all (protocol §2). */
static bool
server_peer_allowed(uid_t uid, gid_t gid, struct conn *c)
{
        const struct config *cf = g.config;
        size_t n;
        const gid_t *groups;

        if (uid == 0 || uid == g.uid)
                return true;
        for (size_t i = 0; i < cf->nallow_uids; i++)
                if (cf->allow_uids[i] == uid)
                        return true;
        groups = conn_groups(c, &n);
        for (size_t i = 0; i < cf->nallow_gids; i++) {
                if (cf->allow_gids[i] == gid)
                        return true;
                for (size_t j = 0; j < n; j++)
                        if (groups[j] == cf->allow_gids[i])
                                return true;
        }
        return false;
}

struct server_ids {
        const char **v;
        size_t n, cap;
};

static void
server_container_id_cb(struct sandbox *sb, void *ctx)
{
        struct server_ids *ids = ctx;
        const char *id = json_string_value(json_object_get(sb->details, "container_id"));

        if (id && ids->n < ids->cap)
                ids->v[ids->n++] = id;
}

/* A peer inside one of our process trees or containers is a subagent whatever it says: it
 * must not answer approvals for what it runs itself. */
static void
server_peer_confine(struct conn *c)
{
        struct server_ids ids = {NULL, 0, sandbox_count()};
        const char *why;

        ids.v = xcalloc(ids.cap + 1, sizeof(*ids.v));
        sandbox_foreach(server_container_id_cb, &ids);
        why = peer_inside(conn_pid(c), getpid(), ids.v);
        free(ids.v);
        if (!why)
                return;
        conn_confine(c);
        log_info("conn %llu: uid %u pid %d is inside the daemon's sandboxes (%s): role subagent, "
                 "never asked",
                 (unsigned long long) conn_id(c), (unsigned) conn_uid(c), (int) conn_pid(c), why);
}

static void
server_reject(struct conn *c, int code, const char *msg)
{
        conn_reject(c, json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error", "code",
                                 code, "message", msg));
}

static void
server_accept_cb(uv_stream_t *s, int status)
{
        struct conn *c;
        uid_t uid;
        gid_t gid;

        if (status < 0)
                return;
        c = conn_accept(s);
        if (!c)
                return;
        uid = conn_uid(c);
        gid = conn_gid(c);
        if (g.stopping) {
                server_reject(c, SBX_E_UNUSABLE, "the daemon is shutting down");
        } else if (!server_peer_allowed(uid, gid, c)) {
                log_info("connection from uid %u (pid %d) refused: not allowed by configuration",
                         (unsigned) uid, (int) conn_pid(c));
                server_reject(c, SBX_E_PERMISSION,
                              "permission denied: this uid may not use sandboxd (allow_users / "
                              "allow_groups in the configuration)");
        } else if (conn_count() > g.config->max_connections) {
                server_reject(c, SBX_E_LIMIT,
                              "limit reached: too many connections "
                              "(max_connections)");
        } else if (conn_count_uid(uid) > g.config->max_connections_per_uid) {
                server_reject(c, SBX_E_LIMIT,
                              "limit reached: too many connections for this uid "
                              "(max_connections_per_uid)");
        } else {
                log_debug("conn %llu: uid %u pid %d connected", (unsigned long long) conn_id(c),
                          (unsigned) uid, (int) conn_pid(c));
                server_peer_confine(c);
        }
}

/* Says what fd is when it is not a listening Unix stream socket ("a datagram socket", …). */
static const char *
server_fd_kind(int fd)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int type = 0, listening = 0;
        socklen_t ilen = sizeof(int);

        if (getsockname(fd, (struct sockaddr *) &ss, &len) < 0)
                return errno == ENOTSOCK ? "not a socket" : "not an open socket";
        if (ss.ss_family != AF_UNIX)
                return ss.ss_family == AF_INET || ss.ss_family == AF_INET6 ? "an IP socket"
                                                                           : "not a Unix socket";
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ilen) < 0 || type != SOCK_STREAM)
                return type == SOCK_DGRAM ? "a datagram socket" : "not a stream socket";
        ilen = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) < 0 || !listening)
                return "a stream socket that is not listening";
        return "not usable";
}

static int
server_activation_fd(struct sbx_error *err)
{
        int n = sd_listen_fds(1);

        if (n <= 0)
                return n;
        if (n > 1) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL,
                              "systemd passed %d sockets (LISTEN_FDS=%d); sandboxd takes exactly "
                              "one (one ListenStream= in sandboxd.socket)",
                              n, n);
                return -EINVAL;
        }
        if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL,
                              "the socket passed by systemd (fd %d) is %s; sandboxd needs a "
                              "listening Unix stream socket "
                              "(ListenStream=/run/sandboxd/sandboxd.sock)",
                              SD_LISTEN_FDS_START, server_fd_kind(SD_LISTEN_FDS_START));
                return -EINVAL;
        }
        return SD_LISTEN_FDS_START;
}

/* --socket or $SANDBOXD_SOCKET won over systemd: close what it passed (systemd keeps its own
 * copy) and clear LISTEN_*, so nothing lingers in the daemon. Returns 0. */
static int
server_ignore_activation(void)
{
        int n = sd_listen_fds(1);

        if (n <= 0)
                return 0;
        log_info("ignoring %d socket(s) passed by systemd: --socket or $SANDBOXD_SOCKET given", n);
        for (int i = 0; i < n; i++)
                close(SD_LISTEN_FDS_START + i);
        return 0;
}

/* The path of the socket systemd passed ("@name" when abstract), NULL when it has none. */
static char *
server_activated_path(int fd)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        size_t n;

        memset(&sa, 0, sizeof(sa));
        if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0 ||
            len <= offsetof(struct sockaddr_un, sun_path))
                return NULL;
        n = len - offsetof(struct sockaddr_un, sun_path);
        if (sa.sun_path[0] == '\0')
                return n > 1 ? xasprintf("@%.*s", (int) (n - 1), sa.sun_path + 1) : NULL;
        return xstrndup(sa.sun_path, n);
}

/* Gives the socket's own directory to gid with mode 0750 (it was created 0700). */
static int
server_group_dir(const char *path, gid_t gid)
{
        char *dir = xstrdup(path), *slash = strrchr(dir, '/');
        struct stat st;
        int r = 0;

        /* Only a private directory of ours: never a shared one such as /tmp. */
        if (slash && slash != dir) {
                *slash = '\0';
                if (stat(dir, &st) == 0 && st.st_uid == geteuid() &&
                    !(st.st_mode & (S_ISVTX | S_IWOTH)) &&
                    (chown(dir, (uid_t) -1, gid) < 0 || chmod(dir, 0750) < 0))
                        r = -errno;
        }
        free(dir);
        return r;
}

static int
server_bind(const char *path, const char *group, struct sbx_error *err)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char *dir = xstrdup(path), *slash = strrchr(dir, '/');
        int fd, r;
        mode_t mode = group ? 0660 : 0600;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                free(dir);
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "socket path '%s' is too long", path);
                return -ENAMETOOLONG;
        }
        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                        sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot create '%s': %s", dir,
                                      strerror(errno));
                        free(dir);
                        return -errno;
                }
        }
        free(dir);
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A stale socket from a crashed daemon: refuse if something still answers. */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0) {
                close(fd);
                sbx_error_set(err, SBX_E_INTERNAL, NULL,
                              "another sandboxd is already listening on '%s'", path);
                return -EADDRINUSE;
        }
        unlink(path);
        mode_t old = umask(0777 & ~mode);
        r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0 || chmod(path, mode) < 0) {
                r = -errno;
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot bind '%s': %s", path,
                              strerror(-r));
                close(fd);
                return r;
        }
        if (group) {
                struct group *gr = getgrnam(group);
                /* The group must also be able to reach the socket through its directory. */
                if (gr && server_group_dir(path, gr->gr_gid) < 0)
                        gr = NULL;
                if (!gr || chown(path, (uid_t) -1, gr->gr_gid) < 0) {
                        sbx_error_set(err, SBX_E_INTERNAL, NULL,
                                      "cannot give socket '%s' to group '%s': %s", path, group,
                                      gr ? strerror(errno) : "no such group");
                        close(fd);
                        unlink(path);
                        return -EINVAL;
                }
        }
        if (listen(fd, 256) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* Opens the listener. */
int
server_open(uv_loop_t *loop, const char *path, bool explicit_path, const char *group,
            struct sbx_error *err)
{
        int fd = explicit_path ? server_ignore_activation() : server_activation_fd(err);
        int r;

        if (fd < 0)
                return fd;
        if (fd > 0) {
                server_from_systemd = true;
                /* Report where clients really connect, not the path we would have bound. */
                free(g.socket_path);
                g.socket_path = server_activated_path(fd);
        } else {
                fd = server_bind(path, group, err);
                if (fd < 0)
                        return fd;
                server_path = xstrdup(path);
        }
        uv_pipe_init(loop, &server_pipe, 0);
        r = uv_pipe_open(&server_pipe, fd);
        if (r == 0)
                r = uv_listen((uv_stream_t *) &server_pipe, 256, server_accept_cb);
        if (r < 0) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot listen: %s", uv_strerror(r));
                uv_close((uv_handle_t *) &server_pipe, NULL);
                return r;
        }
        server_is_open = true;
        return 0;
}

/* Whether systemd handed us the socket. */
bool
server_activated(void)
{
        return server_from_systemd;
}

/* Closes the listener. */
void
server_close(void)
{
        if (!server_is_open)
                return;
        server_is_open = false;
        uv_close((uv_handle_t *) &server_pipe, NULL);
        if (server_path) {
                unlink(server_path);
                free(server_path);
                server_path = NULL;
        }
}

/* Reloads the policy. */
int
server_reload_policy(struct sbx_error *err)
{
        struct policy *p = NULL;
        int r;

        if (!g.config->policy_file) {
                p = policy_new_default();
        } else {
                r = policy_load(g.config->policy_file, true, &p, err);
                if (r < 0) {
                        free(g.policy_error);
                        g.policy_error = xstrdup(err->message ? err->message : "load failed");
                        log_warn("policy reload failed, keeping the previous policy: %s",
                                 g.policy_error);
                        return r;
                }
        }
        policy_free(g.policy);
        g.policy = p;
        free(g.policy_error);
        g.policy_error = NULL;
        log_info("policy loaded: %zu rules, sha256 %s", policy_rule_count(p), policy_sha256(p));
        return 0;
}
