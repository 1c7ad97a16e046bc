/* carrier.c — everything that runs a string or a stream as code.
 *
 * Shells of every name (-c payloads, script operands, stdin), eval, source / ., trap, at and
 * batch, interpreters (python -c, node -e, perl -e, …) and the streams that feed them: a pipe,
 * a heredoc or here-string, a process substitution, /dev/stdin, /dev/fd/N and /proc/self/fd/N
 * with N opened by the same command or by an earlier `exec N< …`, the stdin a carrier payload
 * inherits, and the exec request's own stdin. A payload known when the command is judged is
 * parsed and judged itself; one that is not is ASK (exec.opaque-payload, exec.stdin-code),
 * exec.remote-code when a fetcher produces it, exec.decode-run when a decoder does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

const char *const net_fetchers[] = {"curl",   "wget",  "fetch", "aria2c", "nc",     "ncat",
                                    "netcat", "socat", "http",  "https",  "xh",     "lynx",
                                    "w3m",    "ssh",   "ftp",   "tftp",   "telnet", "lftp",
                                    "scp",    "sftp",  "rsync", "axel",   "httpie", NULL};
static const char *const decoders[] = {"base64",  "base32",   "base16", "basenc", "xxd",
                                       "openssl", "uudecode", "gunzip", "zcat",   "bzcat",
                                       "xzcat",   "rev",      "tr",     "gzip",   "unxz",
                                       "bunzip2", "zstdcat",  "unzstd", "gpg",    NULL};

enum srckind {
        SRC_NONE,    /* nothing (EOF, a closed fd) */
        SRC_LITERAL, /* text known now */
        SRC_FILE,    /* a file named in the command */
        SRC_DYNAMIC, /* a stream only known at run time */
        SRC_DECODED, /* decoded data */
        SRC_REMOTE,  /* data from the network */
};

struct source {
        enum srckind kind;
        const char *text;        /* SRC_LITERAL */
        const struct word *file; /* SRC_FILE */
        const char *what;        /* for the subject: where it comes from */
};

static void stdin_source(struct eval *ev, int k, struct source *s, int depth);
static void fd_source(struct eval *ev, int k, int fd, struct source *s, int depth);

/* Whether units [lo, hi) run a program of names. */
static bool
units_have(struct eval *ev, int lo, int hi, const char *const *names)
{
        for (int j = lo; j < hi && j < (int) ev->nunits; j++)
                if (analyze_in(analyze_unit_name(ev, &ev->units[j]), names))
                        return true;
        return false;
}

/* A process substitution <(…) / $(…) word as a source. */
static void
sub_source(struct eval *ev, const struct word *w, struct source *s)
{
        s->what = w->s;
        if (units_have(ev, w->sub_lo, w->sub_hi, net_fetchers)) {
                s->kind = SRC_REMOTE;
                return;
        }
        if (w->sub_hi == w->sub_lo + 1 && w->sub_lo >= 0) {
                const char *out = word_echo_output(ev, &ev->units[w->sub_lo]);
                if (out) {
                        s->kind = SRC_LITERAL;
                        s->text = out;
                        return;
                }
        }
        s->kind = units_have(ev, w->sub_lo, w->sub_hi, decoders) ? SRC_DECODED : SRC_DYNAMIC;
}

/* "/dev/fd/N", "/proc/self/fd/N", "/proc/thread-self/fd/N": N; -1 otherwise. */
static int
fd_path(const char *s)
{
        static const char *const pre[] = {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/",
                                          "/proc/$$/fd/", NULL};
        for (const char *const *p = pre; *p; p++) {
                size_t l = strlen(*p);
                if (!strncmp(s, *p, l) && s[l] && strspn(s + l, "0123456789") == strlen(s + l))
                        return atoi(s + l);
        }
        if (!strcmp(s, "/dev/stdin") || !strcmp(s, "-"))
                return 0;
        return -1;
}

