/* system.c — the machine itself: signals, power, disks and devices, administration.
 *
 * Signals: pid -1 in any spelling kill(1) and the shell accept (-1, -01, " -1", -- -1), pid 1,
 * the daemon's own pid or process group and $PPID, pkill/killall patterns that match the
 * daemon. Power: shutdown/reboot/halt/poweroff, init/telinit 0 and 6, systemctl verbs and
 * power targets, busctl/dbus-send/gdbus calls to logind or systemd, kexec, rtcwake, and the
 * sysrq and power files (paths.c). Disks: formatting, partitioning, encryption and discard
 * tools with a device of any name (paths_device); a regular file inside the workspace may be
 * formatted. Administration (mount, users, sysctl, modules, firewall, network) asks.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        O_OTHER = 256,
        O_HELP,
        O_SIGNAL,
};

static const char *const daemon_names[] = {"sandboxd", "sandboxd-agent", NULL};

/* ---- signals ---- */

/* A literal pid as kill(1) and bash's kill read it: blanks, a sign, decimal digits. */
static bool
pid_value(const struct word *w, long *v)
{
        const char *s = w->s;
        char *end;

        if (!analyze_lit(w))
                return false;
        while (*s == ' ' || *s == '\t' || *s == '\n')
                s++;
        if (!*s || !(s[0] == '-' || s[0] == '+' || (s[0] >= '0' && s[0] <= '9')))
                return false;
        *v = strtol(s, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\n')
                end++;
        return end != s && *end == '\0';
}

/* Whether glibc's regcomp compiles pat in bounded memory: it copies the subexpression before
 * every `+` and every count of an interval `{n,m}`, so nested operators double the tree each
 * (`x++++…` with 24 of them took over 2 GiB in fuzz_policy). Short, no interval, few `+`. */
static bool
pattern_cheap(const char *pat)
{
        size_t plus = 0;

        if (strlen(pat) > 256 || strchr(pat, '{'))
                return false;
        for (const char *p = pat; *p; p++)
                plus += *p == '+';
        return plus <= 8;
}

/* A pattern (ERE, as pgrep/pkill read it) that selects the daemon. Plain text is matched
 * without a regex; at most 64 regexes are compiled per evaluation, and only cheap ones
 * (pattern_cheap): beyond that, or otherwise, a pattern counts as a hit (the verdict only
 * gets stricter). */
static bool
pattern_hits_daemon(struct eval *ev, const char *pat, bool exact, bool icase, bool negate)
{
        static const char *const samples[] = {"sandboxd", "/usr/sbin/sandboxd",
                                              "/usr/local/sbin/sandboxd", "sandboxd-agent", NULL};
        regex_t re;
        bool hit = false;

        if (!strpbrk(pat, ".[]()*+?{}|^$\\")) {
                for (const char *const *s = samples; *s && !hit; s++)
                        hit = (exact ? (icase ? !strcasecmp(*s, pat) : !strcmp(*s, pat))
                                     : (icase ? strcasestr(*s, pat) != NULL
                                              : strstr(*s, pat) != NULL)) != negate;
                return hit;
        }
        if (++ev->nregex > 64 || !pattern_cheap(pat))
                return true;
        char *anchored = exact ? xasprintf("^(%s)$", pat) : xstrdup(pat);

        if (regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0)) != 0) {
                free(anchored);
                return false; /* pkill refuses a bad pattern */
        }
        for (const char *const *s = samples; *s && !hit; s++)
                hit = (regexec(&re, *s, 0, NULL, 0) == 0) != negate;
        regfree(&re);
        free(anchored);
        return hit;
}

/* Unit j prints pids for kill (a substitution or a pipe's writer): pgrep/pidof of the
 * daemon or of init. */
static void
pid_source(struct eval *ev, int k, int j, const char *all)
{
        static const char *const inits[] = {"init", "systemd", "/sbin/init", "/lib/systemd/systemd",
                                            NULL};
        const struct unit *u = &ev->units[j];
        const char *n = u->argc ? analyze_base(u->argv[0].s) : "";

        if (strcmp(n, "pgrep") && strcmp(n, "pidof"))
                return;
        for (size_t a = 1; a < u->argc; a++) {
                const char *s = u->argv[a].s;
                if (s[0] == '-')
                        continue;
                if (pattern_hits_daemon(ev, s, !strcmp(n, "pidof"), false, false))
                        analyze_add(ev, k, "floor.kill-daemon", all, s);
                else if (analyze_in(s, inits) || !strcmp(analyze_base(s), "init"))
                        analyze_add(ev, k, "floor.kill-init", all, s);
        }
}

/* A pid word of kill: -1, 1, the daemon, $PPID, $(pgrep sandboxd). */
static void
kill_target(struct eval *ev, int k, const struct word *w, const char *all)
{
        long v, self = ev->ctx ? ev->ctx->daemon_pid : 0;

        if (pid_value(w, &v)) {
                if (v == -1)
                        analyze_add(ev, k, "floor.kill-all", all, "kill -1");
                else if (v == 1)
                        analyze_add(ev, k, "floor.kill-init", all, "kill 1");
                else if (self > 1 && (v == self || v == -self))
                        analyze_add(ev, k, "floor.kill-daemon", all, w->s);
                return;
        }
        if (!strcmp(w->s, "$PPID") || !strcmp(w->s, "${PPID}")) {
                analyze_add(ev, k, "floor.kill-daemon", all, w->s);
                return;
        }
        for (int j = w->sub_lo; (w->flags & W_SUB) && j < w->sub_hi && j < (int) ev->nunits; j++)
                pid_source(ev, k, j, all);
        /* xargs kill: the pids are what the pipe's writer printed (pgrep sandboxd | xargs kill) */
        int up = ev->units[k].pipe_prev;
        for (int n = 0; (w->flags & W_STDIN) && up >= 0 && n < 64;
             up = ev->units[up].pipe_prev, n++)
                pid_source(ev, k, up, all);
}

