/* modal_exec.c — the exec wrapper and the in-band state filter shared by both modes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/modal/modal_int.h"
#include "backends/modal/modal_pb.h"
#include "backends/shell.h"
#include "protocol/codec.h"

#define MODAL_STATE_MAX (4u << 20) /* a state blob larger than this is not ours */

/* $1 pid file, $2 marker, $3 state file ("" none), $4 fd for the state, $5 where bash's
 * start-up file must be (shell-state execs, backends/shell_init.h; "" none), $6 how many
 * NAME=VALUE words follow that this shell cannot pass on (modal_exec_wrap); then the
 * command. The command runs as a child (not exec'd) so that the state can follow it; the pid
 * file names the tree's top for kills. */
static const char modal_wrap_script[] =
        "p=$1 m=$2 s=$3 f=$4 i=$5 e=$6; shift 6\n"
        "{ echo $$ >\"$p\"; } 2>/dev/null || { mkdir -p \"${p%/*}\" && echo $$ >\"$p\"; } "
        "2>/dev/null\n"
        "[ -z \"$i\" ] || [ -f \"$i\" ] || printf %s '" SHELL_BASH_INIT "' >\"$i\" 2>/dev/null\n"
        "if [ \"$e\" -gt 0 ] && command -v env >/dev/null 2>&1; then env \"$@\"; "
        "else shift \"$e\"; \"$@\"; fi\n"
        "r=$?\n"
        "if [ -n \"$s\" ] && [ -f \"$s\" ]; then\n"
        "  n=$(wc -c <\"$s\")\n"
        "  { printf '%s%s\\n' \"$m\" $n; cat \"$s\"; } >&$f\n"
        "  rm -f \"$s\"\n"
        "fi\n"
        "rm -f \"$p\"\n"
        "exit $r\n";

/* A fresh marker: a control character, "SBX" and 32 random hex digits. */
void
modal_sfilter_init(struct modal_sfilter *f)
{
        memset(f, 0, sizeof(*f));
        memcpy(f->marker, "\036SBX", 4);
        util_random_hex(f->marker + 4, MODAL_MARKER_LEN - 4);
        f->mlen = MODAL_MARKER_LEN;
}

/* Frees the filter's buffers. */
void
modal_sfilter_free(struct modal_sfilter *f)
{
        buf_free(&f->held);
        buf_free(&f->state);
}

/* The blob, when it arrived whole. */
const char *
modal_sfilter_state(const struct modal_sfilter *f, size_t *len)
{
        if (f->phase != 3 || !f->state.len)
                return NULL;
        *len = f->state.len;
        return f->state.data;
}

/* Scans output bytes: passes what cannot start the marker, holds a partial match, and on a
 * whole one returns how many bytes it consumed (the marker included); -1 when none. */
static ssize_t
sfilter_scan(struct modal_sfilter *f, const char *p, size_t n, modal_out_fn out, void *ctx)
{
        size_t i = 0;

        while (i < n) {
                const char *s = memchr(p + i, f->marker[0], n - i);
                size_t at = s ? (size_t) (s - p) : n, k;
                if (at > i)
                        out(ctx, p + i, at - i);
                if (!s)
                        return -1;
                for (k = 0; at + k < n && k < f->mlen && p[at + k] == f->marker[k]; k++)
                        ;
                if (k == f->mlen)
                        return (ssize_t) (at + k);
                if (at + k == n) {
                        buf_append(&f->held, p + at, k); /* maybe the marker's start */
                        return (ssize_t) n;
                }
                out(ctx, p + at, 1);
                i = at + 1;
        }
        return -1;
}

/* After the marker: "<length>\n<blob>". Returns bytes consumed. */
static size_t
sfilter_meta(struct modal_sfilter *f, const char *p, size_t n)
{
        size_t i = 0;

        while (i < n && f->phase == 1) {
                char c = p[i++];
                if (c == '\n' && f->ndigits) {
                        f->digits[f->ndigits] = '\0';
                        f->blob_left = strtoull(f->digits, NULL, 10);
                        f->phase = f->blob_left && f->blob_left <= MODAL_STATE_MAX ? 2 : 3;
                } else if (c >= '0' && c <= '9' && f->ndigits < sizeof(f->digits) - 1) {
                        f->digits[f->ndigits++] = c;
                } else if (c != ' ') {
                        f->phase = 3; /* not ours after all: nothing more is taken */
                }
        }
        if (i < n && f->phase == 2) {
                size_t k = (size_t) MIN((uint64_t) (n - i), f->blob_left);
                buf_append(&f->state, p + i, k);
                f->blob_left -= k;
                i += k;
                if (!f->blob_left)
                        f->phase = 3;
        }
        return i;
}

/* Feeds stream bytes. */
void
modal_sfilter_feed(struct modal_sfilter *f, const char *data, size_t len, modal_out_fn out,
                   void *ctx)
{
        struct buf tmp = {0};
        const char *p = data;
        size_t n = len;
        ssize_t used;

        if (f->phase == 0 && f->held.len) {
                buf_append(&tmp, f->held.data, f->held.len);
                buf_append(&tmp, data, len);
                buf_consume(&f->held, f->held.len);
                p = tmp.data;
                n = tmp.len;
        }
        while (n) {
                if (f->phase == 3) {
                        out(ctx, p, n);
                        break;
                }
                if (f->phase == 0) {
                        used = sfilter_scan(f, p, n, out, ctx);
                        if (used < 0 || f->held.len)
                                break;
                        f->phase = 1;
                } else {
                        used = (ssize_t) sfilter_meta(f, p, n);
                }
                p += used;
                n -= (size_t) used;
        }
        buf_free(&tmp);
}

