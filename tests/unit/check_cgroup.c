/* check_cgroup.c — cgroup probe/create/limits/kill with real processes and real cgroups.
 *
 * As root, every test that needs cgroups runs and FAILS when the probe does not deliver what
 * this machine's mounts say it should. As another user they are excluded (see main). */
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cgroup.h"
#include "backends/spawn.h"
#include "protocol/util.h"

static char *const std_env[] = {"PATH=/usr/bin:/bin", NULL};

/* Names carry the runner's pid so that the runner can clean up after a failed test (check's
 * fork mode ends a failing test with _exit: no cleanup runs in the test process). */
static int run_id;
static const char *const test_names[] = {"limits", "oom", "pids", "escape", "destroy"};

static char *
unique_name(const char *what)
{
        return xasprintf("check-%s-%d", what, run_id);
}

static char *
v2_own_dir(void)
{
        return xasprintf("/sys/fs/cgroup/unified/check-v2-%d", run_id);
}

/* Removes one level of the v2 test layout, killing what is inside first. */
static void
v2_remove(const char *dir)
{
        char *kill_file = xasprintf("%s/cgroup.kill", dir);
        int fd = open(kill_file, O_WRONLY | O_CLOEXEC), i;

        if (fd >= 0 && write(fd, "1", 1) < 0)
                perror(kill_file);
        if (fd >= 0)
                close(fd);
        for (i = 0; i < 1000 && rmdir(dir) < 0 && errno == EBUSY; i++)
                (void) poll(NULL, 0, 1); /* failure path only: killed processes leaving */
        free(kill_file);
}

/* Unchecked teardown (runs in the runner): whatever a failed test left behind. */
static void
sweep_leftovers(void)
{
        char *own = v2_own_dir(), *base = xasprintf("%s/sandboxd", own);
        char *leaf = xasprintf("%s/v2", base);
        json_t *enforced;
        size_t i;

        for (i = 0; i < ARRAY_SIZE(test_names); i++) {
                char *name = unique_name(test_names[i]);

                /* create reuses (and empties) an existing directory of that name. */
                cgroup_destroy(cgroup_create(name, NULL, &enforced));
                json_decref(enforced);
                free(name);
        }
        if (access(own, F_OK) == 0) {
                v2_remove(leaf);
                v2_remove(base);
                v2_remove(own);
        }
        free(leaf);
        free(base);
        free(own);
}

/* Whole file as a new string, NULL if unreadable. */
static char *
slurp(const char *path)
{
        struct buf b = {0};
        char chunk[4096];
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return NULL;
        while ((n = read(fd, chunk, sizeof(chunk))) > 0)
                buf_append(&b, chunk, (size_t) n);
        close(fd);
        buf_append(&b, "", 1);
        return b.data;
}

/* Independent of cgroup.c: does this machine mount a hierarchy with ctrl (v1, or v2 root)? */
static bool
machine_has(const char *ctrl)
{
        char *mi = slurp("/proc/self/mountinfo"), *line, *save = NULL;
        bool found = false;

        for (line = strtok_r(mi, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
                char mnt[4096], type[64], opts[4096], *ctrls;
                const char *dash = strstr(line, " - ");

                if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
                    sscanf(dash, " - %63s %*s %4095s", type, opts) != 2)
                        continue;
                if (strcmp(type, "cgroup") == 0) {
                        char *o, *s2 = NULL;

                        for (o = strtok_r(opts, ",", &s2); o; o = strtok_r(NULL, ",", &s2))
                                found = found || strcmp(o, ctrl) == 0;
                } else if (strcmp(type, "cgroup2") == 0) {
                        char *path = xasprintf("%s/cgroup.controllers", mnt);

                        ctrls = slurp(path);
                        found = ctrls && strstr(ctrls, ctrl) != NULL;
                        free(ctrls);
                        free(path);
                }
        }
        free(mi);
        return found;
}

