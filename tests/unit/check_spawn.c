/* check_spawn.c — spawn_start / spawn_fork_as with real processes (no sleeps: poll and waitpid). */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/spawn.h"
#include "protocol/util.h"

static char *const std_env[] = {"PATH=/usr/bin:/bin", NULL};

/* Reads fds[0..n) until each reports EOF (or EIO: pty slave closed) into bufs. */
static void
drain(int *fds, struct buf *bufs, int n)
{
        struct pollfd pfd[2];
        char chunk[4096];
        int i, open = n;
        ssize_t r;

        while (open > 0) {
                for (i = 0; i < n; i++)
                        pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
                ck_assert_int_ge(poll(pfd, (nfds_t) n, -1), 1);
                for (i = 0; i < n; i++) {
                        if (fds[i] < 0 || !pfd[i].revents)
                                continue;
                        r = read(fds[i], chunk, sizeof(chunk));
                        if (r > 0) {
                                buf_append(&bufs[i], chunk, (size_t) r);
                                continue;
                        }
                        if (r < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        ck_assert_msg(r == 0 || errno == EIO, "read: %s", strerror(errno));
                        close(fds[i]);
                        fds[i] = -1;
                        open--;
                }
        }
}

static int
reap(pid_t pid)
{
        int st;

        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        return st;
}

/* Output of one stream as a NUL-terminated string (new). */
static char *
text(struct buf *b)
{
        char *s = xstrndup(b->data ? b->data : "", b->len);

        buf_free(b);
        return s;
}

struct run {
        int status;
        char *out, *err;
};

/* Starts o (must succeed), feeds stdin_data when o->stdin_pipe, collects everything. */
static struct run
run_opts(const struct spawn_opts *o, const char *stdin_data)
{
        struct sbx_error err = {0};
        struct spawn_result res;
        struct buf bufs[2] = {{0}};
        int fds[2], n = 1, rc;
        struct run r;

        rc = spawn_start(o, &res, &err);
        ck_assert_msg(rc == 0, "spawn_start: %d %s", rc, err.message ? err.message : "");
        if (res.stdin_fd >= 0) {
                if (stdin_data)
                        ck_assert_int_eq(write(res.stdin_fd, stdin_data, strlen(stdin_data)),
                                         (ssize_t) strlen(stdin_data));
                close(res.stdin_fd);
        }
        fds[0] = res.stdout_fd;
        if (res.stderr_fd >= 0)
                fds[n++] = res.stderr_fd;
        drain(fds, bufs, n);
        r.status = reap(res.pid);
        r.out = text(&bufs[0]);
        r.err = text(&bufs[1]);
        return r;
}

static struct run
run_argv(char *const *argv)
{
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1};

        return run_opts(&o, NULL);
}

static void
run_free(struct run *r)
{
        free(r->out);
        free(r->err);
}

/* Starts o expecting failure; returns rc and fills *err. Checks no child is left behind. */
static int
start_fails(const struct spawn_opts *o, struct sbx_error *err)
{
        struct spawn_result res;
        int rc = spawn_start(o, &res, err);

        ck_assert_int_lt(rc, 0);
        ck_assert_int_eq(res.pid, -1);
        ck_assert_int_eq(res.stdout_fd, -1);
        ck_assert_int_ne(err->code, 0);
        ck_assert_ptr_nonnull(err->message);
        ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
        ck_assert_int_eq(errno, ECHILD);
        return rc;
}

static const char *
err_param(const struct sbx_error *err)
{
        return json_string_value(json_object_get(err->data, "param"));
}

START_TEST(test_echo)
{
        char *argv[] = {"echo", "hello", "world", NULL};
        struct run r = run_argv(argv);

        ck_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
        ck_assert_str_eq(r.out, "hello world\n");
        ck_assert_str_eq(r.err, "");
        run_free(&r);
}
END_TEST

