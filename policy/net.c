/* net.c — the network: downloads (and where they are written), remote execution, programs
 * that network tools run (ssh -o ProxyCommand, rsync -e, nc -e, socat EXEC:), container
 * CLIs, and the pass that catches key and credential files leaving over the network.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        O_OTHER = 256,
        O_OUTDIR,
        O_UPLOAD,
        O_DATA,
        O_ASKPASS,
        O_EXEC,
        O_DELETE,
        O_RMSRC,
};

/* ---- curl and wget ---- */

/* The file name a download of url gets: its last path component. */
static const char *
url_base(struct eval *ev, const char *url)
{
        const char *p = strstr(url, "://");
        p = p ? p + 3 : url;
        const char *path = strchr(p, '/');
        if (!path)
                return NULL;
        size_t n = strcspn(path, "?#");
        const char *b = path;
        for (size_t j = 0; j < n; j++)
                if (path[j] == '/')
                        b = path + j + 1;
        size_t l = (size_t) (path + n - b);
        return l ? arena_strndup(&ev->ar, b, l) : NULL;
}

/* A download written under dir (NULL: the cwd) named after the URL. */
static void
write_download(struct eval *ev, int k, const struct word *url, const struct word *dir)
{
        const char *b = analyze_lit(url) ? url_base(ev, url->s) : NULL;

        if (!b)
                return;
        const char *d = dir && analyze_lit(dir) ? dir->s : ".";
        size_t n = strlen(d) + strlen(b) + 2;
        char *s = arena_alloc(&ev->ar, n);
        snprintf(s, n, "%s/%s", d, b);
        struct word w = analyze_word(url, s);
        paths_check_write(ev, k, &w, false);
}

static const struct lopt curl_longs[] = {{"output", OPT_REQ, 'o'},
                                         {"remote-name", OPT_NONE, 'O'},
                                         {"remote-name-all", OPT_NONE, O_OTHER},
                                         {"output-dir", OPT_REQ, O_OUTDIR},
                                         {"upload-file", OPT_REQ, 'T'},
                                         {"data", OPT_REQ, 'd'},
                                         {"data-ascii", OPT_REQ, 'd'},
                                         {"data-binary", OPT_REQ, 'd'},
                                         {"data-raw", OPT_REQ, 'd'},
                                         {"data-urlencode", OPT_REQ, 'd'},
                                         {"json", OPT_REQ, 'd'},
                                         {"form", OPT_REQ, 'F'},
                                         {"form-string", OPT_REQ, 'F'},
                                         {"config", OPT_REQ, 'K'},
                                         {"header", OPT_REQ, 'H'},
                                         {"user", OPT_REQ, 'u'},
                                         {"url", OPT_REQ, O_OTHER},
                                         {"request", OPT_REQ, 'X'},
                                         {"proxy", OPT_REQ, 'x'},
                                         {"cookie", OPT_REQ, 'b'},
                                         {"cookie-jar", OPT_REQ, 'c'},
                                         {"user-agent", OPT_REQ, 'A'},
                                         {"referer", OPT_REQ, 'e'},
                                         {"cert", OPT_REQ, 'E'},
                                         {"key", OPT_REQ, O_OTHER},
                                         {"cacert", OPT_REQ, O_OTHER},
                                         {"max-time", OPT_REQ, 'm'},
                                         {"connect-timeout", OPT_REQ, O_OTHER},
                                         {"retry", OPT_REQ, O_OTHER},
                                         {"range", OPT_REQ, 'r'},
                                         {"write-out", OPT_REQ, 'w'},
                                         {"dump-header", OPT_REQ, 'D'},
                                         {"trace", OPT_REQ, 'D'},
                                         {"trace-ascii", OPT_REQ, 'D'},
                                         {"stderr", OPT_REQ, 'D'},
                                         {"resolve", OPT_REQ, O_OTHER},
                                         {"connect-to", OPT_REQ, O_OTHER},
                                         {"limit-rate", OPT_REQ, O_OTHER},
                                         {"interface", OPT_REQ, O_OTHER},
                                         {"oauth2-bearer", OPT_REQ, O_OTHER},
                                         {"netrc-file", OPT_REQ, O_OTHER},
                                         {"variable", OPT_REQ, O_OTHER},
                                         {"create-dirs", OPT_NONE, O_OTHER},
                                         {"silent", OPT_NONE, 's'},
                                         {"show-error", OPT_NONE, 'S'},
                                         {"fail", OPT_NONE, 'f'},
                                         {"location", OPT_NONE, 'L'},
                                         {"insecure", OPT_NONE, 'k'},
                                         {"compressed", OPT_NONE, O_OTHER},
                                         {"verbose", OPT_NONE, 'v'},
                                         {"include", OPT_NONE, 'i'},
                                         {"head", OPT_NONE, 'I'},
                                         {"get", OPT_NONE, 'G'},
                                         {"netrc", OPT_NONE, 'n'},
                                         {"progress-bar", OPT_NONE, '#'},
                                         {"http1.1", OPT_NONE, O_OTHER},
                                         {"http2", OPT_NONE, O_OTHER},
                                         {"retry-all-errors", OPT_NONE, O_OTHER},
                                         {NULL, 0, 0}};
