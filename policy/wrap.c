/* wrap.c — wrappers: programs that run another command, judged as that command.
 *
 * Each wrapper's options are read with its own table and stop at the first operand (getopt
 * "+"), so the wrapped command's flags are never taken for the wrapper's: `sudo rm -rfv /` is
 * rm, whatever letters -rfv has. Some take operands before the command (timeout DURATION,
 * chroot DIR, flock FILE); some run a shell reading stdin when given no command (sudo -i,
 * su, chroot, nsenter); some take a command string (su -c, flock -c, watch, sg).
 */
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        O_HELP = 256,
        O_OTHER,
};

/* The wrapped command at index i, or a shell reading stdin when there is none. */
static int
command_or_shell(struct eval *ev, int k, size_t i, size_t ac, const char *who)
{
        if (i < ac)
                return (int) i;
        carrier_stdin(ev, k, who, true);
        return 0;
}

static const struct lopt sudo_longs[] = {{"askpass", OPT_NONE, 'A'},
                                         {"background", OPT_NONE, 'b'},
                                         {"bell", OPT_NONE, 'B'},
                                         {"close-from", OPT_REQ, 'C'},
                                         {"chdir", OPT_REQ, 'D'},
                                         {"preserve-env", OPT_OPT, 'E'},
                                         {"edit", OPT_NONE, 'e'},
                                         {"group", OPT_REQ, 'g'},
                                         {"set-home", OPT_NONE, 'H'},
                                         {"help", OPT_NONE, O_HELP},
                                         {"host", OPT_REQ, 'h'},
                                         {"login", OPT_NONE, 'i'},
                                         {"remove-timestamp", OPT_NONE, 'K'},
                                         {"reset-timestamp", OPT_NONE, 'k'},
                                         {"list", OPT_NONE, 'l'},
                                         {"non-interactive", OPT_NONE, 'n'},
                                         {"preserve-groups", OPT_NONE, 'P'},
                                         {"prompt", OPT_REQ, 'p'},
                                         {"chroot", OPT_REQ, 'R'},
                                         {"role", OPT_REQ, 'r'},
                                         {"stdin", OPT_NONE, 'S'},
                                         {"shell", OPT_NONE, 's'},
                                         {"type", OPT_REQ, 't'},
                                         {"command-timeout", OPT_REQ, 'T'},
                                         {"other-user", OPT_REQ, 'U'},
                                         {"user", OPT_REQ, 'u'},
                                         {"version", OPT_NONE, 'V'},
                                         {"validate", OPT_NONE, 'v'},
                                         {NULL, 0, 0}};
static const struct optspec sudo_spec = {"AbBC:D:Eeg:Hh:iKklnPp:R:r:Sst:T:U:u:Vv", sudo_longs,
                                         OS_STOP};

static int
h_sudo(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct optres r;
        size_t i;

        opts_parse(ev, &sudo_spec, av, ac, 1, &r);
        if (opts_has(&r, 'S') || opts_has(&r, 'A'))
                analyze_add(ev, k, "priv.sudo-stdin", analyze_join(ev, av, ac),
                            analyze_join(ev, av, ac));
        if (opts_has(&r, 'e') || !strcmp(analyze_base(av[0].s), "sudoedit")) {
                /* sudo -e FILE… (sudoedit FILE…) writes every operand */
                static const struct optspec edit = {"AbBC:D:Eeg:Hh:iKklnPp:R:r:Sst:T:U:u:Vv",
                                                    sudo_longs, OS_STOP | OS_TAIL};
                opts_parse(ev, &edit, av, ac, 1, &r);
                for (size_t j = 0; j < r.nops; j++)
                        paths_check_write(ev, k, r.ops[j], false);
                return 0;
        }
        if (opts_has(&r, 'l') || opts_has(&r, 'V') || opts_has(&r, O_HELP) ||
            (r.nops == 0 && (opts_has(&r, 'v') || opts_has(&r, 'K') || opts_has(&r, 'k'))))
                return 0;
        for (i = r.stop; i < ac && analyze_lit(&av[i]) && strchr(av[i].s, '=') &&
                         av[i].s[0] != '=' && av[i].s[0] != '-';
             i++)
                env_check_assign(ev, k, &av[i]);
        if (i >= ac && !opts_has(&r, 'i') && !opts_has(&r, 's'))
                return 0;
        return command_or_shell(ev, k, i, ac, "sudo");
}