/* Reads fd to EOF into a new string and closes it. */
static char *
read_all(int fd)
{
        struct buf b = {0};
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char chunk[4096];
        ssize_t n;

        for (;;) {
                ck_assert_int_eq(poll(&p, 1, -1), 1);
                n = read(fd, chunk, sizeof(chunk));
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        break;
                buf_append(&b, chunk, (size_t) n);
        }
        close(fd);
        buf_append(&b, "", 1);
        return b.data;
}

/* Starts argv inside cg (stderr merged into stdout). */
static struct spawn_result
start_in(struct cgroup *cg, char *const *argv)
{
        struct spawn_opts o = {.argv = argv,
                               .envp = std_env,
                               .keep_fd = -1,
                               .merge_stderr = true,
                               .cgroup_procs = cgroup_procs_files(cg)};
        struct sbx_error err = {0};
        struct spawn_result res;
        int rc = spawn_start(&o, &res, &err);

        ck_assert_msg(rc == 0, "spawn_start: %s", err.message ? err.message : "");
        return res;
}

static int
reap(pid_t pid)
{
        int st;

        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        return st;
}

/* Copies of the cgroup's directories (from its procs files), NULL-terminated, new. */
static char **
cg_dirs(struct cgroup *cg)
{
        const char *const *p = cgroup_procs_files(cg);
        char **d = xcalloc(8, sizeof(*d));
        int i;

        for (i = 0; p[i] && i < 7; i++) {
                char *copy = xstrdup(p[i]);

                d[i] = xstrdup(dirname(copy));
                free(copy);
        }
        return d;
}

static void
assert_gone_and_free(char **dirs)
{
        int i;

        for (i = 0; dirs[i]; i++) {
                ck_assert_msg(access(dirs[i], F_OK) < 0 && errno == ENOENT, "%s still exists",
                              dirs[i]);
                free(dirs[i]);
        }
        free(dirs);
}

/* Value of file inside whichever directory of the cgroup has it (new string). */
static char *
cg_file(struct cgroup *cg, const char *file)
{
        char **dirs = cg_dirs(cg), *v = NULL;
        int i;

        for (i = 0; dirs[i]; i++) {
                char *path = xasprintf("%s/%s", dirs[i], file);

                if (!v)
                        v = slurp(path);
                free(path);
                free(dirs[i]);
        }
        free(dirs);
        ck_assert_msg(v != NULL, "no %s in the cgroup", file);
        return v;
}

static json_t *
probe_expecting(const char *ctrl)
{
        json_t *p = cgroup_probe();
        const char *reason = json_string_value(json_object_get(p, "reason"));

        ck_assert_msg(json_is_true(json_object_get(p, ctrl)),
                      "this machine mounts the %s controller and we are root, but the probe "
                      "says unavailable: %s",
                      ctrl, reason ? reason : "(no reason)");
        return p;
}

START_TEST(test_probe)
{
        static const char *const ctrls[] = {"memory", "pids", "cpu"};
        json_t *p = cgroup_probe();
        bool all = true;
        size_t i;

        ck_assert(json_is_object(p));
        ck_assert(json_is_integer(json_object_get(p, "version")) ||
                  json_is_null(json_object_get(p, "version")));
        for (i = 0; i < ARRAY_SIZE(ctrls); i++) {
                json_t *v = json_object_get(p, ctrls[i]);

                ck_assert(json_is_boolean(v));
                all = all && json_is_true(v);
                if (geteuid() == 0 && machine_has(ctrls[i]))
                        ck_assert_msg(json_is_true(v), "%s: %s", ctrls[i],
                                      json_string_value(json_object_get(p, "reason")));
        }
        ck_assert_int_eq(json_is_string(json_object_get(p, "reason")), !all);
        json_decref(p);
}
END_TEST