/* kill [-s SIG | -n NUM | -SIG] [--] PID…, kill -l */
static int
h_kill(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *all = analyze_join(ev, av, ac);
        size_t i = 1;

        if (ac == 2) {
                /* `kill -1` is a usage error, but never a harmless one to guess wrong */
                kill_target(ev, k, &av[1], all);
                return 0;
        }
        if (i < ac && analyze_lit(&av[i])) {
                const char *s = av[i].s;
                if (!strcmp(s, "-l") || !strcmp(s, "-L") || !strcmp(s, "--list") ||
                    !strcmp(s, "--table"))
                        return 0;
                if (!strcmp(s, "-s") || !strcmp(s, "-n") || !strcmp(s, "--signal") ||
                    !strcmp(s, "-q"))
                        i += 2;
                else if (s[0] == '-' && s[1] && strcmp(s, "--"))
                        i++;
        }
        if (i < ac && !strcmp(av[i].s, "--"))
                i++;
        for (; i < ac; i++)
                kill_target(ev, k, &av[i], all);
        return 0;
}

static bool
is_sigkill(const char *s)
{
        static const char *const kills[] = {
                "-9",   "-KILL",   "-SIGKILL",      "-kill",      "9",
                "KILL", "SIGKILL", "--signal=KILL", "--signal=9", "--signal=SIGKILL",
                NULL};
        return analyze_in(s, kills);
}

/* pkill / killall / killall5: patterns or names that reach the daemon, everything, SIGKILL. */
static int
h_pkill(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const char *all = analyze_join(ev, av, ac);
        bool killall = !strcmp(n, "killall"), exact = !strcmp(n, "killall"), icase = false;
        bool regex = !killall, negate = false, nine = false, selects = false, names = false;

        if (!strcmp(n, "killall5")) {
                analyze_add(ev, k, "floor.kill-all", all, n);
                return 0;
        }
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                bool valued = !strcmp(s, "-s") || !strcmp(s, "--signal") || !strcmp(s, "-u") ||
                              !strcmp(s, "-U") || !strcmp(s, "-g") || !strcmp(s, "-G") ||
                              !strcmp(s, "-P") || !strcmp(s, "-t") || !strcmp(s, "--user") ||
                              !strcmp(s, "-o") || !strcmp(s, "-y") || !strcmp(s, "-n") ||
                              !strcmp(s, "-O") || !strcmp(s, "-F") || !strcmp(s, "--ns");
                nine = nine || is_sigkill(s) || (valued && i + 1 < ac && is_sigkill(av[i + 1].s));
                if (s[0] == '-' && s[1]) {
                        selects = selects || strpbrk(s + 1, "uUgGPst") != NULL;
                        icase = icase || (killall ? strchr(s + 1, 'I') : strchr(s + 1, 'i'));
                        exact = exact || (!killall && strchr(s + 1, 'x'));
                        regex = regex ||
                                (killall && (strchr(s + 1, 'r') || !strcmp(s, "--regexp")));
                        /* killall -r matches its regex anywhere in the name, like pkill */
                        exact = exact && !(killall && regex);
                        negate = negate || (!killall && strchr(s + 1, 'v'));
                        i += valued;
                        continue;
                }
                names = true;
                if (!analyze_lit(&av[i]))
                        nine = true; /* a pattern only known at run time: ask */
                else if (regex ? pattern_hits_daemon(ev, s, exact, icase, negate)
                               : analyze_in(analyze_base(s), daemon_names))
                        analyze_add(ev, k, "floor.kill-daemon", all, s);
        }
        if (!names && selects)
                analyze_add(ev, k, "floor.kill-all", all, all); /* every process of a user */
        else if (nine)
                analyze_add(ev, k, "proc.kill", all, all);
        return 0;
}

/* ---- power ---- */

static const char *const power_verbs[] = {"poweroff",     "reboot",  "halt",
                                          "kexec",        "suspend", "hibernate",
                                          "hybrid-sleep", "sleep",   "suspend-then-hibernate",
                                          "soft-reboot",  NULL};
static const char *const power_targets[] = {"poweroff.target",
                                            "reboot.target",
                                            "halt.target",
                                            "kexec.target",
                                            "ctrl-alt-del.target",
                                            "suspend.target",
                                            "hibernate.target",
                                            "hybrid-sleep.target",
                                            "sleep.target",
                                            "soft-reboot.target",
                                            "suspend-then-hibernate.target",
                                            "final.target",
                                            "shutdown.target",
                                            "exit.target",
                                            "poweroff",
                                            "reboot",
                                            "halt",
                                            NULL};
static const char *const power_methods[] = {"PowerOff",
                                            "Reboot",
                                            "Halt",
                                            "KExec",
                                            "Suspend",
                                            "Hibernate",
                                            "HybridSleep",
                                            "SuspendThenHibernate",
                                            "Sleep",
                                            "SoftReboot",
                                            "PowerOffWithFlags",
                                            "RebootWithFlags",
                                            "HaltWithFlags",
                                            "KExecWithFlags",
                                            "SuspendWithFlags",
                                            "HibernateWithFlags",
                                            "HybridSleepWithFlags",
                                            "SuspendThenHibernateWithFlags",
                                            "ScheduleShutdown",
                                            "Exit",
                                            NULL};