static int
h_doas(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"a:C:Lnsu:", NULL, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'C') || opts_has(&r, 'L'))
                return 0;
        if (r.stop >= ac && !opts_has(&r, 's'))
                return 0;
        return command_or_shell(ev, k, r.stop, ac, "doas");
}

static const struct lopt su_longs[] = {{"command", OPT_REQ, 'c'},
                                       {"session-command", OPT_REQ, 'c'},
                                       {"fast", OPT_NONE, 'f'},
                                       {"group", OPT_REQ, 'g'},
                                       {"supp-group", OPT_REQ, 'G'},
                                       {"login", OPT_NONE, 'l'},
                                       {"preserve-environment", OPT_NONE, 'm'},
                                       {"pty", OPT_NONE, 'P'},
                                       {"shell", OPT_REQ, 's'},
                                       {"whitelist-environment", OPT_REQ, 'w'},
                                       {"user", OPT_REQ, 'u'},
                                       {"help", OPT_NONE, 'h'},
                                       {"version", OPT_NONE, 'V'},
                                       {NULL, 0, 0}};

/* su / runuser: -c CMD is a payload; runuser -u USER CMD… runs CMD; no command: a shell
 * reading stdin (with extra operands: a script for that shell). */
static int
h_su(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec su = {"c:fg:G:lmpPs:w:hV", su_longs, 0};
        static const struct optspec ru = {"c:fg:G:lmpPs:u:w:hV", su_longs, 0};
        const char *n = analyze_base(av[0].s);
        bool runuser = !strcmp(n, "runuser");
        struct optres r;

        if (runuser) {
                /* runuser -u USER [--] CMD…: options stop at the command */
                static const struct optspec rs = {"c:fg:G:lmpPs:u:w:hV", su_longs, OS_STOP};
                opts_parse(ev, &rs, av, ac, 1, &r);
                if (opts_has(&r, 'u') && !opts_has(&r, 'c'))
                        return r.stop < ac ? (int) r.stop : 0;
        }
        opts_parse(ev, runuser ? &ru : &su, av, ac, 1, &r);
        if (opts_has(&r, 'h') || opts_has(&r, 'V'))
                return 0;
        const struct word *c = opts_val(&r, 'c');
        if (c) {
                carrier_payload(ev, k, c, n);
                return 0;
        }
        size_t op = 0;
        if (op < r.nops && !strcmp(r.ops[op]->s, "-"))
                op++;
        if (op < r.nops)
                op++; /* the user */
        if (op < r.nops)
                carrier_script(ev, k, r.ops[op], n, true);
        else
                carrier_stdin(ev, k, n, true);
        return 0;
}

/* sg GROUP [-c] COMMAND: the command is a string for /bin/sh. */
static int
h_sg(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        if (i < ac && !strcmp(av[i].s, "-"))
                i++;
        i++; /* the group */
        if (i < ac && !strcmp(av[i].s, "-c"))
                i++;
        if (i >= ac) {
                carrier_stdin(ev, k, "sg", true);
                return 0;
        }
        struct word all = av[i];
        all.s = analyze_join(ev, av + i, ac - i);
        for (size_t j = i; j < ac; j++)
                all.flags |= av[j].flags & (W_DYN | W_SUB);
        carrier_payload(ev, k, &all, "sg");
        return 0;
}