static const struct optspec curl_spec = {
        "A:b:c:C:d:D:e:E:F:H:K:m:o:r:T:u:U:w:x:X:y:Y:z:Q:t:P:fgGiIjJkLlMnNOpqRsSvVZ012346#",
        curl_longs, 0};

static int
h_curl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct optres r;
        size_t url = 0;

        ev->units[k].net = true;
        opts_parse(ev, &curl_spec, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++) {
                const struct optocc *o = &r.o[j];
                if ((o->id == 'o' || o->id == 'D' || o->id == 'c') && o->val &&
                    strcmp(o->val->s, "-"))
                        paths_check_write(ev, k, o->val, false);
                if (o->id == 'O')
                        for (; url < r.nops; url++)
                                write_download(ev, k, r.ops[url], opts_val(&r, O_OUTDIR));
        }
        return 0;
}

static const struct lopt wget_longs[] = {{"output-document", OPT_REQ, 'O'},
                                         {"directory-prefix", OPT_REQ, 'P'},
                                         {"output-file", OPT_REQ, 'o'},
                                         {"append-output", OPT_REQ, 'a'},
                                         {"post-file", OPT_REQ, O_UPLOAD},
                                         {"body-file", OPT_REQ, O_UPLOAD},
                                         {"post-data", OPT_REQ, O_DATA},
                                         {"body-data", OPT_REQ, O_DATA},
                                         {"input-file", OPT_REQ, 'i'},
                                         {"execute", OPT_REQ, 'e'},
                                         {"config", OPT_REQ, O_OTHER},
                                         {"use-askpass", OPT_OPT, O_ASKPASS},
                                         {"header", OPT_REQ, O_OTHER},
                                         {"user", OPT_REQ, O_OTHER},
                                         {"password", OPT_REQ, O_OTHER},
                                         {"user-agent", OPT_REQ, 'U'},
                                         {"tries", OPT_REQ, 't'},
                                         {"timeout", OPT_REQ, 'T'},
                                         {"quiet", OPT_NONE, 'q'},
                                         {"no-verbose", OPT_NONE, O_OTHER},
                                         {"continue", OPT_NONE, 'c'},
                                         {"recursive", OPT_NONE, 'r'},
                                         {"level", OPT_REQ, 'l'},
                                         {"accept", OPT_REQ, 'A'},
                                         {"reject", OPT_REQ, 'R'},
                                         {"domains", OPT_REQ, 'D'},
                                         {"method", OPT_REQ, O_OTHER},
                                         {"show-progress", OPT_NONE, O_OTHER},
                                         {"no-check-certificate", OPT_NONE, O_OTHER},
                                         {NULL, 0, 0}};
static const struct optspec wget_spec = {"O:P:o:a:i:e:U:t:T:l:A:R:D:qcrNnvbxkKmpSEHFB:", wget_longs,
                                         0};

static int
h_wget(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct optres r;
        const struct word *doc;

        ev->units[k].net = true;
        opts_parse(ev, &wget_spec, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++) {
                const struct optocc *o = &r.o[j];
                if ((o->id == 'o' || o->id == 'a') && o->val)
                        paths_check_write(ev, k, o->val, false);
                if (o->id == O_ASKPASS ||
                    (o->id == 'e' && o->val && strcasestr(o->val->s, "askpass")))
                        analyze_add(ev, k, "exec.embedded", analyze_join(ev, av, ac), "askpass");
        }
        if ((doc = opts_val(&r, 'O'))) {
                if (strcmp(doc->s, "-"))
                        paths_check_write(ev, k, doc, false);
                return 0;
        }
        for (size_t j = 0; j < r.nops; j++)
                write_download(ev, k, r.ops[j], opts_val(&r, 'P'));
        return 0;
}

