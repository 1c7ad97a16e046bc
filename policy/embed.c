/* embed.c — tools whose options or scripts run programs or write files.
 *
 * awk system() and print | "cmd", sed's e command and w file, sqlite3 .shell, psql \!, mysql
 * system, vim/ex -c '!…', gdb -ex 'shell …', make --eval and SHELL=, tar
 * --checkpoint-action/--to-command/-I, rg --pre, sort --compress-program, man -P, zip -TT.
 * A command string that is known is parsed and judged; one that is not is exec.embedded.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        O_OTHER = 256,
        O_SANDBOX,
        O_EVAL,
        O_PRE,
        O_COMPRESS,
        O_PAGER,
        O_TOCMD,
        O_CHECKPOINT,
        O_RSH,
        O_SCRIPT,
        O_UNZIP,
};

/* A command string a tool runs with /bin/sh: asked (the approval names exactly this string),
 * and parsed when known so that what it would run is judged too. */
static void
run_string(struct eval *ev, int k, const char *cmd, bool known, const char *who)
{
        struct word w = {.s = cmd};

        analyze_add(ev, k, "exec.embedded", cmd, analyze_digest(ev, who, cmd));
        if (known)
                carrier_payload(ev, k, &w, who);
}

/* ---- awk ---- */

/* The string literal starting at p (a '"'), decoded into out; returns past it or NULL. */
static const char *
awk_string(const char *p, char *out, size_t cap)
{
        size_t o = 0;

        for (p++; *p && *p != '"'; p++) {
                char c = *p;
                if (c == '\\' && p[1]) {
                        p++;
                        c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
                }
                if (o + 1 < cap)
                        out[o++] = c;
        }
        out[o] = '\0';
        return *p == '"' ? p + 1 : NULL;
}

/* The line after the one at l, or NULL after the last. */
static const char *
next_line(const char *l)
{
        l = strchr(l, '\n');
        return l ? l + 1 : NULL;
}

static const char *
skip_ws(const char *p)
{
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* After a redirection operator or system(: a lone string literal, or something dynamic. */
static void
awk_target(struct eval *ev, int k, const char *p, bool write, const char *end_chars)
{
        char buf[1024];
        const char *q = skip_ws(p);

        if (*q == '(')
                q = skip_ws(q + 1);
        const char *e = *q == '"' ? awk_string(q, buf, sizeof(buf)) : NULL;
        bool lit = e && strchr(end_chars, *skip_ws(e)) != NULL;
        if (write && lit) {
                struct word w = {.s = arena_strdup(&ev->ar, buf)};
                paths_check_write(ev, k, &w, false);
        } else if (write) {
                analyze_add(ev, k, "write.unknown", p, "awk");
        } else {
                run_string(ev, k, lit ? arena_strdup(&ev->ar, buf) : p, lit, "awk");
        }
}

/* Scans an awk program for system(), pipes to and from commands and output redirections
 * (a '>' is a redirection only at the top level of a print or printf statement). */
static void
awk_program(struct eval *ev, int k, const char *s)
{
        bool in_print = false;
        int paren = 0;

        for (const char *p = s; *p; p++) {
                if (*p == '"') {
                        char tmp[8];
                        const char *e = awk_string(p, tmp, sizeof(tmp));
                        if (!e)
                                return;
                        p = e - 1;
                } else if (*p == '#') {
                        while (p[1] && p[1] != '\n')
                                p++;
                } else if (!strncmp(p, "system", 6) && !isalnum((unsigned char) p[6]) &&
                           (p == s || !isalnum((unsigned char) p[-1]))) {
                        awk_target(ev, k, p + 6, false, ")");
                } else if (*p == '|' && p[1] != '|' && (p == s || p[-1] != '|')) {
                        const char *q = skip_ws(p + 1 + (p[1] == '&'));
                        if (!strncmp(q, "getline", 7)) {
                                /* "cmd" | getline: the string before the pipe */
                                const char *b = p;
                                while (b > s && (b[-1] == ' ' || b[-1] == '\t'))
                                        b--;
                                if (b > s && b[-1] == '"') {
                                        const char *o = b - 1;
                                        while (o > s &&
                                               (o[-1] != '"' || (o - 1 > s && o[-2] == '\\')))
                                                o--;
                                        awk_target(ev, k, o - 1, false, "|");
                                } else {
                                        analyze_add(ev, k, "exec.embedded", p, "awk");
                                }
                        } else if (in_print && paren == 0) {
                                awk_target(ev, k, p + 1 + (p[1] == '&'), false, ";}\n");
                        }
                } else if (*p == '>' && in_print && paren == 0) {
                        awk_target(ev, k, p + 1 + (p[1] == '>'), true, ";}\n|");
                        p += p[1] == '>';
                } else if (*p == '(') {
                        paren++;
                } else if (*p == ')') {
                        paren -= paren > 0;
                } else if (*p == ';' || *p == '}' || *p == '{' || *p == '\n') {
                        in_print = false;
                        paren = 0;
                } else if ((!strncmp(p, "print", 5)) &&
                           (p == s || !isalnum((unsigned char) p[-1]))) {
                        in_print = true;
                        paren = 0;
                }
        }
}

static void
awk_text(struct eval *ev, int k, const char *text, const char *who)
{
        awk_program(ev, k, text);
}

static int
h_awk(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"file", OPT_REQ, 'f'},
                                            {"field-separator", OPT_REQ, 'F'},
                                            {"assign", OPT_REQ, 'v'},
                                            {"source", OPT_REQ, 'e'},
                                            {"include", OPT_REQ, 'i'},
                                            {"load", OPT_REQ, 'l'},
                                            {"exec", OPT_REQ, 'E'},
                                            {"sandbox", OPT_NONE, 'S'},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"f:F:v:e:i:l:E:Sbc", longs, OS_STOP};
        struct optres r;
        bool prog = false;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'l'))
                analyze_add(ev, k, "exec.embedded", opts_val(&r, 'l') ? opts_val(&r, 'l')->s : "-l",
                            "awk -l");
        for (size_t j = 0; j < r.no; j++) {
                const struct optocc *o = &r.o[j];
                if ((o->id == 'e') && o->val) {
                        prog = true;
                        if (!opts_has(&r, 'S'))
                                awk_program(ev, k, o->val->s);
                }
                if ((o->id == 'f' || o->id == 'E') && o->val)
                        carrier_script_tool(ev, k, o->val, "awk", awk_text);
                prog = prog || o->id == 'f' || o->id == 'E';
        }
        if (!prog && r.nops > 0 && !opts_has(&r, 'S')) {
                if (!analyze_lit(r.ops[0]))
                        analyze_add(ev, k, "exec.embedded", r.ops[0]->s,
                                    analyze_digest(ev, "awk", r.ops[0]->s));
                else
                        awk_program(ev, k, r.ops[0]->s);
        }
        return 0;
}

