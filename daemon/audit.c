/* audit.c — the hash-chained, size-rotated JSON-lines audit log, and its redaction of secrets.
 *
 * Line format: the record as compact JSON whose last member is "hash"; hash is the hex SHA-256
 * of the line's bytes before `,"hash":` (so it covers "prev", the hash of the line before).
 * contrib/audit-verify.py checks a directory of these files. */
#include "daemon/audit.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "policy/policy.h"
#include "protocol/util.h"

#define AUDIT_TAIL_READ   (256 * 1024) /* enough for the last line (records are bounded) */
#define AUDIT_MAX_KEEP    1000
#define AUDIT_REDACT_NEST 4 /* quoted payloads redacted recursively this deep */
#define AUDIT_MAX_ARGV    256
#define AUDIT_MAX_MOUNTS  64
#define AUDIT_MAX_NAMES   128
#define AUDIT_GENESIS     "0000000000000000000000000000000000000000000000000000000000000000"

static struct {
        int fd;
        char *dir;
        char *path;
        uint64_t size;
        uint64_t max_bytes;
        unsigned keep;
        uint64_t seq;
        char prev[65];
        bool failing; /* a write failed and was logged; logged again only after a success */
        uint64_t errors;
} audit = {.fd = -1, .prev = AUDIT_GENESIS};

/* Words that make a variable or option name secret (matched case-insensitively inside it). */
static const char *const audit_secret_words[] = {
        "token", "secret", "password", "passwd", "passphrase", "key", "credential", "auth", NULL};
/* Header names whose value is a credential. */
static const char *const audit_headers[] = {
        "authorization:", "cookie:", "x-api-key:", "x-auth-token:", "private-token:", NULL};
/* Authorization schemes whose following token is a credential (Basic only before something
 * that looks like base64, so that prose such as "basic usage" stays). */
static const char *const audit_schemes[] = {"bearer ", "basic ", NULL};

/* ---- redaction ---- */

struct redact_state {
        bool next_secret; /* previous word was --secret-option: this word is its value */
        bool next_user;   /* previous word was -u / --user: redact after the colon */
};

static char *audit_redact_text(const char *s, size_t n, int depth);

static bool
audit_name_secret(const char *name, size_t n)
{
        char low[128];

        if (n == 0 || n >= sizeof(low))
                return n >= sizeof(low);
        for (size_t i = 0; i < n; i++)
                low[i] = (char) tolower((unsigned char) name[i]);
        low[n] = '\0';
        for (const char *const *w = audit_secret_words; *w; w++)
                if (strstr(low, *w))
                        return true;
        return false;
}

/* Replaces bytes [from, to) of *s by "***"; returns the index just after the replacement. */
static size_t
audit_splice(char **s, size_t from, size_t to)
{
        char *n = xasprintf("%.*s***%s", (int) from, *s, *s + to);

        free(*s);
        *s = n;
        return from + 3;
}

static bool
audit_is_end(char c)
{
        return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'';
}

/* Header values: from after the colon to the next quote (or the end of the word). */
static void
audit_redact_headers(char **s)
{
        for (const char *const *h = audit_headers; *h; h++) {
                size_t from = 0;
                char *hit;
                while ((hit = strcasestr(*s + from, *h))) {
                        size_t v = (size_t) (hit - *s) + strlen(*h), e;
                        while ((*s)[v] == ' ' || (*s)[v] == '\t')
                                v++;
                        for (e = v; (*s)[e] && (*s)[e] != '"' && (*s)[e] != '\''; e++)
                                ;
                        from = e > v ? audit_splice(s, v, e) : e;
                }
        }
}

static bool
audit_scheme_token(const char *scheme, const char *v, size_t n)
{
        if (n == 0 || (n == 3 && !strncmp(v, "***", 3)))
                return false;
        if (strcmp(scheme, "basic "))
                return true;
        return n >= 8 && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789+/=") >= n;
}

/* "Bearer TOKEN", "Basic BASE64": the token up to a blank or a quote. */
static void
audit_redact_schemes(char **s)
{
        for (const char *const *h = audit_schemes; *h; h++) {
                size_t from = 0;
                char *hit;
                while ((hit = strcasestr(*s + from, *h))) {
                        size_t v = (size_t) (hit - *s) + strlen(*h), e;
                        for (e = v; !audit_is_end((*s)[e]); e++)
                                ;
                        if (audit_scheme_token(*h, *s + v, e - v))
                                from = audit_splice(s, v, e);
                        else
                                from = e;
                }
        }
}

