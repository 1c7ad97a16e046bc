/* check_daytona.c — the pure parts of the Daytona backend: the log reader (daytona_log.c) and
 * the exec wrapper (daytona_cmd.c), the latter run for real by /bin/sh and by bash the way a
 * Daytona session runs it, its output labelled line by line as Daytona's labellers do. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/daytona/daytona_cmd.h"
#include "backends/daytona/daytona_log.h"
#include "protocol/util.h"

#define NONCE "~0123456789abcdef0123456789abcde"

struct got {
        struct buf out[2];
        unsigned calls;
};

static void
got_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct got *g = ctx;

        ck_assert(len > 0);
        buf_append(&g->out[stream], data, len);
        g->calls++;
}

static void
got_free(struct got *g)
{
        buf_free(&g->out[0]);
        buf_free(&g->out[1]);
}

static bool
got_is(const struct got *g, int stream, const char *want)
{
        size_t n = strlen(want);

        return g->out[stream].len == n && (n == 0 || !memcmp(g->out[stream].data, want, n));
}

/* Feeds s to the reader in pieces of step bytes (1 = byte by byte). */
static void
feed_steps(struct daytona_log *l, const char *s, size_t len, size_t step)
{
        for (size_t i = 0; i < len; i += step)
                daytona_log_feed(l, s + i, MIN(step, len - i));
}

/* A log as Daytona's labellers write it for the given stdout and stderr lines. */
static void
label(struct buf *log, int stream, const char *text)
{
        const char *lab = stream ? "\2\2\2" : "\1\1\1";
        const char *p = text, *nl;

        while (*p) {
                nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                buf_append(log, lab, 3);
                buf_append(log, p, n);
                buf_append(log, "\n", 1); /* the labeller ends every line */
                p += n + (nl ? 1 : 0);
        }
}

START_TEST(test_log_markers_and_newlines)
{
        /* What the command wrote, and what its log looks like with the wrapper's markers. */
        static const struct {
                const char *out, *err;
        } cases[] = {
                {"hi\n", ""},
                {"no newline", "warn"},
                {"", ""},
                {"a\n\nb\n\n", "x\ny"},
                {"~0123 looks like the nonce\n~0123456789abcdef0123456789abcde? no\n", ""},
                {"\x01 one label byte, \x02\x02 two\n", ""},
        };

        for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
                for (size_t step = 1; step <= 64; step *= 4) {
                        struct buf log = {0}, o = {0}, e = {0};
                        struct daytona_log l;
                        struct got g = {0};
                        buf_appendf(&o, "%s" NONCE " x 7\n 2f 74 6d 70 0a\n00\n" NONCE " z\n",
                                    cases[c].out);
                        buf_appendf(&e, "%s" NONCE "\n", cases[c].err);
                        buf_append(&o, "", 1);
                        buf_append(&e, "", 1);
                        label(&log, 0, o.data);
                        label(&log, 1, e.data);
                        daytona_log_init(&l, NONCE, got_cb, &g);
                        feed_steps(&l, log.data, log.len, step);
                        ck_assert_msg(daytona_log_done(&l), "case %zu step %zu", c, step);
                        ck_assert_int_eq(l.end, DAYTONA_LOG_EXITED);
                        ck_assert_int_eq(l.status, 7);
                        ck_assert_uint_eq(l.state.len, 6);
                        ck_assert(!memcmp(l.state.data, "/tmp\n\0", 6));
                        ck_assert_msg(got_is(&g, 0, cases[c].out), "case %zu step %zu: [%.*s]", c,
                                      step, (int) g.out[0].len, g.out[0].data);
                        ck_assert(got_is(&g, 1, cases[c].err));
                        ck_assert_uint_eq(l.fed, log.len);
                        daytona_log_free(&l);
                        got_free(&g);
                        buf_free(&log);
                        buf_free(&o);
                        buf_free(&e);
                }
        }
}
END_TEST

START_TEST(test_log_interleaved_labels)
{
        /* A long stdout line split by a stderr line, as two labellers appending to one file
         * may produce: data after a label belongs to that label's stream. */
        static const char log[] = "\1\1\1abc\2\2\2err\n\1\1\1def\n\1\1\1" NONCE " x 0\n\1\1\1" NONCE
                                  " z\n\2\2\2" NONCE "\n";
        struct daytona_log l;
        struct got g = {0};

        daytona_log_init(&l, NONCE, got_cb, &g);
        daytona_log_feed(&l, log, sizeof(log) - 1);
        ck_assert(daytona_log_done(&l));
        ck_assert(got_is(&g, 0, "abcdef\n"));
        ck_assert(got_is(&g, 1, "err\n"));
        ck_assert_uint_eq(l.state.len, 0);
        daytona_log_free(&l);
        got_free(&g);
}
END_TEST