/* ---- sed ---- */

/* Skips a delimited part of an s or y command starting after the delimiter. */
static const char *
sed_part(const char *p, char d)
{
        for (; *p && *p != d; p++)
                if (*p == '\\' && p[1])
                        p++;
        return *p == d ? p + 1 : NULL;
}

/* The rest of the line from p (a file name or a command). */
static const char *
sed_rest(struct eval *ev, const char **pp)
{
        const char *p = skip_ws(*pp);
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t) (e - p) : strlen(p);

        *pp = p + n;
        return arena_strndup(&ev->ar, p, n);
}

/* One sed script: e runs a command, w/W and the s///w flag write a file. */
static void
sed_script(struct eval *ev, int k, const char *s)
{
        for (const char *p = s; p && *p;) {
                p = skip_ws(p);
                while (*p && (isdigit((unsigned char) *p) || strchr("$,~+!{} \t;\n", *p)))
                        p++;
                if (*p == '/' || *p == '\\') {
                        char d = *p == '\\' ? p[1] : '/';
                        p = sed_part(p + (*p == '\\' ? 2 : 1), d);
                        continue;
                }
                char c = *p;
                if (!c)
                        return;
                p++;
                if (c == 's' || c == 'y') {
                        char d = *p;
                        if (!d || !(p = sed_part(p + 1, d)) || !(p = sed_part(p, d)))
                                return;
                        while (c == 's' && *p && strchr("gpiImMe0123456789w", *p)) {
                                if (*p == 'e')
                                        analyze_add(ev, k, "exec.embedded", s, "sed s///e");
                                if (*p++ == 'w') {
                                        struct word w = {.s = sed_rest(ev, &p)};
                                        paths_check_write(ev, k, &w, false);
                                }
                        }
                } else if (c == 'e') {
                        const char *cmd = sed_rest(ev, &p);
                        run_string(ev, k, cmd, *cmd != '\0', "sed e");
                } else if (c == 'w' || c == 'W') {
                        struct word w = {.s = sed_rest(ev, &p)};
                        paths_check_write(ev, k, &w, false);
                } else if (strchr("aicrRbtT:", c)) {
                        sed_rest(ev, &p);
                }
        }
}