START_TEST(test_result_fds)
{
        char *argv[] = {"true", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .stdin_pipe = true};
        struct sbx_error err = {0};
        struct spawn_result res;
        int fds[3], i;

        ck_assert_int_eq(spawn_start(&o, &res, &err), 0);
        fds[0] = res.stdin_fd;
        fds[1] = res.stdout_fd;
        fds[2] = res.stderr_fd;
        for (i = 0; i < 3; i++) {
                ck_assert_int_ge(fds[i], 0);
                ck_assert(fcntl(fds[i], F_GETFL) & O_NONBLOCK);
                ck_assert(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
                close(fds[i]);
        }
        ck_assert_int_eq(WEXITSTATUS(reap(res.pid)), 0);
}
END_TEST

START_TEST(test_stderr_separate)
{
        char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
        struct run r = run_argv(argv);

        ck_assert_int_eq(WEXITSTATUS(r.status), 3);
        ck_assert_str_eq(r.out, "out\n");
        ck_assert_str_eq(r.err, "err\n");
        run_free(&r);
}
END_TEST

START_TEST(test_stderr_merged)
{
        char *argv[] = {"sh", "-c", "echo out; echo err >&2; echo out2", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .merge_stderr = true};
        struct run r = run_opts(&o, NULL);

        ck_assert_str_eq(r.out, "out\nerr\nout2\n");
        ck_assert_str_eq(r.err, "");
        run_free(&r);
}
END_TEST

START_TEST(test_stdin_pipe)
{
        char *argv[] = {"cat", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .stdin_pipe = true};
        struct run r = run_opts(&o, "round\ntrip\n");

        ck_assert_str_eq(r.out, "round\ntrip\n");
        ck_assert_int_eq(WEXITSTATUS(r.status), 0);
        run_free(&r);
}
END_TEST

START_TEST(test_stdin_devnull)
{
        char *argv[] = {"sh", "-c", "cat; readlink /proc/self/fd/0", NULL};
        struct run r = run_argv(argv);

        ck_assert_str_eq(r.out, "/dev/null\n");
        run_free(&r);
}
END_TEST

START_TEST(test_cwd_missing)
{
        char *argv[] = {"pwd", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .cwd = "/nope"};
        struct sbx_error err = {0};

        ck_assert_int_eq(start_fails(&o, &err), -ENOENT);
        ck_assert_int_eq(err.code, SBX_E_PARAMS);
        ck_assert_str_eq(err_param(&err), "cwd");
        ck_assert_str_eq(err.message, "cwd '/nope': No such file or directory");
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_cwd)
{
        char *argv[] = {"pwd", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .cwd = "/usr/bin"};
        struct run r = run_opts(&o, NULL);

        ck_assert_str_eq(r.out, "/usr/bin\n");
        run_free(&r);
}
END_TEST

START_TEST(test_program_not_in_path)
{
        char *argv[] = {"sandboxd-no-such-program", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1};
        struct sbx_error err = {0};

        ck_assert_int_eq(start_fails(&o, &err), -ENOENT);
        ck_assert_int_eq(err.code, SBX_E_PARAMS);
        ck_assert_str_eq(err_param(&err), "argv");
        ck_assert_str_eq(err.message, "cannot execute 'sandboxd-no-such-program': not found in "
                                      "PATH (/usr/bin:/bin)");
        sbx_error_clear(&err);
}
END_TEST

/* A program run by path with another argv[0]: a shell then names itself by argv[0]. */
START_TEST(test_path_and_argv0)
{
        char *argv[] = {"mysh", "-c", "echo \"$0\"; sbx-no-such-command", NULL};
        struct spawn_opts o = {.path = "/bin/sh", .argv = argv, .envp = std_env, .keep_fd = -1};
        struct sbx_error err = {0};
        struct run r = run_opts(&o, NULL);

        ck_assert_str_eq(r.out, "mysh\n");
        ck_assert_ptr_nonnull(strstr(r.err, "mysh"));
        run_free(&r);
        o.path = "/sandboxd/no/such/shell";
        ck_assert_int_eq(start_fails(&o, &err), -ENOENT);
        ck_assert_str_eq(err.message,
                         "cannot execute '/sandboxd/no/such/shell': No such file or directory");
        sbx_error_clear(&err);
}
END_TEST

/* Creates dir/name with content and mode; returns the path (new). */
static char *
make_file(const char *dir, const char *name, const char *content, mode_t mode)
{
        char *path = xasprintf("%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t) strlen(content));
        close(fd);
        ck_assert_int_eq(chmod(path, mode), 0);
        return path;
}

START_TEST(test_program_path_errors)
{
        char tmpl[] = "/tmp/check-spawn-XXXXXX", *dir = mkdtemp(tmpl);
        struct {
                char *prog;
                int rc;
                const char *why;
        } cases[] = {
                {xstrdup("/nonexistent/prog"), -ENOENT, "No such file or directory"},
                {make_file(dir, "noexec", "", 0644), -EACCES, "Permission denied"},
                {make_file(dir, "garbage", "\x01\x02garbage", 0755), -ENOEXEC, "Exec format error"},
                {xstrdup("/usr"), -EACCES, "Permission denied"},
        };
        struct sbx_error err = {0};
        size_t i;

        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                char *argv[] = {cases[i].prog, NULL};
                struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1};
                char *want = xasprintf("cannot execute '%s': %s", cases[i].prog, cases[i].why);

                ck_assert_int_eq(start_fails(&o, &err), cases[i].rc);
                ck_assert_int_eq(err.code, SBX_E_PARAMS);
                ck_assert_str_eq(err_param(&err), "argv");
                ck_assert_str_eq(err.message, want);
                sbx_error_clear(&err);
                if (strncmp(cases[i].prog, dir, strlen(dir)) == 0)
                        unlink(cases[i].prog);
                free(cases[i].prog);
                free(want);
        }
        ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_path_from_envp)
{
        /* PATH comes from the child's envp, not the daemon's environment. */
        char *argv[] = {"ls", NULL};
        char *envp[] = {"PATH=/nonexistent:/also-not", NULL};
        struct spawn_opts o = {.argv = argv, .envp = envp, .keep_fd = -1};
        struct sbx_error err = {0};

        start_fails(&o, &err);
        ck_assert_str_eq(err.message,
                         "cannot execute 'ls': not found in PATH (/nonexistent:/also-not)");
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_bad_opts)
{
        char *empty[] = {"", NULL};
        char *argv[] = {"true", NULL};
        struct spawn_opts o = {.argv = empty, .envp = std_env, .keep_fd = -1};
        struct sbx_error err = {0};

        start_fails(&o, &err);
        ck_assert_str_eq(err_param(&err), "argv");
        o.argv = argv;
        o.keep_fd = 1;
        ck_assert_int_eq(start_fails(&o, &err), -EINVAL);
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_pty)
{
        char *argv[] = {"sh", "-c",
                        "tty >/dev/null && echo TTY; test -t 1 && echo T1; stty size; "
                        "echo err >&2",
                        NULL};
        struct spawn_opts o = {
                .argv = argv, .envp = std_env, .keep_fd = -1, .pty = true, .rows = 33, .cols = 101};
        struct run r = run_opts(&o, NULL);

        ck_assert_str_eq(r.out, "TTY\r\nT1\r\n33 101\r\nerr\r\n");
        ck_assert_str_eq(r.err, "");
        ck_assert_int_eq(WEXITSTATUS(r.status), 0);
        run_free(&r);
}
END_TEST