static int
h_power(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!strcmp(s, "--help") || !strcmp(s, "--version"))
                        return 0;
                if (!strcmp(n, "shutdown") &&
                    (!strcmp(s, "-c") || !strcmp(s, "-k") || !strcmp(s, "--show")))
                        return 0;
                if (strcmp(n, "shutdown") && (!strcmp(s, "-w") || !strcmp(s, "--wtmp-only")))
                        return 0;
        }
        if (!strcmp(n, "init") || !strcmp(n, "telinit")) {
                const char *lvl = ac > 1 ? av[ac - 1].s : "";
                if (!strcmp(lvl, "0") || !strcmp(lvl, "6"))
                        analyze_add(ev, k, "floor.power", analyze_join(ev, av, ac), lvl);
                else if (ac > 1 && strcmp(lvl, "q") && strcmp(lvl, "Q") && strcmp(lvl, "u") &&
                         strcmp(lvl, "U"))
                        analyze_add(ev, k, "service.control", analyze_join(ev, av, ac), lvl);
                return 0;
        }
        if (!strcmp(n, "rtcwake")) {
                for (size_t i = 1; i + 1 < ac; i++)
                        if ((!strcmp(av[i].s, "-m") || !strcmp(av[i].s, "--mode")) &&
                            strcmp(av[i + 1].s, "no") && strcmp(av[i + 1].s, "show") &&
                            strcmp(av[i + 1].s, "disable"))
                                analyze_add(ev, k, "floor.power", analyze_join(ev, av, ac), n);
                return 0;
        }
        if (!strcmp(n, "kexec")) {
                for (size_t i = 1; i < ac; i++)
                        if (!strcmp(av[i].s, "-u") || !strcmp(av[i].s, "--unload"))
                                return 0;
        }
        analyze_add(ev, k, "floor.power", analyze_join(ev, av, ac), n);
        return 0;
}

/* A unit name of the daemon itself. */
static bool
daemon_unit(const char *u)
{
        return !strncmp(u, "sandboxd", 8) && (u[8] == '\0' || u[8] == '.' || u[8] == '@');
}

static const char *const svc_verbs[] = {"stop",
                                        "restart",
                                        "disable",
                                        "mask",
                                        "kill",
                                        "isolate",
                                        "try-restart",
                                        "reload-or-restart",
                                        "try-reload-or-restart",
                                        "emergency",
                                        "rescue",
                                        "default",
                                        "freeze",
                                        "clean",
                                        "set-property",
                                        "edit",
                                        "set-environment",
                                        "unset-environment",
                                        "import-environment",
                                        "revert",
                                        NULL};
static const char *const persist_verbs[] = {"enable",     "reenable",     "link",
                                            "add-wants",  "add-requires", "preset",
                                            "preset-all", "set-default",  NULL};
static const char *const start_verbs[] = {
        "start", "restart", "isolate", "reload-or-restart", "try-restart", "try-reload-or-restart",
        NULL};

static const struct lopt systemctl_longs[] = {{"type", OPT_REQ, 't'},
                                              {"property", OPT_REQ, 'p'},
                                              {"state", OPT_REQ, O_OTHER},
                                              {"signal", OPT_REQ, 's'},
                                              {"host", OPT_REQ, 'H'},
                                              {"machine", OPT_REQ, 'M'},
                                              {"lines", OPT_REQ, 'n'},
                                              {"output", OPT_REQ, 'o'},
                                              {"root", OPT_REQ, O_OTHER},
                                              {"kill-whom", OPT_REQ, O_OTHER},
                                              {"kill-value", OPT_REQ, O_OTHER},
                                              {"what", OPT_REQ, O_OTHER},
                                              {"job-mode", OPT_REQ, O_OTHER},
                                              {"when", OPT_REQ, O_OTHER},
                                              {"message", OPT_REQ, O_OTHER},
                                              {"boot-loader-entry", OPT_REQ, O_OTHER},
                                              {"boot-loader-menu", OPT_REQ, O_OTHER},
                                              {"timestamp", OPT_REQ, O_OTHER},
                                              {"preset-mode", OPT_REQ, O_OTHER},
                                              {"image", OPT_REQ, O_OTHER},
                                              {"drop-in", OPT_REQ, O_OTHER},
                                              {"check-inhibitors", OPT_REQ, O_OTHER},
                                              {"user", OPT_NONE, O_OTHER},
                                              {"system", OPT_NONE, O_OTHER},
                                              {"global", OPT_NONE, O_OTHER},
                                              {"force", OPT_NONE, 'f'},
                                              {"now", OPT_NONE, O_OTHER},
                                              {"no-block", OPT_NONE, O_OTHER},
                                              {"quiet", OPT_NONE, 'q'},
                                              {"all", OPT_NONE, 'a'},
                                              {"full", OPT_NONE, 'l'},
                                              {"no-wall", OPT_NONE, O_OTHER},
                                              {"no-pager", OPT_NONE, O_OTHER},
                                              {"no-legend", OPT_NONE, O_OTHER},
                                              {"runtime", OPT_NONE, O_OTHER},
                                              {"wait", OPT_NONE, O_OTHER},
                                              {"help", OPT_NONE, O_HELP},
                                              {"version", OPT_NONE, O_HELP},
                                              {NULL, 0, 0}};