START_TEST(test_log_dup_nostart_and_flush)
{
        static const char dup[] = "\1\1\1" NONCE " d\n\2\2\2" NONCE "\n";
        static const char fail[] = "\1\1\1" NONCE " f cwd\n\2\2\2" NONCE "\n";
        static const char cut[] = "\1\1\1partial\n\1\1\1~0123";
        struct daytona_log l;
        struct got g = {0};

        daytona_log_init(&l, NONCE, got_cb, &g);
        daytona_log_feed(&l, dup, sizeof(dup) - 1);
        ck_assert(daytona_log_done(&l));
        ck_assert_int_eq(l.end, DAYTONA_LOG_DUP);
        ck_assert_uint_eq(g.calls, 0);
        daytona_log_free(&l);

        daytona_log_init(&l, NONCE, got_cb, &g);
        daytona_log_feed(&l, "\1\1\1" NONCE " l\n\2\2\2" NONCE "\n", 2 * (3 + 32 + 1) + 2);
        ck_assert(daytona_log_done(&l));
        ck_assert_int_eq(l.end, DAYTONA_LOG_EARLIER);
        ck_assert_uint_eq(g.calls, 0);
        daytona_log_free(&l);

        daytona_log_init(&l, NONCE, got_cb, &g);
        daytona_log_feed(&l, fail, sizeof(fail) - 1);
        ck_assert_int_eq(l.end, DAYTONA_LOG_NOSTART);
        ck_assert_str_eq(l.fail, "cwd");
        daytona_log_free(&l);

        /* Cut off without markers (the wrapper was killed): everything held comes out. */
        daytona_log_init(&l, NONCE, got_cb, &g);
        daytona_log_feed(&l, cut, sizeof(cut) - 1);
        ck_assert(!daytona_log_done(&l));
        ck_assert(got_is(&g, 0, "partial\n")); /* delivered at once, newline included */
        daytona_log_flush(&l);
        ck_assert(got_is(&g, 0, "partial\n~0123"));
        ck_assert_int_eq(l.end, DAYTONA_LOG_RUNNING);
        daytona_log_free(&l);
        got_free(&g);
}
END_TEST

START_TEST(test_log_big_output_few_calls)
{
        /* Ordinary lines are delivered in runs, not one callback per line. */
        struct buf text = {0}, log = {0};
        struct daytona_log l;
        struct got g = {0};

        for (int i = 0; i < 10000; i++)
                buf_appendf(&text, "line %d of output\n", i);
        buf_append(&text, "", 1);
        label(&log, 0, text.data);
        daytona_log_init(&l, NONCE, got_cb, &g);
        feed_steps(&l, log.data, log.len, 65536);
        ck_assert_uint_eq(g.out[0].len, text.len - 1);
        ck_assert_uint_lt(g.calls, 100);
        daytona_log_free(&l);
        got_free(&g);
        buf_free(&text);
        buf_free(&log);
}
END_TEST

START_TEST(test_cmd_quote_and_input)
{
        struct buf b = {0};
        char *line;

        daytona_cmd_quote(&b, "it's $HOME");
        buf_append(&b, "", 1);
        ck_assert_str_eq(b.data, "'it'\\''s $HOME'");
        buf_free(&b);
        line = daytona_cmd_input(3, "a\\\n\0\xff", 5);
        ck_assert_str_eq(line, "d3 a\\0134\\0012\\0000\\0377");
        free(line);
        line = daytona_cmd_input(4, NULL, 0);
        ck_assert_str_eq(line, "e4");
        free(line);
        char *ok[] = {"/bin/sh", NULL}, *bad[] = {"A=b", NULL}, *env[] = {"A=b", NULL};
        ck_assert_ptr_null(daytona_cmd_check(ok, env));
        ck_assert_ptr_nonnull(daytona_cmd_check(bad, env));
        const char *ids[] = {"p_1", NULL};
        line = daytona_cmd_cleanup("/d", ids);
        ck_assert_str_eq(line, "rm -f -- '/d/p_1.pid' '/d/p_1.pid.in' '/d/p_1.pid.fifo' "
                               "'/d/p_1.state'\n");
        free(line);
}
END_TEST

/* ---- the wrapper, run by a real shell ---- */

static char tmpdir[64];

/* The sessions the next wrapper run's exec was posted to before (NULL: a first post). */
static const char *const *wrun_earlier;