static void
sed_text(struct eval *ev, int k, const char *text, const char *who)
{
        sed_script(ev, k, text);
}

static int
h_sed(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {
                {"quiet", OPT_NONE, 'n'},           {"silent", OPT_NONE, 'n'},
                {"expression", OPT_REQ, 'e'},       {"file", OPT_REQ, 'f'},
                {"in-place", OPT_OPT, 'i'},         {"line-length", OPT_REQ, 'l'},
                {"regexp-extended", OPT_NONE, 'E'}, {"separate", OPT_NONE, 's'},
                {"unbuffered", OPT_NONE, 'u'},      {"null-data", OPT_NONE, 'z'},
                {"sandbox", OPT_NONE, O_SANDBOX},   {"posix", OPT_NONE, O_OTHER},
                {"debug", OPT_NONE, O_OTHER},       {"follow-symlinks", OPT_NONE, O_OTHER},
                {"binary", OPT_NONE, 'b'},          {"help", OPT_NONE, O_OTHER},
                {"version", OPT_NONE, O_OTHER},     {NULL, 0, 0}};
        static const struct optspec sp = {"ne:f:i::l:Ersuzb", longs, 0};
        struct optres r;
        bool script = false;

        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++) {
                const struct optocc *o = &r.o[j];
                if (o->id == 'e' || o->id == 'f')
                        script = true;
                if (o->id == 'f' && o->val && !opts_has(&r, O_SANDBOX))
                        carrier_script_tool(ev, k, o->val, "sed", sed_text);
                if (o->id == 'e' && o->val && !opts_has(&r, O_SANDBOX)) {
                        if (analyze_lit(o->val))
                                sed_script(ev, k, o->val->s);
                        else
                                analyze_add(ev, k, "exec.embedded", o->val->s, "sed");
                }
        }
        size_t first = script ? 0 : 1;
        if (!script && r.nops > 0 && !opts_has(&r, O_SANDBOX)) {
                if (analyze_lit(r.ops[0]))
                        sed_script(ev, k, r.ops[0]->s);
                else
                        analyze_add(ev, k, "exec.embedded", r.ops[0]->s, "sed");
        }
        if (opts_has(&r, 'i'))
                for (size_t j = first; j < r.nops; j++)
                        paths_check_write(ev, k, r.ops[j], false);
        return 0;
}

/* ---- SQL clients ---- */

static void
sql_destructive(struct eval *ev, int k, const char *s)
{
        bool hit = strcasestr(s, "drop table") || strcasestr(s, "drop database") ||
                   strcasestr(s, "drop schema") || strcasestr(s, "truncate ");
        const char *del = strcasestr(s, "delete from");

        if (del) {
                const char *semi = strchr(del, ';');
                const char *where = strcasestr(del, "where");
                hit = hit || !where || (semi && where > semi);
        }
        if (hit)
                analyze_add(ev, k, "sql.destructive", s, s);
}

/* Client commands that reach the shell: sqlite3 .shell/.system/.once |cmd, psql \! and \o |,
 * mysql system and \!; extensions and editors loaded from SQL. */
static void
sql_text(struct eval *ev, int k, const char *s, const char *who)
{
        static const char *const shells[] = {".shell", ".system", "\\!", "system", NULL};
        static const char *const pipes[] = {".once", ".output", ".import", "\\o", "\\out",
                                            "\\g",   "\\copy",  "pager",   "\\P", NULL};
        static const char *const loads[] = {".load", "load_extension(", "edit(", NULL};

        sql_destructive(ev, k, s);
        for (const char *line = s; line && *line; line = next_line(line)) {
                const char *p = skip_ws(line);
                const char *e = strchr(p, '\n');
                size_t n = e ? (size_t) (e - p) : strlen(p);
                char *l = arena_strndup(&ev->ar, p, n);
                for (const char *const *c = shells; *c; c++) {
                        size_t cl = strlen(*c);
                        if (!strncasecmp(l, *c, cl) &&
                            (l[cl] == ' ' || l[cl] == '\t' || !l[cl] || (*c)[0] == '\\'))
                                run_string(ev, k, skip_ws(l + cl), true, who);
                }
                for (const char *const *c = pipes; *c; c++) {
                        size_t cl = strlen(*c);
                        const char *bar = strchr(l, '|');
                        if (!strncasecmp(l, *c, cl) && bar) {
                                const char *cmd = bar + 1;
                                char *q = arena_strdup(&ev->ar, cmd);
                                size_t ql = strlen(q);
                                while (ql && (q[ql - 1] == '\'' || q[ql - 1] == '"' ||
                                              q[ql - 1] == ' ' || q[ql - 1] == ';'))
                                        q[--ql] = '\0';
                                run_string(ev, k, q, true, who);
                        }
                }
                if (strcasestr(l, "program '") || strcasestr(l, "program \""))
                        analyze_add(ev, k, "exec.embedded", l, analyze_digest(ev, who, l));
                for (const char *const *c = loads; *c; c++)
                        if (strcasestr(l, *c))
                                analyze_add(ev, k, "exec.embedded", l, analyze_digest(ev, who, l));
        }
}