START_TEST(test_pty_stdin)
{
        char *argv[] = {"sh", "-c", "read line; echo \"got $line\"", NULL};
        struct spawn_opts o = {
                .argv = argv, .envp = std_env, .keep_fd = -1, .pty = true, .stdin_pipe = true};
        struct run r = run_opts(&o, "hi\n");

        /* The terminal echoes the input line, then the program answers. */
        ck_assert_str_eq(r.out, "hi\r\ngot hi\r\n");
        run_free(&r);
}
END_TEST

START_TEST(test_env_exact)
{
        char *argv[] = {"/usr/bin/env", NULL};
        char *envp[] = {"FOO=bar baz", "PATH=/usr/bin:/bin", "EMPTY=", NULL};
        struct spawn_opts o = {.argv = argv, .envp = envp, .keep_fd = -1};
        struct run r;

        ck_assert_int_eq(setenv("SANDBOXD_SECRET", "leak", 1), 0);
        r = run_opts(&o, NULL);
        ck_assert_str_eq(r.out, "FOO=bar baz\nPATH=/usr/bin:/bin\nEMPTY=\n");
        run_free(&r);
}
END_TEST

START_TEST(test_new_session)
{
        char *argv[] = {"cat", "/proc/self/stat", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1};
        struct sbx_error err = {0};
        struct spawn_result res;
        struct buf b = {0};
        int pid, ppid, pgrp, sid, fd;
        char state, *s;

        ck_assert_int_eq(spawn_start(&o, &res, &err), 0);
        close(res.stderr_fd);
        fd = res.stdout_fd;
        drain(&fd, &b, 1);
        reap(res.pid);
        s = text(&b);
        ck_assert_ptr_nonnull(strrchr(s, ')'));
        ck_assert_int_eq(sscanf(s, "%d", &pid), 1);
        ck_assert_int_eq(sscanf(strrchr(s, ')') + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid),
                         4);
        ck_assert_int_eq(pid, res.pid);
        ck_assert_int_eq(pgrp, res.pid);
        ck_assert_int_eq(sid, res.pid);
        ck_assert_int_ne(sid, getsid(0));
        free(s);
}
END_TEST

