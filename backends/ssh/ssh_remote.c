/* ssh_remote.c — commands the backend runs on the remote host through exec channels: the
 * probe (uname -sm and where things go), the agent's installation (hash-checked, atomic, under
 * an flock), its start (detached, the secret on stdin) and its stop; and helper commands for
 * file ops where no agent runs.
 *
 * Each script is run as `exec sh -c SCRIPT sh ARG…`, every word single-quoted, by the remote
 * user's login shell (any POSIX shell); scripts send their own errors to stdout (exec 2>&1) so
 * that a failure's message says what the remote side said.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ssh/ssh_int.h"

/* ($0 "sh") $1 remote dir (absolute, or relative to $HOME), $2 "VERSION-HASH12", $3 the SHA-256. */
const char ssh_sh_probe[] =
        "exec 2>&1\n"
        "h=$(uname -n)\n"
        "echo \"os=$(uname -s)\"; echo \"arch=$(uname -m)\"; echo \"uid=$(id -u)\"\n"
        "echo \"user=$(id -un)\"; echo \"home=$HOME\"; echo \"hostname=$h\"\n"
        "case $1 in /*) b=$1;; *) b=$HOME/$1;; esac\n"
        "d=$b/$h/agent-$2; echo \"agent=$d/sandboxd-agent\"\n"
        "ok=0\n"
        "if command -v sha256sum >/dev/null 2>&1; then echo sha=1\n"
        "  [ -x \"$d/sandboxd-agent\" ] && s=$(sha256sum <\"$d/sandboxd-agent\") && "
        "[ \"${s%% *}\" = \"$3\" ] && ok=1\n"
        "else echo sha=0; fi\n"
        "echo \"installed=$ok\"\n"
        "r=${XDG_RUNTIME_DIR:-}\n"
        "if [ -n \"$r\" ] && [ -d \"$r\" ] && [ -w \"$r\" ]; then echo \"rtbase=$r/sandboxd\"\n"
        "else echo \"rtbase=/tmp/sandboxd-$(id -u)\"; fi\n"
        "echo end\n";

/* $1 the agent's directory, $2 its SHA-256; the binary on stdin. Another daemon installing the
 * same agent at the same time waits on the lock, then finds it there. */
const char ssh_sh_install[] =
        "exec 2>&1\n"
        "umask 077\n"
        "d=$1 f=$1/sandboxd-agent\n"
        "mkdir -p \"$d\" || exit 1\n"
        "exec 9>>\"$d/.lock\"\n"
        "command -v flock >/dev/null 2>&1 && flock 9\n"
        "if [ -x \"$f\" ] && s=$(sha256sum <\"$f\") && [ \"${s%% *}\" = \"$2\" ]; then\n"
        "  cat >/dev/null; echo ok; exit 0\n"
        "fi\n"
        "t=$d/.new.$$\n"
        "cat >\"$t\" || { rm -f \"$t\"; exit 1; }\n"
        "s=$(sha256sum <\"$t\")\n"
        "if [ \"${s%% *}\" != \"$2\" ]; then\n"
        "  rm -f \"$t\"; echo \"the uploaded sandboxd-agent has SHA-256 ${s%% *}, not $2\"; exit "
        "1\n"
        "fi\n"
        "chmod 700 \"$t\" && mv -f \"$t\" \"$f\" && echo ok\n";

/* $1 agent ("" for none), $2 runtime base, $3 runtime dir, $4 workdir ("" home), $5 linger s;
 * the secret on stdin. The runtime base and dir must be the user's alone: the agent's socket,
 * spools and the shell's state files live there. The agent gets a minimal environment, not
 * the login session's (every exec brings its complete one; SSH_CLIENT would make bash read
 * ~/.bashrc for every command). */
const char ssh_sh_start[] =
        "exec 2>&1\n"
        "umask 077\n"
        "b=$2 r=$3\n"
        "[ -d \"$b\" ] || mkdir -p \"$b\" || exit 1\n"
        "if [ -L \"$b\" ] || [ ! -O \"$b\" ]; then echo \"$b does not belong to $(id -un)\"; "
        "exit 1; fi\n"
        "chmod 700 \"$b\" || exit 1\n"
        "[ -d \"$r\" ] || mkdir \"$r\" || exit 1\n"
        "if [ -L \"$r\" ] || [ ! -O \"$r\" ]; then echo \"$r does not belong to $(id -un)\"; "
        "exit 1; fi\n"
        "chmod 700 \"$r\" || exit 1\n"
        "if [ -n \"$4\" ]; then mkdir -p \"$4\" && cd \"$4\" || exit 1; else cd || exit 1; fi\n"
        "echo \"workdir=$(pwd -P)\"\n"
        "[ -n \"$1\" ] || { echo ok; exit 0; }\n"
        "u=$(id -un)\n"
        "exec env -i HOME=\"$HOME\" USER=\"$u\" LOGNAME=\"$u\" SHELL=\"${SHELL:-/bin/sh}\" "
        "PATH=\"$PATH\" \"$1\" --detach --runtime-dir \"$r\" --linger \"$5\"\n";