static int
h_systemctl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"t:p:s:H:M:n:o:fqalPir", systemctl_longs, 0};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, O_HELP) || r.nops == 0)
                return 0;
        const char *verb = r.ops[0]->s;
        if (opts_has(&r, 'H') || opts_has(&r, 'M'))
                analyze_add(ev, k, "exec.remote", all, "systemctl --host");
        if (analyze_in(verb, power_verbs)) {
                analyze_add(ev, k, "floor.power", all, verb);
                return 0;
        }
        for (size_t j = 1; j < r.nops; j++) {
                const char *u = r.ops[j]->s;
                if (analyze_in(verb, start_verbs) && analyze_in(u, power_targets)) {
                        analyze_add(ev, k, "floor.power", all, u);
                        return 0;
                }
                if (daemon_unit(u) && (analyze_in(verb, svc_verbs) || !strcmp(verb, "start"))) {
                        analyze_add(ev, k, "floor.kill-daemon", all, u);
                        return 0;
                }
        }
        if (analyze_in(verb, persist_verbs))
                analyze_add(ev, k, "write.startup", all, all);
        else if (analyze_in(verb, svc_verbs))
                analyze_add(ev, k, "service.control", all, all);
        return 0;
}

static int
h_service(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const verbs[] = {"stop", "restart", "force-reload", "reload", NULL};

        if (ac < 3)
                return 0;
        if (daemon_unit(av[1].s) && analyze_in(av[2].s, verbs))
                analyze_add(ev, k, "floor.kill-daemon", analyze_join(ev, av, ac), av[1].s);
        else if (analyze_in(av[2].s, verbs))
                analyze_add(ev, k, "service.control", analyze_join(ev, av, ac),
                            analyze_join(ev, av + 1, 2));
        return 0;
}

/* A D-Bus call to logind or systemd (dest, member, argument words). */
static void
dbus_call(struct eval *ev, int k, const char *dest, const char *member, const struct word *args,
          size_t nargs, const char *all)
{
        static const char *const managers[] = {"org.freedesktop.login1", "org.freedesktop.systemd1",
                                               NULL};
        if (!dest || !analyze_in(dest, managers))
                return;
        const char *m = member ? strrchr(member, '.') : NULL;
        m = m ? m + 1 : member;
        if (m && analyze_in(m, power_methods)) {
                analyze_add(ev, k, "floor.power", all, m);
                return;
        }
        for (size_t j = 0; j < nargs; j++) {
                const char *a = args[j].s;
                const char *colon = strchr(a, ':'); /* dbus-send string:reboot.target */
                const char *v = colon ? colon + 1 : a;
                if (analyze_in(v, power_targets)) {
                        analyze_add(ev, k, "floor.power", all, v);
                        return;
                }
                if (daemon_unit(v)) {
                        analyze_add(ev, k, "floor.kill-daemon", all, v);
                        return;
                }
        }
        analyze_add(ev, k, "service.control", all, all);
}

/* busctl call|emit|set-property SERVICE OBJECT INTERFACE METHOD ARGS… */
static int
h_busctl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const verbs[] = {"call", "emit", "set-property", NULL};
        size_t ops[6], no = 0, i;

        for (i = 1; i < ac && no < 6; i++) {
                const char *s = av[i].s;
                if (s[0] == '-') {
                        i += (!strcmp(s, "-H") || !strcmp(s, "-M") || !strcmp(s, "--host") ||
                              !strcmp(s, "--machine")) &&
                             i + 1 < ac;
                        continue;
                }
                ops[no++] = i;
        }
        if (no >= 5 && analyze_in(av[ops[0]].s, verbs))
                dbus_call(ev, k, av[ops[1]].s, av[ops[4]].s, av + ops[4] + 1, ac - ops[4] - 1,
                          analyze_join(ev, av, ac));
        return 0;
}

/* dbus-send [--dest=NAME] OBJECT INTERFACE.MEMBER ARGS… / gdbus call --dest N --method M */
static int
h_dbus_send(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *dest = NULL, *member = NULL;
        size_t first = ac, pos = 0;
        bool gdbus = !strcmp(analyze_base(av[0].s), "gdbus");

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                const char *eq = strchr(s, '=');
                if (!strncmp(s, "--dest", 6) || (gdbus && !strcmp(s, "-d")))
                        dest = eq ? eq + 1 : i + 1 < ac ? av[++i].s : NULL;
                else if (gdbus && (!strncmp(s, "--method", 8) || !strcmp(s, "-m")))
                        member = eq ? eq + 1 : i + 1 < ac ? av[++i].s : NULL;
                else if (gdbus && (!strncmp(s, "--object-path", 13) || !strcmp(s, "-o")))
                        i += !eq;
                else if (s[0] != '-' && !gdbus && ++pos == 2)
                        member = s, first = i + 1;
                else if (s[0] != '-' && gdbus && member && first == ac)
                        first = i;
        }
        dbus_call(ev, k, dest, member, av + (first < ac ? first : ac), first < ac ? ac - first : 0,
                  analyze_join(ev, av, ac));
        return 0;
}

static int
h_loginctl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const kills[] = {"terminate-user",    "kill-user",      "kill-session",
                                            "terminate-session", "terminate-seat", NULL};
        for (size_t i = 1; i < ac; i++) {
                if (analyze_in(av[i].s, kills))
                        analyze_add(ev, k, "proc.kill", analyze_join(ev, av, ac), av[i].s);
                else if (!strcmp(av[i].s, "enable-linger"))
                        analyze_add(ev, k, "write.startup", analyze_join(ev, av, ac), av[i].s);
        }
        return 0;
}

/* ---- disks ---- */