static const struct lopt script_longs[] = {{"append", OPT_NONE, 'a'},
                                           {"command", OPT_REQ, 'c'},
                                           {"echo", OPT_REQ, 'E'},
                                           {"return", OPT_NONE, 'e'},
                                           {"flush", OPT_NONE, 'f'},
                                           {"force", OPT_NONE, O_OTHER},
                                           {"log-in", OPT_REQ, 'I'},
                                           {"log-out", OPT_REQ, 'O'},
                                           {"log-io", OPT_REQ, 'B'},
                                           {"log-timing", OPT_REQ, 'T'},
                                           {"logging-format", OPT_REQ, 'm'},
                                           {"quiet", OPT_NONE, 'q'},
                                           {"timing", OPT_OPT, 't'},
                                           {"output-limit", OPT_REQ, 'o'},
                                           {NULL, 0, 0}};

/* script [-c CMD] [FILE]: records into FILE; without -c a shell reads the terminal. */
static int
h_script(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"ac:E:efI:O:B:T:m:qt::o:", script_longs, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.nops; j++)
                paths_check_write(ev, k, r.ops[j], false);
        const struct word *c = opts_val(&r, 'c');
        if (c)
                carrier_payload(ev, k, c, "script");
        else
                carrier_stdin(ev, k, "script", true);
        return 0;
}

/* env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE…] [COMMAND…] */
static const struct lopt env_longs[] = {{"ignore-environment", OPT_NONE, 'i'},
                                        {"null", OPT_NONE, '0'},
                                        {"unset", OPT_REQ, 'u'},
                                        {"chdir", OPT_REQ, 'C'},
                                        {"split-string", OPT_REQ, 'S'},
                                        {"debug", OPT_NONE, 'v'},
                                        {"default-signal", OPT_OPT, O_OTHER},
                                        {"ignore-signal", OPT_OPT, O_OTHER},
                                        {"block-signal", OPT_OPT, O_OTHER},
                                        {"list-signal-handling", OPT_NONE, O_OTHER},
                                        {"help", OPT_NONE, O_HELP},
                                        {"version", OPT_NONE, O_HELP},
                                        {NULL, 0, 0}};
static const struct optspec env_spec = {"i0u:C:S:vP:", env_longs, OS_STOP};

static int
h_env(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct optres r;
        size_t i;

        opts_parse(ev, &env_spec, av, ac, 1, &r);
        if (opts_has(&r, O_HELP))
                return 0;
        for (i = r.stop; i < ac && strchr(av[i].s, '=') && av[i].s[0] != '=' && analyze_lit(&av[i]);
             i++)
                env_check_assign(ev, k, &av[i]);
        const struct word *s = opts_val(&r, 'S');
        if (s) {
                /* -S splits its string into words like a small shell; the rest follows */
                struct word all = *s;
                const char *rest = analyze_join(ev, av + i, ac - i);
                size_t n = strlen(s->s) + strlen(rest) + 2;
                char *c = arena_alloc(&ev->ar, n);
                snprintf(c, n, "%s %s", s->s, rest);
                all.s = c;
                for (size_t j = i; j < ac; j++)
                        all.flags |= av[j].flags & W_DYN;
                carrier_payload(ev, k, &all, "env -S");
                return 0;
        }
        return i < ac ? (int) i : 0;
}

/* nice [-N | -n N | --adjustment=N] COMMAND */
static int
h_nice(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"adjustment", OPT_REQ, 'n'}, {NULL, 0, 0}};
        static const struct optspec sp = {"n:", longs, OS_STOP};
        struct optres r;
        size_t i = 1;

        (void) k;
        if (i < ac && av[i].s[0] == '-' &&
            strspn(av[i].s + 1, "0123456789") == strlen(av[i].s + 1) && av[i].s[1])
                i++;
        opts_parse(ev, &sp, av, ac, i, &r);
        return r.stop < ac ? (int) r.stop : 0;
}

struct simple_wrap {
        const char *name;
        struct optspec sp;
        int skip;          /* operands before the command */
        const char *norun; /* options that mean no command runs */
        bool shell;        /* no command: a shell reading stdin */
};

static const struct lopt timeout_longs[] = {
        {"kill-after", OPT_REQ, 'k'},  {"signal", OPT_REQ, 's'},
        {"foreground", OPT_NONE, 'f'}, {"preserve-status", OPT_NONE, 'p'},
        {"verbose", OPT_NONE, 'v'},    {NULL, 0, 0}};