/* nc/ncat/netcat -e PROG, -c CMD, --lua-exec: a shell on a socket. */
static int
h_nc(struct eval *ev, int k, const struct word *av, size_t ac)
{
        ev->units[k].net = true;
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!strcmp(s, "-e") || !strcmp(s, "-c") || !strncmp(s, "--exec", 6) ||
                    !strncmp(s, "--sh-exec", 9) || !strncmp(s, "--lua-exec", 10) ||
                    (s[0] == '-' && s[1] != '-' && (strchr(s, 'e') || strchr(s, 'c')) &&
                     strlen(s) <= 4 && i + 1 < ac && av[i + 1].s[0] == '/'))
                        analyze_add(ev, k, "exec.embedded", analyze_join(ev, av, ac), s);
        }
        return 0;
}

/* socat ADDRESS ADDRESS: EXEC:cmd and SYSTEM:cmd run programs. */
static int
h_socat(struct eval *ev, int k, const struct word *av, size_t ac)
{
        ev->units[k].net = true;
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!strncasecmp(s, "EXEC:", 5) || !strncasecmp(s, "SYSTEM:", 7)) {
                        const char *cmd = strchr(s, ':') + 1;
                        size_t n = strcspn(cmd, ",");
                        analyze_add(ev, k, "exec.embedded", analyze_join(ev, av, ac), s);
                        struct word w = analyze_word(&av[i], arena_strndup(&ev->ar, cmd, n));
                        carrier_payload(ev, k, &w, "socat");
                }
        }
        return 0;
}

/* openssl s_client / s_time: a TLS connection that sends what it reads (stdin). */
static int
h_openssl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        if (ac > 1 && (!strcmp(av[1].s, "s_client") || !strcmp(av[1].s, "s_time")))
                ev->units[k].net = true;
        return 0;
}

/* Other programs that move data over the network: a name they look up (dig, host, ping)
 * carries data too (dig $(base64 key | head -c 60).example.com). */
static int
h_netsend(struct eval *ev, int k, const struct word *av, size_t ac)
{
        (void) av;
        (void) ac;
        ev->units[k].net = true;
        return 0;
}

/* ---- ssh, scp, sftp, rsync ---- */

static const char *const ssh_cmd_opts[] = {"proxycommand", "localcommand", "knownhostscommand",
                                           "remotecommand", NULL};

/* ssh -o KEY=VALUE / -o "KEY VALUE": the options that run commands. */
static void
ssh_option(struct eval *ev, int k, const struct word *v, const char *all)
{
        const char *s = v->s;
        size_t n = strcspn(s, "= \t");
        char key[32];

        if (n >= sizeof(key))
                return;
        for (size_t j = 0; j < n; j++)
                key[j] = (char) tolower((unsigned char) s[j]);
        key[n] = '\0';
        if (!analyze_in(key, ssh_cmd_opts) && strcmp(key, "permitlocalcommand"))
                return;
        const char *val = s + n;
        while (*val == '=' || *val == ' ' || *val == '\t')
                val++;
        if (!strcasecmp(val, "none") || !strcasecmp(val, "no"))
                return;
        analyze_add(ev, k, strcmp(key, "remotecommand") ? "exec.embedded" : "exec.remote", all, s);
        if (strcmp(key, "permitlocalcommand") && strcmp(key, "remotecommand")) {
                struct word w = analyze_word(v, val);
                carrier_payload(ev, k, &w, "ssh");
        }
}

/* What a remote shell reads on stdin: commands run on that host, judged as shell here. */
static void
ssh_text(struct eval *ev, int k, const char *text, const char *who)
{
        if (!*text)
                return;
        analyze_add(ev, k, "exec.remote", analyze_digest(ev, "ssh", text),
                    analyze_digest(ev, "ssh", text));
        analyze_shell_payload(ev, k, text, "sh", false);
}