static void
cmd_setup(void)
{
        wrun_earlier = NULL;
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-daytona-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
cmd_teardown(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
}

/* Reads both pipes to their end (a bounded amount) into out[0], out[1]. */
static void
read_both(int fds[2], struct buf out[2])
{
        struct pollfd p[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
        int open = 2;
        char tmp[4096];

        while (open) {
                ck_assert_int_gt(poll(p, 2, 20000), 0);
                for (int k = 0; k < 2; k++) {
                        if (!p[k].revents)
                                continue;
                        ssize_t n = read(p[k].fd, tmp, sizeof(tmp));
                        if (n <= 0) {
                                p[k].fd = -1;
                                open--;
                                continue;
                        }
                        buf_append(&out[k], tmp, (size_t) n);
                }
        }
}

/* Reads a small file into buf (NUL-terminated). */
static void
slurp(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "r");
        size_t n;

        ck_assert_ptr_nonnull(f);
        n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
}

/* A session shell running a wrapper text (run_start, run_finish). */
struct session {
        pid_t pid;
        int out, err;
        bool unexports; /* the wrapper clears the session's exports (bash, job path) */
};

static void
text_write(const char *name, const char *text)
{
        char path[128];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

/* Starts text with shell the way a Daytona session does: the shell reads its commands from a
 * pipe and sources the text from a file, its stdin redirected to in_path; before (not NULL) is
 * an earlier command of the same session, its output discarded. */
static void
run_start(struct session *ss, const char *shell, const char *before, const char *text,
          const char *in_path)
{
        char script[1024];
        int o[2], e[2], s[2];

        text_write("before.sh", before ? before : "");
        text_write("cmd.sh", text);
        ss->unexports = !strcmp(shell, "/bin/bash") &&
                        (strstr(text, "\nj=1\n") || (before && strstr(before, "\nj=1\n")));
        snprintf(script, sizeof(script),
                 "P() { pwd; set -o | grep -E 'noclobber|monitor'; "
                 "echo "
                 "\"v=${n-}${d-}${p-}${g-}${X-}${x-}${w-}${t-}${j-}${E-}${__sbx_u-}${__sbx_d-}\"; "
                 "ls /proc/$$/fd; grep -E '^Sig(Ign|Cgt)' /proc/$$/status; "
                 "export -p | grep -v -e ' _=' -e ' OLDPWD' >\"$1.x\"; "
                 "{ command -v __sbx_w; command -v __sbx_e; } >\"$1.f\"; }\n"
                 "trap 'echo >%s/trapped' TERM\n" /* as Daytona's wrapper traps TERM */
                 "P %s/probe.1 >%s/probe.1 2>&1\n"
                 "{ . %s/before.sh; } </dev/null >/dev/null 2>&1\n"
                 "{ . %s/cmd.sh; } <%s\nP %s/probe.2 >%s/probe.2 2>&1\n",
                 tmpdir, tmpdir, tmpdir, tmpdir, tmpdir, in_path ? in_path : "/dev/null", tmpdir,
                 tmpdir);
        ck_assert_int_eq(pipe(o), 0);
        ck_assert_int_eq(pipe(e), 0);
        ck_assert_int_eq(pipe(s), 0);
        ss->pid = fork();
        if (ss->pid == 0) {
                dup2(s[0], 0);
                dup2(o[1], 1);
                dup2(e[1], 2);
                close(s[1]);
                unsetenv("OLDPWD"); /* bash then exports one without a value, as in a toolbox */
                execl(shell, shell, (char *) NULL);
                _exit(127);
        }
        close(s[0]);
        ck_assert_int_eq(write(s[1], script, strlen(script)), (ssize_t) strlen(script));
        close(s[1]);
        close(o[1]);
        close(e[1]);
        ss->out = o[0];
        ss->err = e[0];
}

/* Reads the session shell's output to its end and returns it labelled. The session shell's
 * state (cwd, options, variables, open files, ignored and caught signals; not the blocked
 * ones, which depend on the moment the probe reads them) is the same after the text as
 * before it, its exports too but where the wrapper clears them (a bash session on the job
 * path: then none are left of the several it had); it has the wrapper's two functions
 * afterwards, which it had not before; and nothing reached its stderr after the wrapper's
 * marker (a job notice would). */
/* Clears SIGINT in a probe's SigCgt line. bash 5.2 installs its own SIGINT handler while it
 * waits for a job (wait_sigint_handler) and now and then (1 run in ~40 here) leaves it in place
 * after the wait. Nothing the daemon does sends the session shell SIGINT (the tree kill signals
 * the command's process group), so that one bit is not compared; every other disposition is. */
static void
sigint_caught_unmark(char *probe)
{
        char *line = strstr(probe, "SigCgt:\t");
        unsigned long long mask;
        char *end;

        if (!line)
                return;
        mask = strtoull(line + 8, &end, 16);
        if (end - (line + 8) == 16) {
                char next = *end; /* snprintf's NUL goes over it */
                snprintf(line + 8, 17, "%016llx", mask & ~(1ULL << (SIGINT - 1)));
                *end = next;
        }
}

/* The probe files of run_start before and after the text, probe.1<ext> and probe.2<ext>. */
static void
probes(const char *ext, char *before, char *after, size_t size)
{
        char path[128];

        for (int i = 1; i <= 2; i++) {
                snprintf(path, sizeof(path), "%s/probe.%d%s", tmpdir, i, ext);
                slurp(path, i == 1 ? before : after, size);
        }
}

static void
run_finish(struct session *ss, struct buf *log)
{
        char before[16384], after[16384];
        struct buf out[2] = {{0}, {0}};
        int fds[2] = {ss->out, ss->err};

        read_both(fds, out);
        close(ss->out);
        close(ss->err);
        waitpid(ss->pid, NULL, 0);
        probes("", before, after, sizeof(before));
        sigint_caught_unmark(before);
        sigint_caught_unmark(after);
        ck_assert_str_eq(after, before);
        probes(".x", before, after, sizeof(before));
        if (ss->unexports) {
                ck_assert_ptr_nonnull(strstr(before, "declare -x PATH="));
                ck_assert_str_eq(after, "");
        } else {
                ck_assert_str_eq(after, before);
        }
        probes(".f", before, after, sizeof(before));
        ck_assert_str_eq(before, "");
        ck_assert_str_eq(after, "__sbx_w\n__sbx_e\n");
        buf_append(&out[0], "", 1);
        buf_append(&out[1], "", 1);
        ck_assert_msg(out[1].len > sizeof(NONCE) &&
                              !strcmp(out[1].data + out[1].len - sizeof(NONCE) - 1, NONCE "\n"),
                      "stderr does not end with the marker: [%s]", out[1].data);
        label(log, 0, out[0].data);
        label(log, 1, out[1].data);
        buf_free(&out[0]);
        buf_free(&out[1]);
}

struct wrun {
        struct daytona_log l;
        struct got g;
};

/* The session of the wrapper runs: its guard file is tmpdir/SESSION.pid. */
#define SESSION "sandboxd-test"

/* The pid the session's guard file gives exec_id, 0 if it names none for it. */
static int
guard_pid(const char *exec_id)
{
        char path[128], line[128] = "", id[64] = "";
        int pid = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/" SESSION ".pid", tmpdir);
        if (!(f = fopen(path, "r")))
                return 0;
        if (!fgets(line, sizeof(line), f) || sscanf(line, "%d %63s", &pid, id) != 2)
                pid = 0;
        fclose(f);
        return strcmp(id, exec_id) ? 0 : pid;
}

/* Writes the guard file of session sid as the wrapper of an exec would have. */
static void
guard_write_in(const char *sid, const char *line)
{
        char path[128];
        int fd;

        snprintf(path, sizeof(path), "%s/%s.pid", tmpdir, sid);
        fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t) strlen(line));
        close(fd);
}