START_TEST(test_signals_reset)
{
        char *argv[] = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
        sigset_t set;
        struct run r;

        /* The daemon ignores SIGPIPE and libuv blocks signals: none of it may reach children. */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGUSR1, SIG_IGN);
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGCHLD);
        sigprocmask(SIG_BLOCK, &set, NULL);
        r = run_argv(argv);
        ck_assert_str_eq(r.out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
        run_free(&r);
}
END_TEST

START_TEST(test_fds_not_leaked)
{
        char *argv[] = {"sh", "-c", "ls /proc/$$/fd", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1};
        int leak = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
        int keep = fcntl(leak, F_DUPFD_CLOEXEC, 40);
        char want[64];
        struct run r;

        ck_assert_int_ge(leak, 3);
        ck_assert_int_ge(keep, 40);
        r = run_opts(&o, NULL);
        ck_assert_str_eq(r.out, "0\n1\n2\n");
        run_free(&r);
        o.keep_fd = keep;
        r = run_opts(&o, NULL);
        snprintf(want, sizeof(want), "0\n1\n2\n%d\n", keep);
        ck_assert_str_eq(r.out, want);
        run_free(&r);
        close(leak);
        close(keep);
}
END_TEST

START_TEST(test_rlimits)
{
        char *argv[] = {"sh", "-c", "ulimit -n; ulimit -v; ulimit -t; ulimit -Hn", NULL};
        struct spawn_limits l = {.nofile = 17, .as_bytes = 512ULL << 20, .cpu_s = 7};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .limits = &l};
        struct run r = run_opts(&o, NULL);

        ck_assert_str_eq(r.out, "17\n524288\n7\n17\n");
        run_free(&r);
}
END_TEST

START_TEST(test_rlimit_nofile_enforced)
{
        /* With 3 descriptors allowed, the shell cannot open a fourth. */
        char *argv[] = {"sh", "-c", "exec 3</dev/null && echo opened", NULL};
        struct spawn_limits l = {.nofile = 3};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .limits = &l};
        struct run r = run_opts(&o, NULL);

        ck_assert_str_eq(r.out, "");
        ck_assert_int_ne(WEXITSTATUS(r.status), 0);
        run_free(&r);
}
END_TEST

START_TEST(test_cgroup_join_failure)
{
        char *argv[] = {"true", NULL};
        const char *procs[] = {"/nonexistent/cgroup.procs", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .cgroup_procs = procs};
        struct sbx_error err = {0};

        ck_assert_int_eq(start_fails(&o, &err), -ENOENT);
        ck_assert_int_eq(err.code, SBX_E_BACKEND);
        ck_assert_ptr_nonnull(strstr(err.message, "join cgroup '/nonexistent/cgroup.procs'"));
        sbx_error_clear(&err);
}
END_TEST

struct ids_job {
        int code;
        int fd;
};

/* spawn_fork_as payload: writes "uid gid nfds" to fd with async-signal-safe calls only; nfds
 * counts the descriptors above 2 it has (fd itself is the only one it may have). */