static void
sql_stdin_text(struct eval *ev, int k, const char *text, const char *who)
{
        sql_text(ev, k, text, who);
}

/* Whether the client runs a command of its argv and exits instead of reading stdin. */
static bool
sql_has_command(const struct word *av, size_t ac, bool sqlite)
{
        static const char *const cmd[] = {"-c",        "-e",     "-f", "--command",
                                          "--execute", "--file", NULL};
        size_t ops = 0;

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                char opt[16];
                size_t n = strcspn(s, "=");
                if (s[0] != '-') {
                        ops++;
                        continue;
                }
                snprintf(opt, sizeof(opt), "%.*s", (int) MIN(n, sizeof(opt) - 1), s);
                if (analyze_in(opt, cmd) || (!sqlite && s[1] != '-' && strchr("ce", s[1]) && s[2]))
                        return true;
        }
        return sqlite && ops >= 2;
}

static int
h_sql(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        bool sqlite = !strncmp(n, "sqlite", 6);

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!analyze_lit(&av[i]))
                        continue;
                if (sqlite && (!strcmp(s, "-cmd") || !strcmp(s, "--cmd")) && i + 1 < ac) {
                        sql_text(ev, k, av[++i].s, n);
                        continue;
                }
                if (!strncmp(s, "--pager=", 8))
                        run_string(ev, k, s + 8, true, n);
                else if (!strncmp(s, "--command=", 10) || !strncmp(s, "--execute=", 10))
                        sql_text(ev, k, strchr(s, '=') + 1, n);
                else
                        sql_text(ev, k, s, n);
        }
        /* with no command of its own it reads them from stdin (a pipe, process.write) */
        if (!sql_has_command(av, ac, sqlite))
                carrier_stdin_tool(ev, k, n, sql_stdin_text);
        return 0;
}

/* ---- editors ---- */

static const char *const ex_safe[] = {
        "set",        "se",      "setl",     "setlocal", "w",         "write",       "wq",
        "x",          "xit",     "q",        "quit",     "qa",        "qall",        "wa",
        "wall",       "wqa",     "wqall",    "xa",       "xall",      "noh",         "nohlsearch",
        "syntax",     "syn",     "filetype", "filet",    "retab",     "ret",         "sort",
        "sor",        "d",       "delete",   "y",        "yank",      "e",           "edit",
        "r",          "read",    "u",        "undo",     "red",       "redo",        "j",
        "join",       "m",       "move",     "t",        "co",        "copy",        "p",
        "print",      "mark",    "k",        "up",       "update",    "norm_",       "s",
        "substitute", "g",       "global",   "v",        "vglobal",   "colorscheme", "colo",
        "echo",       "redraw",  "only",     "sp",       "split",     "vs",          "vsplit",
        "enew",       "bn",      "bnext",    "bp",       "bprevious", "b",           "buffer",
        "%",          "normal_", NULL};

/* One Ex command line (vim -c, +cmd, ex stdin): '!' runs a shell command. */
static void
ex_command(struct eval *ev, int k, const char *c, const char *who)
{
        const char *p = skip_ws(c);

        while (*p == ':')
                p++;
        while (*p && (isdigit((unsigned char) *p) || strchr(".$%,;+- \t", *p) ||
                      (*p == '\'' && p[1] && p++)))
                p++;
        if (*p == '/' || *p == '?') {
                const char *e = sed_part(p + 1, *p);
                p = e ? e : p + strlen(p);
        }
        if (*p == '\0')
                return; /* a line number or a search */
        if (*p == '!') {
                run_string(ev, k, p + 1, true, who);
                return;
        }
        char name[32];
        size_t n = 0;
        while (isalpha((unsigned char) p[n]) && n + 1 < sizeof(name)) {
                name[n] = p[n];
                n++;
        }
        name[n] = '\0';
        const char *rest = skip_ws(p + n + (p[n] == '!'));
        if ((!strcmp(name, "r") || !strcmp(name, "read") || !strcmp(name, "w") ||
             !strcmp(name, "write")) &&
            *rest == '!') {
                run_string(ev, k, rest + 1, true, who);
                return;
        }
        if (!strcmp(name, "g") || !strcmp(name, "global") || !strcmp(name, "v") ||
            !strcmp(name, "vglobal")) {
                const char *e = *rest ? sed_part(rest + 1, *rest) : NULL;
                if (e && *e)
                        ex_command(ev, k, e, who);
                return;
        }
        if (!strcmp(name, "s") || !strcmp(name, "substitute")) {
                if (!strstr(rest, "\\="))
                        return; /* \= evaluates an expression */
        } else if (n > 0 && analyze_in(name, ex_safe) && !strchr(rest, '|')) {
                return;
        }
        analyze_add(ev, k, "exec.embedded", c, analyze_digest(ev, who, c));
}