START_TEST(test_limits_written)
{
        struct backend_resources res = {.memory_mb = 64, .pids = 10, .cpus = 0.5};
        json_t *p = probe_expecting("memory"), *enforced;
        char *name = unique_name("limits"), **dirs, *v;
        struct cgroup *cg = cgroup_create(name, &res, &enforced);

        ck_assert_ptr_nonnull(cg);
        ck_assert_str_eq(json_string_value(json_object_get(enforced, "memory_mb")), "cgroup");
        ck_assert_str_eq(json_string_value(json_object_get(enforced, "pids")), "cgroup");
        ck_assert_str_eq(json_string_value(json_object_get(enforced, "cpus")), "cgroup");
        if (json_integer_value(json_object_get(p, "version")) == 1) {
                ck_assert_str_eq(v = cg_file(cg, "memory.limit_in_bytes"), "67108864\n");
                free(v);
                ck_assert_str_eq(v = cg_file(cg, "cpu.cfs_quota_us"), "50000\n");
                free(v);
        } else {
                ck_assert_str_eq(v = cg_file(cg, "memory.max"), "67108864\n");
                free(v);
                ck_assert_str_eq(v = cg_file(cg, "cpu.max"), "50000 100000\n");
                free(v);
        }
        ck_assert_str_eq(v = cg_file(cg, "pids.max"), "10\n");
        free(v);
        ck_assert_int_eq(cgroup_count(cg), 0);
        dirs = cg_dirs(cg);
        cgroup_destroy(cg);
        assert_gone_and_free(dirs);
        json_decref(enforced);
        json_decref(p);
        free(name);
}
END_TEST

START_TEST(test_oom_kill)
{
        char *argv[] = {"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1", NULL};
        struct backend_resources res = {.memory_mb = 32};
        json_t *p = probe_expecting("memory"), *enforced;
        char *name = unique_name("oom"), *out;
        struct cgroup *cg = cgroup_create(name, &res, &enforced);
        struct spawn_result r;
        int st;

        ck_assert_ptr_nonnull(cg);
        ck_assert_str_eq(json_string_value(json_object_get(enforced, "memory_mb")), "cgroup");
        ck_assert_uint_eq(cgroup_oom_kills(cg), 0);
        r = start_in(cg, argv);
        out = read_all(r.stdout_fd);
        st = reap(r.pid);
        ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                      "dd was not OOM-killed (status %#x, output %s)", st, out);
        ck_assert_uint_ge(cgroup_oom_kills(cg), 1);
        cgroup_destroy(cg);
        json_decref(enforced);
        json_decref(p);
        free(out);
        free(name);
}
END_TEST

START_TEST(test_pids_limit)
{
        char *argv[] = {"sh", "-c",
                        "i=0; while [ $i -lt 20 ]; do sleep 1000 </dev/null >/dev/null 2>&1 & "
                        "i=$((i+1)); done; echo started all",
                        NULL};
        struct backend_resources res = {.pids = 6};
        json_t *p = probe_expecting("pids"), *enforced;
        char *name = unique_name("pids"), *out;
        struct cgroup *cg = cgroup_create(name, &res, &enforced);
        struct spawn_result r;
        int n;

        ck_assert_ptr_nonnull(cg);
        ck_assert_str_eq(json_string_value(json_object_get(enforced, "pids")), "cgroup");
        r = start_in(cg, argv);
        out = read_all(r.stdout_fd);
        reap(r.pid);
        ck_assert_msg(strstr(out, "fork") != NULL, "no fork failure: %s", out);
        ck_assert_ptr_null(strstr(out, "started all"));
        n = cgroup_count(cg);
        ck_assert_int_ge(n, 1);
        ck_assert_int_le(n, 6);
        cgroup_destroy(cg);
        json_decref(enforced);
        json_decref(p);
        free(out);
        free(name);
}
END_TEST