static const struct lopt stdbuf_longs[] = {
        {"input", OPT_REQ, 'i'}, {"output", OPT_REQ, 'o'}, {"error", OPT_REQ, 'e'}, {NULL, 0, 0}};
static const struct lopt setsid_longs[] = {
        {"ctty", OPT_NONE, 'c'}, {"fork", OPT_NONE, 'f'}, {"wait", OPT_NONE, 'w'}, {NULL, 0, 0}};
static const struct lopt time_longs[] = {{"append", OPT_NONE, 'a'},
                                         {"format", OPT_REQ, 'f'},
                                         {"output", OPT_REQ, 'o'},
                                         {"portability", OPT_NONE, 'p'},
                                         {"quiet", OPT_NONE, 'q'},
                                         {"verbose", OPT_NONE, 'v'},
                                         {NULL, 0, 0}};
static const struct lopt chroot_longs[] = {{"userspec", OPT_REQ, O_OTHER},
                                           {"groups", OPT_REQ, O_OTHER},
                                           {"skip-chdir", OPT_NONE, O_OTHER},
                                           {NULL, 0, 0}};
static const struct lopt sched_longs[] = {{"all-tasks", OPT_NONE, 'a'},
                                          {"pid", OPT_NONE, 'p'},
                                          {"max", OPT_NONE, 'm'},
                                          {"cpu-list", OPT_NONE, 'c'},
                                          {"batch", OPT_NONE, 'b'},
                                          {"fifo", OPT_NONE, 'f'},
                                          {"idle", OPT_NONE, 'i'},
                                          {"other", OPT_NONE, 'o'},
                                          {"rr", OPT_NONE, 'r'},
                                          {"deadline", OPT_NONE, 'd'},
                                          {"reset-on-fork", OPT_NONE, 'R'},
                                          {"sched-runtime", OPT_REQ, 'T'},
                                          {"sched-period", OPT_REQ, 'P'},
                                          {"sched-deadline", OPT_REQ, 'D'},
                                          {"verbose", OPT_NONE, 'v'},
                                          {NULL, 0, 0}};
static const struct lopt ionice_longs[] = {{"class", OPT_REQ, 'c'},
                                           {"classdata", OPT_REQ, 'n'},
                                           {"pid", OPT_REQ, 'p'},
                                           {"pgid", OPT_REQ, 'P'},
                                           {"uid", OPT_REQ, 'u'},
                                           {"ignore", OPT_NONE, 't'},
                                           {NULL, 0, 0}};
static const struct lopt ns_longs[] = {{"target", OPT_REQ, 't'},
                                       {"all", OPT_NONE, 'a'},
                                       {"mount", OPT_OPT, 'm'},
                                       {"uts", OPT_OPT, 'u'},
                                       {"ipc", OPT_OPT, 'i'},
                                       {"net", OPT_OPT, 'n'},
                                       {"pid", OPT_OPT, 'p'},
                                       {"cgroup", OPT_OPT, 'C'},
                                       {"user", OPT_OPT, 'U'},
                                       {"time", OPT_OPT, 'T'},
                                       {"setuid", OPT_REQ, 'S'},
                                       {"setgid", OPT_REQ, 'G'},
                                       {"root", OPT_OPT, 'r'},
                                       {"wd", OPT_OPT, 'w'},
                                       {"wdns", OPT_REQ, 'W'},
                                       {"no-fork", OPT_NONE, 'F'},
                                       {"fork", OPT_NONE, 'f'},
                                       {"map-root-user", OPT_NONE, 'r'},
                                       {"map-current-user", OPT_NONE, 'c'},
                                       {"propagation", OPT_REQ, O_OTHER},
                                       {"kill-child", OPT_OPT, O_OTHER},
                                       {"mount-proc", OPT_OPT, O_OTHER},
                                       {"preserve-credentials", OPT_NONE, O_OTHER},
                                       {"follow-context", OPT_NONE, 'Z'},
                                       {NULL, 0, 0}};