/* scheme://user:PASSWORD@host */
static void
audit_redact_urls(char **s)
{
        size_t from = 0;
        char *hit;

        while ((hit = strstr(*s + from, "://"))) {
                size_t a = (size_t) (hit - *s) + 3, e, at = 0, colon = 0;
                for (e = a; !audit_is_end((*s)[e]) && !strchr("/?#", (*s)[e]); e++) {
                        if ((*s)[e] == '@')
                                at = e;
                        else if ((*s)[e] == ':' && !colon && !at)
                                colon = e;
                }
                if (at && colon && colon < at && strncmp(*s + colon + 1, "***@", 4))
                        from = audit_splice(s, colon + 1, at) + 1;
                else
                        from = e;
        }
}

/* NAME=value, -NAME=value, --NAME=value at the start of the word with a secret NAME. */
static void
audit_redact_assignment(char **s)
{
        size_t i = 0, name;

        while (i < 2 && (*s)[i] == '-')
                i++;
        name = i;
        while (isalnum((unsigned char) (*s)[i]) || (*s)[i] == '_' || (*s)[i] == '-' ||
               (*s)[i] == '.')
                i++;
        if ((*s)[i] == '=' && i > name && audit_name_secret(*s + name, i - name) && (*s)[i + 1])
                audit_splice(s, i + 1, strlen(*s));
}

/* Sets the state for the next word from this (original) word. */
static void
audit_redact_flags(const char *w, size_t n, struct redact_state *st)
{
        st->next_user = (n == 2 && !strncmp(w, "-u", 2)) || (n == 6 && !strncmp(w, "--user", 6));
        st->next_secret = n > 2 && !strncmp(w, "--", 2) && !memchr(w, '=', n) &&
                          audit_name_secret(w + 2, n - 2);
}

/* One word (raw shell text, quotes included) into out. */
static void
audit_redact_word(const char *w, size_t n, struct redact_state *st, int depth, struct buf *out)
{
        char *s;
        const char *colon;
        size_t len;

        if (st->next_secret && n && w[0] != '-') {
                st->next_secret = false;
                buf_append(out, "***", 3);
                return;
        }
        if (st->next_user && (colon = memchr(w, ':', n))) {
                st->next_user = false;
                buf_append(out, w, (size_t) (colon - w) + 1);
                buf_append(out, "***", 3);
                return;
        }
        s = xstrndup(w, n);
        audit_redact_headers(&s);
        audit_redact_schemes(&s);
        audit_redact_urls(&s);
        audit_redact_assignment(&s);
        len = strlen(s);
        if (depth < AUDIT_REDACT_NEST && len >= 2 && (s[0] == '"' || s[0] == '\'') &&
            s[len - 1] == s[0]) {
                char *inner = audit_redact_text(s + 1, len - 2, depth + 1);
                buf_appendf(out, "%c%s%c", s[0], inner, s[0]);
                free(inner);
        } else {
                buf_append(out, s, len);
        }
        free(s);
        audit_redact_flags(w, n, st);
}

/* Length of the word at s (quote-aware, like the shell's token boundaries). */
static size_t
audit_word_len(const char *s, size_t n)
{
        char q = 0;
        size_t i;

        for (i = 0; i < n; i++) {
                char c = s[i];
                if (q) {
                        if (c == q)
                                q = 0;
                        else if (c == '\\' && q == '"' && i + 1 < n)
                                i++;
                } else if (c == '\'' || c == '"') {
                        q = c;
                } else if (c == '\\' && i + 1 < n) {
                        i++;
                } else if (strchr(" \t\n;&|()<>", c)) {
                        break;
                }
        }
        return i;
}

static char *
audit_redact_text(const char *s, size_t n, int depth)
{
        struct buf out = {0};
        struct redact_state st = {false, false};
        size_t i = 0;

        while (i < n) {
                size_t w = audit_word_len(s + i, n - i);
                if (w == 0) {
                        buf_append(&out, s + i, 1);
                        if (s[i] != ' ' && s[i] != '\t')
                                st.next_secret = st.next_user = false;
                        i++;
                        continue;
                }
                audit_redact_word(s + i, w, &st, depth, &out);
                i += w;
        }
        buf_append(&out, "", 1);
        return out.data;
}

/* Length of at most max bytes of s that ends on a UTF-8 character boundary. */
static size_t
audit_cut(const char *s, size_t max)
{
        size_t n = strlen(s);

        if (n <= max)
                return n;
        while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
                max--;
        return max;
}

/* Redacted copy of a shell command, cut to AUDIT_MAX_TEXT bytes. */
char *
audit_redact_command(const char *command)
{
        return audit_redact_text(command, audit_cut(command, AUDIT_MAX_TEXT), 0);
}