static int
write_ids_fn(void *arg)
{
        struct ids_job *j = arg;
        char buf[64];
        unsigned v[3] = {(unsigned) getuid(), (unsigned) getgid(), 0};
        int n = 0, i;

        for (int fd = 3; fd < 1024; fd++)
                v[2] += fcntl(fd, F_GETFD) >= 0;
        for (i = 0; i < 3; i++) {
                char tmp[16];
                int t = 0;

                do
                        tmp[t++] = (char) ('0' + v[i] % 10);
                while ((v[i] /= 10) != 0);
                while (t > 0)
                        buf[n++] = tmp[--t];
                buf[n++] = i == 2 ? '\n' : ' ';
        }
        if (write(j->fd, buf, (size_t) n) != n)
                return 1;
        return j->code;
}

static char *
run_as_ids(const struct backend_identity *who, int code, int *rc)
{
        struct buf b = {0};
        int p[2], status = -1, extra = open("/dev/null", O_RDONLY | O_CLOEXEC);
        struct ids_job j = {code, -1};
        pid_t pid = -1;

        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        j.fd = p[1];
        *rc = spawn_fork_as(who, write_ids_fn, &j, &p[1], 1, &pid);
        close(p[1]);
        close(extra);
        drain(&p[0], &b, 1);
        if (*rc == 0) {
                ck_assert_int_eq(waitpid(pid, &status, 0), pid);
                ck_assert(WIFEXITED(status));
                ck_assert_int_eq(WEXITSTATUS(status), code);
        }
        return text(&b);
}

START_TEST(test_run_as_self)
{
        char want[64], *s;
        int rc;

        s = run_as_ids(NULL, 5, &rc);
        ck_assert_int_eq(rc, 0);
        snprintf(want, sizeof(want), "%u %u 1\n", (unsigned) getuid(), (unsigned) getgid());
        ck_assert_str_eq(s, want);
        free(s);
}
END_TEST

static gid_t nobody_groups[] = {100, 27};
static const struct backend_identity nobody = {
        .uid = 65534, .gid = 65534, .groups = nobody_groups, .ngroups = 2, .user = "nobody"};

START_TEST(test_identity_root)
{
        char *argv[] = {"sh", "-c", "id -u; id -g; id -G; cat /proc/self/status | grep Uid", NULL};
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .who = &nobody};
        struct run r;

        ck_assert_msg(geteuid() == 0, "root-only test registered without root");
        r = run_opts(&o, NULL);
        ck_assert_str_eq(r.out, "65534\n65534\n65534 27 100\nUid:\t65534\t65534\t65534\t65534\n");
        run_free(&r);
}
END_TEST

