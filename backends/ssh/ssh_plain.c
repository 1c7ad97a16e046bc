/* ssh_plain.c — execs where no sandboxd-agent runs (no agent for the remote system, or
 * agent = off): one exec channel per command. sshd makes each channel's command a session
 * leader; a small wrapper records its pid in the runtime directory, so that signals and kills
 * reach the whole remote tree (its session, process group and descendants: remote_sh_kill)
 * from another channel, and so that trees of commands lost with a link are killed on the next
 * connection. The shell-state file is read back (and the pid file removed) by a helper after
 * the exit.
 *
 * Slower than the agent (a channel set-up per command, and helpers), and never silently less
 * correct: a dropped link ends the exec as lost (its output so far kept), where the agent
 * would have resumed it. At most SSH_PLAIN_MAX run at once per sandbox, below OpenSSH's
 * MaxSessions (10), which counts each exec channel; more wait their turn.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/remote_sh.h"
#include "backends/shell.h"
#include "backends/ssh/ssh_int.h"

#define SSH_PLAIN_MAX 6

/* $0 pid file, $1 cwd, $2 "1" merges stderr, $3 bash's start-up file for a shell-state exec
 * ("" none; written when missing), then env assignments and argv: the command gets the exec's
 * complete environment, not the login session's. */
static const char plain_wrap[] =
        "echo $$ >\"$0\" || exit 127\n"
        "cd \"$1\" || { echo \"sandboxd: cannot enter the working directory $1\" >&2; exit 127; }\n"
        "[ \"$2\" = 1 ] && exec 2>&1\n"
        "[ -z \"$3\" ] || [ -f \"$3\" ] || printf %s '" SHELL_BASH_INIT "' >\"$3\" 2>/dev/null\n"
        "shift 3\n"
        "set -- env -i \"$@\"\n"
        "exec \"$@\"\n";

/* $0 state file ("" none), $1 pid file: prints the state, removes both. */
static const char plain_finish_sh[] =
        "[ -n \"$0\" ] && cat \"$0\" 2>/dev/null; rm -f \"$0\" \"$1\"";

struct plain_proc {
        struct backend_proc base;
        struct list link; /* in the sandbox's queue until it starts */
        struct backend_sandbox *sb;
        int refs; /* the daemon's handle, the channel, each helper */
        struct backend_exec_cbs cbs;
        void *ctx;
        char *exec_id, *pidfile, *state_path, *command;
        bool pty, stdin_open, merge, released, exited, queued;
        unsigned short rows, cols;
        struct buf in;
        bool eof_wanted, paused;
        struct ssh_chan *ch;
        struct exec_exit ex;
        char *lost;
        struct buf state;
};

static const struct backend_proc_ops plain_ops;
static void plain_launch_next(struct backend_sandbox *sb);

static void
plain_unref(struct plain_proc *p)
{
        if (--p->refs > 0)
                return;
        list_del(&p->link);
        ssh_sandbox_unref(p->sb);
        free(p->exec_id);
        free(p->pidfile);
        free(p->state_path);
        free(p->command);
        free(p->lost);
        buf_free(&p->in);
        buf_free(&p->state);
        free(p);
}

/* The command line: the wrapper, its arguments and the command (new). */
static char *
plain_command(const struct plain_proc *p, const struct exec_spec *spec, const char *cwd)
{
        struct buf b = {0};
        char *q;

        buf_appendf(&b, "exec sh -c ");
        q = ssh_shell_quote(plain_wrap);
        buf_appendf(&b, "%s", q);
        free(q);
        char *init = spec->state_path ? shell_bash_init_path(spec->state_path) : xstrdup("");
        const char *fixed[] = {p->pidfile, cwd, spec->merge_stderr ? "1" : "0", init};
        for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
                q = ssh_shell_quote(fixed[i]);
                buf_appendf(&b, " %s", q);
                free(q);
        }
        free(init);
        for (size_t i = 0; spec->envp && spec->envp[i]; i++) {
                q = ssh_shell_quote(spec->envp[i]);
                buf_appendf(&b, " %s", q);
                free(q);
        }
        for (size_t i = 0; spec->argv[i]; i++) {
                q = ssh_shell_quote(spec->argv[i]);
                buf_appendf(&b, " %s", q);
                free(q);
        }
        return b.data;
}

static void
plain_deliver_exit(struct plain_proc *p)
{
        p->ex.state = p->state.len ? p->state.data : NULL;
        p->ex.state_len = p->state.len;
        p->ex.lost = p->lost;
        if (!p->released)
                p->cbs.on_exit(p->ctx, &p->ex);
}

static void
plain_finished_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct plain_proc *p = ctx;

        if (!err && code == 0 && p->state_path)
                buf_append(&p->state, out, len);
        plain_deliver_exit(p);
        plain_unref(p);
}

/* The exec is over: the state read back, the pid file removed, then the exit. */
static void
plain_finish(struct plain_proc *p)
{
        char *argv[] = {
                "sh",       "-c", (char *) plain_finish_sh, p->state_path ? p->state_path : "",
                p->pidfile, NULL};

        if (p->lost) {
                buf_appendf(&p->sb->lost, "%s\n", p->pidfile);
                plain_deliver_exit(p);
                return;
        }
        p->refs++;
        ssh_helper(p->sb, argv, NULL, 0, p, plain_finished_cb);
}