/* The source a redirection gives its fd. */
static void
redir_source(struct eval *ev, int k, const struct redir *rd, struct source *s, int depth)
{
        const struct word *t = &rd->target;

        s->what = t->s;
        if (rd->kind == RD_HEREDOC || rd->kind == RD_HERESTR) {
                bool dyn = rd->kind == RD_HEREDOC ? rd->body_dyn : !analyze_lit(t);
                s->kind = dyn ? SRC_DYNAMIC : SRC_LITERAL;
                s->text = rd->kind == RD_HEREDOC ? (rd->body ? rd->body : "") : t->s;
                if (dyn && (t->flags & W_SUB))
                        sub_source(ev, t, s);
                return;
        }
        if (rd->kind == RD_DUP) {
                if (!strcmp(t->s, "-"))
                        s->kind = SRC_NONE;
                else
                        fd_source(ev, k, atoi(t->s), s, depth + 1);
                return;
        }
        if (t->flags & W_SUB) {
                sub_source(ev, t, s);
                return;
        }
        if (!analyze_lit(t)) {
                s->kind = SRC_DYNAMIC;
                return;
        }
        int n = fd_path(t->s);
        if (n >= 0) {
                fd_source(ev, k, n, s, depth + 1);
                return;
        }
        const char *p = paths_resolve(ev, t->s);
        if (p && paths_device(p) == DEV_NET) {
                s->kind = SRC_REMOTE;
                return;
        }
        s->kind = SRC_FILE;
        s->file = t;
}

/* The last redirection of unit k that sets fd (input side), or NULL. */
static const struct redir *
own_redir(const struct unit *u, int fd)
{
        const struct redir *hit = NULL;

        for (size_t r = 0; r < u->nredir; r++) {
                const struct redir *rd = &u->redir[r];
                int f = rd->fd >= 0 ? rd->fd : (rd->kind == RD_OUT ? 1 : 0);
                if (f != fd || rd->fd == -2)
                        continue;
                if (rd->kind == RD_OUT && fd == 0)
                        continue;
                hit = rd;
        }
        return hit;
}

/* Where unit k's fd comes from: its own redirections, an earlier exec, or its carrier's. */
static void
fd_source(struct eval *ev, int k, int fd, struct source *s, int depth)
{
        s->kind = SRC_NONE;
        if (depth > 16) {
                s->kind = SRC_DYNAMIC;
                return;
        }
        if (fd == 0) {
                stdin_source(ev, k, s, depth + 1);
                return;
        }
        const struct redir *rd = own_redir(&ev->units[k], fd);
        if (rd) {
                redir_source(ev, k, rd, s, depth);
                return;
        }
        for (size_t j = ev->nfds; j-- > 0;) {
                if (ev->fds[j].fd == fd && ev->fds[j].unit < k) {
                        if (ev->fds[j].redir)
                                redir_source(ev, ev->fds[j].unit, ev->fds[j].redir, s, depth);
                        return;
                }
        }
        if (ev->units[k].inherit >= 0)
                fd_source(ev, ev->units[k].inherit, fd, s, depth + 1);
}

/* What a pipe from unit j carries. */
static void
pipe_source(struct eval *ev, int j, struct source *s, int depth)
{
        const struct unit *up = &ev->units[j];
        const char *echo = up->pipe_prev == PIPE_NONE ? word_echo_output(ev, up) : NULL;

        s->what = analyze_join(ev, up->argv, up->argc);
        if (echo) {
                s->kind = SRC_LITERAL;
                s->text = echo;
                return;
        }
        s->kind = SRC_DYNAMIC;
        for (int n = 0; j >= 0 && n < 64; j = ev->units[j].pipe_prev, n++) {
                const char *nm = analyze_unit_name(ev, &ev->units[j]);
                if (analyze_in(nm, net_fetchers)) {
                        s->kind = SRC_REMOTE;
                        return;
                }
                if (analyze_in(nm, decoders))
                        s->kind = SRC_DECODED;
                if (ev->units[j].pipe_prev == PIPE_NONE) {
                        /* the head of the pipeline reads a stream too: its own, or the one
                         * its carrier or group passes on */
                        struct source head;
                        stdin_source(ev, j, &head, depth + 1);
                        if (head.kind == SRC_REMOTE || head.kind == SRC_DECODED)
                                s->kind = head.kind;
                }
        }
}