START_TEST(test_identity_cwd_checked_as_user)
{
        char *argv[] = {"true", NULL};
        struct spawn_opts o = {
                .argv = argv, .envp = std_env, .keep_fd = -1, .who = &nobody, .cwd = "/root"};
        struct sbx_error err = {0};
        struct stat st;

        ck_assert_int_eq(stat("/root", &st), 0);
        ck_assert_msg((st.st_mode & 0001) == 0, "/root is world-searchable here");
        ck_assert_int_eq(start_fails(&o, &err), -EACCES);
        ck_assert_str_eq(err.message, "cwd '/root': Permission denied");
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_run_as_root)
{
        char *s;
        int rc;

        s = run_as_ids(&nobody, 0, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_str_eq(s, "65534 65534 1\n");
        free(s);
}
END_TEST

START_TEST(test_unprivileged_refuses_other_uid)
{
        char *argv[] = {"id", "-u", NULL};
        struct backend_identity other = {.uid = 4321, .gid = 4321};
        struct backend_identity self;
        struct spawn_opts o = {.argv = argv, .envp = std_env, .keep_fd = -1, .who = &other};
        struct sbx_error err = {0};
        char want[32], *s;
        struct run r;
        int rc;

        /* This test process is ours alone (check forks per test): drop root for good. */
        if (geteuid() == 0)
                ck_assert_int_eq(setresuid(65534, 65534, 65534), 0);
        start_fails(&o, &err);
        ck_assert_int_eq(err.code, SBX_E_BACKEND);
        ck_assert_ptr_nonnull(strstr(err.message, "cannot run as uid 4321"));
        sbx_error_clear(&err);
        s = run_as_ids(&other, 0, &rc);
        ck_assert_int_eq(rc, -EPERM);
        free(s);
        self = (struct backend_identity){.uid = getuid(), .gid = getgid()};
        o.who = &self;
        r = run_opts(&o, NULL);
        snprintf(want, sizeof(want), "%u\n", (unsigned) getuid());
        ck_assert_str_eq(r.out, want);
        run_free(&r);
}
END_TEST

static int reaped_status = -1;

static void
reaped_exit_cb(uv_process_t *p, int64_t status, int sig)
{
        spawn_uv_child_del(p->pid);
        reaped_status = (int) status;
        uv_close((uv_handle_t *) p, NULL);
}

/* A reaper of every child (the local backend's SIGCHLD handler) beside libuv: libuv's own child
 * still reaches its exit_cb with its status, the other child is reaped by the reaper. */
START_TEST(test_reaper_leaves_libuv_children)
{
        char *args[] = {"/bin/sh", "-c", "exit 7", NULL};
        uv_process_options_t o = {.file = args[0], .args = args, .exit_cb = reaped_exit_cb};
        uv_process_t proc;
        uv_loop_t loop;
        siginfo_t si;
        int status = 0;
        pid_t other;

        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(uv_spawn(&loop, &proc, &o), 0);
        spawn_uv_child_add(proc.pid);
        other = fork();
        if (other == 0)
                _exit(3);
        /* Both are zombies now (WNOWAIT: still to be reaped). */
        ck_assert_int_eq(waitid(P_PID, (id_t) proc.pid, &si, WEXITED | WNOWAIT), 0);
        ck_assert_int_eq(waitid(P_PID, (id_t) other, &si, WEXITED | WNOWAIT), 0);
        ck_assert_int_eq(spawn_reap_other(&status), other);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        ck_assert_int_eq(spawn_reap_other(&status), 0); /* libuv's is left */
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(reaped_status, 7);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *
spawn_suite(void)
{
        Suite *s = suite_create("spawn");
        TCase *tc = tcase_create("pipes");
        TCase *root;

        tcase_add_test(tc, test_echo);
        tcase_add_test(tc, test_result_fds);
        tcase_add_test(tc, test_stderr_separate);
        tcase_add_test(tc, test_stderr_merged);
        tcase_add_test(tc, test_stdin_pipe);
        tcase_add_test(tc, test_stdin_devnull);
        tcase_add_test(tc, test_cwd_missing);
        tcase_add_test(tc, test_cwd);
        tcase_add_test(tc, test_program_not_in_path);
        tcase_add_test(tc, test_path_and_argv0);
        tcase_add_test(tc, test_program_path_errors);
        tcase_add_test(tc, test_path_from_envp);
        tcase_add_test(tc, test_bad_opts);
        tcase_add_test(tc, test_pty);
        tcase_add_test(tc, test_pty_stdin);
        tcase_add_test(tc, test_env_exact);
        tcase_add_test(tc, test_new_session);
        tcase_add_test(tc, test_signals_reset);
        tcase_add_test(tc, test_fds_not_leaked);
        tcase_add_test(tc, test_rlimits);
        tcase_add_test(tc, test_rlimit_nofile_enforced);
        tcase_add_test(tc, test_cgroup_join_failure);
        tcase_add_test(tc, test_run_as_self);
        tcase_add_test(tc, test_unprivileged_refuses_other_uid);
        tcase_add_test(tc, test_reaper_leaves_libuv_children);
        suite_add_tcase(s, tc);
        if (geteuid() == 0) {
                root = tcase_create("root");
                tcase_add_test(root, test_identity_root);
                tcase_add_test(root, test_identity_cwd_checked_as_user);
                tcase_add_test(root, test_run_as_root);
                suite_add_tcase(s, root);
        } else {
                fprintf(stderr, "check_spawn: not root: identity-switching tests excluded "
                                "(run as root to include them)\n");
        }
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(spawn_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