static void
plain_open_cb(void *ctx)
{
        struct plain_proc *p = ctx;

        if (p->in.len)
                ssh_chan_write(p->ch, p->in.data, p->in.len);
        buf_free(&p->in);
        if (p->eof_wanted && p->pty)
                ssh_chan_write(p->ch, "\x04", 1);
        else if (p->eof_wanted)
                ssh_chan_eof(p->ch);
}

static void
plain_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct plain_proc *p = ctx;

        if (!p->released)
                p->cbs.on_output(p->ctx, stream ? BACKEND_STDERR : BACKEND_STDOUT, data, len);
}

static int
plain_signal_number(const char *name)
{
        static const struct {
                const char *name;
                int sig;
        } sigs[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},
                    {"ABRT", SIGABRT}, {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV},
                    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"USR1", SIGUSR1},
                    {"USR2", SIGUSR2}, {"BUS", SIGBUS},   {"TRAP", SIGTRAP}, {"XCPU", SIGXCPU}};

        for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
                if (!strcmp(name, sigs[i].name))
                        return sigs[i].sig;
        return SIGKILL;
}

static void
plain_close_cb(void *ctx, const struct ssh_chan_end *end)
{
        struct plain_proc *p = ctx;
        struct sbx_error err = {0};

        p->ch = NULL;
        p->exited = true;
        p->sb->plain_running--;
        if (!end->opened) {
                sbx_error_backend(&err, SSH_BACKEND, "cannot run the command %s: %s", p->sb->where,
                                  end->error ? end->error : "the channel closed");
                p->ex.error = &err;
                if (!p->released)
                        p->cbs.on_exit(p->ctx, &p->ex);
                sbx_error_clear(&err);
        } else if (end->error) {
                p->lost = xasprintf("the link %s dropped while it ran (%s); with plain exec "
                                    "channels a command cannot be resumed, its tree is killed "
                                    "at the next connection",
                                    p->sb->where, end->error);
                plain_finish(p);
        } else {
                p->ex.signal = end->signal ? plain_signal_number(end->signal) : 0;
                p->ex.exit_code = end->exit_status < 0 && !end->signal ? 255 : end->exit_status;
                plain_finish(p);
        }
        plain_launch_next(p->sb);
        plain_unref(p); /* the channel's */
}

static const struct ssh_chan_cbs plain_chan_cbs = {
        .on_open = plain_open_cb,
        .on_data = plain_data_cb,
        .on_close = plain_close_cb,
};

static void
plain_conn_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct plain_proc *p = ctx;
        struct ssh_chan_spec spec = {.kind = SSH_CHAN_EXEC,
                                     .command = p->command,
                                     .pty = p->pty,
                                     .rows = p->rows,
                                     .cols = p->cols};
        struct ssh_chan_end end = {.exit_status = -1, .error = error};

        if (!error && !p->released)
                p->ch = ssh_chan_open(c, &spec, &plain_chan_cbs, p);
        if (!p->ch) {
                end.error = error ? error : p->released ? "released" : "the connection is down";
                plain_close_cb(p, &end);
                return;
        }
        if (p->paused)
                ssh_chan_pause(p->ch);
}

/* Starts queued execs while there is room. */
static void
plain_launch_next(struct backend_sandbox *sb)
{
        while (sb->plain_running < SSH_PLAIN_MAX && !list_empty(&sb->plain_queue)) {
                struct plain_proc *p = LIST_ENTRY(sb->plain_queue.next, struct plain_proc, link);
                list_del(&p->link);
                p->queued = false;
                sb->plain_running++;
                ssh_link_conn(sb, p, plain_conn_cb);
        }
}

/* Starts a plain exec. */
int
ssh_plain_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                struct sbx_error *err)
{
        struct plain_proc *p;

        if (!spec->argv || !spec->argv[0] || strchr(spec->argv[0], '=')) {
                sbx_error_param(err, "argv", "invalid params: argv[0] must name a program");
                return -EINVAL;
        }
        p = xcalloc(1, sizeof(*p));
        p->base.ops = &plain_ops;
        p->sb = sb;
        ssh_sandbox_ref(sb);
        p->refs = 2; /* the daemon's and the channel's */
        p->cbs = *cbs;
        p->ctx = ctx;
        p->exec_id = xstrdup(spec->exec_id ? spec->exec_id : "p_anon");
        p->pidfile = xasprintf("%s/%s.pid", sb->rt, p->exec_id);
        p->state_path = spec->state_path ? xstrdup(spec->state_path) : NULL;
        p->command = plain_command(p, spec, spec->cwd ? spec->cwd : sb->workdir);
        p->pty = spec->pty;
        p->rows = spec->pty_rows ? spec->pty_rows : 24;
        p->cols = spec->pty_cols ? spec->pty_cols : 80;
        p->stdin_open = spec->stdin_open;
        buf_append(&p->in, spec->stdin_data, spec->stdin_len);
        p->eof_wanted = !spec->stdin_open;
        p->queued = true;
        list_add_tail(&sb->plain_queue, &p->link);
        plain_launch_next(sb);
        *ret = &p->base;
        return 0;
}