/* $1 runtime dir, $2 the kill script (remote_sh_kill). The agent, when one holds the lock,
 * gets SIGTERM (it kills its execs' trees) and is waited for; pid files of plain execs are
 * killed as trees; then the directory goes. */
const char ssh_sh_stop[] =
        "exec 2>&1\n"
        "r=$1 k=$2\n"
        "[ -d \"$r\" ] || { echo ok; exit 0; }\n"
        "l=$r/agent.lock\n"
        "if [ -f \"$l\" ] && ! { command -v flock >/dev/null 2>&1 && flock -n \"$l\" true; }; "
        "then\n"
        "  read -r pid <\"$l\" 2>/dev/null\n"
        "  if [ -n \"$pid\" ] && kill -TERM \"$pid\" 2>/dev/null; then\n"
        "    if command -v flock >/dev/null 2>&1; then flock -w 10 \"$l\" true\n"
        "    else i=0; while kill -0 \"$pid\" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; "
        "i=$((i+1)); done; fi\n"
        "  fi\n"
        "fi\n"
        "for f in \"$r\"/*.pid; do [ -f \"$f\" ] && sh -c \"$k\" kill 9 \"$f\" 0 >/dev/null; "
        "done\n"
        "rm -rf \"$r\"; echo ok\n";

/* $1 runtime dir, $2 the kill script: every plain exec's tree (its pid file) is killed. */
const char ssh_sh_reap[] =
        "exec 2>&1\n"
        "for f in \"$1\"/*.pid; do [ -f \"$f\" ] && sh -c \"$2\" kill 9 \"$f\" 0 >/dev/null; "
        "rm -f \"$f\"; done\n"
        "echo ok\n";

struct ssh_runjob {
        struct ssh_chan *ch;
        struct buf in, out, err;
        bool over;
        void *ctx;
        agent_helper_cb cb;
};

static void
run_open_cb(void *ctx)
{
        struct ssh_runjob *j = ctx;

        if (j->in.len)
                ssh_chan_write(j->ch, j->in.data, j->in.len);
        ssh_chan_eof(j->ch);
        explicit_bzero(j->in.data, j->in.len); /* it may be the agent's secret */
        buf_free(&j->in);
}

static void
run_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct ssh_runjob *j = ctx;
        struct buf *b = stream ? &j->err : &j->out;
        size_t max = stream ? 4096 : SSH_HELPER_MAX;

        if (b->len + len > max)
                j->over = j->over || !stream;
        buf_append(b, data, MIN(len, max - MIN(b->len, max)));
}

static void
run_close_cb(void *ctx, const struct ssh_chan_end *end)
{
        struct ssh_runjob *j = ctx;
        struct sbx_error err = {0};
        int code = end->exit_status;

        if (!end->opened || end->error)
                sbx_error_backend(&err, SSH_BACKEND, "%s%s%.*s",
                                  end->error ? end->error : "the command did not run",
                                  j->err.len ? ": " : "", (int) MIN(j->err.len, 400u),
                                  j->err.data ? j->err.data : "");
        else if (j->over)
                sbx_error_backend(&err, SSH_BACKEND, "a helper command wrote more than %u bytes",
                                  SSH_HELPER_MAX);
        else if (end->signal || code < 0)
                code = 128 + 9; /* killed: no status to tell */
        j->cb(j->ctx, err.code ? -1 : code,
              err.code      ? NULL
              : j->out.data ? j->out.data
                            : "",
              err.code ? 0 : j->out.len, err.code ? &err : NULL);
        sbx_error_clear(&err);
        buf_free(&j->out);
        buf_free(&j->err);
        buf_free(&j->in);
        free(j);
}

static const struct ssh_chan_cbs run_cbs = {
        .on_open = run_open_cb,
        .on_data = run_data_cb,
        .on_close = run_close_cb,
};

/* "exec 'w0' 'w1' …" for the login shell (new). */
static char *
ssh_command_line(char *const *argv)
{
        struct buf b = {0};

        buf_appendf(&b, "exec");
        for (size_t i = 0; argv[i]; i++) {
                char *q = ssh_shell_quote(argv[i]);
                buf_appendf(&b, " %s", q);
                free(q);
        }
        return b.data;
}