/* End of stream: held bytes were plain output. */
void
modal_sfilter_end(struct modal_sfilter *f, modal_out_fn out, void *ctx)
{
        if (f->held.len)
                out(ctx, f->held.data, f->held.len);
        buf_consume(&f->held, f->held.len);
}

/* Fills an exec's common head. */
void
modal_proc_init(struct modal_proc *p, struct backend_sandbox *sb, const struct modal_mode_ops *mops,
                char *exec_id)
{
        p->head.ops = &modal_proc_ops;
        p->sb = sb;
        p->mops = mops;
        p->exec_id = exec_id;
        modal_sandbox_ref(sb);
        modal_sfilter_init(&p->sf);
}

/* Frees an exec's common head. */
void
modal_proc_clear(struct modal_proc *p)
{
        modal_sandbox_unref(p->sb);
        free(p->exec_id);
        buf_free(&p->hout);
        modal_sfilter_free(&p->sf);
        sbx_error_clear(&p->fail);
}

/* Hands output on. */
void
modal_proc_output(struct modal_proc *p, enum backend_stream s, const char *data, size_t len)
{
        if (!len)
                return;
        if (!p->helper)
                p->cbs.on_output(p->ctx, s, data, len);
        else if (s == BACKEND_STDOUT && p->hout.len + len <= MODAL_HELPER_MAX)
                buf_append(&p->hout, data, len);
}

/* Ends a user exec. */
void
modal_proc_exit(struct modal_proc *p, int exit_code, int sig)
{
        struct exec_exit ex = {0};
        size_t slen = 0;

        ex.exit_code = exit_code;
        ex.signal = sig;
        ex.state = modal_sfilter_state(&p->sf, &slen);
        ex.state_len = slen;
        ex.error = p->fail.code ? &p->fail : NULL;
        p->cbs.on_exit(p->ctx, &ex);
}

/* Ends a user exec whose end is not known. */
void
modal_proc_lost(struct modal_proc *p, const char *why)
{
        struct exec_exit ex = {0};

        ex.lost = why;
        p->cbs.on_exit(p->ctx, &ex);
}

/* Ends a helper. */
void
modal_proc_helper_end(struct modal_proc *p, int exit_code, const char *out, size_t len)
{
        p->hcb(p->hctx, p->fail.code ? -1 : exit_code, out, len, p->fail.code ? &p->fail : NULL);
}

/* The wrapped argv. */
char **
modal_exec_wrap(char *const *argv, char *const *envp, const char *pidfile,
                const struct modal_sfilter *f, const char *state_path, int state_fd)
{
        size_t n = 0, i = 0, ne = 0, carried;
        char **w, **extra;

        while (argv[n])
                n++;
        while (envp && envp[ne])
                ne++;
        extra = xcalloc(ne + 1, sizeof(*extra));
        carried = shell_env_carried(argv, envp, extra);
        w = xcalloc(n + carried + 11, sizeof(*w));
        w[i++] = xstrdup("/bin/sh");
        w[i++] = xstrdup("-c");
        w[i++] = xstrdup(modal_wrap_script);
        w[i++] = xstrdup("sh");
        w[i++] = xstrdup(pidfile);
        w[i++] = xstrdup(f->marker);
        w[i++] = xstrdup(state_path ? state_path : "");
        w[i++] = xstrdup(state_fd == 1 ? "1" : "2");
        w[i++] = state_path ? shell_bash_init_path(state_path) : xstrdup("");
        w[i++] = xasprintf("%zu", carried);
        for (size_t k = 0; k < carried; k++)
                w[i++] = xstrdup(extra[k]);
        for (size_t k = 0; k < n; k++)
                w[i++] = xstrdup(argv[k]);
        free(extra);
        return w;
}

/* 'word' 'word'…, with ' as '\''. */
char *
modal_sh_quote_argv(char *const *argv)
{
        struct buf b = {0};

        for (size_t i = 0; argv[i]; i++) {
                if (i)
                        buf_append(&b, " ", 1);
                buf_append(&b, "'", 1);
                for (const char *c = argv[i]; *c; c++) {
                        if (*c == '\'')
                                buf_append(&b, "'\\''", 4);
                        else
                                buf_append(&b, c, 1);
                }
                buf_append(&b, "'", 1);
        }
        buf_append(&b, "", 1);
        return b.data;
}

/* envp as map entries. */
void
modal_env_entries(struct buf *b, uint32_t field, char *const *envp)
{
        for (size_t i = 0; envp && envp[i]; i++) {
                char *kv = modal_text(envp[i]), *eq = strchr(kv, '=');
                if (eq && eq != kv) {
                        *eq = '\0';
                        pb_put_map_entry(b, field, kv, eq + 1);
                }
                free(kv);
        }
}

/* Protobuf strings are UTF-8: a router refuses a request with other bytes in one (the whole
 * exec would fail, and with it every later one of a sandbox whose shell state holds such a
 * value). They reach the command as U+FFFD, as through docker's JSON API. */
char *
modal_text(const char *s)
{
        struct buf b = {0};
        size_t n = strlen(s);

        if (utf8_valid(s, n))
                return xstrdup(s);
        utf8_sanitize(&b, s, n);
        return b.data;
}
