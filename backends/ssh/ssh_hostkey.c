/* ssh_hostkey.c — known_hosts checks on bytes (ssh_hostkey.h). */
#include "backends/ssh/ssh_hostkey.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/util.h"

#define HK_LINE_MAX 16384

/* "host" or "[host]:port", lower case. */
char *
ssh_hostkey_name(const char *host, unsigned port)
{
        char *s = port == 22 || port == 0 ? xstrdup(host) : xasprintf("[%s]:%u", host, port);

        for (char *p = s; *p; p++)
                *p = (char) tolower((unsigned char) *p);
        return s;
}

/* Calls fn for every non-comment line of every source (NUL-terminated copy), with its number;
 * stops when fn returns true. */
static void
hk_lines(const struct ssh_hk_source *src, size_t n,
         bool (*fn)(void *ctx, const struct ssh_hk_source *s, unsigned lineno, char *line),
         void *ctx)
{
        for (size_t i = 0; i < n; i++) {
                const char *p = src[i].data, *end = p ? p + src[i].len : p;
                unsigned lineno = 0;
                while (p && p < end) {
                        const char *nl = memchr(p, '\n', (size_t) (end - p));
                        size_t len = (size_t) ((nl ? nl : end) - p);
                        char *line;
                        bool stop;
                        lineno++;
                        while (len && (*p == ' ' || *p == '\t'))
                                p++, len--;
                        if (len && len < HK_LINE_MAX && *p != '#') {
                                line = xstrndup(p, len - (p[len - 1] == '\r'));
                                stop = fn(ctx, &src[i], lineno, line);
                                free(line);
                                if (stop)
                                        return;
                        }
                        p = nl ? nl + 1 : end;
                }
        }
}

struct hk_check {
        const char *name;
        ssh_key key;
        bool found, revoked;
        char *where; /* the first line that disagrees (or revokes) */
};

static char *
hk_where(const struct ssh_hk_source *s, unsigned lineno, ssh_key k)
{
        char *fp = ssh_hostkey_fingerprint(k);
        char *w = xasprintf("%s line %u: %s %s", s->label, lineno,
                            ssh_key_type_to_char(ssh_key_type(k)), fp ? fp : "?");

        free(fp);
        return w;
}

static bool
hk_check_line(void *ctx, const struct ssh_hk_source *s, unsigned lineno, char *line)
{
        struct hk_check *c = ctx;
        struct ssh_knownhosts_entry *e = NULL;
        bool revoked = !strncmp(line, "@revoked", 8) && (line[8] == ' ' || line[8] == '\t');
        char *l = line;

        if (revoked)
                l += 8 + strspn(line + 8, " \t");
        else if (line[0] == '@')
                return false; /* @cert-authority: not supported */
        if (ssh_known_hosts_parse_line(c->name, l, &e) != SSH_OK || !e || !e->publickey) {
                if (e)
                        ssh_knownhosts_entry_free(e);
                return false;
        }
        if (ssh_key_cmp(e->publickey, c->key, SSH_KEY_CMP_PUBLIC) == 0) {
                if (revoked) {
                        free(c->where);
                        c->where = hk_where(s, lineno, e->publickey);
                        c->revoked = true;
                }
                c->found = true;
        } else if (!revoked && !c->where) {
                c->where = hk_where(s, lineno, e->publickey);
        }
        ssh_knownhosts_entry_free(e);
        return c->revoked;
}

/* Checks a server key. */
enum ssh_hk_verdict
ssh_hostkey_check(const char *name, ssh_key key, const struct ssh_hk_source *src, size_t n,
                  char **where)
{
        struct hk_check c = {.name = name, .key = key};

        hk_lines(src, n, hk_check_line, &c);
        *where = NULL;
        if (c.revoked || (!c.found && c.where)) {
                *where = c.where;
                return c.revoked ? SSH_HK_REVOKED : SSH_HK_CHANGED;
        }
        free(c.where);
        return c.found ? SSH_HK_OK : SSH_HK_UNKNOWN;
}

static const struct {
        enum ssh_keytypes_e type;
        const char *algs;
} hk_algs[] = {
        {SSH_KEYTYPE_ED25519, "ssh-ed25519"},
        {SSH_KEYTYPE_ECDSA_P256, "ecdsa-sha2-nistp256"},
        {SSH_KEYTYPE_ECDSA_P384, "ecdsa-sha2-nistp384"},
        {SSH_KEYTYPE_ECDSA_P521, "ecdsa-sha2-nistp521"},
        {SSH_KEYTYPE_RSA, "rsa-sha2-512,rsa-sha2-256,ssh-rsa"},
};

struct hk_algs {
        const char *name;
        bool seen[ARRAY_SIZE(hk_algs)];
};

static bool
hk_algs_line(void *ctx, const struct ssh_hk_source *s, unsigned lineno, char *line)
{
        struct hk_algs *a = ctx;
        struct ssh_knownhosts_entry *e = NULL;

        if (line[0] == '@')
                return false;
        if (ssh_known_hosts_parse_line(a->name, line, &e) == SSH_OK && e && e->publickey)
                for (size_t i = 0; i < ARRAY_SIZE(hk_algs); i++)
                        if (hk_algs[i].type == ssh_key_type(e->publickey))
                                a->seen[i] = true;
        if (e)
                ssh_knownhosts_entry_free(e);
        return false;
}

/* The algorithms known_hosts has keys of for name. */
char *
ssh_hostkey_algorithms(const char *name, const struct ssh_hk_source *src, size_t n)
{
        struct hk_algs a = {.name = name};
        struct buf b = {0};

        hk_lines(src, n, hk_algs_line, &a);
        for (size_t i = 0; i < ARRAY_SIZE(hk_algs); i++)
                if (a.seen[i])
                        buf_appendf(&b, "%s%s", b.len ? "," : "", hk_algs[i].algs);
        return b.data;
}

/* SHA256 fingerprint. */
char *
ssh_hostkey_fingerprint(ssh_key key)
{
        unsigned char *hash = NULL;
        size_t hlen = 0;
        char *fp, *out;

        if (!key || ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) < 0)
                return NULL;
        fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
        ssh_clean_pubkey_hash(&hash);
        out = fp ? xstrdup(fp) : NULL;
        ssh_string_free_char(fp);
        return out;
}

/* A known_hosts line. */
char *
ssh_hostkey_line(const char *name, ssh_key key)
{
        char *b64 = NULL, *line;

        if (!key || ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK || !b64)
                return NULL;
        line = xasprintf("%s %s %s", name, ssh_key_type_to_char(ssh_key_type(key)), b64);
        ssh_string_free_char(b64);
        return line;
}

/* Appends a line to a daemon-owned file. */
int
ssh_hostkey_record(const char *path, const char *line)
{
        char *dir = xstrdup(path), *slash = strrchr(dir, '/');
        char *text = xasprintf("%s\n", line);
        ssize_t n;
        int fd, r = 0;

        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                        r = -errno;
        }
        fd = r < 0 ? -1 : open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && r == 0)
                r = -errno;
        if (fd >= 0) {
                n = write(fd, text, strlen(text));
                if (n != (ssize_t) strlen(text))
                        r = n < 0 ? -errno : -EIO;
                else if (fsync(fd) < 0)
                        r = -errno;
                close(fd);
        }
        free(dir);
        free(text);
        return r;
}