/* Ex commands, one a line (ex, vim -e, ed-like scripts). */
static void
ex_text(struct eval *ev, int k, const char *text, const char *who)
{
        for (const char *l = text; l && *l; l = next_line(l)) {
                const char *c = skip_ws(l);
                c += *c == ':';
                ex_command(ev, k, arena_strndup(&ev->ar, c, strcspn(c, "\n")), who);
        }
}

/* Keystrokes in normal mode: each ':' starts an Ex command line. */
static void
vim_keys(struct eval *ev, int k, const char *text, const char *who)
{
        for (const char *c = strchr(text, ':'); c; c = strchr(c + 1, ':'))
                ex_command(ev, k, arena_strndup(&ev->ar, c + 1, strcspn(c + 1, "\n\r")), who);
}

static int
h_vim(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        bool ex = !strcmp(n, "ex") || !strcmp(n, "vim.tiny") ? true : false;

        bool dash = false;

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!analyze_lit(&av[i]))
                        continue;
                dash = dash || !strcmp(s, "-");
                if ((!strcmp(s, "-c") || !strcmp(s, "--cmd")) && i + 1 < ac) {
                        if (analyze_lit(&av[i + 1]))
                                ex_command(ev, k, av[i + 1].s, n);
                        else
                                analyze_add(ev, k, "exec.embedded", av[i + 1].s, n);
                        i++;
                } else if (s[0] == '+' && s[1]) {
                        ex_command(ev, k, s + 1, n);
                } else if ((!strcmp(s, "-S") || !strcmp(s, "-u") || !strcmp(s, "-s")) &&
                           i + 1 < ac) {
                        carrier_script(ev, k, &av[++i], n, false);
                } else if (!strcmp(s, "-e") || !strcmp(s, "-E") || !strcmp(s, "-es") ||
                           !strcmp(s, "-Es")) {
                        ex = true;
                }
        }
        /* ex mode reads Ex commands from stdin, normal mode keystrokes (":!cmd"); "vim -"
         * reads the text to edit from it instead */
        if (!dash)
                carrier_stdin_tool(ev, k, n, ex ? ex_text : vim_keys);
        return 0;
}

static int
h_emacs(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!strcmp(s, "--eval") || !strcmp(s, "-eval") || !strncmp(s, "--eval=", 7)) {
                        const char *code = s[6] == '=' ? s + 7 : i + 1 < ac ? av[i + 1].s : "";
                        analyze_add(ev, k, "exec.inline-code", code,
                                    analyze_digest(ev, "emacs --eval", code));
                }
        }
        return 0;
}

/* ---- gdb ---- */

static const char *const gdb_safe[] = {"bt",          "backtrace", "where",
                                       "info",        "i",         "print",
                                       "p",           "list",      "l",
                                       "frame",       "f",         "up",
                                       "down",        "thread",    "x",
                                       "disassemble", "quit",      "q",
                                       "set",         "break",     "b",
                                       "tbreak",      "continue",  "c",
                                       "next",        "n",         "step",
                                       "s",           "finish",    "display",
                                       "echo",        "core-file", "file",
                                       "symbol-file", "handle",    "watch",
                                       "delete",      "disable",   "enable",
                                       "kill",        "detach",    "show",
                                       "run",         "r",         "start",
                                       "starti",      "ptype",     "whatis",
                                       "info_",       "maint_",    "sharedlibrary",
                                       "directory",   "dir",       "until",
                                       "advance",     "jump_",     NULL};