static void
guard_write(const char *line)
{
        guard_write_in(SESSION, line);
}

/* The guard file of session sid, read into buf. */
static void
slurp_guard(const char *sid, char *buf, size_t size)
{
        char path[128];

        snprintf(path, sizeof(path), "%s/%s.pid", tmpdir, sid);
        slurp(path, buf, size);
}

static void
unlink_guard(const char *sid)
{
        char path[128];

        snprintf(path, sizeof(path), "%s/%s.pid", tmpdir, sid);
        unlink(path);
}

/* The text a session gets for c (new); wrun_earlier its earlier sessions. */
static char *
session_text(const struct daytona_cmd *c)
{
        char *cmd = daytona_cmd_build(c);
        char *text = daytona_cmd_in_session(cmd, tmpdir, SESSION, c->exec_id, wrun_earlier);

        free(cmd);
        return text;
}

/* Runs c in shell, after the session command before (not NULL) in the same session shell;
 * during (not NULL), called with the exec id once the command runs (its pid is in the
 * session's guard file). */
static void
wrun_in(struct wrun *w, const char *shell, const char *before, struct daytona_cmd *c,
        const char *in_path, void (*during)(const char *exec_id))
{
        struct buf log = {0};
        struct session ss;
        char *text;

        static char ids[16][16];
        static unsigned nid;

        c->nonce = NONCE;
        c->dir = tmpdir;
        if (!c->exec_id) { /* a new one each run: the guard file names the last */
                snprintf(ids[nid % 16], sizeof(ids[0]), "p_test%u", nid);
                c->exec_id = ids[nid++ % 16];
        }
        text = session_text(c);
        run_start(&ss, shell, before, text, in_path);
        if (during) {
                while (!guard_pid(c->exec_id))
                        usleep(10000); /* bounded by the test's timeout */
                during(c->exec_id);
        }
        run_finish(&ss, &log);
        memset(&w->g, 0, sizeof(w->g));
        daytona_log_init(&w->l, NONCE, got_cb, &w->g);
        daytona_log_feed(&w->l, log.data, log.len);
        ck_assert_msg(daytona_log_done(&w->l), "no markers in: %.*s", (int) log.len, log.data);
        free(text);
        buf_free(&log);
}

static void
wrun_during(struct wrun *w, const char *shell, struct daytona_cmd *c, const char *in_path,
            void (*during)(const char *exec_id))
{
        wrun_in(w, shell, NULL, c, in_path, during);
}

static void
wrun(struct wrun *w, const char *shell, struct daytona_cmd *c, const char *in_path)
{
        wrun_in(w, shell, NULL, c, in_path, NULL);
}

static void
wrun_free(struct wrun *w)
{
        daytona_log_free(&w->l);
        got_free(&w->g);
}

static const char *const shells[] = {"/bin/sh", "/bin/bash"};
static char *env_min[] = {"PATH=/usr/bin:/bin", "MARK=it's \"quoted\"\nand two lines", NULL};
/* With the names of the wrapper's own variables: the exec's, not the wrapper's. */
static char *env_names[] = {"PATH=/usr/bin:/bin",
                            "MARK=it's \"quoted\"\nand two lines",
                            "E=1",
                            "f=/nonexistent",
                            "S=setsid",
                            "q=1",
                            NULL};

START_TEST(test_cmd_runs_command)
{
        char *argv[] = {"/bin/sh", "-c",
                        "printf 'out\\nno-nl'; printf 'err\\n' >&2; echo \"$MARK\" >env.txt; "
                        "[ -z \"${LC_ALL+x}\" ] || echo \"LC_ALL leaked\" >&2; "
                        "pwd >pwd.txt; env | grep -c . >count.txt; exit 3",
                        NULL};
        struct daytona_cmd c = {.cwd = tmpdir, .argv = argv, .envp = env_names};
        struct wrun w;
        char path[128], buf[256] = "", want[64];
        FILE *f;

        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
        ck_assert_int_eq(w.l.status, 3);
        ck_assert(got_is(&w.g, 0, "out\nno-nl"));
        ck_assert(got_is(&w.g, 1, "err\n"));
        snprintf(path, sizeof(path), "%s/env.txt", tmpdir);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
        fclose(f);
        ck_assert_str_eq(buf, "it's \"quoted\"\nand two lines\n");
        /* Only the exec's environment (PATH, MARK, E, f, S, q and the shell's own
         * PWD/SHLVL/_). */
        snprintf(path, sizeof(path), "%s/count.txt", tmpdir);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        int lines = 0;
        ck_assert_int_eq(fscanf(f, "%d", &lines), 1);
        fclose(f);
        ck_assert_int_le(lines, 11);
        /* The guard file names it as ended, without a pid: a late kill finds no tree to
         * kill (test_cmd_kill_takes_its_own_exec). No file of its own was made. */
        snprintf(path, sizeof(path), "%s/" SESSION ".pid", tmpdir);
        slurp(path, buf, sizeof(buf));
        ck_assert_int_eq(guard_pid(c.exec_id), 0);
        snprintf(want, sizeof(want), "= %s\n", c.exec_id);
        ck_assert(!strncmp(buf, want, strlen(want))); /* its first line */
        snprintf(path, sizeof(path), "%s/%s.pid", tmpdir, c.exec_id);
        ck_assert_int_eq(access(path, F_OK), -1);
        wrun_free(&w);
}
END_TEST