static const struct lopt trace_longs[] = {{"output", OPT_REQ, 'o'},
                                          {"attach", OPT_REQ, 'p'},
                                          {"trace", OPT_REQ, 'e'},
                                          {"follow-forks", OPT_NONE, 'f'},
                                          {"user", OPT_REQ, 'u'},
                                          {"env", OPT_REQ, 'E'},
                                          {NULL, 0, 0}};
static const struct lopt xargs_longs[] = {{"null", OPT_NONE, '0'},
                                          {"arg-file", OPT_REQ, 'a'},
                                          {"delimiter", OPT_REQ, 'd'},
                                          {"eof", OPT_OPT, 'e'},
                                          {"replace", OPT_OPT, 'i'},
                                          {"max-lines", OPT_OPT, 'l'},
                                          {"max-args", OPT_REQ, 'n'},
                                          {"open-tty", OPT_NONE, 'o'},
                                          {"interactive", OPT_NONE, 'p'},
                                          {"no-run-if-empty", OPT_NONE, 'r'},
                                          {"max-chars", OPT_REQ, 's'},
                                          {"show-limits", OPT_NONE, O_OTHER},
                                          {"verbose", OPT_NONE, 't'},
                                          {"exit", OPT_NONE, 'x'},
                                          {"max-procs", OPT_REQ, 'P'},
                                          {"process-slot-var", OPT_REQ, O_OTHER},
                                          {"help", OPT_NONE, O_HELP},
                                          {"version", OPT_NONE, O_HELP},
                                          {NULL, 0, 0}};

static const struct simple_wrap simple[] = {
        {"builtin", {"", NULL, OS_STOP}, 0, "", false},
        {"caffeinate", {"disumw:t:", NULL, OS_STOP}, 0, "", false},
        {"catchsegv", {"", NULL, OS_STOP}, 0, "", false},
        {"chroot", {"", chroot_longs, OS_STOP}, 1, "", true},
        {"chrt", {"abdefiImoprRT:P:D:v", sched_longs, OS_STOP}, 1, "pm", false},
        {"command", {"pvV", NULL, OS_STOP}, 0, "vV", false},
        {"exec", {"cla:", NULL, OS_STOP}, 0, "", false},
        {"faketime", {"m:f:p:", NULL, OS_STOP}, 1, "", false},
        {"ionice", {"c:n:p:P:tu:", ionice_longs, OS_STOP}, 0, "pPu", false},
        {"ltrace", {"abcCdfhiLrStTVA:D:e:F:l:n:o:p:s:u:w:x:", trace_longs, OS_STOP}, 0, "", false},
        {"nohup", {"", NULL, OS_STOP}, 0, "", false},
        {"nsenter",
         {"a::t:m::u::i::n::p::C::U::T::S:G:r::w::W:FZ", ns_longs, OS_STOP},
         0,
         "",
         true},
        {"proxychains", {"qf:", NULL, OS_STOP}, 0, "", false},
        {"proxychains4", {"qf:", NULL, OS_STOP}, 0, "", false},
        {"setpriv", {"dh", NULL, OS_STOP}, 0, "d", false},
        {"setsid", {"cfw", setsid_longs, OS_STOP}, 0, "", false},
        {"stdbuf", {"i:o:e:", stdbuf_longs, OS_STOP}, 0, "", false},
        {"strace",
         {"bcdDfFhiqrtTvVwxyzZa:e:o:O:p:s:S:u:E:P:I:X:A", trace_longs, OS_STOP},
         0,
         "",
         false},
        {"taskset", {"acp", sched_longs, OS_STOP}, 1, "p", false},
        {"time", {"af:o:pqv", time_longs, OS_STOP}, 0, "", false},
        {"timeout", {"k:s:fpv", timeout_longs, OS_STOP}, 1, "", false},
        {"torsocks", {"ia:P:u:p:dq", NULL, OS_STOP}, 0, "", false},
        {"unbuffer", {"p", NULL, OS_STOP}, 0, "", false},
        {"unshare", {"imnpuUCTfr::R:w:S:G:c", ns_longs, OS_STOP}, 0, "", true},
};