/* Redacted copy of an argv array; elements with blanks are judged as shell text. */
json_t *
audit_redact_argv(json_t *argv)
{
        json_t *a = json_array(), *v;
        struct redact_state st = {false, false};
        size_t i, budget = AUDIT_MAX_TEXT;

        json_array_foreach(argv, i, v)
        {
                const char *s = json_string_value(v);
                size_t n;
                struct buf out = {0};
                if (!s)
                        continue;
                if (i >= AUDIT_MAX_ARGV || budget == 0) {
                        json_array_append_new(
                                a, json_sprintf("(%zu more)", json_array_size(argv) - i));
                        break;
                }
                n = audit_cut(s, budget);
                budget -= n;
                if (strpbrk(s, " \t\n")) {
                        /* One argument: a header value runs to its end. */
                        char *c = xstrndup(s, n), *r;
                        audit_redact_headers(&c);
                        audit_redact_schemes(&c);
                        r = audit_redact_text(c, strlen(c), 1);
                        buf_append(&out, r, strlen(r));
                        free(r);
                        free(c);
                        st.next_secret = st.next_user = false;
                } else {
                        audit_redact_word(s, n, &st, AUDIT_REDACT_NEST, &out);
                }
                json_array_append_new(a, json_stringn(out.data ? out.data : "", out.len));
                buf_free(&out);
        }
        return a;
}

static json_t *
audit_names(json_t *obj)
{
        json_t *a = json_array(), *v;
        const char *k;

        json_object_foreach(obj, k, v)
        {
                if (json_array_size(a) >= AUDIT_MAX_NAMES)
                        break;
                json_array_append_new(a, json_string(k));
        }
        return a;
}

/* Summary of a sandbox.create spec: no env values, no backend credentials. */
json_t *
audit_spec_summary(json_t *spec)
{
        static const char *const keys[] = {"backend", "name", "image", "workdir", "network", NULL};
        json_t *s = json_object(), *mounts = json_array(), *m, *env, *hc;
        size_t i;

        for (const char *const *k = keys; *k; k++)
                if (json_is_string(json_object_get(spec, *k)))
                        json_object_set(s, *k, json_object_get(spec, *k));
        json_array_foreach(json_object_get(spec, "mounts"), i, m)
        {
                json_t *e = json_object();
                static const char *const mk[] = {"type", "source", "target", "readonly", NULL};
                if (i >= AUDIT_MAX_MOUNTS)
                        break;
                for (const char *const *k = mk; *k; k++)
                        if (json_object_get(m, *k))
                                json_object_set(e, *k, json_object_get(m, *k));
                json_array_append_new(mounts, e);
        }
        json_object_set_new(s, "mounts", mounts);
        env = json_object_get(spec, "env");
        if (json_object_size(env))
                json_object_set_new(s, "env_names", audit_names(env));
        hc = json_object_get(json_object_get(spec, "docker"), "host_config");
        if (json_is_object(hc))
                json_object_set_new(s, "host_config_keys", audit_names(hc));
        return s;
}

/* ---- the log file ---- */

/* Continues the chain from the last complete line of path; false when there is none. */
static bool
audit_recover_from(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        char *tail, *line, *end;
        off_t off;
        ssize_t n;
        bool ok = false;

        if (fd < 0)
                return false;
        if (fstat(fd, &st) < 0 || st.st_size == 0) {
                close(fd);
                return false;
        }
        off = st.st_size > AUDIT_TAIL_READ ? st.st_size - AUDIT_TAIL_READ : 0;
        tail = xmalloc(AUDIT_TAIL_READ + 1);
        n = pread(fd, tail, AUDIT_TAIL_READ, off);
        close(fd);
        if (n <= 0) {
                free(tail);
                return false;
        }
        tail[n] = '\0';
        /* The last line that ends with a newline and parses; a torn last write is skipped. */
        for (end = strrchr(tail, '\n'); end && !ok; end = line > tail ? line - 1 : NULL) {
                json_t *rec, *h;
                *end = '\0';
                line = strrchr(tail, '\n');
                line = line ? line + 1 : tail;
                rec = json_loads(line, 0, NULL);
                h = json_object_get(rec, "hash");
                if (json_is_string(h) && strlen(json_string_value(h)) == 64 &&
                    json_is_integer(json_object_get(rec, "seq"))) {
                        memcpy(audit.prev, json_string_value(h), 65);
                        audit.seq = (uint64_t) json_integer_value(json_object_get(rec, "seq"));
                        ok = true;
                }
                json_decref(rec);
        }
        free(tail);
        return ok;
}