enum disk_target {
        DT_NONE,      /* only files inside the workspace */
        DT_DEVICE,    /* a device, or a word only known at run time */
        DT_ELSEWHERE, /* a regular file outside the workspace */
};

/* What the non-option words of a disk tool name (values of options included: a label that
 * looks like a device is refused too). */
static enum disk_target
disk_words(struct eval *ev, const struct word *av, size_t ac, size_t from, const char **hit)
{
        enum disk_target t = DT_NONE;

        for (size_t i = from; i < ac; i++) {
                const char *s = av[i].s;
                if (analyze_lit(&av[i]) && s[0] == '-')
                        continue;
                const char *eq = strchr(s, '=');
                const char *v = eq && s[0] != '/' ? eq + 1 : s;
                const char *p = analyze_lit(&av[i]) ? paths_resolve(ev, v) : NULL;
                enum devkind d = p ? paths_device(p) : DEV_NONE;
                if (!analyze_lit(&av[i]) || d == DEV_BLOCK || d == DEV_OTHER) {
                        *hit = s;
                        return DT_DEVICE;
                }
                bool path_like = strchr(v, '/') || strchr(v, '.');
                if (path_like && p && !paths_in_workspace(ev, p) && d == DEV_NONE) {
                        t = DT_ELSEWHERE;
                        *hit = s;
                }
        }
        return t;
}

/* Judges a disk tool that changes what its operands hold. */
static void
disk_change(struct eval *ev, int k, const struct word *av, size_t ac, const char *floor)
{
        const char *hit = NULL;
        enum disk_target t = disk_words(ev, av, ac, 1, &hit);

        if (t == DT_DEVICE)
                analyze_add(ev, k, floor, analyze_join(ev, av, ac), hit);
        else if (t == DT_ELSEWHERE)
                analyze_add(ev, k, "disk.file", analyze_join(ev, av, ac), hit);
}

static int
h_mkfs(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++)
                if (!strcmp(av[i].s, "--help") || !strcmp(av[i].s, "-V") ||
                    !strcmp(av[i].s, "--version"))
                        return 0;
        disk_change(ev, k, av, ac, "floor.mkfs");
        return 0;
}

struct disk_tool {
        const char *name;
        const char *const *readonly; /* words that make it only read (options or verbs) */
        const char *const *destroy;  /* verbs that destroy (NULL: any other invocation) */
        const char *floor;
};

static const char *const ro_wipefs[] = {"-n", "--no-act", NULL};
static const char *const ro_sfdisk[] = {
        "-l", "--list",      "-d",     "--dump",    "-J", "--json",
        "-s", "--show-size", "-V",     "--verify",  "-g", "--show-geometry",
        "-F", "--list-free", "--help", "--version", NULL};
static const char *const ro_list[] = {
        "-l",     "--list", "-x", "--list-details", "-p", "--print",   "-v", "--verify", "-i",
        "--info", "print",  "p",  "--help",         "-h", "--version", "-V", NULL};
static const char *const ro_crypt[] = {"status",     "luksDump",  "isLuks",      "benchmark",
                                       "tcryptDump", "bitlkDump", "fvault2Dump", "luksUUID",
                                       "--help",     "--version", NULL};
static const char *const kill_crypt[] = {"luksFormat",   "erase",         "luksErase",  "reencrypt",
                                         "luksKillSlot", "luksRemoveKey", "convert",    "repair",
                                         "tcryptFormat", "luksChangeKey", "luksAddKey", NULL};
static const char *const ro_hdparm[] = {"-I", "-i", "-t", "-T", "-g", "-C", "-H", NULL};
static const char *const kill_hdparm[] = {"--security-erase",     "--security-erase-enhanced",
                                          "--trim-sector-ranges", "--trim-sector-ranges-stdin",
                                          "--write-sector",       "--make-bad-sector",
                                          "--fwdownload",         "--dco-restore",
                                          "--security-set-pass",  NULL};
static const char *const kill_nvme[] = {"format",        "sanitize",    "delete-ns", "detach-ns",
                                        "security-send", "fw-download", "fw-commit", NULL};
static const char *const kill_mdadm[] = {"--create", "-C", "--zero-superblock",
                                         "--build",  "-B", NULL};
static const char *const kill_badblocks[] = {"-w", NULL};
static const char *const kill_dmsetup[] = {"wipe_table", "remove_all", "clear", NULL};
static const char *const kill_zpool[] = {"destroy", "labelclear", "create", NULL};
static const char *const ro_wipe_needs[] = {"-a", "--all", "-o", "--offset", NULL};
static const char *const ro_resize[] = {"-P", NULL};
static const char *const ro_fsck[] = {"-n", "-N", "--help", "-V", NULL};
static const char *const ro_tune[] = {"-l", NULL};
static const char *const kill_debugfs[] = {"-w", NULL};
static const char *const none[] = {NULL};