START_TEST(test_cmd_state_merge_and_failures)
{
        char state[128];
        char *argv[] = {"/bin/sh", "-c", "echo o; echo e >&2; printf '/s\\n\\0A=1\\0' >\"$S\"",
                        NULL};
        char *nope[] = {"no-such-program-sbx", NULL};
        char env[160], *envp[] = {"PATH=/usr/bin:/bin", env, NULL};
        struct daytona_cmd c = {.cwd = "/", .argv = argv, .envp = envp, .merge_stderr = true};
        struct wrun w;

        snprintf(state, sizeof(state), "%s/p_test.state", tmpdir);
        snprintf(env, sizeof(env), "S=%s", state);
        c.state = state;
        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.status, 0);
        ck_assert(got_is(&w.g, 0, "o\ne\n"));
        ck_assert(got_is(&w.g, 1, ""));
        ck_assert_uint_eq(w.l.state.len, 8);
        ck_assert(!memcmp(w.l.state.data, "/s\n\0A=1\0", 8));
        wrun_free(&w);

        c = (struct daytona_cmd){.cwd = "/nonexistent-dir", .argv = argv, .envp = envp};
        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_NOSTART);
        ck_assert_str_eq(w.l.fail, "cwd");
        wrun_free(&w);

        c = (struct daytona_cmd){.cwd = "/", .argv = nope, .envp = envp};
        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_NOSTART);
        ck_assert_str_eq(w.l.fail, "argv");
        wrun_free(&w);

        /* A second start of the same exec (the session's guard file names it: starting,
         * running or ended) does nothing. */
        for (int k = 0; k < 3; k++) {
                static const char *const lines[] = {"- p_dup\n", "1 p_dup\n", "= p_dup\n"};
                guard_write(lines[k]);
                c = (struct daytona_cmd){
                        .cwd = "/", .argv = argv, .envp = envp, .exec_id = "p_dup"};
                wrun(&w, shells[_i], &c, NULL);
                ck_assert_int_eq(w.l.end, DAYTONA_LOG_DUP);
                ck_assert_uint_eq(w.g.calls, 0);
                wrun_free(&w);
        }
        /* The guard is the session's last exec: another one in between, and it runs. Its
         * lines are written over the first line in place (no truncation: that cost as much
         * as a file's creation), so a longer line before leaves a tail after them. */
        guard_write("1234567 p_a_longer_exec_id\n");
        c = (struct daytona_cmd){.cwd = "/", .argv = argv, .envp = envp, .exec_id = "p_other"};
        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
        wrun_free(&w);
        ck_assert_int_eq(guard_pid("p_other"), 0); /* "= p_other": ended */
        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_DUP);
        wrun_free(&w);
}
END_TEST

/* A re-post in another session (the sandbox was started again): the guard file of a session
 * it was posted to before names it, starting, running or ended there, and it starts nothing
 * (its own session's line stays another exec's); one naming another exec, or none, and it
 * runs. A first post's text is the guard file's path and the command, nothing else. */
START_TEST(test_cmd_guard_earlier_sessions)
{
        static const char *const old[] = {"sandboxd-old1", "sandboxd-old2", NULL};
        static const char *const lines[] = {"- p_again\n", "4321 p_again\n", "= p_again\n"};
        char *argv[] = {"/bin/sh", "-c", "echo ran", NULL}, *cmd, *text, *want;
        struct daytona_cmd c = {.cwd = "/", .argv = argv, .envp = env_min, .exec_id = "p_again"};
        struct buf b = {0};
        char buf[64];
        struct wrun w;

        wrun_earlier = old;
        for (int k = 0; k < 3; k++) {
                guard_write_in(old[0], "= p_before\n");
                guard_write_in(old[k % 2], lines[k]); /* in the first or the second */
                guard_write("= p_prev\n");
                wrun(&w, shells[_i], &c, NULL);
                ck_assert_int_eq(w.l.end, DAYTONA_LOG_EARLIER);
                ck_assert_uint_eq(w.g.calls, 0);
                slurp_guard(SESSION, buf, sizeof(buf));
                ck_assert_str_eq(buf, "= p_prev\n");
                wrun_free(&w);
        }
        /* Another exec's line there (with a longer one's tail), or no file: it runs. */
        guard_write_in(old[0], "= p_x\n8 p_again\n");
        unlink_guard(old[1]);
        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
        ck_assert(got_is(&w.g, 0, "ran\n"));
        wrun_free(&w);
        ck_assert_int_eq(guard_pid("p_again"), 0); /* "= p_again" in its own session now */

        /* A first post (no earlier session, or none but its own) reads no other file. */
        c.nonce = NONCE;
        c.dir = tmpdir;
        cmd = daytona_cmd_build(&c);
        want = daytona_cmd_pidfile(tmpdir, SESSION);
        buf_appendf(&b, "g=");
        daytona_cmd_quote(&b, want);
        buf_appendf(&b, "\n%s", cmd);
        for (int k = 0; k < 2; k++) {
                static const char *const none[] = {NULL};
                text = daytona_cmd_in_session(cmd, tmpdir, SESSION, c.exec_id, k ? none : NULL);
                ck_assert_str_eq(text, b.data);
                ck_assert_ptr_null(strstr(text, "sandboxd-old"));
                ck_assert_ptr_null(strstr(text, "G="));
                free(text);
        }
        buf_free(&b);
        free(want);
        free(cmd);
}
END_TEST