static int
h_ssh(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {
                "46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:", NULL,
                OS_STOP | OS_TAIL};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;

        ev->units[k].net = true;
        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == 'o' && r.o[j].val)
                        ssh_option(ev, k, r.o[j].val, all);
        if (opts_val(&r, 'E'))
                paths_check_write(ev, k, opts_val(&r, 'E'), false);
        if (r.nops >= 2) {
                analyze_add(ev, k, "exec.remote", all, analyze_join(ev, r.ops[0], r.nops));
                /* the remote shell runs the words joined (ssh localhost is this machine) */
                struct word w = *r.ops[1];
                w.s = analyze_join(ev, r.ops[1], r.nops - 1);
                for (size_t j = 2; j < r.nops; j++)
                        w.flags |= r.ops[j]->flags & (W_DYN | W_SUB | W_STDIN);
                carrier_payload(ev, k, &w, "ssh");
        }
        /* no command: the remote login shell reads its commands from stdin */
        bool no_stdin = false;
        for (const char *o = "NnWOGVQfs"; *o; o++)
                no_stdin = no_stdin || opts_has(&r, *o);
        if (r.nops == 1 && !no_stdin)
                carrier_stdin_tool(ev, k, "ssh", ssh_text);
        return 0;
}

/* A remote operand of scp / rsync: host:path, user@host:path, rsync://, host::module. */
static bool
is_remote(const char *s)
{
        const char *colon = strchr(s, ':');
        const char *slash = strchr(s, '/');

        return strstr(s, "://") || (colon && (!slash || colon < slash) && colon != s);
}

static int
h_scp(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"346ABCOpqRrsTvc:D:F:i:J:l:o:P:S:X:b:", NULL, 0};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;

        ev->units[k].net = true;
        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == 'o' && r.o[j].val)
                        ssh_option(ev, k, r.o[j].val, all);
        if (opts_has(&r, 'S'))
                analyze_add(ev, k, "exec.embedded", all, "-S");
        if (r.nops >= 2 && !is_remote(r.ops[r.nops - 1]->s) &&
            !strcmp(analyze_base(av[0].s), "scp"))
                paths_check_write(ev, k, r.ops[r.nops - 1], false);
        return 0;
}

static int
h_rsync(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"rsh", OPT_REQ, 'e'},
                                            {"rsync-path", OPT_REQ, O_EXEC},
                                            {"log-file", OPT_REQ, O_OTHER + 100},
                                            {"files-from", OPT_REQ, O_OTHER},
                                            {"exclude", OPT_REQ, O_OTHER},
                                            {"include", OPT_REQ, O_OTHER},
                                            {"exclude-from", OPT_REQ, O_OTHER},
                                            {"include-from", OPT_REQ, O_OTHER},
                                            {"filter", OPT_REQ, 'f'},
                                            {"temp-dir", OPT_REQ, 'T'},
                                            {"partial-dir", OPT_REQ, O_OTHER},
                                            {"backup-dir", OPT_REQ, O_OTHER},
                                            {"suffix", OPT_REQ, O_OTHER},
                                            {"chmod", OPT_REQ, O_OTHER},
                                            {"chown", OPT_REQ, O_OTHER},
                                            {"timeout", OPT_REQ, O_OTHER},
                                            {"port", OPT_REQ, O_OTHER},
                                            {"password-file", OPT_REQ, O_OTHER},
                                            {"bwlimit", OPT_REQ, O_OTHER},
                                            {"max-size", OPT_REQ, O_OTHER},
                                            {"min-size", OPT_REQ, O_OTHER},
                                            {"compare-dest", OPT_REQ, O_OTHER},
                                            {"copy-dest", OPT_REQ, O_OTHER},
                                            {"link-dest", OPT_REQ, O_OTHER},
                                            {"out-format", OPT_REQ, O_OTHER},
                                            {"info", OPT_REQ, O_OTHER},
                                            {"debug", OPT_REQ, O_OTHER},
                                            {"delete", OPT_NONE, O_DELETE},
                                            {"del", OPT_NONE, O_DELETE},
                                            {"delete-before", OPT_NONE, O_DELETE},
                                            {"delete-during", OPT_NONE, O_DELETE},
                                            {"delete-delay", OPT_NONE, O_DELETE},
                                            {"delete-after", OPT_NONE, O_DELETE},
                                            {"delete-excluded", OPT_NONE, O_DELETE},
                                            {"delete-missing-args", OPT_NONE, O_DELETE},
                                            {"remove-source-files", OPT_NONE, O_RMSRC},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"e:f:T:B:M:avrRlLkKHpEogDtSnWxuzcbqihPC0867", longs, 0};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;
        bool remote = false;

        opts_parse(ev, &sp, av, ac, 1, &r);
        const struct word *e = opts_val(&r, 'e');
        if (e && !analyze_lit(e)) {
                analyze_add(ev, k, "exec.embedded", all, e->s);
        } else if (e) {
                /* rsync splits -e into words itself (no shell): judge them as a command */
                struct word v[32];
                size_t n = 0;
                for (const char *p = e->s; *p && n < ARRAY_SIZE(v);) {
                        while (*p == ' ')
                                p++;
                        size_t l = strcspn(p, " ");
                        if (l)
                                v[n++] = analyze_word(e, arena_strndup(&ev->ar, p, l));
                        p += l;
                }
                if (n)
                        analyze_view(ev, k, v, n, 1);
        }
        if (opts_has(&r, O_EXEC))
                analyze_add(ev, k, "exec.remote", all, "--rsync-path");
        if (opts_val(&r, O_OTHER + 100))
                paths_check_write(ev, k, opts_val(&r, O_OTHER + 100), false);
        for (size_t j = 0; j < r.nops; j++)
                remote = remote || is_remote(r.ops[j]->s);
        ev->units[k].net = remote;
        if (r.nops >= 2 && !is_remote(r.ops[r.nops - 1]->s)) {
                const struct word *dest = r.ops[r.nops - 1];
                paths_check_write(ev, k, dest, false);
                /* SRC/ copies what SRC holds into DEST, SRC what it is named */
                for (size_t j = 0; j + 1 < r.nops; j++) {
                        const char *s = r.ops[j]->s;
                        size_t l = strlen(s);
                        fsops_copy_into(ev, k, dest, r.ops[j],
                                        !analyze_lit(r.ops[j]) ||
                                                (l && (s[l - 1] == '/' || !strcmp(s + l - 1, "."))),
                                        all);
                }
        }
        /* --delete* empties the destination of what the source lacks; --remove-source-files
         * deletes every file it sent: both recursive deletes */
        if (opts_has(&r, O_DELETE) && r.nops >= 2 && !is_remote(r.ops[r.nops - 1]->s))
                fsops_delete_tree(ev, k, r.ops[r.nops - 1], all);
        for (size_t j = 0; opts_has(&r, O_RMSRC) && j + 1 < r.nops; j++)
                if (!is_remote(r.ops[j]->s))
                        fsops_delete_tree(ev, k, r.ops[j], all);
        return 0;
}

