/* daytona_cmd.c — exec wrapper, kill command and stdin encoding for Daytona sandboxes. */
#include "backends/daytona/daytona_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/remote_sh.h"
#include "backends/shell.h"
#include "backends/shell_init.h"

/* A function the session shell itself runs (no subshell: a fork of the shell costs as much as
 * a third of the wrapper), so it keeps the session shell as it was: every redirection is
 * scoped to a command (fd 5 the exec's stderr and fd 2 /dev/null are the call's), `return`,
 * never `exit`, and the caller removes the variables and functions. Nothing dups fd 0 in the
 * session shell (bash 5.2 reading its commands from a pipe crashes on `4<&0` while its stdin
 * is redirected): the relay opens the input FIFO again as /proc/$$/fd/0, since an
 * asynchronous list's own fd 0 is /dev/null in dash. The
 * variables n d p s b c i m are set before it, its arguments are the environment, then argv.
 * bash and dash report a child killed by a signal on the shell's fd 2 ("line 52: 7402 Killed
 * ( read -r q …"), which is /dev/null here, not the command's output. A redirection that
 * fails on a special built-in ends a non-interactive dash, so files are tested first and the
 * guard is created by `true`. Every external program costs a fork and an exec in the sandbox,
 * so there are few: setsid and env (and mkdir once, mkfifo for a relay, od for the state); the
 * files are removed later, in batches, by the backend (daytona_cmd_cleanup). setsid and env
 * run with LC_ALL=C: neither then loads the sandbox's locale (a quarter of their start-up), and
 * env -i drops it for the command. */
static const char daytona_cmd_body[] =
        "__sbx_e() { printf '%s %s\\n' \"$n\" \"$*\"; printf '%s\\n' \"$n\" >&5; }\n"
        "__sbx_w() {\n"
        "[ -d \"$d\" ] || mkdir -p \"$d\"\n"
        /* bash's start-up file of a shell-state exec (backends/shell_init.h) */
        "[ -z \"$b\" ] || [ -f \"$b\" ] || printf %s '" SHELL_BASH_INIT "' >\"$b\"\n"
        "set -C\n"
        "if ! { true >\"$p\"; } 2>/dev/null; then set +C; __sbx_e d; return 0; fi\n"
        "set +C\n"
        "x=\n"
        "for a; do case $a in PATH=*) x=${a#PATH=};; *=*) ;; *) break;; esac; done\n"
        "w=$PWD\n"
        "if [ -n \"$c\" ] && ! cd \"$c\"; then __sbx_e f cwd; return 0; fi\n"
        "o=$PATH\n"
        "[ -n \"$x\" ] && PATH=$x\n"
        "command -v \"$a\" >/dev/null 2>&1 || { PATH=$o; cd \"$w\"; __sbx_e f argv; return 0; }\n"
        "PATH=$o\n"
        "r=\n"
        "f=/dev/null\n"
        "case $i in\n"
        "f) f=$p.in; [ -r \"$f\" ] || { cd \"$w\"; __sbx_e f stdin; return 0; } ;;\n"
        "r) f=$p.fifo; mkfifo \"$f\" || { cd \"$w\"; __sbx_e f stdin; return 0; }\n"
        "   (k=0; while IFS= read -r l; do q=${l%% *}; q=${q#?}; [ \"$q\" -gt \"$k\" ] "
        "2>/dev/null || continue; k=$q; case $l in e*) break;; d*) printf '%b' \"${l#* }\";; "
        "esac; done) </proc/$$/fd/0 >\"$f\" 5>&- &\n"
        "   r=$! ;;\n"
        "esac\n"
        "S=\n"
        "command -v setsid >/dev/null 2>&1 && S=setsid\n"
        "if [ \"$m\" = 1 ]; then\n"
        "  (exec 2>&1 5>&-; read -r q _ </proc/self/stat; echo \"$q\" >\"$p\"; "
        "LC_ALL=C exec $S env -i \"$@\") <\"$f\"\n"
        "else\n"
        "  (exec 2>&5 5>&-; read -r q _ </proc/self/stat; echo \"$q\" >\"$p\"; "
        "LC_ALL=C exec $S env -i \"$@\") <\"$f\"\n"
        "fi\n"
        "t=$?\n"
        "cd \"$w\"\n"
        "[ -n \"$r\" ] && kill \"$r\"\n"
        /* The pid may be reused now: a kill from here on finds no tree. The file stays as the
         * guard against a second start. */
        "true >\"$p\"\n"
        "printf '%s x %s\\n' \"$n\" \"$t\"\n"
        "[ -n \"$s\" ] && [ -f \"$s\" ] && od -An -v -tx1 \"$s\"\n"
        "printf '%s z\\n' \"$n\"\n"
        "printf '%s\\n' \"$n\" >&5\n"
        "}\n";

/* The call of the function, and what the session shell keeps of it afterwards: nothing. */
static const char daytona_cmd_tail[] = " 5>&2 2>/dev/null\n"
                                       "unset -f __sbx_w __sbx_e\n"
                                       "unset n d p s b c i m x a w o r f S q t\n";