/* A command killed by a signal: its status, and nothing of the wrapper in its stderr (bash
 * reports a killed child on its own stderr: "line 52: 7402 Killed ( read -r q …"). */
START_TEST(test_cmd_killed_says_nothing)
{
        char *argv[] = {"/bin/sh", "-c", "echo before >&2; kill -9 $$", NULL};
        struct daytona_cmd c = {.cwd = "/", .argv = argv, .envp = env_min};
        struct wrun w;

        for (int merge = 0; merge < 2; merge++) {
                c.merge_stderr = merge;
                c.exec_id = NULL; /* a new one: the guard of the last stays */
                wrun(&w, shells[_i], &c, NULL);
                ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
                ck_assert_int_eq(w.l.status, 128 + 9);
                ck_assert(got_is(&w.g, merge ? 0 : 1, "before\n"));
                ck_assert(got_is(&w.g, merge ? 1 : 0, ""));
                wrun_free(&w);
        }
}
END_TEST

static int
cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The lines of s, sorted, one string (new). */
static char *
sorted_lines(const char *s)
{
        char *copy = xstrdup(s), *save = NULL, *lines[64];
        size_t n = 0;
        struct buf b = {0};

        for (char *l = strtok_r(copy, "\n", &save); l && n < ARRAY_SIZE(lines);
             l = strtok_r(NULL, "\n", &save))
                lines[n++] = l;
        qsort(lines, n, sizeof(*lines), cmp_str);
        for (size_t i = 0; i < n; i++)
                buf_appendf(&b, "%s\n", lines[i]);
        buf_append(&b, "", 1);
        free(copy);
        return b.data;
}

/* The command's environment is the exec's and nothing else (not the session shell's exports,
 * nor a PWD, SHLVL, _ or OLDPWD of bash's), however the wrapper gives it: by bash builtins when
 * every name is plain (j=1), else env -i (a name that is no shell name, one of bash's own
 * variables, no PATH). The order of the variables is not kept. */
START_TEST(test_cmd_exact_env)
{
        static char *plain[] = {"PATH=/usr/bin:/bin",
                                "MARK=it's \"quoted\"\nand two lines",
                                "LANG=C.UTF-8",
                                "BASH_ENV=/nonexistent",
                                "Z_9=",
                                "IFS=:",
                                NULL};
        static char *func[] = {"PATH=/usr/bin:/bin", "BASH_FUNC_f%%=() {  echo hi\n}", "A=1", NULL};
        static char *own[] = {"PATH=/usr/bin:/bin", "UID=12345", "SECONDS=4", "BASHOPTS=x", NULL};
        static char *nopath[] = {"A=1", NULL};
        static const struct {
                char **envp;
                const char *mode;
        } cases[] = {{plain, "\nj=1\n"}, {func, "\nj=0\n"}, {own, "\nj=0\n"}, {nopath, "\nj=0\n"}};
        char *argv[] = {"/usr/bin/env", NULL};

        for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
                struct daytona_cmd c = {.cwd = tmpdir, .argv = argv, .envp = cases[k].envp};
                struct buf want = {0};
                struct wrun w;
                char *text, *got, *exp;
                c.nonce = NONCE;
                c.dir = tmpdir;
                c.exec_id = "p_env";
                text = daytona_cmd_build(&c);
                ck_assert_ptr_nonnull(strstr(text, cases[k].mode));
                free(text);
                c.exec_id = NULL;
                wrun(&w, shells[_i], &c, NULL);
                ck_assert_int_eq(w.l.status, 0);
                for (char **e = cases[k].envp; *e; e++)
                        buf_appendf(&want, "%s\n", *e);
                buf_append(&w.g.out[0], "", 1);
                got = sorted_lines(w.g.out[0].data);
                exp = sorted_lines(want.data);
                ck_assert_msg(!strcmp(got, exp), "case %zu: got\n%s\nwant\n%s", k, got, exp);
                free(got);
                free(exp);
                buf_free(&want);
                wrun_free(&w);
        }
}
END_TEST

/* A session's second exec: its environment is still exactly the exec's once the first exec
 * cleared the session shell's exports (bash's job path does that once per session), although
 * the first one's `cd` back gave bash's exported OLDPWD a value; and a first exec on the env -i
 * path (which clears nothing) leaves them to the second. */