static const struct simple_wrap *
simple_find(const char *n)
{
        for (size_t j = 0; j < ARRAY_SIZE(simple); j++)
                if (!strcmp(simple[j].name, n))
                        return &simple[j];
        return NULL;
}

/* strace/ltrace -o FILE writes the trace; -o '!cmd' or '|cmd' pipes it into a command; -p
 * attaches to a running process. GNU time -o FILE writes too. */
static void
wrap_output(struct eval *ev, int k, const char *n, const struct optres *r)
{
        const struct word *o = opts_val(r, 'o');

        if (o && (o->s[0] == '!' || o->s[0] == '|')) {
                struct word p = analyze_word(o, o->s + 1);
                carrier_payload(ev, k, &p, n);
        } else if (o) {
                paths_check_write(ev, k, o, false);
        }
        const struct word *pid = opts_val(r, 'p');
        if ((!strcmp(n, "strace") || !strcmp(n, "ltrace")) && pid)
                analyze_add(ev, k, "proc.ptrace", pid->s, pid->s);
}

static int
h_simple(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const struct simple_wrap *w = simple_find(n);
        struct optres r;

        if (!w)
                return 0;
        opts_parse(ev, &w->sp, av, ac, 1, &r);
        for (const char *c = w->norun; *c; c++)
                if (opts_has(&r, *c))
                        return 0;
        if (!strcmp(n, "strace") || !strcmp(n, "ltrace") || !strcmp(n, "time"))
                wrap_output(ev, k, n, &r);
        if (!strcmp(n, "nsenter") && opts_has(&r, 't'))
                analyze_add(ev, k, "exec.remote", analyze_join(ev, av, ac), "nsenter");
        size_t i = r.stop + (size_t) w->skip;
        if (w->shell && i == ac)
                return command_or_shell(ev, k, i, ac, n);
        return i < ac ? (int) i : 0;
}

/* valgrind and firejail take only --name[=value] options before the command. */
static int
h_longwrap(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        while (i < ac && av[i].s[0] == '-' && analyze_lit(&av[i])) {
                const char *s = av[i].s;
                if (!strncmp(s, "--log-file=", 11) || !strncmp(s, "--xml-file=", 11)) {
                        struct word f = analyze_word(&av[i], s + 11);
                        paths_check_write(ev, k, &f, false);
                }
                i++;
                if (!strcmp(s, "--"))
                        break;
        }
        return i < ac ? (int) i : 0;
}

/* xargs [opts] [COMMAND [ARGS]]: COMMAND (default echo) runs with words read from stdin
 * appended, or put where -I's replace string is. */
static int
h_xargs(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"0a:d:E:e::I:i::L:l::n:oprP:s:tx", xargs_longs, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, O_HELP) || opts_has(&r, O_OTHER))
                return 0;
        const struct word *rep = opts_val(&r, 'I');
        if (!rep && opts_has(&r, 'i'))
                rep = opts_val(&r, 'i');
        const char *rs = rep ? rep->s : opts_has(&r, 'i') || opts_has(&r, 'I') ? "{}" : NULL;
        unsigned in = W_DYN | W_SPLIT | (opts_has(&r, 'a') ? 0 : W_STDIN);
        size_t n = ac > r.stop ? ac - r.stop : 0;
        struct word *cmd = arena_alloc(&ev->ar, (n + 2) * sizeof(*cmd));
        size_t m = 0;

        if (n == 0)
                cmd[m++] = analyze_word(&av[0], "echo");
        for (size_t j = r.stop; j < ac; j++) {
                cmd[m] = av[j];
                if (rs && *rs && strstr(av[j].s, rs))
                        cmd[m].flags |= in;
                m++;
        }
        if (!rs) {
                cmd[m] = analyze_word(&av[0], "{xargs input}");
                cmd[m++].flags = in;
        }
        if (!strcmp(analyze_base(cmd[0].s), "rm"))
                analyze_add(ev, k, "delete.xargs", analyze_join(ev, cmd, m),
                            analyze_join(ev, cmd, m));
        analyze_view(ev, k, cmd, m, 1);
        return 0;
}