static void
gdb_command(struct eval *ev, int k, const struct word *w)
{
        char name[32];
        const char *s = skip_ws(w->s);
        size_t n = strcspn(s, " \t");

        if (!analyze_lit(w)) {
                analyze_add(ev, k, "exec.embedded", w->s, "gdb");
                return;
        }
        if (s[0] == '!' || s[0] == '|') {
                run_string(ev, k, s + 1, true, "gdb");
                return;
        }
        if (n >= sizeof(name))
                n = sizeof(name) - 1;
        memcpy(name, s, n);
        name[n] = '\0';
        if (!strcmp(name, "shell")) {
                run_string(ev, k, skip_ws(s + n), true, "gdb");
        } else if (!strcmp(name, "pipe")) {
                const char *bar = strchr(s, '|');
                run_string(ev, k, bar ? bar + 1 : s, bar != NULL, "gdb");
        } else if (!analyze_in(name, gdb_safe)) {
                analyze_add(ev, k, "exec.embedded", w->s, analyze_digest(ev, "gdb", w->s));
        }
}

/* gdb commands, one a line (stdin, a script). */
static void
gdb_text(struct eval *ev, int k, const char *text, const char *who)
{
        for (const char *l = text; l && *l; l = next_line(l)) {
                struct word w = {.s = arena_strndup(&ev->ar, l, strcspn(l, "\n"))};
                if (*skip_ws(w.s))
                        gdb_command(ev, k, &w);
        }
}

/* ed commands: '!' runs the rest of the line (also r !cmd, w !cmd, e !cmd). */
static void
ed_text(struct eval *ev, int k, const char *text, const char *who)
{
        for (const char *l = text; l && *l; l = next_line(l)) {
                size_t n = strcspn(l, "\n");
                const char *b = memchr(l, '!', n);
                if (b)
                        run_string(ev, k, arena_strndup(&ev->ar, b + 1, n - (size_t) (b + 1 - l)),
                                   true, who);
        }
}

/* ed / ex-like line editors read their commands from stdin; red has no '!'. */
static int
h_ed(struct eval *ev, int k, const struct word *av, size_t ac)
{
        if (strcmp(analyze_base(av[0].s), "red"))
                carrier_stdin_tool(ev, k, "ed", ed_text);
        return 0;
}

static int
h_gdb(struct eval *ev, int k, const struct word *av, size_t ac)
{
        bool batch = false;

        static const char *const valued[] = {"-ex",
                                             "--ex",
                                             "-eval-command",
                                             "--eval-command",
                                             "-iex",
                                             "--iex",
                                             "-init-eval-command",
                                             "-x",
                                             "--command",
                                             "-command",
                                             "-ix",
                                             "-p",
                                             "--pid",
                                             "-pid",
                                             "-cd",
                                             "--cd",
                                             "-d",
                                             "--directory",
                                             "-c",
                                             "--core",
                                             "-core",
                                             "-s",
                                             "--symbols",
                                             "-e",
                                             "--exec",
                                             "-tty",
                                             "--tty",
                                             "-b",
                                             NULL};
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                batch = batch || !strcmp(s, "-batch") || !strcmp(s, "--batch");
                if (!strcmp(s, "--args")) {
                        if (!batch)
                                carrier_stdin_tool(ev, k, "gdb", gdb_text);
                        return (int) i + 1 < (int) ac ? (int) i + 1 : 0;
                }
                const char *eq = strchr(s, '=');
                char opt[32];
                size_t n = eq ? (size_t) (eq - s) : strlen(s);
                if (s[0] != '-' || n >= sizeof(opt))
                        continue;
                memcpy(opt, s, n);
                opt[n] = '\0';
                if (!analyze_in(opt, valued))
                        continue;
                struct word v = eq ? analyze_word(&av[i], eq + 1) : i + 1 < ac ? av[i + 1] : av[i];
                if (!eq)
                        i++;
                if (strstr(opt, "ex") || strstr(opt, "eval"))
                        gdb_command(ev, k, &v);
                else if (!strcmp(opt, "-x") || strstr(opt, "command") || !strcmp(opt, "-ix"))
                        carrier_script(ev, k, &v, "gdb", false);
                else if (strstr(opt, "p"))
                        analyze_add(ev, k, "proc.ptrace", v.s, v.s);
        }
        /* without -batch it reads commands from stdin once the options are done */
        if (!batch)
                carrier_stdin_tool(ev, k, "gdb", gdb_text);
        return 0;
}

/* ---- build tools and others ---- */