/* Where unit k's stdin comes from. */
static void
stdin_source(struct eval *ev, int k, struct source *s, int depth)
{
        const struct unit *u = &ev->units[k];
        const struct redir *rd = own_redir(u, 0);
        const struct policy_ctx *c = ev->ctx;

        memset(s, 0, sizeof(*s));
        if (depth > 16) {
                s->kind = SRC_DYNAMIC;
                return;
        }
        if (rd && !(rd->kind == RD_IN && fd_path(rd->target.s) == 0 && analyze_lit(&rd->target))) {
                redir_source(ev, k, rd, s, depth);
                return;
        }
        if (u->pipe_prev >= 0) {
                pipe_source(ev, u->pipe_prev, s, depth);
                return;
        }
        if (u->pipe_prev == PIPE_UNKNOWN || (u->flags & U_FUNC)) {
                s->kind = SRC_DYNAMIC;
                s->what = "a pipe";
                return;
        }
        if (u->fed_by >= 0) {
                pipe_source(ev, u->fed_by, s, depth);
                if (s->kind == SRC_LITERAL)
                        s->kind = SRC_DYNAMIC;
                return;
        }
        if (u->inherit >= 0) {
                stdin_source(ev, u->inherit, s, depth + 1);
                return;
        }
        for (size_t j = ev->nfds; j-- > 0;) {
                /* an earlier `exec < …` replaced the shell's stdin */
                if (ev->fds[j].fd == 0 && ev->fds[j].unit < k) {
                        if (ev->fds[j].redir)
                                redir_source(ev, ev->fds[j].unit, ev->fds[j].redir, s, depth + 1);
                        return;
                }
        }
        /* the exec request's stdin */
        s->what = "the request's stdin";
        if (c && c->stdin_open)
                s->kind = SRC_DYNAMIC;
        else if (c && c->stdin_data && c->stdin_len > 0)
                s->kind = memchr(c->stdin_data, '\0', c->stdin_len) ? SRC_DYNAMIC : SRC_LITERAL,
                s->text = arena_strndup(&ev->ar, c->stdin_data, c->stdin_len);
}

static enum inline_lang
lang_of(const char *who)
{
        static const struct {
                const char *pre;
                enum inline_lang lang;
        } langs[] = {{"python", IL_PYTHON}, {"pypy", IL_PYTHON}, {"node", IL_NODE},
                     {"bun", IL_NODE},      {"perl", IL_PERL},   {"ruby", IL_RUBY}};
        for (size_t j = 0; j < ARRAY_SIZE(langs); j++)
                if (!strncmp(who, langs[j].pre, strlen(langs[j].pre)))
                        return langs[j].lang;
        return IL_OTHER;
}

/* "PRODUCER | who": what an approval of a stream binds to. */
static const char *
stream_subject(struct eval *ev, const char *what, const char *who)
{
        size_t n = strlen(what) + strlen(who) + 4;
        char *s = arena_alloc(&ev->ar, n);

        snprintf(s, n, "%s | %s", what, who);
        return s;
}

/* Judges code coming from a source into a shell (parsed), a tool with a judge for its own
 * language (fn), or an interpreter. */
static void
judge_source(struct eval *ev, int k, const struct source *s, const char *who, bool is_shell,
             carrier_text_fn fn)
{
        bool same = !strcmp(who, "source"); /* . and source run it in this shell */

        const char *subj = s->what ? s->what : who;

        switch (s->kind) {
        case SRC_NONE:
                return;
        case SRC_LITERAL:
                if (fn)
                        fn(ev, k, s->text, who);
                else if (is_shell)
                        analyze_shell_payload(ev, k, s->text, who, same);
                else if (!inline_harmless(lang_of(who), s->text))
                        analyze_add(ev, k, "exec.inline-code", who,
                                    analyze_digest(ev, who, s->text));
                return;
        case SRC_FILE: {
                const char *content = NULL;
                if (!paths_was_written(ev, s->file, &content))
                        return;
                analyze_add(ev, k, "exec.write-then-run", s->file->s, s->file->s);
                if (content && fn)
                        fn(ev, k, content, who);
                else if (content && is_shell)
                        analyze_shell_payload(ev, k, content, who, same);
                else if (content && !inline_harmless(lang_of(who), content))
                        analyze_add(ev, k, "exec.inline-code", who,
                                    analyze_digest(ev, who, content));
                return;
        }
        case SRC_DYNAMIC:
                analyze_add(ev, k, "exec.stdin-code", who, stream_subject(ev, subj, who));
                return;
        case SRC_DECODED:
                analyze_add(ev, k, "exec.decode-run", who, stream_subject(ev, subj, who));
                return;
        case SRC_REMOTE:
                analyze_add(ev, k, "exec.remote-code", who, stream_subject(ev, subj, who));
                return;
        }
}