/* ---- containers and clusters ---- */

static int
h_docker(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {
                "host",      "context", "config", "log-level", "url",     "connection", "identity",
                "tlscacert", "tlscert", "tlskey", "root",      "runroot", NULL};
        size_t i = 1;
        bool podman = !strcmp(analyze_base(av[0].s), "podman");

        while (i < ac && av[i].s[0] == '-') {
                const char *s = av[i].s;
                bool redirect = !strcmp(s, "-H") || !strcmp(s, "-c") || !strncmp(s, "--host", 6) ||
                                !strncmp(s, "--context", 9) || !strncmp(s, "--url", 5) ||
                                !strncmp(s, "--connection", 12) || !strncmp(s, "--remote", 8) ||
                                (podman && !strcmp(s, "-r"));
                if (redirect)
                        analyze_add(ev, k, "docker.daemon-redirect", analyze_join(ev, av, ac), s);
                /* s[1] may be the terminator ("-"): strchr would find it in any string. */
                bool val = (s[1] && s[1] != '-' && strchr("Hcl", s[1]) && s[2] == '\0') ||
                           (s[1] == '-' && !strchr(s, '=') && analyze_in(s + 2, lv));
                i += val ? 2 : 1;
        }
        if (i >= ac)
                return 0;
        if (!strcmp(av[i].s, "context") && i + 1 < ac && !strcmp(av[i + 1].s, "use"))
                analyze_add(ev, k, "docker.daemon-redirect", analyze_join(ev, av, ac),
                            "context use");
        if (!strcmp(av[i].s, "container") && i + 1 < ac)
                i++;
        container_check_cli(ev, k, av + i, ac - i);
        return 0;
}

