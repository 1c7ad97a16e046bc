/* remote_sh.c — the sh programs of remote_sh.h. */
#include "backends/remote_sh.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

/* $0 = mode (signal|kill) $1 = signal number $2 = pid file $3 = grace in 50 ms steps.
 * Prints the number of survivors. Pure POSIX sh plus kill and sleep, and Linux's /proc.
 * The pid's process group (the exec's, when it was made a session leader) is signalled as a
 * whole, the other members of the tree one by one (each gets the signal once): the group
 * kill is atomic, so a loop that forks faster than a walk of /proc cannot escape it, and a
 * walk makes at most 4 passes (what it misses, the next walk finds). The grace is measured
 * on /proc/uptime: a walk over many processes can take longer than a step. */
const char remote_sh_kill[] =
        "mode=$0 sig=$1 f=$2 g=$3 n=0\n"
        "while [ ! -s \"$f\" ]; do n=$((n+1)); [ $n -gt 50 ] && { echo 0; exit 0; }; sleep 0.02; "
        "done\n"
        "read -r sid <\"$f\"\n"
        "now() { read -r u _ </proc/uptime; u=${u%.*}${u#*.}; }\n"
        "tree() {\n"
        "  s=\"|$sid|\" ch=1 k=0\n"
        "  while [ $ch = 1 ] && [ $k -lt 4 ]; do ch=0 k=$((k+1))\n"
        "    for d in /proc/[0-9]*; do p=${d#/proc/}\n"
        "      case $s in *\"|$p|\"*) continue;; esac\n"
        "      { read -r l <\"$d/stat\"; } 2>/dev/null || continue\n"
        "      set -- ${l##*) }\n"
        "      [ \"$1\" = Z ] && continue\n"
        "      case $s in *\"|$2|\"*|*\"|$3|\"*|*\"|$4|\"*) s=\"$s$p|\" ch=1;; esac\n"
        "    done\n"
        "  done\n"
        "  live='' out='' IFS='|'\n"
        "  for p in $s; do [ -n \"$p\" ] || continue\n"
        "    { read -r l </proc/$p/stat; } 2>/dev/null || continue\n"
        "    IFS=' '; set -- ${l##*) }; IFS='|'\n"
        "    [ \"$1\" = Z ] && continue\n"
        "    live=\"$live $p\"; [ \"$3\" = \"$sid\" ] || out=\"$out $p\"\n"
        "  done\n"
        "  unset IFS\n"
        "}\n"
        "tree\n"
        "[ -n \"$live\" ] && kill -\"$sig\" -\"$sid\" $out 2>/dev/null\n"
        "[ \"$mode\" = signal ] && { echo 0; exit 0; }\n"
        "now; end=$((u + g * 5))\n"
        "while [ -n \"$live\" ]; do sleep 0.05; tree; now; [ \"$u\" -lt \"$end\" ] || break; "
        "done\n"
        "i=0\n"
        "while [ -n \"$live\" ] && [ $i -lt 40 ]; do kill -9 -\"$sid\" $live 2>/dev/null; "
        "sleep 0.05; i=$((i+1)); tree; done\n"
        "set -- $live; echo $#\n";

const char remote_sh_read[] = "[ -f \"$0\" ] && wc -c <\"$0\" && tail -c +\"$1\" \"$0\" | "
                              "head -c \"$2\"";

/* Exit 21: something that is not a regular file is there (`cat >` would block on a FIFO). */
const char remote_sh_write[] = "[ \"$3\" = 1 ] && mkdir -p \"${0%/*}\"; "
                               "[ ! -e \"$0\" ] || [ -f \"$0\" ] || exit 21; "
                               "if [ \"$2\" = 1 ]; then cat >>\"$0\"; else cat >\"$0\"; fi && "
                               "{ [ \"$1\" = - ] || chmod \"$1\" \"$0\"; }";

const char remote_sh_mkdir_parent[] = "mkdir -p \"${0%/*}\"";

/* The error of remote_sh_write's own exit codes. */
bool
remote_sh_write_error(struct sbx_error *err, const char *path, int code)
{
        if (code != REMOTE_SH_NOT_REGULAR)
                return false;
        sbx_error_param(err, "path",
                        "'%s' is not a regular file: file.write only writes regular files (a FIFO, "
                        "device or socket is refused; use exec)",
                        path);
        return true;
}

/* Size line, then data. */
int
remote_sh_read_parse(const char *out, size_t len, uint64_t *size, const char **data, size_t *dlen)
{
        const char *nl = out ? memchr(out, '\n', len) : NULL;
        char *end = NULL;

        if (!nl || nl == out)
                return -EINVAL;
        *size = strtoull(out, &end, 10);
        while (end && end < nl && *end == ' ')
                end++;
        if (end != nl)
                return -EINVAL;
        *data = nl + 1;
        *dlen = len - (size_t) (nl + 1 - out);
        return 0;
}

/* Builds the argv of remote_sh_kill. */
void
remote_sh_kill_args(struct remote_sh_kill_argv *a, const char *mode, int sig, const char *pidfile,
                    unsigned grace_ms)
{
        snprintf(a->sig, sizeof(a->sig), "%d", sig);
        snprintf(a->steps, sizeof(a->steps), "%u", (grace_ms + 49) / 50);
        a->argv[0] = "sh";
        a->argv[1] = "-c";
        a->argv[2] = (char *) remote_sh_kill;
        a->argv[3] = (char *) mode;
        a->argv[4] = a->sig;
        a->argv[5] = (char *) pidfile;
        a->argv[6] = a->steps;
        a->argv[7] = NULL;
}

struct remote_sh_kill {
        const struct remote_sh_kill_ops *ops;
        void *obj;
        void *ctx;
        backend_kill_cb cb;
};

static void
remote_sh_killed_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct remote_sh_kill *k = ctx;

        if (k->cb)
                k->cb(k->ctx, err ? -1 : (out ? atoi(out) : 0), err);
        k->ops->unref(k->obj);
        free(k);
}

static void
remote_sh_kill_run(const struct remote_sh_kill_ops *ops, struct backend_sandbox *sb, void *obj,
                   const char *pidfile, const char *mode, int sig, unsigned grace_ms, void *ctx,
                   backend_kill_cb cb)
{
        struct remote_sh_kill *k = xcalloc(1, sizeof(*k));
        struct remote_sh_kill_argv ka;

        remote_sh_kill_args(&ka, mode, sig, pidfile, grace_ms);
        k->ops = ops;
        k->obj = obj;
        k->ctx = ctx;
        k->cb = cb;
        ops->ref(obj);
        ops->helper(sb, ka.argv, NULL, 0, k, remote_sh_killed_cb);
}

/* Sends sig to an exec's tree through the backend's helper. */
void
remote_sh_signal(const struct remote_sh_kill_ops *ops, struct backend_sandbox *sb, void *obj,
                 const char *pidfile, int sig)
{
        remote_sh_kill_run(ops, sb, obj, pidfile, "signal", sig, 0, NULL, NULL);
}

/* TERM, grace, KILL of an exec's tree through the backend's helper. */
void
remote_sh_kill_tree(const struct remote_sh_kill_ops *ops, struct backend_sandbox *sb, void *obj,
                    const char *pidfile, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        remote_sh_kill_run(ops, sb, obj, pidfile, "kill", SIGTERM, grace_ms, ctx, cb);
}