static int
audit_open_file(void)
{
        struct stat st;
        char last = '\n';
        int fd;

        audit.fd = open(audit.path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (audit.fd < 0)
                return -errno;
        fd = audit.fd;
        audit.size = 0;
        if (fstat(fd, &st) == 0) {
                audit.size = (uint64_t) st.st_size;
                if ((st.st_mode & 07777) != 0600)
                        (void) fchmod(fd, 0600);
        }
        /* A torn last line (crash mid-write) is ended so the next record starts a line. */
        if (audit.size > 0 && pread(fd, &last, 1, (off_t) audit.size - 1) == 1 && last != '\n' &&
            write(fd, "\n", 1) == 1)
                audit.size++;
        return 0;
}

/* Opens the log in dir. */
int
audit_open(const char *dir, uint64_t max_bytes, unsigned keep, struct sbx_error *err)
{
        char *old;
        int r;

        audit_close();
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot create %s: %s", dir, strerror(-r));
                return r;
        }
        audit.dir = xstrdup(dir);
        audit.path = xasprintf("%s/audit.log", dir);
        audit_set_limits(max_bytes, keep);
        audit.seq = 0;
        memcpy(audit.prev, AUDIT_GENESIS, 65);
        old = xasprintf("%s.1", audit.path);
        if (!audit_recover_from(audit.path))
                audit_recover_from(old);
        free(old);
        r = audit_open_file();
        if (r < 0) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot open %s: %s", audit.path,
                              strerror(-r));
                return r;
        }
        return 0;
}

/* Changes the rotation settings. */
void
audit_set_limits(uint64_t max_bytes, unsigned keep)
{
        audit.max_bytes = max_bytes ? max_bytes : 1;
        audit.keep = keep < 1 ? 1 : keep > AUDIT_MAX_KEEP ? AUDIT_MAX_KEEP : keep;
}

/* Closes the log. */
void
audit_close(void)
{
        if (audit.fd >= 0)
                close(audit.fd);
        audit.fd = -1;
        free(audit.dir);
        free(audit.path);
        audit.dir = audit.path = NULL;
}

/* Current file. */
const char *
audit_path(void)
{
        return audit.path;
}

/* Directory of the files. */
const char *
audit_dir(void)
{
        return audit.dir;
}

/* Records lost. */
uint64_t
audit_errors(void)
{
        return audit.errors;
}

/* audit.log.(k-1) -> .k … audit.log -> .1, then a new audit.log. */
static int
audit_rotate(void)
{
        int r = 0;

        for (unsigned i = audit.keep; i >= 1 && r == 0; i--) {
                char *from = i > 1 ? xasprintf("%s.%u", audit.path, i - 1) : xstrdup(audit.path);
                char *to = xasprintf("%s.%u", audit.path, i);
                if (rename(from, to) < 0 && errno != ENOENT)
                        r = -errno;
                free(from);
                free(to);
        }
        if (r < 0)
                return r;
        close(audit.fd);
        return audit_open_file();
}

static void
audit_failed(int r, const char *what)
{
        audit.errors++;
        if (audit.failing)
                return;
        audit.failing = true;
        log_warn("audit log %s: %s failed: %s; records are being lost (the daemon goes on; see "
                 "docs/policy.md)",
                 audit.path ? audit.path : "(not open)", what, strerror(-r));
}

static int
audit_write_line(const char *line, size_t n)
{
        ssize_t w = write(audit.fd, line, n);

        if (w == (ssize_t) n)
                return 0;
        if (w >= 0) /* a partial line would break the chain: take it back */
                (void) ftruncate(audit.fd, (off_t) audit.size);
        return w < 0 ? -errno : -ENOSPC;
}

/* Appends one record. */
void
audit_write(json_t *rec)
{
        json_t *full = json_object();
        char ts[40], hash[65], *text, *line;
        size_t n;
        int r;

        util_rfc3339(util_wall_ms(), ts, sizeof(ts));
        json_object_set_new(full, "ts", json_string(ts));
        json_object_set_new(full, "seq", json_integer((json_int_t) audit.seq + 1));
        json_object_update(full, rec);
        json_decref(rec);
        json_object_del(full, "hash");
        json_object_set_new(full, "prev", json_string(audit.prev));
        text = json_dumps(full, JSON_COMPACT);
        json_decref(full);
        if (!audit.path) {
                free(text);
                audit_failed(-EBADF, "write");
                return;
        }
        n = strlen(text) - 1; /* without the closing brace */
        policy_sha256_hex(text, n, hash);
        line = xasprintf("%.*s,\"hash\":\"%s\"}\n", (int) n, text, hash);
        free(text);
        n = strlen(line);
        if (audit.size > 0 && audit.size + n > audit.max_bytes && (r = audit_rotate()) < 0 &&
            !audit.failing)
                log_warn("audit log %s: rotation failed: %s; appending to the current file",
                         audit.path, strerror(-r));
        if (audit.fd < 0 && audit.path)
                (void) audit_open_file(); /* reopen after an earlier failure */
        r = audit.fd >= 0 ? audit_write_line(line, n) : -EBADF;
        free(line);
        if (r < 0) {
                audit_failed(r, "write");
                return;
        }
        if (audit.failing)
                log_info("audit log %s is written again", audit.path);
        audit.failing = false;
        audit.size += n;
        audit.seq++;
        memcpy(audit.prev, hash, 65);
}