/* Appends s in single quotes ('\'' for a quote inside). */
void
daytona_cmd_quote(struct buf *b, const char *s)
{
        buf_append(b, "'", 1);
        for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
                buf_append(b, s, (size_t) (q - s));
                buf_append(b, "'\\''", 4);
        }
        buf_append(b, s, strlen(s));
        buf_append(b, "'", 1);
}

static void
daytona_cmd_var(struct buf *b, const char *name, const char *value)
{
        buf_appendf(b, "%s=", name);
        daytona_cmd_quote(b, value ? value : "");
        buf_append(b, "\n", 1);
}

/* The pid file of an exec. */
char *
daytona_cmd_pidfile(const char *dir, const char *exec_id)
{
        return xasprintf("%s/%s.pid", dir, exec_id);
}

/* The session command text. */
char *
daytona_cmd_build(const struct daytona_cmd *c)
{
        static const char modes[] = {[DAYTONA_STDIN_NONE] = 'n',
                                     [DAYTONA_STDIN_FILE] = 'f',
                                     [DAYTONA_STDIN_RELAY] = 'r'};
        char *pid = daytona_cmd_pidfile(c->dir, c->exec_id);
        char *init = c->state ? shell_bash_init_path(c->state) : NULL;
        struct buf b = {0};

        buf_append(&b, daytona_cmd_body, sizeof(daytona_cmd_body) - 1);
        daytona_cmd_var(&b, "n", c->nonce);
        daytona_cmd_var(&b, "d", c->dir);
        daytona_cmd_var(&b, "p", pid);
        daytona_cmd_var(&b, "s", c->state);
        daytona_cmd_var(&b, "b", init);
        daytona_cmd_var(&b, "c", c->cwd);
        buf_appendf(&b, "i=%c\nm=%d\n__sbx_w", modes[c->in], c->merge_stderr ? 1 : 0);
        for (char *const *e = c->envp; e && *e; e++) {
                buf_append(&b, " ", 1);
                daytona_cmd_quote(&b, *e);
        }
        for (char *const *a = c->argv; *a; a++) {
                buf_append(&b, " ", 1);
                daytona_cmd_quote(&b, *a);
        }
        buf_append(&b, daytona_cmd_tail, sizeof(daytona_cmd_tail)); /* with the NUL */
        free(init);
        free(pid);
        return b.data;
}

/* The tree signal/kill command for /process/execute: remote_sh_kill's argv, quoted. */
char *
daytona_cmd_kill(const char *mode, int sig, const char *pidfile, unsigned grace_ms)
{
        struct remote_sh_kill_argv ka;
        struct buf b = {0};

        remote_sh_kill_args(&ka, mode, sig, pidfile, grace_ms);
        for (char **a = ka.argv; *a; a++) {
                if (a != ka.argv)
                        buf_append(&b, " ", 1);
                daytona_cmd_quote(&b, *a);
        }
        buf_append(&b, "\n", 2); /* with the NUL */
        return b.data;
}

/* One relay line: "d<seq> " and the bytes, printable ASCII as they are, the rest as \0ooo;
 * "e<seq>" for the EOF. The relay skips a line whose seq is not above the last it took. */
char *
daytona_cmd_input(uint64_t seq, const void *data, size_t len)
{
        const unsigned char *p = data;
        struct buf b = {0};

        if (!data)
                return xasprintf("e%llu", (unsigned long long) seq);
        buf_reserve(&b, len * 5 + 16);
        buf_appendf(&b, "d%llu ", (unsigned long long) seq);
        for (size_t i = 0; i < len; i++) {
                if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
                        buf_append(&b, &p[i], 1);
                else
                        buf_appendf(&b, "\\0%03o", p[i]);
        }
        buf_append(&b, "", 1);
        return b.data;
}

/* The command that removes the files of ended execs (ids: NULL-terminated), run through
 * /process/execute; new. */
char *
daytona_cmd_cleanup(const char *dir, const char *const *ids)
{
        struct buf b = {0};

        buf_append(&b, "rm -f --", 8);
        for (; *ids; ids++) {
                static const char *const ext[] = {".pid", ".pid.in", ".pid.fifo", ".state"};
                for (size_t i = 0; i < ARRAY_SIZE(ext); i++) {
                        char *f = xasprintf("%s/%s%s", dir, *ids, ext[i]);
                        buf_append(&b, " ", 1);
                        daytona_cmd_quote(&b, f);
                        free(f);
                }
        }
        buf_append(&b, "\n", 2);
        return b.data;
}

/* Checks the execve bounds and that argv[0] cannot be taken for an assignment by env. */
const char *
daytona_cmd_check(char *const *argv, char *const *envp)
{
        size_t total = 0;

        if (!argv || !argv[0] || !argv[0][0])
                return "argv is empty";
        if (strchr(argv[0], '='))
                return "argv[0] contains '=' (env(1) would take it for a variable)";
        for (int v = 0; v < 2; v++) {
                for (char *const *a = v ? envp : argv; a && *a; a++) {
                        size_t n = strlen(*a);
                        if (n > DAYTONA_ARG_MAX)
                                return "one argument or variable is longer than 128 KiB";
                        total += n + 1 + sizeof(char *);
                }
        }
        if (total > DAYTONA_ARGS_MAX)
                return "the arguments and environment together exceed 1.5 MiB";
        return NULL;
}