/* Starts a process that escapes into its own session; returns its pid (we are its subreaper). */
static pid_t
start_escapee(struct cgroup *cg, pid_t *leader)
{
        /* The escapee reports its pid only once it has its own session. */
        char *argv[] = {"sh", "-c",
                        "setsid sh -c 'echo $$; exec sleep 1000 >/dev/null 2>&1' </dev/null &",
                        NULL};
        struct spawn_result r;
        char *out;
        int esc;

        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        r = start_in(cg, argv);
        out = read_all(r.stdout_fd);
        ck_assert_int_eq(WEXITSTATUS(reap(r.pid)), 0);
        ck_assert_int_eq(sscanf(out, "%d", &esc), 1);
        free(out);
        *leader = r.pid;
        return esc;
}

static void
escapee_test(struct cgroup *cg)
{
        pid_t leader, esc = start_escapee(cg, &leader);
        int st;

        ck_assert_int_ne(getsid(esc), leader);
        ck_assert_int_ne(getpgid(esc), leader);
        /* Killing the process group (what a plain backend would do) does not reach it. */
        ck_assert_int_eq(kill(-leader, SIGKILL), -1);
        ck_assert_int_eq(cgroup_count(cg), 1);
        ck_assert_int_eq(cgroup_signal_all(cg, SIGKILL), 1);
        ck_assert_int_eq(waitpid(esc, &st, 0), esc);
        ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        ck_assert_int_eq(cgroup_count(cg), 0);
}

START_TEST(test_signal_all_escaped)
{
        json_t *p = probe_expecting("pids"), *enforced;
        char *name = unique_name("escape");
        struct cgroup *cg = cgroup_create(name, NULL, &enforced);

        ck_assert_ptr_nonnull(cg);
        ck_assert_int_eq(json_object_size(enforced), 0);
        escapee_test(cg);
        cgroup_destroy(cg);
        json_decref(enforced);
        json_decref(p);
        free(name);
}
END_TEST

START_TEST(test_destroy_kills_and_removes)
{
        char *argv[] = {"sleep", "1000", NULL};
        json_t *p = probe_expecting("pids"), *enforced;
        char *name = unique_name("destroy"), **dirs;
        struct cgroup *cg = cgroup_create(name, NULL, &enforced);
        struct spawn_result r;
        int st;

        ck_assert_ptr_nonnull(cg);
        r = start_in(cg, argv);
        close(r.stdout_fd);
        ck_assert_int_eq(cgroup_count(cg), 1);
        dirs = cg_dirs(cg);
        cgroup_destroy(cg);
        st = reap(r.pid);
        ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        cgroup_destroy(NULL); /* retries removals that were still busy */
        assert_gone_and_free(dirs);
        json_decref(enforced);
        json_decref(p);
        free(name);
}
END_TEST

START_TEST(test_bad_name)
{
        static const char *const bad[] = {"../escape", "", ".hidden", "a/b", "x y"};
        struct backend_resources res = {.memory_mb = 16, .cpus = 1};
        json_t *enforced;
        size_t i;

        for (i = 0; i < ARRAY_SIZE(bad); i++) {
                ck_assert_ptr_null(cgroup_create(bad[i], &res, &enforced));
                ck_assert(json_is_null(json_object_get(enforced, "memory_mb")));
                ck_assert(json_is_null(json_object_get(enforced, "cpus")));
                ck_assert_ptr_null(json_object_get(enforced, "pids"));
                json_decref(enforced);
        }
        cgroup_destroy(NULL);
}
END_TEST

START_TEST(test_unprivileged_degrades)
{
        struct backend_resources res = {.memory_mb = 16, .pids = 4};
        json_t *p, *enforced;
        const char *reason;

        /* This test process is ours alone (check forks per test): drop root for good. */
        ck_assert_int_eq(setresuid(65534, 65534, 65534), 0);
        p = cgroup_probe();
        ck_assert(json_is_false(json_object_get(p, "memory")));
        ck_assert(json_is_false(json_object_get(p, "pids")));
        ck_assert(json_is_null(json_object_get(p, "version")));
        reason = json_string_value(json_object_get(p, "reason"));
        ck_assert_ptr_nonnull(reason);
        ck_assert_msg(strstr(reason, "Permission denied") != NULL, "%s", reason);
        ck_assert_ptr_null(cgroup_create("check-unpriv", &res, &enforced));
        ck_assert(json_is_null(json_object_get(enforced, "memory_mb")));
        ck_assert(json_is_null(json_object_get(enforced, "pids")));
        json_decref(enforced);
        json_decref(p);
}
END_TEST

