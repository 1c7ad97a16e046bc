/* helper_daemon.c — a sandboxd for the benchmarks (see helper_daemon.h). */
#include "bench/helper_daemon.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
bd_wait_ready(int nfd)
{
        struct pollfd pfd = {.fd = nfd, .events = POLLIN};
        char buf[512];

        for (;;) {
                ssize_t n;
                if (poll(&pfd, 1, 20000) <= 0)
                        return -1;
                n = recv(nfd, buf, sizeof(buf) - 1, 0);
                buf[n > 0 ? n : 0] = '\0';
                if (strstr(buf, "READY=1"))
                        return 0;
        }
}

/* Starts the daemon. */
int
bd_start(struct bd *d, const char *config, char *const *env)
{
        const char *bin = getenv("SANDBOXD_BIN") ? getenv("SANDBOXD_BIN") : "build/std/sandboxd";
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char state[96], conf[96], notify[96];
        FILE *f;
        int nfd, rc;

        snprintf(d->dir, sizeof(d->dir), "/tmp/bench-sbxd-XXXXXX");
        if (!mkdtemp(d->dir))
                return -1;
        snprintf(d->sock, sizeof(d->sock), "%s/s.sock", d->dir);
        snprintf(state, sizeof(state), "%s/state", d->dir);
        snprintf(conf, sizeof(conf), "%s/sandboxd.conf", d->dir);
        snprintf(notify, sizeof(notify), "%s/notify", d->dir);
        f = fopen(conf, "w");
        if (!f)
                return -1;
        fputs(config ? config : "", f);
        fclose(f);
        nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify);
        if (bind(nfd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -1;
        fflush(stdout);
        d->pid = fork();
        if (d->pid == 0) {
                int log = open("/dev/null", O_WRONLY | O_CLOEXEC);
                dup2(log, 2);
                setenv("NOTIFY_SOCKET", notify, 1);
                for (char *const *e = env; e && *e; e++)
                        putenv(*e);
                execl(bin, bin, "--socket", d->sock, "--state-dir", state, "--config", conf,
                      (char *) NULL);
                _exit(127);
        }
        rc = bd_wait_ready(nfd);
        close(nfd);
        if (rc < 0)
                return -1;
        d->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->sock);
        return connect(d->fd, (struct sockaddr *) &sa, sizeof(sa));
}

/* The next whole line of the connection (new), or NULL at EOF. */
static json_t *
bd_read(struct bd *d)
{
        char *nl;
        json_t *msg;

        while (!d->in.data || !(nl = memchr(d->in.data, '\n', d->in.len))) {
                buf_reserve(&d->in, 65536);
                ssize_t n = read(d->fd, d->in.data + d->in.len, 65536);
                if (n <= 0)
                        return NULL;
                d->in.len += (size_t) n;
        }
        msg = json_loadb(d->in.data, (size_t) (nl - d->in.data), 0, NULL);
        buf_consume(&d->in, (size_t) (nl - d->in.data) + 1);
        return msg;
}

/* One request. */
json_t *
bd_call(struct bd *d, const char *method, json_t *params)
{
        json_t *req = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", ++d->id, "method",
                                method, "params", params);
        char *line = json_dumps(req, JSON_COMPACT);
        json_t *msg;

        if (write(d->fd, line, strlen(line)) < 0 || write(d->fd, "\n", 1) < 0)
                exit(1);
        free(line);
        json_decref(req);
        while ((msg = bd_read(d))) {
                if (json_integer_value(json_object_get(msg, "id")) == d->id) {
                        json_t *res = json_incref(json_object_get(msg, "result"));
                        if (!res)
                                fprintf(stderr, "%s: %s\n", method,
                                        json_string_value(json_object_get(
                                                json_object_get(msg, "error"), "message")));
                        json_decref(msg);
                        return res;
                }
                json_decref(msg);
        }
        exit(1);
}

/* Stops the daemon and removes its directory. */
void
bd_stop(struct bd *d)
{
        char *cmd = xasprintf("rm -rf '%s'", d->dir);

        close(d->fd);
        kill(d->pid, SIGTERM);
        waitpid(d->pid, NULL, 0);
        if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", d->dir);
        free(cmd);
        buf_free(&d->in);
}

static int
cmp_double(const void *a, const void *b)
{
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

double
bd_median(double *v, int n)
{
        qsort(v, (size_t) n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