/* A shell or interpreter with no script operand reads code from stdin. */
void
carrier_stdin(struct eval *ev, int k, const char *who, bool is_shell)
{
        struct source s;

        stdin_source(ev, k, &s, 0);
        judge_source(ev, k, &s, who, is_shell, NULL);
}

/* A tool that reads its commands from stdin (ed, gdb, sqlite3, ex, awk -f -). */
void
carrier_stdin_tool(struct eval *ev, int k, const char *who, carrier_text_fn fn)
{
        struct source s;

        stdin_source(ev, k, &s, 0);
        judge_source(ev, k, &s, who, false, fn);
}

/* Whether what unit k reads on stdin comes from the network. */
bool
carrier_stdin_remote(struct eval *ev, int k)
{
        struct source s;

        stdin_source(ev, k, &s, 0);
        return s.kind == SRC_REMOTE;
}

static void
script_source(struct eval *ev, int k, const struct word *w, const char *who, bool is_shell,
              carrier_text_fn fn)
{
        struct source s = {.what = w->s};

        if (w->flags & W_SUB) {
                sub_source(ev, w, &s);
        } else if (!analyze_lit(w)) {
                analyze_add(ev, k, "exec.opaque-payload", w->s, w->s);
                return;
        } else if (fd_path(w->s) >= 0) {
                fd_source(ev, k, fd_path(w->s), &s, 0);
        } else {
                const char *p = paths_resolve(ev, w->s);
                s.kind = p && paths_device(p) == DEV_NET ? SRC_REMOTE : SRC_FILE;
                s.file = w;
        }
        judge_source(ev, k, &s, who, is_shell, fn);
}

/* A script operand of a shell, an interpreter or source. */
void
carrier_script(struct eval *ev, int k, const struct word *w, const char *who, bool is_shell)
{
        script_source(ev, k, w, who, is_shell, NULL);
}

/* A script file of a tool (awk -f, sed -f, make -f): "-" and /dev/stdin are its stdin. */
void
carrier_script_tool(struct eval *ev, int k, const struct word *w, const char *who,
                    carrier_text_fn fn)
{
        if (analyze_lit(w) && !strcmp(w->s, "-")) {
                carrier_stdin_tool(ev, k, who, fn);
                return;
        }
        script_source(ev, k, w, who, false, fn);
}

/* A payload word: parsed when literal, ASK when not. */
void
carrier_payload(struct eval *ev, int k, const struct word *w, const char *who)
{
        if (analyze_lit(w)) {
                /* eval and trap run it in this shell; the others start one */
                analyze_shell_payload(ev, k, w->s, who,
                                      !strcmp(who, "eval") || !strcmp(who, "trap"));
                return;
        }
        bool remote = ((w->flags & W_SUB) && units_have(ev, w->sub_lo, w->sub_hi, net_fetchers)) ||
                      ((w->flags & W_STDIN) && carrier_stdin_remote(ev, k));
        size_t n = strlen(who) + strlen(w->s) + 2;
        char *subj = arena_alloc(&ev->ar, n);
        snprintf(subj, n, "%s %s", who, w->s);
        analyze_add(ev, k, remote ? "exec.remote-code" : "exec.opaque-payload", w->s, subj);
}

/* Remembers the fds an `exec` without a command (or a bare redirection) opens for the rest
 * of the shell: exec 3< <(curl …); bash <&3. */
void
carrier_note_fds(struct eval *ev, int k)
{
        const struct unit *u = &ev->units[k];

        if (u->argc != 1 || strcmp(u->argv[0].s, "exec"))
                return;
        for (size_t r = 0; r < u->nredir && ev->nfds < POLICY_MAX_FDS; r++) {
                const struct redir *rd = &u->redir[r];
                if (rd->fd < 0 || rd->kind == RD_OUT)
                        continue;
                ev->fds[ev->nfds].fd = rd->fd;
                ev->fds[ev->nfds].unit = k;
                ev->fds[ev->nfds].redir =
                        rd->kind == RD_DUP && !strcmp(rd->target.s, "-") ? NULL : rd;
                ev->nfds++;
        }
}