/* Leaves only the unified (v2) mount visible in a private mount namespace. */
static void
hide_v1_mounts(void)
{
        char *mi = slurp("/proc/self/mountinfo"), *line, *save = NULL;

        ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
        ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        for (line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char mnt[4096];

                if (strstr(line, " - cgroup ") && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
                        ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
        }
        free(mi);
}

static void
write_str(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
        ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t) strlen(s));
        close(fd);
}

START_TEST(test_v2_tracking)
{
        char *own = v2_own_dir();
        char *base = xasprintf("%s/sandboxd", own), *pid = xasprintf("%d", (int) getpid());
        char *want;
        json_t *p, *enforced;
        struct backend_resources res = {.memory_mb = 16};
        struct cgroup *cg;

        hide_v1_mounts();
        ck_assert_int_eq(mkdir(own, 0755), 0);
        want = xasprintf("%s/cgroup.procs", own);
        write_str(want, pid);
        free(want);
        p = cgroup_probe();
        ck_assert_int_eq(json_integer_value(json_object_get(p, "version")), 2);
        /* This hybrid machine binds memory/pids/cpu to v1: v2 can only track processes. */
        ck_assert(json_is_false(json_object_get(p, "memory")));
        cg = cgroup_create("v2", &res, &enforced);
        ck_assert_ptr_nonnull(cg);
        ck_assert(json_is_null(json_object_get(enforced, "memory_mb")));
        want = xasprintf("%s/v2/cgroup.procs", base);
        ck_assert_str_eq(cgroup_procs_files(cg)[0], want);
        ck_assert_ptr_null(cgroup_procs_files(cg)[1]);
        free(want);
        escapee_test(cg);
        cgroup_destroy(cg);
        write_str("/sys/fs/cgroup/unified/cgroup.procs", pid);
        ck_assert_int_eq(rmdir(base), 0);
        ck_assert_int_eq(rmdir(own), 0);
        json_decref(enforced);
        json_decref(p);
        free(own);
        free(base);
        free(pid);
}
END_TEST

static Suite *
cgroup_suite(void)
{
        Suite *s = suite_create("cgroup");
        TCase *any = tcase_create("any");
        TCase *root;

        tcase_add_test(any, test_probe);
        tcase_add_test(any, test_bad_name);
        suite_add_tcase(s, any);
        if (geteuid() != 0) {
                fprintf(stderr, "check_cgroup: not root: tests that create cgroups are excluded "
                                "(run as root to include them)\n");
                return s;
        }
        root = tcase_create("root");
        tcase_set_timeout(root, 20);
        tcase_add_unchecked_fixture(root, NULL, sweep_leftovers);
        if (machine_has("memory")) {
                tcase_add_test(root, test_limits_written);
                tcase_add_test(root, test_oom_kill);
        } else {
                fprintf(stderr, "check_cgroup: no memory controller mounted: memory tests "
                                "excluded\n");
        }
        if (machine_has("pids")) {
                tcase_add_test(root, test_pids_limit);
                tcase_add_test(root, test_signal_all_escaped);
                tcase_add_test(root, test_destroy_kills_and_removes);
        } else {
                fprintf(stderr, "check_cgroup: no pids controller mounted: pids tests "
                                "excluded\n");
        }
        tcase_add_test(root, test_unprivileged_degrades);
        if (access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0)
                tcase_add_test(root, test_v2_tracking);
        else
                fprintf(stderr, "check_cgroup: no hybrid unified mount: v2 test excluded\n");
        suite_add_tcase(s, root);
        return s;
}

int
main(void)
{
        SRunner *sr;
        int failed;

        run_id = (int) getpid();
        sr = srunner_create(cgroup_suite());
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