static const struct disk_tool disk_tools[] = {
        {"badblocks", none, kill_badblocks, "floor.wipe-dev"},
        {"blkdiscard", none, NULL, "floor.wipe-dev"},
        {"cfdisk", ro_list, NULL, "floor.wipe-dev"},
        {"cryptsetup", ro_crypt, kill_crypt, "floor.wipe-dev"},
        {"debugfs", none, kill_debugfs, "floor.wipe-dev"},
        {"dmsetup", none, kill_dmsetup, "floor.wipe-dev"},
        {"e2fsck", ro_fsck, NULL, "sys.admin"},
        {"fdisk", ro_list, NULL, "floor.wipe-dev"},
        {"fsck", ro_fsck, NULL, "sys.admin"},
        {"fsck.ext2", ro_fsck, NULL, "sys.admin"},
        {"fsck.ext3", ro_fsck, NULL, "sys.admin"},
        {"fsck.ext4", ro_fsck, NULL, "sys.admin"},
        {"fsck.fat", ro_fsck, NULL, "sys.admin"},
        {"fsck.vfat", ro_fsck, NULL, "sys.admin"},
        {"gdisk", ro_list, NULL, "floor.wipe-dev"},
        {"hdparm", ro_hdparm, kill_hdparm, "floor.wipe-dev"},
        {"lvremove", none, NULL, "floor.wipe-dev"},
        {"mdadm", none, kill_mdadm, "floor.wipe-dev"},
        {"nvme", none, kill_nvme, "floor.wipe-dev"},
        {"parted", ro_list, NULL, "floor.wipe-dev"},
        {"pvcreate", none, NULL, "floor.wipe-dev"},
        {"pvremove", none, NULL, "floor.wipe-dev"},
        {"resize2fs", ro_resize, NULL, "floor.wipe-dev"}, /* shrinking drops what is beyond */
        {"sfdisk", ro_sfdisk, NULL, "floor.wipe-dev"},
        {"sg_format", none, NULL, "floor.wipe-dev"},
        {"sgdisk", ro_list, NULL, "floor.wipe-dev"},
        {"tune2fs", ro_tune, NULL, "sys.admin"},
        {"vgremove", none, NULL, "floor.wipe-dev"},
        {"wipefs", ro_wipefs, ro_wipe_needs, "floor.wipe-dev"},
        {"xfs_repair", ro_fsck, NULL, "sys.admin"},
        {"zpool", none, kill_zpool, "floor.wipe-dev"},
};

static bool
any_word(const struct word *av, size_t ac, const char *const *list)
{
        for (size_t i = 1; i < ac; i++)
                if (analyze_in(av[i].s, list))
                        return true;
        return false;
}

/* Short option letters of a bundle (-al) count for the read-only and destroy lists. */
static bool
bundle_has(const struct word *av, size_t ac, const char *const *list)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (s[0] != '-' || s[1] == '-' || !s[1] || !s[2])
                        continue;
                for (const char *c = s + 1; *c; c++)
                        for (const char *const *l = list; *l; l++)
                                if ((*l)[0] == '-' && (*l)[1] == *c && !(*l)[2])
                                        return true;
        }
        return false;
}

static int
h_disk(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const struct disk_tool *t = NULL;

        for (size_t j = 0; j < ARRAY_SIZE(disk_tools) && !t; j++)
                if (!strcmp(disk_tools[j].name, n))
                        t = &disk_tools[j];
        if (!t)
                return 0;
        if (any_word(av, ac, t->readonly) || bundle_has(av, ac, t->readonly))
                return 0;
        if (t->destroy && !any_word(av, ac, t->destroy) && !bundle_has(av, ac, t->destroy)) {
                if (!strcmp(n, "cryptsetup") || !strcmp(n, "dmsetup") || !strcmp(n, "mdadm"))
                        analyze_add(ev, k, "sys.admin", analyze_join(ev, av, ac), n);
                return 0;
        }
        if (!strcmp(n, "blkdiscard") || !strcmp(n, "lvremove") || !strcmp(n, "vgremove") ||
            !strcmp(n, "pvremove") || !strcmp(n, "zpool") || !strcmp(n, "dmsetup")) {
                /* these only ever work on devices and volumes */
                analyze_add(ev, k, t->floor, analyze_join(ev, av, ac), n);
                return 0;
        }
        disk_change(ev, k, av, ac, t->floor);
        return 0;
}

static int
h_shred(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *hit = NULL;

        if (disk_words(ev, av, ac, 1, &hit) == DT_DEVICE)
                analyze_add(ev, k, "floor.wipe-dev", analyze_join(ev, av, ac), hit);
        else
                analyze_add(ev, k, "delete.force", analyze_join(ev, av, ac),
                            analyze_join(ev, av + 1, ac - 1));
        return 0;
}

/* ---- administration ---- */

struct admin {
        const char *name;
        const char *const *readonly; /* options or verbs that only read */
        bool need_operands;          /* without operands it only lists */
};

static const char *const ro_mount[] = {"-l", "--show-labels", "-h", "--help", "-V", NULL};
static const char *const ro_passwd[] = {"-S", "--status", "-h", "--help", NULL};
static const char *const ro_chage[] = {"-l", "--list", NULL};
static const char *const ro_visudo[] = {"-c", "--check", NULL};
static const char *const ro_modprobe[] = {"-n",           "--dry-run",       "-c",
                                          "--showconfig", "--show-depends",  "-D",
                                          "-R",           "--resolve-alias", NULL};
static const char *const ro_ipt[] = {"-L",   "--list", "-S",  "--list-rules", "-nL", "-Ln",
                                     "-nvL", "-vnL",   "-vL", "-Lv",          "-h",  "--help",
                                     "-V",   NULL};
static const char *const ro_nft[] = {"list", "-c", "--check", "describe", "monitor", NULL};
static const char *const ro_ufw[] = {"status", "show", "--help", "version", "app", NULL};
static const char *const ro_fw[] = {"--state",
                                    "--list-all",
                                    "--list-all-zones",
                                    "--get-active-zones",
                                    "--get-default-zone",
                                    "--get-zones",
                                    "--list-services",
                                    "--list-ports",
                                    "--help",
                                    NULL};