/* ---- shells ---- */

static const struct lopt shell_longs[] = {
        {"rcfile", OPT_REQ, 256},        {"init-file", OPT_REQ, 256},
        {"login", OPT_NONE, 'l'},        {"noprofile", OPT_NONE, 257},
        {"norc", OPT_NONE, 257},         {"posix", OPT_NONE, 257},
        {"restricted", OPT_NONE, 'r'},   {"verbose", OPT_NONE, 'v'},
        {"version", OPT_NONE, 258},      {"help", OPT_NONE, 258},
        {"debugger", OPT_NONE, 257},     {"dump-strings", OPT_NONE, 258},
        {"pretty-print", OPT_NONE, 258}, {NULL, 0, 0}};
static const struct optspec shell_spec = {"", shell_longs, OS_STOP};

/* sh -c / bash -xec / -o opt / +O opt / --rcfile F / -s / script operand / stdin. */
static int
h_shell(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        bool c = false, s = false, info = false;
        const struct word *rc = NULL;
        size_t i = 1;

        while (i < ac && analyze_lit(&av[i])) {
                const char *a = av[i].s;
                if (!strcmp(a, "--") || !strcmp(a, "-")) {
                        i++;
                        break;
                }
                if ((a[0] != '-' && a[0] != '+') || a[1] == '\0')
                        break;
                i++;
                if (a[0] == '-' && a[1] == '-') {
                        struct optres r;
                        opts_parse(ev, &shell_spec, av, i, i - 1, &r);
                        if (opts_val(&r, 256))
                                rc = opts_val(&r, 256);
                        else if (opts_has(&r, 256) && i < ac)
                                rc = &av[i++];
                        info = info || opts_has(&r, 258);
                        continue;
                }
                for (const char *p = a + 1; *p; p++) {
                        if (*p == 'c')
                                c = true;
                        else if (*p == 's' && a[0] == '-')
                                s = true;
                        else if ((*p == 'o' || *p == 'O') && i < ac)
                                i++;
                }
        }
        if (rc)
                carrier_script(ev, k, rc, n, true);
        if (info)
                return 0;
        if (c) {
                if (i < ac)
                        carrier_payload(ev, k, &av[i], n);
                return 0;
        }
        if (i < ac && !s)
                carrier_script(ev, k, &av[i], n, true);
        else
                carrier_stdin(ev, k, n, true);
        return 0;
}

/* ---- interpreters ---- */

struct interp {
        const char *name;
        struct optspec sp;
        const char *code;   /* short options whose value is code */
        const int *lcode;   /* long option ids whose value is code (0-terminated) */
        const char *module; /* short options whose value may hold code (perl -M) */
};

static const struct lopt node_longs[] = {
        {"eval", OPT_REQ, 'e'},         {"print", OPT_REQ, 'p'},
        {"require", OPT_REQ, 'r'},      {"import", OPT_REQ, 256},
        {"loader", OPT_REQ, 256},       {"experimental-loader", OPT_REQ, 256},
        {"interactive", OPT_NONE, 'i'}, {"conditions", OPT_REQ, 'C'},
        {"input-type", OPT_REQ, 257},   {"title", OPT_REQ, 257},
        {"check", OPT_NONE, 'c'},       {"version", OPT_NONE, 'v'},
        {"inspect", OPT_OPT, 257},      {"inspect-brk", OPT_OPT, 257},
        {"env-file", OPT_REQ, 257},     {NULL, 0, 0}};
static const struct lopt py_longs[] = {{"check-hash-based-pycs", OPT_REQ, 256},
                                       {"help", OPT_NONE, 'h'},
                                       {"version", OPT_NONE, 'V'},
                                       {NULL, 0, 0}};
static const struct lopt julia_longs[] = {{"eval", OPT_REQ, 'e'},
                                          {"print", OPT_REQ, 'E'},
                                          {"load", OPT_REQ, 'L'},
                                          {"project", OPT_OPT, 256},
                                          {NULL, 0, 0}};
static const int lc_node[] = {'e', 'p', 0};
static const int lc_julia[] = {'e', 'E', 0};
static const int lc_none[] = {0};