START_TEST(test_cmd_second_exec_env)
{
        static char *plain[] = {"PATH=/usr/bin:/bin", "A=1", NULL};
        static char *own[] = {"PATH=/usr/bin:/bin", "UID=12345", NULL};
        char *first_argv[] = {"true", NULL}, *argv[] = {"/usr/bin/env", NULL};

        for (int k = 0; k < 2; k++) {
                struct daytona_cmd first = {.nonce = "~first0123456789abcdef0123456789",
                                            .dir = tmpdir,
                                            .exec_id = k ? "p_first1" : "p_first0",
                                            .argv = first_argv,
                                            .envp = k ? own : plain};
                struct daytona_cmd c = {.argv = argv, .envp = plain};
                char *text, *got;
                struct wrun w;

                text = session_text(&first);
                wrun_in(&w, shells[_i], text, &c, NULL, NULL);
                ck_assert_int_eq(w.l.status, 0);
                buf_append(&w.g.out[0], "", 1);
                got = sorted_lines(w.g.out[0].data);
                ck_assert_msg(!strcmp(got, "A=1\nPATH=/usr/bin:/bin\n"), "case %d: %s", k, got);
                free(got);
                free(text);
                wrun_free(&w);
        }
}
END_TEST

/* The wrapper's functions stay in the session shell, by the version of their text: a session
 * shell that has others (an older daemon's, here a stale one) gets this daemon's. */
START_TEST(test_cmd_stale_wrapper_replaced)
{
        static const char stale[] = "__sbx_w() { echo stale; }\n__sbx_e() { echo stale; }\n"
                                    "__sbx_v=0123456789abcdef\n";
        char *argv[] = {"/bin/sh", "-c", "echo fresh; exit 4", NULL};
        struct daytona_cmd c = {.argv = argv, .envp = env_min};
        struct wrun w;

        wrun_in(&w, shells[_i], stale, &c, NULL, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
        ck_assert_int_eq(w.l.status, 4);
        ck_assert(got_is(&w.g, 0, "fresh\n"));
        wrun_free(&w);
}
END_TEST

/* The command is the leader of its own process group (the tree kill signals that group) and
 * gets SIGINT at its default, not ignored as a shell does for a background job. */
START_TEST(test_cmd_own_group)
{
        char *argv[] = {"/bin/sh", "-c",
                        "read -r p c s pp g rest </proc/self/stat; "
                        "[ \"$g\" = \"$$\" ] && echo own || echo \"pgid $g pid $$\"; "
                        "kill -INT $$; echo INT-ignored",
                        NULL};
        struct daytona_cmd c = {.cwd = "/", .argv = argv, .envp = env_min};
        struct wrun w;

        wrun(&w, shells[_i], &c, NULL);
        ck_assert_msg(got_is(&w.g, 0, "own\n"), "%.*s", (int) w.g.out[0].len, w.g.out[0].data);
        ck_assert_int_eq(w.l.status, 128 + 2);
        wrun_free(&w);
}
END_TEST

/* A signal the session shell traps (Daytona's wrapper traps TERM) while the command runs
 * does not end the exec: its status is the command's. bash's `wait` returns at a trapped
 * signal, so the command here waits until the session shell ran its trap; dash runs traps only
 * after a foreground child, so there it just goes on. */
START_TEST(test_cmd_session_signalled)
{
        char *wait_trap[] = {"/bin/sh", "-c",
                             "kill -TERM $PPID; n=0; while [ ! -e trapped ] && [ $n -lt 3000 ]; "
                             "do sleep 0.01; n=$((n+1)); done; exit 5",
                             NULL};
        char *go_on[] = {"/bin/sh", "-c", "kill -TERM $PPID; exit 5", NULL};
        struct daytona_cmd c = {.cwd = tmpdir, .argv = _i ? wait_trap : go_on, .envp = env_min};
        struct wrun w;

        wrun(&w, shells[_i], &c, NULL);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
        ck_assert_int_eq(w.l.status, 5);
        wrun_free(&w);
}
END_TEST

static bool
gone(const char *file)
{
        char path[256], line[512];
        FILE *f;
        int pid = 0;

        snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
        fclose(f);
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        if (!(f = fopen(path, "r")))
                return true;
        line[0] = '\0';
        ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
        fclose(f);
        return strstr(line, ") Z ") != NULL;
}

/* What the tree kill (daytona_cmd_kill, mode "kill") of exec_id prints. */
static char *
kill_run(const char *exec_id)
{
        char guard[128], pidfile[128], out[32] = "";
        char *cmd;
        FILE *f;

        snprintf(guard, sizeof(guard), "%s/" SESSION ".pid", tmpdir);
        snprintf(pidfile, sizeof(pidfile), "%s/%s.pid", tmpdir, exec_id);
        cmd = daytona_cmd_kill("kill", SIGTERM, guard, exec_id, pidfile, 200);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(out, sizeof(out), f));
        pclose(f);
        free(cmd);
        return xstrdup(out);
}

static void
kill_tree(const char *exec_id)
{
        char path[128], *out;

        snprintf(path, sizeof(path), "%s/c2", tmpdir);
        while (access(path, F_OK) < 0)
                usleep(10000); /* bounded by the test's timeout */
        out = kill_run(exec_id);
        ck_assert_str_eq(out, "0\n"); /* no survivors */
        free(out);
}

/* The timeout's tree kill (remote_sh_kill through daytona_cmd_kill) ends every process of the
 * command, ones that ignore TERM and HUP and one whose parent ended (reparented, found by the
 * command's process group), and not the session shell, which writes the markers. */