/* make --eval TEXT / -E TEXT and SHELL= overrides change what runs. */
static int
h_make(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"eval", OPT_REQ, 'E'},
                                            {"file", OPT_REQ, 'f'},
                                            {"makefile", OPT_REQ, 'f'},
                                            {"directory", OPT_REQ, 'C'},
                                            {"jobs", OPT_OPT, 'j'},
                                            {"load-average", OPT_OPT, 'l'},
                                            {"include-dir", OPT_REQ, 'I'},
                                            {"old-file", OPT_REQ, 'o'},
                                            {"what-if", OPT_REQ, 'W'},
                                            {"new-file", OPT_REQ, 'W'},
                                            {"assume-new", OPT_REQ, 'W'},
                                            {"assume-old", OPT_REQ, 'o'},
                                            {"output-sync", OPT_OPT, 'O'},
                                            {"debug", OPT_OPT, O_OTHER},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"E:f:C:j::l::I:o:W:O::bBdeikLnpqrRsStvw", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        const struct word *e = opts_val(&r, 'E');
        if (e)
                analyze_add(ev, k, "exec.embedded", e->s, analyze_digest(ev, "make --eval", e->s));
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == 'f' && r.o[j].val) /* -f - : the makefile's recipes from stdin */
                        carrier_script_tool(ev, k, r.o[j].val, "make", NULL);
        for (size_t j = 0; j < r.nops; j++) {
                const char *s = r.ops[j]->s;
                if (!strncmp(s, "SHELL=", 6) || !strncmp(s, ".SHELLFLAGS=", 12) ||
                    !strncmp(s, "MAKESHELL=", 10) || !strncmp(s, "SHELL:=", 7))
                        analyze_add(ev, k, "exec.embedded", s, s);
        }
        return 0;
}

/* tar: traditional bundles (tar czf out.tgz dir) become options; programs it runs. */
static int
h_tar(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"checkpoint-action", OPT_REQ, O_CHECKPOINT},
                                            {"to-command", OPT_REQ, O_TOCMD},
                                            {"use-compress-program", OPT_REQ, 'I'},
                                            {"rsh-command", OPT_REQ, O_RSH},
                                            {"rmt-command", OPT_REQ, O_RSH},
                                            {"info-script", OPT_REQ, 'F'},
                                            {"new-volume-script", OPT_REQ, 'F'},
                                            {"file", OPT_REQ, 'f'},
                                            {"directory", OPT_REQ, 'C'},
                                            {"create", OPT_NONE, 'c'},
                                            {"extract", OPT_NONE, 'x'},
                                            {"append", OPT_NONE, 'r'},
                                            {"update", OPT_NONE, 'u'},
                                            {"exclude", OPT_REQ, O_OTHER},
                                            {"files-from", OPT_REQ, 'T'},
                                            {"exclude-from", OPT_REQ, 'X'},
                                            {"checkpoint", OPT_OPT, O_OTHER},
                                            {"transform", OPT_REQ, O_OTHER},
                                            {"owner", OPT_REQ, O_OTHER},
                                            {"group", OPT_REQ, O_OTHER},
                                            {"mode", OPT_REQ, O_OTHER},
                                            {"mtime", OPT_REQ, O_OTHER},
                                            {"format", OPT_REQ, 'H'},
                                            {"blocking-factor", OPT_REQ, 'b'},
                                            {"label", OPT_REQ, 'V'},
                                            {"suffix", OPT_REQ, O_OTHER},
                                            {"newer", OPT_REQ, 'N'},
                                            {"tape-length", OPT_REQ, 'L'},
                                            {"listed-incremental", OPT_REQ, 'g'},
                                            {"starting-file", OPT_REQ, 'K'},
                                            {"strip-components", OPT_REQ, O_OTHER},
                                            {"absolute-names", OPT_NONE, 'P'},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"Acdrtux f:C:I:F:T:X:H:b:V:N:L:g:K:jJzZavpPkmOhiBlMoSUW",
                                          longs, 0};
        const struct word *use = av;
        size_t n = ac;
        struct optres r;

        if (ac > 1 && analyze_lit(&av[1]) && av[1].s[0] != '-' && av[1].s[0]) {
                /* old style: each letter's value is the next word, in order */
                struct word *v = arena_alloc(&ev->ar, (ac + 1) * sizeof(*v));
                char *b = arena_alloc(&ev->ar, strlen(av[1].s) + 2);
                b[0] = '-';
                strcpy(b + 1, av[1].s);
                v[0] = av[0];
                v[1] = analyze_word(&av[1], b);
                memcpy(v + 2, av + 2, (ac - 2) * sizeof(*v));
                use = v;
        }
        opts_parse(ev, &sp, use, n, 1, &r);
        for (size_t j = 0; j < r.no; j++) {
                const struct optocc *o = &r.o[j];
                if (!o->val)
                        continue;
                if (o->id == O_CHECKPOINT && !strncmp(o->val->s, "exec=", 5))
                        run_string(ev, k, o->val->s + 5, analyze_lit(o->val), "tar");
                else if (o->id == O_TOCMD || o->id == 'I' || o->id == O_RSH)
                        run_string(ev, k, o->val->s, analyze_lit(o->val), "tar");
                else if (o->id == 'F')
                        carrier_script(ev, k, o->val, "tar", true);
                else if (o->id == 'f' &&
                         (opts_has(&r, 'c') || opts_has(&r, 'r') || opts_has(&r, 'u')))
                        paths_check_write(ev, k, o->val, false);
        }
        if (opts_has(&r, 'x'))
                fsops_extract(ev, k, opts_val(&r, 'C'), opts_has(&r, 'P'),
                              analyze_join(ev, av, ac));
        return 0;
}

