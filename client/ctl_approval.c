/* ctl_approval.c — the terminal prompt for approval.request. */
#include "client/ctl_approval.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "client/ctl_util.h"

#define CTL_APPROVAL_DEFAULT_MS 60000
#define CTL_APPROVAL_MAX_MS     3600000
#define CTL_APPROVAL_TRIES      5
#define CTL_APPROVAL_SHOW_MAX   4096 /* bytes of a command or spec shown */

static const char *const ctl_approval_choices[] = {"once", "session", "always", "deny"};

static json_t *
ctl_approval_result(const char *decision, const char *reason)
{
        json_t *r = json_pack("{s:s}", "decision", decision);

        if (reason)
                json_object_set_new(r, "reason", json_string(reason));
        return r;
}

/* Writes s escaped for the terminal, after a label. */
static void
ctl_approval_show(int tty, const char *label, const char *s)
{
        char *e;

        if (!s)
                return;
        e = ctl_util_escape(s, CTL_APPROVAL_SHOW_MAX);
        dprintf(tty, "  %-9s %s\n", label, e);
        free(e);
}

static void
ctl_approval_show_findings(int tty, json_t *findings)
{
        size_t i;
        json_t *f;

        json_array_foreach(findings, i, f)
        {
                char *line = xasprintf("[%s] %s: %s%s%s%s", ctl_util_str(f, "verdict", "?"),
                                       ctl_util_str(f, "rule", "?"), ctl_util_str(f, "message", ""),
                                       json_object_get(f, "match") ? " (match: " : "",
                                       ctl_util_str(f, "match", ""),
                                       json_object_get(f, "match") ? ")" : "");
                ctl_approval_show(tty, "finding:", line);
                free(line);
        }
}

static void
ctl_approval_show_request(int tty, json_t *p)
{
        const char *kind = ctl_util_str(p, "kind", "exec");
        char *spec = NULL;

        dprintf(tty, "\nsandboxd asks for approval (%s)\n",
                strcmp(kind, "sandbox") == 0 ? "create a sandbox" : "run a command");
        ctl_approval_show(tty, "sandbox:", ctl_util_str(p, "sandbox", NULL));
        ctl_approval_show(tty, "backend:", ctl_util_str(p, "backend", NULL));
        ctl_approval_show(tty, "command:", ctl_util_str(p, "command", NULL));
        ctl_approval_show(tty, "cwd:", ctl_util_str(p, "cwd", NULL));
        if (json_object_get(p, "spec"))
                spec = json_dumps(json_object_get(p, "spec"), JSON_COMPACT | JSON_ENCODE_ANY);
        ctl_approval_show(tty, "spec:", spec);
        free(spec);
        ctl_approval_show_findings(tty, json_object_get(p, "findings"));
}

/* Offered choices in protocol order; "deny" is always possible. Returns how many. */
static size_t
ctl_approval_offered(json_t *p, const char **out)
{
        json_t *choices = json_object_get(p, "choices");
        size_t n = 0;

        for (size_t i = 0; i < ARRAY_SIZE(ctl_approval_choices); i++) {
                const char *c = ctl_approval_choices[i];
                bool ok = !json_is_array(choices) || strcmp(c, "deny") == 0;
                size_t j;
                json_t *v;
                json_array_foreach(choices, j,
                                   v) if (json_is_string(v) && strcmp(json_string_value(v), c) == 0)
                        ok = true;
                if (ok)
                        out[n++] = c;
        }
        return n;
}

/* Matches an answer against the offered choices by name or first letter. */
static const char *
ctl_approval_match(char *line, const char **offered, size_t n)
{
        char *s = line, *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        for (char *q = s; *q; q++)
                *q = (char) tolower((unsigned char) *q);
        for (size_t i = 0; *s && i < n; i++)
                if (strcmp(s, offered[i]) == 0 || (s[1] == '\0' && s[0] == offered[i][0]))
                        return offered[i];
        return NULL;
}

/* Reads one line from the terminal until deadline; 1 line read, 0 expired, -1 end of input. */
static int
ctl_approval_read_line(int tty, uint64_t deadline, char *line, size_t size)
{
        uint64_t now = util_now_ms();
        struct pollfd pfd = {.fd = tty, .events = POLLIN};
        ssize_t n;

        if (now >= deadline || poll(&pfd, 1, (int) (deadline - now)) == 0)
                return 0;
        n = read(tty, line, size - 1);
        if (n <= 0)
                return n < 0 && errno == EINTR ? 1 : -1;
        line[n] = '\0';
        return 1;
}

static void
ctl_approval_prompt(int tty, const char **offered, size_t n, uint64_t deadline)
{
        uint64_t now = util_now_ms();

        dprintf(tty, "Approve? ");
        for (size_t i = 0; i < n; i++)
                dprintf(tty, "%s[%c]%s", i ? " / " : "", offered[i][0], offered[i] + 1);
        dprintf(tty, " (%llus left): ",
                (unsigned long long) (deadline > now ? (deadline - now + 999) / 1000 : 0));
}

static json_t *
ctl_approval_ask(int tty, json_t *p)
{
        json_t *exp = json_object_get(p, "expires_in_ms");
        json_int_t ms = json_is_integer(exp) ? json_integer_value(exp) : CTL_APPROVAL_DEFAULT_MS;
        uint64_t deadline = util_now_ms() + (uint64_t) MIN(MAX(ms, 0), CTL_APPROVAL_MAX_MS);
        const char *offered[ARRAY_SIZE(ctl_approval_choices)], *pick;
        size_t n = ctl_approval_offered(p, offered);
        char line[256];

        ctl_approval_show_request(tty, p);
        for (int tries = 0; tries < CTL_APPROVAL_TRIES; tries++) {
                ctl_approval_prompt(tty, offered, n, deadline);
                int rc = ctl_approval_read_line(tty, deadline, line, sizeof(line));
                if (rc == 0) {
                        dprintf(tty, "\nno answer in time: denied\n");
                        return ctl_approval_result("deny", "no answer in time");
                }
                if (rc < 0) {
                        dprintf(tty, "\nend of input: denied\n");
                        return ctl_approval_result("deny", "end of terminal input");
                }
                if ((pick = ctl_approval_match(line, offered, n)) != NULL)
                        return ctl_approval_result(pick, "answered on the terminal");
                dprintf(tty, "please answer one of the choices shown\n");
        }
        return ctl_approval_result("deny", "no valid answer");
}

/* The terminal prompt; deny without a terminal. */
json_t *
ctl_approval_answer(json_t *params)
{
        int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        struct termios saved, t;
        bool restore = false;
        json_t *r;

        if (tty < 0) {
                char *cmd = ctl_util_escape(ctl_util_str(params, "command", "(sandbox)"), 200);
                fprintf(stderr, "sandboxctl: approval needed for %s; no terminal to ask: denied\n",
                        cmd);
                free(cmd);
                return ctl_approval_result("deny", "no terminal");
        }
        /* The terminal may be in raw mode (an interactive --pty exec): ask in line mode. */
        if (tcgetattr(tty, &saved) == 0) {
                t = saved;
                t.c_lflag |= ICANON | ECHO | ISIG;
                t.c_iflag |= ICRNL;
                t.c_oflag |= OPOST;
                restore = tcsetattr(tty, TCSAFLUSH, &t) == 0;
        }
        r = ctl_approval_ask(tty, params);
        if (restore)
                tcsetattr(tty, TCSAFLUSH, &saved);
        close(tty);
        return r;
}