static int
h_kubectl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const valued[] = {
                "-n",       "--namespace", "--context", "--cluster", "--kubeconfig", "-s",
                "--server", "--token",     "--user",    "--as",      "--as-group",   NULL};
        static const char *const remote[] = {"exec",         "debug", "attach", "cp",
                                             "port-forward", "proxy", NULL};
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (s[0] == '-') {
                        i += analyze_in(s, valued) && !strchr(s, '=');
                        continue;
                }
                if (analyze_in(s, remote))
                        analyze_add(ev, k, "exec.remote", analyze_join(ev, av, ac), s);
                return 0;
        }
        return 0;
}

/* ---- secrets leaving ---- */

/* Programs that read whole directories: a directory holding secrets is a secret for them. */
static const char *const archivers[] = {"tar", "zip",  "7z",   "7za", "cpio",  "rsync", "scp",
                                        "cp",  "gzip", "zstd", "xz",  "bzip2", NULL};

/* find with -exec/-ok: the program reads each file below the start (-exec cat {} +). */
static bool
find_runs(struct eval *ev, const struct unit *u)
{
        if (strcmp(analyze_unit_name(ev, u), "find"))
                return false;
        for (size_t a = 1; a < u->argc; a++)
                if (!strncmp(u->argv[a].s, "-exec", 5) || !strncmp(u->argv[a].s, "-ok", 3))
                        return true;
        return false;
}

/* Tools whose -i names the identity they log in with. */
static const char *const ssh_family[] = {"ssh", "scp", "sftp", "ssh-copy-id", NULL};

/* The secret one word names: file, @file, <file, name=@file, --opt=file. */
static const char *
word_secret(struct eval *ev, const struct word *w, bool ancestor)
{
        const char *s = w->s;

        if (!analyze_lit(w) || !*s)
                return NULL;
        const char *at = strstr(s, "=@");
        const char *lt = strstr(s, "=<");
        if (at || lt)
                s = (at ? at : lt) + 2;
        else if (s[0] == '-' && strchr(s, '='))
                s = strchr(s, '=') + 1;
        else if (!strncmp(s, "if=", 3))
                s += 3;
        return paths_secret(ev, s, ancestor);
}

/* Commands whose output is a credential: the program, then words that must follow it (in
 * order, other words between them allowed). */
static const char *const secret_cmds[][4] = {
        {"gpg", "--export-secret-keys"},
        {"gpg", "--export-secret-subkeys"},
        {"gpg2", "--export-secret-keys"},
        {"gcloud", "auth", "print-access-token"},
        {"gcloud", "auth", "print-identity-token"},
        {"aws", "sts", "get-session-token"},
        {"aws", "sts", "assume-role"},
        {"aws", "ecr", "get-login-password"},
        {"aws", "configure", "get"},
        {"aws", "configure", "export-credentials"},
        {"az", "account", "get-access-token"},
        {"gh", "auth", "token"},
        {"git", "credential", "fill"},
        {"kubectl", "config", "view", "--raw"},
        {"kubectl", "create", "token"},
        {"pass", "show"},
        {"vault", "read"},
        {"vault", "kv", "get"},
        {"op", "read"},
        {"security", "find-generic-password"},
        {"security", "find-internet-password"},
        {"docker-credential-secretservice", "get"},
        {"docker-credential-pass", "get"},
        {"docker-credential-desktop", "get"},

        {"openssl", "pkey"},
};

/* The credential command unit u runs (its output is the secret), or NULL. */
static const char *
secret_command(struct eval *ev, const struct unit *u)
{
        for (size_t c = 0; c < ARRAY_SIZE(secret_cmds); c++)
                if (analyze_has_words(u->argv, u->argc, secret_cmds[c], ARRAY_SIZE(secret_cmds[c])))
                        return analyze_join(ev, u->argv, u->argc);
        return NULL;
}

/* A key or credential file unit j reads (argument or stdin redirection). */
static const char *
unit_secret(struct eval *ev, int j)
{
        struct unit *u = &ev->units[j];
        bool anc = u->argc > 0 &&
                   (analyze_in(analyze_unit_name(ev, u), archivers) || find_runs(ev, u));

        bool ssh = u->argc > 0 && analyze_in(analyze_unit_name(ev, u), ssh_family);

        if (u->secret)
                return u->secret;
        if ((u->secret = secret_command(ev, u)))
                return u->secret;
        for (size_t a = 1; a < u->argc && !u->secret; a++) {
                const char *s = u->argv[a].s;
                if (ssh && !strcmp(s, "-i")) {
                        a++; /* the identity ssh authenticates with, not data it sends */
                        continue;
                }
                if (strchr(s, ' ') || (ssh && !strncmp(s, "-i", 2)))
                        continue;
                u->secret = word_secret(ev, &u->argv[a], anc);
        }
        for (size_t r = 0; r < u->nredir && !u->secret; r++)
                if (u->redir[r].kind == RD_IN)
                        u->secret = word_secret(ev, &u->redir[r].target, false);
        return u->secret;
}