static const struct interp interps[] = {
        {"python", {"bBdEhiIOPqsSuvVx:W:X:c:m:", py_longs, OS_STOP}, "c", lc_none, ""},
        {"pypy", {"bBdEhiIOPqsSuvVx:W:X:c:m:", py_longs, OS_STOP}, "c", lc_none, ""},
        {"node", {"e:p:r:C:icv", node_longs, OS_STOP}, "ep", lc_node, ""},
        {"nodejs", {"e:p:r:C:icv", node_longs, OS_STOP}, "ep", lc_node, ""},
        {"bun", {"e:p:r:", node_longs, OS_STOP}, "ep", lc_node, ""},
        {"perl",
         {"e:E:M:m:I:i::x::l::0::d::D:C::F:anpsSTtUuvwWXch", NULL, OS_STOP | OS_TAIL},
         "eE",
         lc_none,
         "Mmd"},
        {"ruby",
         {"e:r:I:C:E:F:i::x::l0::anpsScdvwW::yh", NULL, OS_STOP | OS_TAIL},
         "e",
         lc_none,
         ""},
        {"php", {"r:B:R:F:E:f:d:c:z:t:S:ahilmnqsvwH", NULL, OS_STOP}, "rBRE", lc_none, "d"},
        {"lua", {"e:l:ivEW", NULL, OS_STOP}, "e", lc_none, ""},
        {"luajit", {"e:l:j:O:b:ivE", NULL, OS_STOP}, "e", lc_none, ""},
        {"Rscript", {"e:", NULL, OS_STOP}, "e", lc_none, ""},
        {"julia", {"e:E:L:p:t:", julia_longs, OS_STOP}, "eE", lc_julia, ""},
        {"osascript", {"e:l:is:", NULL, OS_STOP}, "e", lc_none, ""},
        {"tclsh", {"", NULL, OS_STOP}, "", lc_none, ""},
        {"wish", {"", NULL, OS_STOP}, "", lc_none, ""},
        {"irb", {"", NULL, OS_STOP}, "", lc_none, ""},
        {"awk-f", {"", NULL, OS_STOP}, "", lc_none, ""},
};

static const struct interp *
interp_find(const char *n)
{
        for (size_t j = 0; j < ARRAY_SIZE(interps); j++) {
                size_t l = strlen(interps[j].name);
                if (!strncmp(n, interps[j].name, l) &&
                    (n[l] == '\0' || strspn(n + l, "0123456789.") == strlen(n + l)))
                        return &interps[j];
        }
        return NULL;
}

/* perl -M/-m/-d and php -d values hold code unless they are a plain module name. */
static bool
module_is_code(const char *v)
{
        return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:=,.-") !=
               strlen(v);
}

static void
inline_code(struct eval *ev, int k, const char *who, const struct word *code)
{
        if (!analyze_lit(code)) {
                bool remote = (code->flags & W_SUB) &&
                              units_have(ev, code->sub_lo, code->sub_hi, net_fetchers);
                analyze_add(ev, k, remote ? "exec.remote-code" : "exec.inline-code", code->s,
                            analyze_digest(ev, who, code->s));
                return;
        }
        if (!inline_harmless(lang_of(who), code->s))
                analyze_add(ev, k, "exec.inline-code", code->s, analyze_digest(ev, who, code->s));
}

/* A code option of an interpreter: returns true when one was found. */
static bool
interp_code(struct eval *ev, int k, const struct interp *it, const struct optres *r,
            const char *who)
{
        for (size_t j = 0; j < r->no; j++) {
                const struct optocc *o = &r->o[j];
                bool code = (o->id < 256 && strchr(it->code, o->id) && o->id);
                for (const int *l = it->lcode; *l && !code; l++)
                        code = o->id == *l;
                if (code && o->val) {
                        inline_code(ev, k, who, o->val);
                        return true;
                }
                if (o->id < 256 && o->id && strchr(it->module, o->id) && o->val &&
                    module_is_code(o->val->s)) {
                        analyze_add(ev, k, "exec.inline-code", o->val->s,
                                    analyze_digest(ev, who, o->val->s));
                        return true;
                }
        }
        return false;
}