static const char *const ro_ip[] = {"show", "list", "ls", "get", "monitor",
                                    "help", "lst",  "-s", "-d",  NULL};
static const char *const ro_ctl[] = {"status",
                                     "show",
                                     "list",
                                     "list-timezones",
                                     "list-keymaps",
                                     "list-locales",
                                     "timesync-status",
                                     "show-timesync",
                                     "--help",
                                     NULL};
static const char *const ro_alt[] = {"--display", "--query", "--list", "--get-selections", NULL};
static const char *const ro_ldconfig[] = {"-p", "--print-cache", NULL};
static const char *const ro_swapon[] = {"--show", "-s", "--summary", NULL};
static const char *const ro_none[] = {NULL};

static const struct admin admins[] = {
        {"addgroup", ro_none, true},
        {"adduser", ro_none, true},
        {"apparmor_parser", ro_none, true},
        {"aa-disable", ro_none, true},
        {"aa-complain", ro_none, true},
        {"aa-teardown", ro_none, false},
        {"auditctl", ro_none, true},
        {"chage", ro_chage, true},
        {"chattr", ro_none, true},
        {"chfn", ro_none, false},
        {"chpasswd", ro_none, false},
        {"chsh", ro_none, false},
        {"delgroup", ro_none, true},
        {"deluser", ro_none, true},
        {"depmod", ro_none, false},
        {"ebtables", ro_ipt, false},
        {"firewall-cmd", ro_fw, true},
        {"gpasswd", ro_none, true},
        {"groupadd", ro_none, true},
        {"groupdel", ro_none, true},
        {"groupmod", ro_none, true},
        {"hostnamectl", ro_ctl, true},
        {"hwclock", ro_none, true},
        {"ifdown", ro_none, true},
        {"ifup", ro_none, true},
        {"insmod", ro_none, true},
        {"ip", ro_ip, true},
        {"ip6tables", ro_ipt, false},
        {"ip6tables-restore", ro_none, false},
        {"iptables", ro_ipt, false},
        {"iptables-restore", ro_none, false},
        {"ldconfig", ro_ldconfig, false},
        {"localectl", ro_ctl, true},
        {"losetup", ro_none, true},
        {"mknod", ro_none, true},
        {"modprobe", ro_modprobe, true},
        {"mount", ro_mount, true},
        {"newusers", ro_none, false},
        {"nft", ro_nft, true},
        {"nmcli", ro_ctl, true},
        {"passwd", ro_passwd, false},
        {"rmmod", ro_none, true},
        {"route", ro_none, true},
        {"setcap", ro_none, true},
        {"setenforce", ro_none, true},
        {"swapoff", ro_none, false},
        {"swapon", ro_swapon, false},
        {"sysctl", ro_none, true},
        {"timedatectl", ro_ctl, true},
        {"ufw", ro_ufw, true},
        {"umount", ro_none, true},
        {"update-alternatives", ro_alt, true},
        {"useradd", ro_none, true},
        {"userdel", ro_none, true},
        {"usermod", ro_none, true},
        {"vgcreate", ro_none, true},
        {"lvcreate", ro_none, true},
        {"lvresize", ro_none, true},
        {"lvreduce", ro_none, true},
        {"lvextend", ro_none, true},
        {"vipw", ro_none, false},
        {"visudo", ro_visudo, false},
        {"quotaon", ro_none, true},
        {"quotaoff", ro_none, true},
        {"setquota", ro_none, true},
};

/* sysctl changes only with -w/-p/--system or NAME=VALUE. */
static bool
sysctl_writes(const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (strchr(s, '=') || !strcmp(s, "-w") || !strcmp(s, "--write") ||
                    !strncmp(s, "-p", 2) || !strncmp(s, "--load", 6) || !strcmp(s, "--system"))
                        return true;
        }
        return false;
}

static int
h_admin(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const struct admin *a = NULL;
        size_t ops = 0;

        for (size_t j = 0; j < ARRAY_SIZE(admins) && !a; j++)
                if (!strcmp(admins[j].name, n))
                        a = &admins[j];
        if (!a || any_word(av, ac, a->readonly) || bundle_has(av, ac, a->readonly))
                return 0;
        for (size_t i = 1; i < ac; i++)
                ops += av[i].s[0] != '-';
        if (!strcmp(n, "sysctl") && !sysctl_writes(av, ac))
                return 0;
        if (!strcmp(n, "ip") && ops < 2)
                return 0; /* ip addr, ip route: they only show */
        if (a->need_operands && ops == 0 && strcmp(n, "sysctl"))
                return 0;
        analyze_add(ev, k, "sys.admin", analyze_join(ev, av, ac), analyze_join(ev, av, ac));
        return 0;
}

/* date -s / --set changes the clock. */
static int
h_date(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++)
                if (!strcmp(av[i].s, "-s") || !strncmp(av[i].s, "--set", 5))
                        analyze_add(ev, k, "sys.admin", analyze_join(ev, av, ac), "date --set");
        return 0;
}

/* ---- packages ---- */

static int
h_pkg(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const verbs[] = {"uninstall",  "remove", "rm",  "un", "purge",
                                            "autoremove", "erase",  "del", "r",  NULL};
        const char *n = analyze_base(av[0].s);
        size_t i = 1;

        while (i < ac && av[i].s[0] == '-')
                i++;
        bool rm = (!strcmp(n, "pacman") || !strcmp(n, "dpkg")) &&
                  (any_word(av, ac,
                            (const char *const[]){"-R", "--remove", "-r", "-P", "--purge", NULL}) ||
                   (!strcmp(n, "pacman") && bundle_has(av, ac, (const char *const[]){"-R", NULL})));
        rm = rm ||
             (i < ac && analyze_in(av[i].s, verbs) && strcmp(n, "dpkg") && strcmp(n, "pacman"));
        if (rm)
                analyze_add(ev, k, "pkg.remove", analyze_join(ev, av, ac),
                            analyze_join(ev, av, ac));
        return 0;
}