static const char *word_taint(struct eval *ev, const struct word *w, size_t below);

/* The secret a variable named s[0..n) carries: a definition before vars[below] assigned from
 * a word whose substitutions read one, or from another such variable (taints_compute). */
static const char *
var_taint(struct eval *ev, const char *s, size_t n, size_t below)
{
        for (size_t j = MIN(below, ev->nvars); j-- > 0;) {
                const struct var *v = &ev->vars[j];
                if (strlen(v->name) == n && !memcmp(v->name, s, n) && ev->vtaint[j] &&
                    *ev->vtaint[j])
                        return ev->vtaint[j];
        }
        return NULL;
}

/* The secret a word carries: a substitution in it that reads one, or a tainted $VAR. */
static const char *
word_taint(struct eval *ev, const struct word *w, size_t below)
{
        const char *t;

        for (int j = w->sub_lo; (w->flags & W_SUB) && j < w->sub_hi && j < (int) ev->nunits; j++)
                if ((t = unit_secret(ev, j)))
                        return t;
        for (const char *d = strchr(w->s, '$'); (w->flags & W_DYN) && d; d = strchr(d + 1, '$')) {
                const char *nm = d + 1 + (d[1] == '{');
                size_t n = 0;
                while (nm[n] && (isalnum((unsigned char) nm[n]) || nm[n] == '_'))
                        n++;
                if (n && (t = var_taint(ev, nm, n, below)))
                        return t;
        }
        return NULL;
}

/* What every script variable carries, in assignment order (each depends only on earlier
 * ones, so chains and cycles like j=$k; k=$j cost one pass). */
static void
taints_compute(struct eval *ev)
{
        free(ev->vtaint);
        ev->vtaint = xcalloc(ev->nvars + 1, sizeof(*ev->vtaint));
        for (size_t j = 0; j < ev->nvars; j++) {
                const struct var *v = &ev->vars[j];
                const char *t = NULL;
                if (v->from_unit >= 0) /* read k < ~/.aws/credentials */
                        t = unit_secret(ev, v->from_unit);
                if (!t && v->from.s)
                        t = word_taint(ev, &v->from, j);
                ev->vtaint[j] = t ? t : "";
        }
}

/* A secret unit j reads, or carries in a variable assigned from one (k=$(cat key)). */
static const char *
unit_leak(struct eval *ev, int j)
{
        const struct unit *u = &ev->units[j];
        const char *t = unit_secret(ev, j);

        for (size_t a = 0; !t && a < u->argc; a++)
                t = word_taint(ev, &u->argv[a], u->var_hi);
        for (size_t r = 0; !t && r < u->nredir; r++)
                t = word_taint(ev, &u->redir[r].target, u->var_hi);
        return t;
}

static void
exfil(struct eval *ev, int k, const char *secret)
{
        const struct unit *u = &ev->units[k];
        const char *who = u->argc ? analyze_base(u->argv[0].s) : "a network write";
        size_t n = strlen(secret) + strlen(who) + 8;
        char *subj = arena_alloc(&ev->ar, n);

        snprintf(subj, n, "%s -> %s", secret, who);
        analyze_add(ev, k, "net.secret-exfil", subj, subj);
}

static void
ftaint_add(struct eval *ev, const struct word *w)
{
        const char *p = analyze_lit(w) ? paths_resolve(ev, w->s) : NULL;

        if (!p || ev->nftaint >= 256)
                return;
        arena_grow(&ev->ar, (void **) &ev->ftaint, &ev->ftaintcap, ev->nftaint, sizeof(char *));
        ev->ftaint[ev->nftaint++] = p;
}

/* The files unit k writes what it read into, when that is a secret: its > redirections,
 * tee's operands, dd of=, and the destination of cp/mv/install/rsync (also DEST/SRC). */