enum runkind {
        RUN_PROGRAM, /* names a program to run: exec.embedded */
        RUN_SHELL,   /* a command line for the shell: parsed, harmless pagers pass */
        RUN_WRITE,   /* a file written */
};

/* rg --pre, sort --compress-program and -o, man -P/-H, zip -TT, less +!cmd. */
static int
h_runopt(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct {
                const char *cmd, *opt;
                enum runkind kind;
        } runs[] = {{"rg", "--pre", RUN_PROGRAM},
                    {"rg", "--hostname-bin", RUN_PROGRAM},
                    {"sort", "--compress-program", RUN_PROGRAM},
                    {"man", "-P", RUN_SHELL},
                    {"man", "--pager", RUN_SHELL},
                    {"man", "-H", RUN_SHELL},
                    {"man", "--html", RUN_SHELL},
                    {"zip", "-TT", RUN_SHELL},
                    {"zip", "--unzip-command", RUN_SHELL},
                    {"ag", "--pager", RUN_SHELL},
                    {"sort", "-o", RUN_WRITE},
                    {"sort", "--output", RUN_WRITE}};
        const char *n = analyze_base(av[0].s);

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!strcmp(n, "less") && s[0] == '+' && strchr(s, '!'))
                        run_string(ev, k, strchr(s, '!') + 1, analyze_lit(&av[i]), "less");
                for (size_t j = 0; j < ARRAY_SIZE(runs); j++) {
                        size_t l = strlen(runs[j].opt);
                        if (strcmp(runs[j].cmd, n) || strncmp(s, runs[j].opt, l) ||
                            (s[l] != '\0' && s[l] != '='))
                                continue;
                        struct word v = s[l] == '='  ? analyze_word(&av[i], s + l + 1)
                                        : i + 1 < ac ? av[i + 1]
                                                     : analyze_word(&av[i], "");
                        if (runs[j].kind == RUN_WRITE)
                                paths_check_write(ev, k, &v, false);
                        else if (runs[j].kind == RUN_PROGRAM)
                                analyze_add(ev, k, "exec.embedded", analyze_join(ev, av, ac), s);
                        else if (!(analyze_lit(&v) && env_harmless_program(v.s)))
                                run_string(ev, k, v.s, analyze_lit(&v), n);
                }
        }
        if (!strcmp(n, "zip"))
                rewrite_zip_move(ev, k, av, ac);
        return 0;
}

static const struct cmd cmds[] = {
        {"ag", h_runopt},   {"awk", h_awk},       {"bsdtar", h_tar},   {"ed", h_ed},
        {"emacs", h_emacs}, {"ex", h_vim},        {"gawk", h_awk},     {"gdb", h_gdb},
        {"gmake", h_make},  {"gvim", h_vim},      {"less", h_runopt},  {"make", h_make},
        {"man", h_runopt},  {"mariadb", h_sql},   {"mawk", h_awk},     {"mysql", h_sql},
        {"nawk", h_awk},    {"nvim", h_vim},      {"psql", h_sql},     {"red", h_ed},
        {"rg", h_runopt},   {"rvim", h_vim},      {"sed", h_sed},      {"sort", h_runopt},
        {"sqlite3", h_sql}, {"tar", h_tar},       {"vi", h_vim},       {"view", h_vim},
        {"vim", h_vim},     {"vim.basic", h_vim}, {"vim.tiny", h_vim}, {"zip", h_runopt},
};

const struct cmd_table embed_cmds = {cmds, ARRAY_SIZE(cmds)};