static int
h_interp(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const struct interp *it = interp_find(n);
        struct optres r;

        if (!it)
                return 0;
        opts_parse(ev, &it->sp, av, ac, 1, &r);
        if (opts_has(&r, 'i') && (!strcmp(it->name, "perl") || !strcmp(it->name, "ruby"))) {
                /* -i edits its file operands in place: all of them with -e, else the ones
                 * after the script */
                bool e = opts_has(&r, 'e') || opts_has(&r, 'E');
                for (size_t j = e ? 0 : 1; j < r.nops; j++)
                        paths_check_write(ev, k, r.ops[j], false);
        }
        if (interp_code(ev, k, it, &r, n))
                return 0;
        bool py = !strcmp(it->name, "python") || !strcmp(it->name, "pypy");
        if (py && opts_has(&r, 'm')) {
                /* the modules that are a prompt read their commands from stdin */
                static const char *const repls[] = {"code",    "pdb",      "asyncio", "IPython",
                                                    "bpython", "ptpython", "idlelib", NULL};
                if (opts_val(&r, 'm') && analyze_in(opts_val(&r, 'm')->s, repls))
                        carrier_stdin(ev, k, n, false);
                return 0;
        }
        if (py && opts_has(&r, 'i') && r.nops > 0) /* -i: a prompt after the script */
                carrier_stdin(ev, k, n, false);
        if (r.nops > 0 && !(analyze_lit(r.ops[0]) && !strcmp(r.ops[0]->s, "-")))
                carrier_script(ev, k, r.ops[0], n, false);
        else if (!opts_has(&r, 'V') && !opts_has(&r, 'v') && !opts_has(&r, 'h'))
                carrier_stdin(ev, k, n, false);
        return 0;
}

/* deno eval CODE, deno run URL. */
static int
h_deno(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        while (i < ac && av[i].s[0] == '-')
                i++;
        if (i >= ac)
                return 0;
        if (!strcmp(av[i].s, "eval") && i + 1 < ac) {
                size_t j = i + 1;
                while (j < ac && av[j].s[0] == '-')
                        j++;
                if (j < ac)
                        inline_code(ev, k, "deno eval", &av[j]);
                return 0;
        }
        for (size_t j = i + 1; j < ac; j++)
                if (!strncmp(av[j].s, "http://", 7) || !strncmp(av[j].s, "https://", 8)) {
                        analyze_add(ev, k, "exec.remote-code", av[j].s, av[j].s);
                        break;
                }
        return 0;
}

/* pwsh / powershell: -Command, -EncodedCommand (any case, unambiguous prefixes). */
static int
h_pwsh(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (s[0] != '-' || !s[1])
                        continue;
                if (!strncasecmp(s, "-c", 2) || !strncasecmp(s, "-e", 2) ||
                    !strncasecmp(s, "-f", 2)) {
                        analyze_add(ev, k, "exec.inline-code", analyze_join(ev, av, ac),
                                    analyze_digest(ev, "pwsh", analyze_join(ev, av, ac)));
                        return 0;
                }
        }
        carrier_stdin(ev, k, "pwsh", false);
        return 0;
}

static const struct cmd cmds[] = {
        {"Rscript", h_interp},  {"ash", h_shell},        {"bash", h_shell},
        {"bun", h_interp},      {"csh", h_shell},        {"dash", h_shell},
        {"deno", h_deno},       {"fish", h_shell},       {"irb", h_interp},
        {"julia", h_interp},    {"ksh", h_shell},        {"lksh", h_shell},
        {"loksh", h_shell},     {"lua", h_interp},       {"luajit", h_interp},
        {"mksh", h_shell},      {"node", h_interp},      {"nodejs", h_interp},
        {"oksh", h_shell},      {"osascript", h_interp}, {"pdksh", h_shell},
        {"perl", h_interp},     {"php", h_interp},       {"posh", h_shell},
        {"powershell", h_pwsh}, {"pwsh", h_pwsh},        {"pypy", h_interp},
        {"pypy3", h_interp},    {"python", h_interp},    {"python2", h_interp},
        {"python3", h_interp},  {"rbash", h_shell},      {"ruby", h_interp},
        {"sh", h_shell},        {"tclsh", h_interp},     {"tcsh", h_shell},
        {"wish", h_interp},     {"yash", h_shell},       {"zsh", h_shell},
};

const struct cmd_table carrier_cmds = {cmds, ARRAY_SIZE(cmds)};