static void
ftaint_outputs(struct eval *ev, int k)
{
        static const char *const copiers[] = {"cp", "mv", "install", "rsync", NULL};
        const struct unit *u = &ev->units[k];
        const char *n = u->argc ? analyze_unit_name(ev, u) : "";
        bool fed = u->pipe_prev >= 0 && unit_secret(ev, u->pipe_prev);

        if (!unit_secret(ev, k) && !fed)
                return;
        for (size_t r = 0; r < u->nredir; r++)
                if (u->redir[r].kind == RD_OUT)
                        ftaint_add(ev, &u->redir[r].target);
        for (size_t a = 1; a < u->argc; a++) {
                const struct word *w = &u->argv[a];
                if (!strcmp(n, "tee") && w->s[0] != '-')
                        ftaint_add(ev, w);
                else if (!strcmp(n, "dd") && !strncmp(w->s, "of=", 3))
                        ftaint_add(ev, &(struct word){.s = w->s + 3, .flags = w->flags});
        }
        if (!analyze_in(n, copiers) || u->argc < 3)
                return;
        const struct word *dest = &u->argv[u->argc - 1];
        ftaint_add(ev, dest);
        for (size_t a = 1; a + 1 < u->argc && analyze_lit(dest); a++) {
                if (u->argv[a].s[0] == '-')
                        continue;
                char *s = xasprintf("%s/%s", dest->s, analyze_base(u->argv[a].s));
                ftaint_add(ev, &(struct word){.s = arena_strdup(&ev->ar, s)});
                free(s);
        }
}

/* Whole-command pass: a secret read by a unit whose data reaches a network tool. */
void
net_exfil_pass(struct eval *ev)
{
        for (size_t k = 0; k < ev->nunits; k++)
                ftaint_outputs(ev, (int) k);
        taints_compute(ev);
        for (size_t k = 0; k < ev->nunits; k++) {
                const struct unit *u = &ev->units[k];
                const char *s;
                if (!u->net)
                        continue;
                if ((s = unit_leak(ev, (int) k))) {
                        exfil(ev, (int) k, s);
                        continue;
                }
                int up = u->pipe_prev >= 0 ? u->pipe_prev : u->fed_by;
                for (int n = 0; up >= 0 && n < 64; up = ev->units[up].pipe_prev, n++) {
                        if ((s = unit_leak(ev, up))) {
                                exfil(ev, (int) k, s);
                                break;
                        }
                }
                for (size_t a = 0; a < u->argc; a++) {
                        const struct word *w = &u->argv[a];
                        for (int j = w->sub_lo;
                             (w->flags & W_SUB) && j < w->sub_hi && j < (int) ev->nunits; j++)
                                if ((s = unit_leak(ev, j))) {
                                        exfil(ev, (int) k, s);
                                        break;
                                }
                }
        }
}

static const struct cmd cmds[] = {
        {"aria2c", h_netsend},    {"axel", h_netsend},       {"curl", h_curl},
        {"curlie", h_netsend},    {"dig", h_netsend},        {"docker", h_docker},
        {"drill", h_netsend},     {"ftp", h_netsend},        {"grpcurl", h_netsend},
        {"host", h_netsend},      {"hping3", h_netsend},     {"http", h_netsend},
        {"https", h_netsend},     {"kubectl", h_kubectl},    {"lftp", h_netsend},
        {"mail", h_netsend},      {"mailx", h_netsend},      {"mosquitto_pub", h_netsend},
        {"mtr", h_netsend},       {"mutt", h_netsend},       {"nc", h_nc},
        {"ncat", h_nc},           {"nerdctl", h_docker},     {"netcat", h_nc},
        {"nmap", h_netsend},      {"nping", h_netsend},      {"nslookup", h_netsend},
        {"openssl", h_openssl},   {"ping", h_netsend},       {"ping6", h_netsend},
        {"podman", h_docker},     {"redis-cli", h_netsend},  {"rsync", h_rsync},
        {"scp", h_scp},           {"sendmail", h_netsend},   {"sftp", h_scp},
        {"smbclient", h_netsend}, {"socat", h_socat},        {"ssh", h_ssh},
        {"swaks", h_netsend},     {"telnet", h_netsend},     {"tftp", h_netsend},
        {"tracepath", h_netsend}, {"traceroute", h_netsend}, {"websocat", h_netsend},
        {"wget", h_wget},         {"whois", h_netsend},      {"wscat", h_netsend},
        {"xh", h_netsend},
};

const struct cmd_table net_cmds = {cmds, ARRAY_SIZE(cmds)};
