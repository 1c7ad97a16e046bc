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
 * never `exit`, options (noclobber, monitor) and the working directory are restored, and the
 * caller removes the variables and functions. Nothing dups fd 0 in the session shell (bash 5.2
 * reading its commands from a pipe crashes on `4<&0` while its stdin is redirected): the relay
 * opens the input FIFO again as /proc/$$/fd/0, since an asynchronous list's own fd 0 is
 * /dev/null in dash. The variables n d p g G X s b c i m j __sbx_u are set before it, its
 * arguments are the environment, then argv. bash and dash report a child killed by a signal on the
 * shell's fd 2 ("line 52: 7402 Killed ( read -r q …"), which is /dev/null here, not the
 * command's output. A redirection that fails on a special built-in ends a non-interactive
 * dash, so files are tested first and the guard is written by printf. Every external program
 * costs a fork and an exec in the sandbox (each about as much as the rest of the wrapper), so
 * there are few: mkdir once, mkfifo for a relay, od for the state, and the command's own.
 *   bash (the session shell of Daytona's toolbox whenever the sandbox has it), with an
 *   environment of plain names (j=1): the command is a job started with job control on
 *   (`set -m` for that one `&`: its own process group, the group the tree kill signals, and
 *   SIGINT/SIGQUIT not ignored as for a background job without job control), whose subshell
 *   exports the exec's variables with builtins before `exec`, so it gets exactly them (bash
 *   adds no _, SHLVL or PWD to a subshell's exec). The session shell's own exports are
 *   removed once, by the first such wrapper of the session (__sbx_x marks it done: an unexport
 *   in every job's subshell cost half a millisecond before the command could start); nothing
 *   a sandboxd session runs exports anything after that (the wrapper's exports are the job's,
 *   Daytona's own wrapper has none), and the session's variables keep their values;
 *   otherwise (dash, a BASH_FUNC_ or other name bash cannot export, one of bash's own
 *   variables, no PATH): `setsid env -i ENV… ARGV…` in a child, as before; setsid and env run
 *   with LC_ALL=C (neither then loads the sandbox's locale, and env -i drops it).
 * The files are removed later, in batches, by the backend (daytona_cmd_cleanup). */
static const char daytona_cmd_body[] =
        "__sbx_e() { printf '%s %s\\n' \"$n\" \"$*\"; printf '%s\\n' \"$n\" >&5; }\n"
        "__sbx_w() {\n"
        /* bash, job path: the session's exports go, once (eval: dash never parses $__sbx_u) */
        "[ \"$j\" = 1 ] && [ -n \"${BASH_VERSION-}\" ] && [ -z \"${__sbx_x-}\" ] && "
        "{ IFS=' ' eval \"$__sbx_u\"; __sbx_x=1; }\n"
        "[ -d \"$d\" ] || mkdir -p \"$d\"\n"
        /* bash's start-up file of a shell-state exec (backends/shell_init.h) */
        "[ -z \"$b\" ] || [ -f \"$b\" ] || printf %s '" SHELL_BASH_INIT "' >\"$b\"\n"
        /* the guard: the first line of the session's file names the exec from before its start
         * on, written over in place (1<>: no truncation) */
        "u=\n"
        "{ read -r q u <\"$g\"; } 2>/dev/null\n"
        "[ \"$u\" = \"$X\" ] && { __sbx_e d; return 0; }\n"
        /* a re-post in another session: G is set when a session it was posted to before names
         * it (daytona_cmd_in_session) */
        "[ -z \"${G-}\" ] || { __sbx_e l; return 0; }\n"
        "{ printf '%s %s\\n' - \"$X\" 1<>\"$g\"; } 2>/dev/null || { __sbx_e d; return 0; }\n"
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
        "E=5\n"
        "[ \"$m\" = 1 ] && E=1\n"
        "if [ \"$j\" = 1 ] && [ -n \"${BASH_VERSION-}\" ]; then\n"
        /* bash: a job of its own (its pid is its process group), the environment set by
         * builtins in the job's subshell */
        "  S=\n"
        "  case $- in *m*) ;; *) S=1; set -m;; esac\n"
        /* the fds first: the exec's variables may be named E (or f, S, q…) */
        "  (exec 2>&$E 5>&-; { while case $1 in *=*) ;; *) false;; esac; "
        "do export \"$1\"; shift; done; } 2>/dev/null; exec \"$@\") <\"$f\" &\n"
        "  q=$!\n"
        "  [ -z \"$S\" ] || set +m\n"
        "  printf '%s %s\\n' \"$q\" \"$X\" 1<>\"$g\"\n"
        /* a signal trapped by the session shell ends wait early, not the job; if the job
         * ended meanwhile (reaped already: kill -0 fails), bash kept its status for a wait */
        "  while wait \"$q\"; t=$?; [ \"$t\" -gt 128 ] && kill -0 \"$q\" 2>/dev/null; do :; done\n"
        "  [ \"$t\" -gt 128 ] && { wait \"$q\"; u=$?; [ \"$u\" = 127 ] || t=$u; }\n"
        "else\n"
        "  S=\n"
        "  command -v setsid >/dev/null 2>&1 && S=setsid\n"
        "  (exec 2>&$E 5>&-; read -r q _ </proc/self/stat; printf '%s %s\\n' \"$q\" \"$X\" "
        "1<>\"$g\"; "
        "LC_ALL=C exec $S env -i \"$@\") <\"$f\"\n"
        "  t=$?\n"
        "fi\n"
        "cd \"$w\"\n"
        "[ -n \"$r\" ] && kill \"$r\"\n"
        /* The pid may be reused now: a kill from here on finds none ("="). The line stays
         * as the guard against a second start until the session's next exec. */
        "printf '= %s\\n' \"$X\" 1<>\"$g\"\n"
        "printf '%s x %s\\n' \"$n\" \"$t\"\n"
        "[ -n \"$s\" ] && [ -f \"$s\" ] && od -An -v -tx1 \"$s\"\n"
        "printf '%s z\\n' \"$n\"\n"
        "printf '%s\\n' \"$n\" >&5\n"
        "}\n";

/* The call of the function, and what the session shell keeps of it afterwards: the functions
 * (daytona_cmd_define), __sbx_v and __sbx_x (see above). */
static const char daytona_cmd_tail[] =
        " 5>&2 2>/dev/null\n"
        "unset n d p g G X s b c i m j x a w o r f E S q t u __sbx_u __sbx_d\n";

/* The functions are defined once per session shell: parsing their 2 KB took half a
 * millisecond of every exec, where the same text as a quoted string costs a tenth of it. The
 * text carries them as __sbx_d, evaluated when the session shell has none of this version
 * (__sbx_v: a hash of the text, so a session shell that an older daemon primed gets these). */
static void
daytona_cmd_define(struct buf *b)
{
        uint64_t h = 14695981039346656037ULL; /* FNV-1a */

        for (const char *c = daytona_cmd_body; *c; c++)
                h = (h ^ (unsigned char) *c) * 1099511628211ULL;
        buf_appendf(b, "__sbx_d=");
        daytona_cmd_quote(b, daytona_cmd_body);
        buf_appendf(
                b, "\n[ \"${__sbx_v-}\" = %016llx ] || { eval \"$__sbx_d\" && __sbx_v=%016llx; }\n",
                (unsigned long long) h, (unsigned long long) h);
}

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

/* bash's own variables that a job's `export NAME=VALUE` would not pass on as they are
 * (readonly, dynamic, arrays, ones that change the shell: its program lookup, its fds): an
 * exec whose environment names one of them, a name that is no shell name (BASH_FUNC_f%%), or
 * no PATH (env(1) searches its default path, bash the session's) gets env -i. Besides these,
 * every name that starts with BASH but BASH_ENV, which only a starting bash reads. */
static const char *const daytona_cmd_bash_vars[] = {
        "_",          "COMP_WORDS",    "COMPREPLY",    "COPROC",
        "DIRSTACK",   "EPOCHREALTIME", "EPOCHSECONDS", "EUID",
        "EXECIGNORE", "FUNCNAME",      "GROUPS",       "HISTCMD",
        "LINENO",     "MAPFILE",       "PIPESTATUS",   "POSIXLY_CORRECT",
        "PPID",       "RANDOM",        "SECONDS",      "SHELLOPTS",
        "SRANDOM",    "UID",
};

static bool
daytona_cmd_name_plain(const char *kv)
{
        size_t n = strcspn(kv, "=");

        if (!kv[n] || !shell_name_valid(kv, n))
                return false;
        if (!strncmp(kv, "BASH", 4) && strncmp(kv, "BASH_ENV=", 9))
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(daytona_cmd_bash_vars); i++)
                if (strlen(daytona_cmd_bash_vars[i]) == n &&
                    !memcmp(kv, daytona_cmd_bash_vars[i], n))
                        return false;
        return true;
}

/* Whether a bash session shell may give the exec its environment itself (1) instead of
 * env -i (0). */
static int
daytona_cmd_env_plain(char *const *envp)
{
        bool path = false;

        for (char *const *e = envp; e && *e; e++) {
                if (!daytona_cmd_name_plain(*e))
                        return 0;
                path = path || !strncmp(*e, "PATH=", 5);
        }
        return path;
}

/* The bash text that unexports every variable of the session shell (once per session, see
 * above): ${!X@} are the names of the variables that are set and start with X, for every X a
 * name can start with (no fork, no file); OLDPWD by its name, as bash exports it unset at its
 * start and the wrapper's `cd` would give it a value. Run with IFS=' ' for that one eval. */
static void
daytona_cmd_unexport(struct buf *b)
{
        static const char first[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";

        buf_appendf(b, "__sbx_u='export -n OLDPWD");
        for (const char *c = first; *c; c++)
                buf_appendf(b, " ${!%c@}", *c);
        buf_appendf(b, "'\n");
}

static void
daytona_cmd_var(struct buf *b, const char *name, const char *value)
{
        buf_appendf(b, "%s=", name);
        daytona_cmd_quote(b, value ? value : "");
        buf_append(b, "\n", 1);
}

/* The pid file of an exec, or the guard file of a session (by its id). */
char *
daytona_cmd_pidfile(const char *dir, const char *id)
{
        return xasprintf("%s/%s.pid", dir, id);
}

/* The text posted to session session_id: its guard file, then command. A re-post of exec_id in
 * another session than before (earlier: the sessions it was posted to, NULL-terminated; NULL
 * or empty on a first post, which reads no other file) reads their guard files first and sets
 * G when one names the exec (starting, running or ended there): the wrapper then starts
 * nothing. Those sessions are ones the sandbox lost (it was started again) or that are gone,
 * so no command of theirs starts after this reads them, and none of them went back to the
 * pool, so no later exec wrote over their line (daytona_exec.c). */
char *
daytona_cmd_in_session(const char *command, const char *dir, const char *session_id,
                       const char *exec_id, const char *const *earlier)
{
        char *g = daytona_cmd_pidfile(dir, session_id);
        struct buf b = {0};

        daytona_cmd_var(&b, "g", g);
        if (earlier && *earlier) {
                buf_appendf(&b, "G=\nfor o in");
                for (; *earlier; earlier++) {
                        char *f = daytona_cmd_pidfile(dir, *earlier);
                        buf_append(&b, " ", 1);
                        daytona_cmd_quote(&b, f);
                        free(f);
                }
                buf_appendf(&b, "; do { read -r q u <\"$o\"; } 2>/dev/null && [ \"$u\" = ");
                daytona_cmd_quote(&b, exec_id);
                buf_appendf(&b, " ] && G=1; done\n");
        }
        buf_append(&b, command, strlen(command) + 1); /* with the NUL */
        free(g);
        return b.data;
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

        daytona_cmd_define(&b);
        daytona_cmd_var(&b, "n", c->nonce);
        daytona_cmd_var(&b, "d", c->dir);
        daytona_cmd_var(&b, "p", pid);
        daytona_cmd_var(&b, "X", c->exec_id);
        daytona_cmd_var(&b, "s", c->state);
        daytona_cmd_var(&b, "b", init);
        daytona_cmd_var(&b, "c", c->cwd);
        daytona_cmd_unexport(&b);
        buf_appendf(&b, "i=%c\nm=%d\nj=%d\n__sbx_w", modes[c->in], c->merge_stderr ? 1 : 0,
                    daytona_cmd_env_plain(c->envp));
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

/* $0 remote_sh_kill, $1 the session's guard file, $2 the exec id, $3 its pid file, $4 $5 $6
 * mode, signal and grace steps of remote_sh_kill. Waits (1 s at most, as remote_sh_kill for a
 * pid file) until the guard file names the exec as started: its pid goes into the pid file,
 * and remote_sh_kill runs on that; an exec that ended ("=") or never got there has nothing
 * left to kill, and the line of another exec of the session (the next one) is never taken. */
static const char daytona_cmd_kill_pick[] =
        "n=0\n"
        "while :; do q= u=; { read -r q u <\"$1\"; } 2>/dev/null\n"
        "  [ \"$u\" = \"$2\" ] && [ \"$q\" != - ] && break\n"
        "  n=$((n+1)); [ $n -gt 50 ] && { echo 0; exit 0; }; sleep 0.02\n"
        "done\n"
        "case $q in ''|*[!0-9]*) echo 0; exit 0;; esac\n"
        "printf '%s\\n' \"$q\" >\"$3\" && exec sh -c \"$0\" \"$4\" \"$5\" \"$3\" \"$6\"\n";

/* The tree signal/kill command for /process/execute: sh -c daytona_cmd_kill_pick with
 * remote_sh_kill and its arguments, quoted. */
char *
daytona_cmd_kill(const char *mode, int sig, const char *guardfile, const char *exec_id,
                 const char *pidfile, unsigned grace_ms)
{
        struct remote_sh_kill_argv ka;
        const char *argv[10];
        struct buf b = {0};

        remote_sh_kill_args(&ka, mode, sig, pidfile, grace_ms);
        argv[0] = "sh";
        argv[1] = "-c";
        argv[2] = daytona_cmd_kill_pick;
        argv[3] = ka.argv[2]; /* remote_sh_kill */
        argv[4] = guardfile;
        argv[5] = exec_id;
        argv[6] = pidfile;
        argv[7] = ka.argv[3]; /* mode */
        argv[8] = ka.argv[4]; /* signal */
        argv[9] = ka.argv[6]; /* grace steps */
        for (size_t i = 0; i < ARRAY_SIZE(argv); i++) {
                if (i)
                        buf_append(&b, " ", 1);
                daytona_cmd_quote(&b, argv[i]);
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