/* busybox / toybox APPLET ARGS */
static int
h_multicall(struct eval *ev, int k, const struct word *av, size_t ac)
{
        (void) ev;
        (void) k;
        return ac > 1 && av[1].s[0] != '-' ? 1 : 0;
}

/* flock [opts] FILE|FD [-c CMD | CMD…] */
static int
h_flock(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {
                {"command", OPT_REQ, 'c'},    {"conflict-exit-code", OPT_REQ, 'E'},
                {"nonblock", OPT_NONE, 'n'},  {"close", OPT_NONE, 'o'},
                {"shared", OPT_NONE, 's'},    {"unlock", OPT_NONE, 'u'},
                {"timeout", OPT_REQ, 'w'},    {"wait", OPT_REQ, 'w'},
                {"exclusive", OPT_NONE, 'x'}, {"verbose", OPT_NONE, O_OTHER},
                {"no-fork", OPT_NONE, 'F'},   {NULL, 0, 0}};
        static const struct optspec sp = {"c:E:nosuw:xF", longs, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        const struct word *c = opts_val(&r, 'c');
        size_t i = r.stop + 1;
        if (!c && i < ac && (!strcmp(av[i].s, "-c") || !strcmp(av[i].s, "--command")))
                c = i + 1 < ac ? &av[i + 1] : NULL;
        if (c) {
                carrier_payload(ev, k, c, "flock -c");
                return 0;
        }
        return i < ac ? (int) i : 0;
}

/* watch [opts] COMMAND…: joined and run by sh -c, or as argv with -x. */
static int
h_watch(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {
                {"interval", OPT_REQ, 'n'},    {"exec", OPT_NONE, 'x'},
                {"differences", OPT_OPT, 'd'}, {"beep", OPT_NONE, 'b'},
                {"color", OPT_NONE, 'c'},      {"errexit", OPT_NONE, 'e'},
                {"chgexit", OPT_NONE, 'g'},    {"no-title", OPT_NONE, 't'},
                {"precise", OPT_NONE, 'p'},    {"no-wrap", OPT_NONE, 'w'},
                {"equexit", OPT_REQ, 'q'},     {NULL, 0, 0}};
        static const struct optspec sp = {"n:xd::bcegtpwq:", longs, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (r.stop >= ac)
                return 0;
        if (opts_has(&r, 'x'))
                return (int) r.stop;
        struct word all = av[r.stop];
        all.s = analyze_join(ev, av + r.stop, ac - r.stop);
        for (size_t j = r.stop; j < ac; j++)
                all.flags |= av[j].flags & (W_DYN | W_SUB);
        carrier_payload(ev, k, &all, "watch");
        return 0;
}

/* systemd-run runs the command as a unit of the service manager, outside this process tree. */
static int
h_systemd_run(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"unit", OPT_REQ, 'u'},
                                            {"property", OPT_REQ, 'p'},
                                            {"description", OPT_REQ, O_OTHER},
                                            {"slice", OPT_REQ, O_OTHER},
                                            {"uid", OPT_REQ, O_OTHER},
                                            {"gid", OPT_REQ, O_OTHER},
                                            {"nice", OPT_REQ, O_OTHER},
                                            {"working-directory", OPT_REQ, O_OTHER},
                                            {"setenv", OPT_REQ, 'E'},
                                            {"machine", OPT_REQ, 'M'},
                                            {"host", OPT_REQ, 'H'},
                                            {"on-calendar", OPT_REQ, O_OTHER},
                                            {"on-active", OPT_REQ, O_OTHER},
                                            {"on-boot", OPT_REQ, O_OTHER},
                                            {"on-startup", OPT_REQ, O_OTHER},
                                            {"on-unit-active", OPT_REQ, O_OTHER},
                                            {"on-unit-inactive", OPT_REQ, O_OTHER},
                                            {"timer-property", OPT_REQ, O_OTHER},
                                            {"path-property", OPT_REQ, O_OTHER},
                                            {"socket-property", OPT_REQ, O_OTHER},
                                            {"service-type", OPT_REQ, O_OTHER},
                                            {"user", OPT_NONE, O_OTHER},
                                            {"system", OPT_NONE, O_OTHER},
                                            {"scope", OPT_NONE, O_OTHER},
                                            {"pty", OPT_NONE, 't'},
                                            {"pipe", OPT_NONE, 'P'},
                                            {"quiet", OPT_NONE, 'q'},
                                            {"wait", OPT_NONE, O_OTHER},
                                            {"collect", OPT_NONE, 'G'},
                                            {"same-dir", OPT_NONE, 'd'},
                                            {"shell", OPT_NONE, 'S'},
                                            {"remain-after-exit", OPT_NONE, 'r'},
                                            {"send-sighup", OPT_NONE, O_OTHER},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"u:p:E:M:H:tPqGdSr", longs, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == 'E' && r.o[j].val)
                        env_check_assign(ev, k, r.o[j].val);
        analyze_add(ev, k, "exec.scheduled", analyze_join(ev, av, ac), analyze_join(ev, av, ac));
        return command_or_shell(ev, k, r.stop, ac, "systemd-run");
}