static const struct cmd cmds[] = {
        {"aa-complain", h_admin},
        {"aa-disable", h_admin},
        {"aa-teardown", h_admin},
        {"addgroup", h_admin},
        {"adduser", h_admin},
        {"apk", h_pkg},
        {"apparmor_parser", h_admin},
        {"apt", h_pkg},
        {"apt-get", h_pkg},
        {"auditctl", h_admin},
        {"badblocks", h_disk},
        {"blkdiscard", h_disk},
        {"brew", h_pkg},
        {"busctl", h_busctl},
        {"cargo", h_pkg},
        {"cfdisk", h_disk},
        {"chage", h_admin},
        {"chattr", h_admin},
        {"chfn", h_admin},
        {"chpasswd", h_admin},
        {"chsh", h_admin},
        {"cryptsetup", h_disk},
        {"date", h_date},
        {"dbus-send", h_dbus_send},
        {"debugfs", h_disk},
        {"delgroup", h_admin},
        {"deluser", h_admin},
        {"depmod", h_admin},
        {"dmsetup", h_disk},
        {"dnf", h_pkg},
        {"dpkg", h_pkg},
        {"e2fsck", h_disk},
        {"ebtables", h_admin},
        {"fdisk", h_disk},
        {"firewall-cmd", h_admin},
        {"fsck", h_disk},
        {"fsck.ext2", h_disk},
        {"fsck.ext3", h_disk},
        {"fsck.ext4", h_disk},
        {"fsck.fat", h_disk},
        {"fsck.vfat", h_disk},
        {"gdbus", h_dbus_send},
        {"gdisk", h_disk},
        {"gem", h_pkg},
        {"gpasswd", h_admin},
        {"groupadd", h_admin},
        {"groupdel", h_admin},
        {"groupmod", h_admin},
        {"halt", h_power},
        {"hdparm", h_disk},
        {"hostnamectl", h_admin},
        {"hwclock", h_admin},
        {"ifdown", h_admin},
        {"ifup", h_admin},
        {"init", h_power},
        {"insmod", h_admin},
        {"ip", h_admin},
        {"ip6tables", h_admin},
        {"ip6tables-restore", h_admin},
        {"iptables", h_admin},
        {"iptables-restore", h_admin},
        {"kexec", h_power},
        {"kill", h_kill},
        {"killall", h_pkill},
        {"killall5", h_pkill},
        {"ldconfig", h_admin},
        {"localectl", h_admin},
        {"loginctl", h_loginctl},
        {"losetup", h_admin},
        {"lvcreate", h_admin},
        {"lvextend", h_admin},
        {"lvreduce", h_admin},
        {"lvremove", h_disk},
        {"lvresize", h_admin},
        {"mdadm", h_disk},
        {"mkdosfs", h_mkfs},
        {"mke2fs", h_mkfs},
        {"mkexfatfs", h_mkfs},
        {"mkfs", h_mkfs},
        {"mknod", h_admin},
        {"mkntfs", h_mkfs},
        {"mkswap", h_mkfs},
        {"mkudffs", h_mkfs},
        {"modprobe", h_admin},
        {"mount", h_admin},
        {"newfs", h_mkfs},
        {"newusers", h_admin},
        {"nft", h_admin},
        {"nmcli", h_admin},
        {"npm", h_pkg},
        {"nvme", h_disk},
        {"pacman", h_pkg},
        {"parted", h_disk},
        {"passwd", h_admin},
        {"pip", h_pkg},
        {"pip3", h_pkg},
        {"pipx", h_pkg},
        {"pkill", h_pkill},
        {"pm-hibernate", h_power},
        {"pm-suspend", h_power},
        {"pnpm", h_pkg},
        {"poweroff", h_power},
        {"pvcreate", h_disk},
        {"pvremove", h_disk},
        {"quotaoff", h_admin},
        {"quotaon", h_admin},
        {"reboot", h_power},
        {"resize2fs", h_disk},
        {"rmmod", h_admin},
        {"route", h_admin},
        {"rtcwake", h_power},
        {"service", h_service},
        {"setcap", h_admin},
        {"setenforce", h_admin},
        {"setquota", h_admin},
        {"sfdisk", h_disk},
        {"sg_format", h_disk},
        {"sgdisk", h_disk},
        {"shred", h_shred},
        {"shutdown", h_power},
        {"swapoff", h_admin},
        {"swapon", h_admin},
        {"sysctl", h_admin},
        {"systemctl", h_systemctl},
        {"telinit", h_power},
        {"timedatectl", h_admin},
        {"tune2fs", h_disk},
        {"ufw", h_admin},
        {"umount", h_admin},
        {"update-alternatives", h_admin},
        {"useradd", h_admin},
        {"userdel", h_admin},
        {"usermod", h_admin},
        {"vgcreate", h_admin},
        {"vgremove", h_disk},
        {"vipw", h_admin},
        {"visudo", h_admin},
        {"wipefs", h_disk},
        {"xfs_repair", h_disk},
        {"yarn", h_pkg},
        {"yum", h_pkg},
        {"zpool", h_disk},
};

const struct cmd_table system_cmds = {cmds, ARRAY_SIZE(cmds)};