START_TEST(test_cmd_tree_kill)
{
        char *argv[] = {"/bin/sh", "-c",
                        "trap '' HUP TERM; (trap '' HUP TERM; exec sleep 60) & echo $! >c1; "
                        "(sh -c 'trap \"\" HUP TERM; exec sleep 61' & echo $! >c2.t; mv c2.t c2); "
                        "wait",
                        NULL};
        struct daytona_cmd c = {.cwd = tmpdir, .argv = argv, .envp = env_min};
        struct wrun w;

        wrun_during(&w, shells[_i], &c, NULL, kill_tree);
        ck_assert_int_eq(w.l.end, DAYTONA_LOG_EXITED);
        ck_assert_int_eq(w.l.status, 128 + 9);
        ck_assert(gone("c1"));
        ck_assert(gone("c2"));
        wrun_free(&w);
}
END_TEST

/* A kill takes its pid from the session's guard file only when the file names its exec as
 * started: not an ended one ("=", at once) and never the session's next exec (after waiting
 * 1 s for its own), whose process is left alone. */
START_TEST(test_cmd_kill_takes_its_own_exec)
{
        char lines[3][64], *out;
        pid_t other = fork();

        if (other == 0) {
                execl("/bin/sleep", "sleep", "60", (char *) NULL);
                _exit(127);
        }
        snprintf(lines[0], sizeof(lines[0]), "%d p_next\n", (int) other);
        snprintf(lines[1], sizeof(lines[1]), "= p_mine\n");
        snprintf(lines[2], sizeof(lines[2]), "%d p_mine\n", (int) other); /* its own: it goes */
        for (int k = 0; k < 3; k++) {
                guard_write(lines[k]);
                out = kill_run("p_mine");
                ck_assert_str_eq(out, "0\n");
                free(out);
                if (k == 2)
                        break;
                ck_assert_int_eq(kill(other, 0), 0);
                ck_assert_int_eq(waitpid(other, NULL, WNOHANG), 0);
        }
        ck_assert_int_eq(waitpid(other, NULL, 0), other);
}
END_TEST

START_TEST(test_cmd_stdin_file_and_relay)
{
        char *cat[] = {"/bin/sh", "-c", "od -An -tx1 -v | tr -d ' \\n'", NULL};
        struct daytona_cmd c = {.cwd = "/", .argv = cat, .envp = env_min};
        char path[128];
        struct wrun w;
        FILE *f;

        /* Uploaded file: binary. */
        c.exec_id = "p_in";
        snprintf(path, sizeof(path), "%s/p_in.pid.in", tmpdir);
        f = fopen(path, "w");
        fwrite("\0\n\xff", 1, 3, f);
        fclose(f);
        c.in = DAYTONA_STDIN_FILE;
        wrun(&w, shells[_i], &c, NULL);
        ck_assert(got_is(&w.g, 0, "000aff"));
        wrun_free(&w);

        /* Relay: the input FIFO's lines, as the input endpoint writes them (a newline after
         * each), decoded; the "e" line is the EOF. Here the FIFO is a plain file. */
        snprintf(path, sizeof(path), "%s/input", tmpdir);
        f = fopen(path, "w");
        for (int i = 0; i < 3; i++) {
                /* line 1 twice: a retried request */
                char *line = daytona_cmd_input(i ? (unsigned) i : 1u,
                                               i == 2 ? "\\ back" : "\0\n\xff", i == 2 ? 6 : 3);
                fprintf(f, "%s\n", line);
                free(line);
        }
        fputs("e3\nd4 after-eof\n", f);
        fclose(f);
        c.in = DAYTONA_STDIN_RELAY;
        c.exec_id = "p_relay";
        wrun(&w, shells[_i], &c, path);
        ck_assert_msg(got_is(&w.g, 0, "000aff5c206261636b"), "%.*s", (int) w.g.out[0].len,
                      w.g.out[0].data);
        wrun_free(&w);
}
END_TEST

static Suite *
daytona_suite(void)
{
        Suite *s = suite_create("daytona");
        TCase *tc = tcase_create("log");
        TCase *tw = tcase_create("wrapper");

        tcase_add_test(tc, test_log_markers_and_newlines);
        tcase_add_test(tc, test_log_interleaved_labels);
        tcase_add_test(tc, test_log_dup_nostart_and_flush);
        tcase_add_test(tc, test_log_big_output_few_calls);
        tcase_add_test(tc, test_cmd_quote_and_input);
        suite_add_tcase(s, tc);
        tcase_add_checked_fixture(tw, cmd_setup, cmd_teardown);
        tcase_add_loop_test(tw, test_cmd_runs_command, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_state_merge_and_failures, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_guard_earlier_sessions, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_killed_says_nothing, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_stdin_file_and_relay, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_exact_env, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_second_exec_env, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_stale_wrapper_replaced, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_own_group, 0, ARRAY_SIZE(shells));
        tcase_add_loop_test(tw, test_cmd_tree_kill, 0, ARRAY_SIZE(shells));
        tcase_add_test(tw, test_cmd_kill_takes_its_own_exec);
        tcase_add_loop_test(tw, test_cmd_session_signalled, 0, ARRAY_SIZE(shells));
        tcase_set_timeout(tw, 60);
        suite_add_tcase(s, tw);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(daytona_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