/* ---- per-exec ops ---- */

static int
plain_write(struct backend_proc *bp, const void *data, size_t len, bool eof)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        if (p->exited || p->eof_wanted)
                return -EPIPE;
        if (!p->ch) {
                buf_append(&p->in, data, len);
                p->eof_wanted = eof;
                return 0;
        }
        ssh_chan_write(p->ch, data, len);
        p->eof_wanted = eof;
        if (eof && p->pty)
                ssh_chan_write(p->ch, "\x04", 1);
        else if (eof)
                ssh_chan_eof(p->ch);
        return 0;
}

struct plain_kill {
        struct plain_proc *p;
        backend_kill_cb cb;
        void *ctx;
};

static void
plain_killed_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct plain_kill *k = ctx;

        if (k->cb)
                k->cb(k->ctx, err || code ? 0 : atoi(out ? out : "0"), err);
        plain_unref(k->p);
        free(k);
}

/* Runs remote_sh_kill for the exec's tree (mode "signal" or "kill"). */
static void
plain_kill_tree(struct plain_proc *p, const char *mode, int sig, unsigned grace_ms, void *ctx,
                backend_kill_cb cb)
{
        struct plain_kill *k = xcalloc(1, sizeof(*k));
        struct remote_sh_kill_argv a;

        k->p = p;
        p->refs++;
        k->cb = cb;
        k->ctx = ctx;
        remote_sh_kill_args(&a, mode, sig, p->pidfile, grace_ms);
        ssh_helper(p->sb, a.argv, NULL, 0, k, plain_killed_cb);
}

static int
plain_signal(struct backend_proc *bp, int sig)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        if (!p->exited && !p->queued)
                plain_kill_tree(p, "signal", sig, 0, NULL, NULL);
        return 0;
}

static void
plain_kill(struct backend_proc *bp, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        if (p->queued) { /* never started: nothing to kill, it ends now */
                struct ssh_chan_end end = {.opened = true, .exit_status = -1, .signal = "KILL"};
                list_del(&p->link);
                p->queued = false;
                p->sb->plain_running++;
                plain_close_cb(p, &end);
                cb(ctx, 0, NULL);
                return;
        }
        plain_kill_tree(p, "kill", SIGTERM, grace_ms, ctx, cb);
}

static void
plain_pause(struct backend_proc *bp)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        p->paused = true;
        if (p->ch)
                ssh_chan_pause(p->ch);
}

static void
plain_resume(struct backend_proc *bp)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        p->paused = false;
        if (p->ch)
                ssh_chan_resume(p->ch);
}

static int
plain_resize(struct backend_proc *bp, unsigned short rows, unsigned short cols)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        if (!p->pty)
                return -ENOTTY;
        p->rows = rows;
        p->cols = cols;
        if (p->ch)
                ssh_chan_resize(p->ch, rows, cols);
        return 0;
}

/* The daemon lets go; a plain exec cannot outlive it, so a running one is killed. */
static void
plain_release(struct backend_proc *bp)
{
        struct plain_proc *p = (struct plain_proc *) bp;

        p->released = true;
        if (p->queued) {
                list_del(&p->link);
                p->queued = false;
                p->refs--; /* the channel it never had */
        } else if (!p->exited) {
                plain_kill_tree(p, "kill", SIGKILL, 0, NULL, NULL);
        }
        plain_unref(p);
}

static const struct backend_proc_ops plain_ops = {
        .write = plain_write,
        .signal = plain_signal,
        .kill = plain_kill,
        .pause = plain_pause,
        .resume = plain_resume,
        .resize = plain_resize,
        .release = plain_release,
};

static void
plain_reaped_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        ssh_sandbox_unref(ctx);
}

/* The trees of execs lost with the last connection, killed on this one. */
void
ssh_plain_reap_lost(struct backend_sandbox *sb)
{
        static const char script[] = "k=$0; for f in \"$@\"; do [ -f \"$f\" ] && sh -c \"$k\" "
                                     "kill 9 \"$f\" 0 >/dev/null; rm -f \"$f\"; done";
        char **argv;
        size_t n = 4;
        char *list, *save = NULL, *tok;

        if (!sb->lost.len || !ssh_conn_up(sb->conn))
                return;
        buf_append(&sb->lost, "", 1);
        list = sb->lost.data;
        sb->lost = (struct buf){0};
        argv = xcalloc(4 + strlen(list) / 2 + 2, sizeof(*argv));
        argv[0] = "sh", argv[1] = "-c", argv[2] = (char *) script,
        argv[3] = (char *) remote_sh_kill;
        for (tok = strtok_r(list, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
                argv[n++] = tok;
        ssh_sandbox_ref(sb);
        ssh_run(sb->conn, argv, NULL, 0, sb, plain_reaped_cb);
        free(argv);
        free(list);
}