/* capsh [OPTS] -- ARGS: ARGS are bash's (--shell=PATH names another shell). */
static int
h_capsh(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *sh = "bash";

        for (size_t i = 1; i < ac; i++) {
                if (!strncmp(av[i].s, "--shell=", 8))
                        sh = av[i].s + 8;
                if (strcmp(av[i].s, "--"))
                        continue;
                struct word *v = arena_alloc(&ev->ar, (ac - i) * sizeof(*v));
                v[0] = analyze_word(&av[i], sh);
                memcpy(v + 1, av + i + 1, (ac - i - 1) * sizeof(*v));
                analyze_view(ev, k, v, ac - i, 1);
                return 0;
        }
        return 0;
}

/* nix-shell … --run CMD / --command CMD: CMD runs in a shell. */
static int
h_nix_shell(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i + 1 < ac; i++)
                if (!strcmp(av[i].s, "--run") || !strcmp(av[i].s, "--command"))
                        carrier_payload(ev, k, &av[i + 1], "nix-shell --run");
        return 0;
}

static const struct cmd cmds[] = {
        {"builtin", h_simple},
        {"busybox", h_multicall},
        {"caffeinate", h_simple},
        {"capsh", h_capsh},
        {"catchsegv", h_simple},
        {"chroot", h_simple},
        {"chrt", h_simple},
        {"command", h_simple},
        {"doas", h_doas},
        {"env", h_env},
        {"exec", h_simple},
        {"faketime", h_simple},
        {"firejail", h_longwrap},
        {"flock", h_flock},
        {"ionice", h_simple},
        {"ltrace", h_simple},
        {"nice", h_nice},
        {"nix-shell", h_nix_shell},
        {"nohup", h_simple},
        {"nsenter", h_simple},
        {"proxychains", h_simple},
        {"proxychains4", h_simple},
        {"runuser", h_su},
        {"script", h_script},
        {"setpriv", h_simple},
        {"setsid", h_simple},
        {"sg", h_sg},
        {"stdbuf", h_simple},
        {"strace", h_simple},
        {"su", h_su},
        {"sudo", h_sudo},
        {"sudoedit", h_sudo},
        {"systemd-run", h_systemd_run},
        {"taskset", h_simple},
        {"time", h_simple},
        {"timeout", h_simple},
        {"torsocks", h_simple},
        {"toybox", h_multicall},
        {"unbuffer", h_simple},
        {"unshare", h_simple},
        {"valgrind", h_longwrap},
        {"watch", h_watch},
        {"xargs", h_xargs},
};

const struct cmd_table wrap_cmds = {cmds, ARRAY_SIZE(cmds)};