/* Runs argv in an exec channel. */
void
ssh_run(struct ssh_conn *c, char *const *argv, const void *in, size_t inlen, void *ctx,
        agent_helper_cb cb)
{
        struct ssh_runjob *j = xcalloc(1, sizeof(*j));
        char *cmd = ssh_command_line(argv);
        struct ssh_chan_spec spec = {.kind = SSH_CHAN_EXEC, .command = cmd};
        struct sbx_error err = {0};

        j->ctx = ctx;
        j->cb = cb;
        buf_append(&j->in, in, inlen);
        j->ch = ssh_chan_open(c, &spec, &run_cbs, j);
        free(cmd);
        if (!j->ch) {
                sbx_error_backend(&err, SSH_BACKEND, "the connection is not up");
                cb(ctx, -1, NULL, 0, &err);
                sbx_error_clear(&err);
                explicit_bzero(j->in.data, j->in.len);
                buf_free(&j->in);
                free(j);
        }
}

struct ssh_helpjob {
        struct backend_sandbox *sb;
        char **argv;
        struct buf in;
        void *ctx;
        agent_helper_cb cb;
};

static void
helper_conn_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct ssh_helpjob *j = ctx;
        struct sbx_error err = {0};

        if (error) {
                sbx_error_backend(&err, SSH_BACKEND, "%s", error);
                j->cb(j->ctx, -1, NULL, 0, &err);
                sbx_error_clear(&err);
        } else {
                ssh_run(c, j->argv, j->in.data, j->in.len, j->ctx, j->cb);
        }
        for (size_t i = 0; j->argv[i]; i++)
                free(j->argv[i]);
        free(j->argv);
        buf_free(&j->in);
        ssh_sandbox_unref(j->sb);
        free(j);
}

/* A helper command in the sandbox. */
void
ssh_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen, void *ctx,
           agent_helper_cb cb)
{
        struct ssh_helpjob *j;
        size_t n = 0;

        if (!sb->plain) {
                agent_helper(ssh_agent_session(sb, false), argv, in, inlen, ctx, cb);
                return;
        }
        j = xcalloc(1, sizeof(*j));
        while (argv[n])
                n++;
        j->argv = xcalloc(n + 1, sizeof(*j->argv));
        for (size_t i = 0; i < n; i++)
                j->argv[i] = xstrdup(argv[i]);
        buf_append(&j->in, in, inlen);
        j->sb = sb;
        ssh_sandbox_ref(sb);
        j->ctx = ctx;
        j->cb = cb;
        ssh_link_conn(sb, j, helper_conn_cb);
}

#define FACT_OFF(field) offsetof(struct backend_sandbox, field)
const struct ssh_fact ssh_facts[] = {
        {"os", FACT_OFF(r_os), SSH_FACT_BOTH},
        {"arch", FACT_OFF(r_arch), SSH_FACT_BOTH},
        {"uid", FACT_OFF(r_uid), SSH_FACT_BOTH},
        {"user", FACT_OFF(r_user), SSH_FACT_BOTH},
        {"home", FACT_OFF(r_home), SSH_FACT_BOTH},
        {"hostname", FACT_OFF(r_hostname), SSH_FACT_BOTH},
        {"agent", FACT_OFF(agent_path), SSH_FACT_PROBE}, /* recorded only with an agent */
        {"rtbase", FACT_OFF(r_rtbase), SSH_FACT_PROBE},
        {"rt", FACT_OFF(rt), SSH_FACT_RECORD},
        {"sock", FACT_OFF(sock), SSH_FACT_RECORD},
        {"workdir", FACT_OFF(workdir), SSH_FACT_RECORD},
        {NULL, 0, 0},
};

/* The probe's key=value lines into sb. */
int
ssh_remote_parse_probe(struct backend_sandbox *sb, const char *out, size_t len)
{
        const char *p = out, *end = out + len;
        bool done = false;

        while (p < end && !done) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eq;
                size_t n = (size_t) ((nl ? nl : end) - p);
                done = n == 3 && !memcmp(p, "end", 3);
                eq = memchr(p, '=', n);
                for (const struct ssh_fact *f = ssh_facts; eq && f->key; f++) {
                        char **field = SSH_FACT(sb, f);
                        if (!(f->where & SSH_FACT_PROBE) || (size_t) (eq - p) != strlen(f->key) ||
                            memcmp(p, f->key, (size_t) (eq - p)))
                                continue;
                        free(*field);
                        *field = xstrndup(eq + 1, n - (size_t) (eq + 1 - p));
                }
                if (eq && (size_t) (eq - p) == 9 && !memcmp(p, "installed", 9))
                        sb->installed = eq[1] == '1';
                p = nl ? nl + 1 : end;
        }
        for (const struct ssh_fact *f = ssh_facts; f->key; f++)
                if ((f->where & SSH_FACT_PROBE) && !*SSH_FACT(sb, f))
                        return -EINVAL;
        return done && sb->r_home[0] == '/' && sb->r_rtbase[0] == '/' ? 0 : -EINVAL;
}
