/* ssh_trust.c — what a sandbox's connections trust and present: the private keys (an entry's
 * and its jump host's read by the daemon, a client's own read with the client's permissions),
 * and the judgement of host keys against known_hosts under each host's policy (strict, or
 * accept-new recording in the daemon's file, never the client's).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/caller_file.h"
#include "backends/ssh/ssh_hostkey.h"
#include "backends/ssh/ssh_int.h"

/* ---- credentials ---- */

static int
trust_auth_refuse_cb(const char *prompt, char *buf, size_t len, int echo, int verify, void *ud)
{
        *(bool *) ud = true; /* it wants a passphrase: none is ever given */
        return -1;
}

/* Imports the private key text into *out (labelled label); NULL or why not (new). */
static char *
trust_import_key(const char *label, const char *text, ssh_key *out)
{
        bool asked = false;

        if (ssh_pki_import_privkey_base64(text, NULL, trust_auth_refuse_cb, &asked, out) ==
                    SSH_OK &&
            *out)
                return NULL;
        *out = NULL;
        if (asked)
                return xasprintf("%s is protected by a passphrase: sandboxd takes no passwords; "
                                 "use a key without one (readable only by its owner), or add it "
                                 "to your ssh-agent and name its socket as agent_socket instead",
                                 label);
        return xasprintf("%s is not a private key libssh can read (OpenSSH or PEM format)", label);
}

/* A daemon-owned file (operator configuration, the daemon's state), read by the daemon; a
 * missing one is empty. 0 or -errno. */
static int
trust_read_own(const char *path, size_t max, struct buf *out)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        char b[16384];
        ssize_t n;

        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        while ((n = read(fd, b, sizeof(b))) > 0 && out->len + (size_t) n <= max)
                buf_append(out, b, (size_t) n);
        close(fd);
        return n < 0 ? -errno : n > 0 ? -EFBIG : 0;
}

struct trust_cred {
        struct backend_sandbox *sb;
        void *ctx;
        ssh_conn_ready_cb cb;
};

static void
trust_cred_done(struct trust_cred *lc, char *error)
{
        lc->cb(lc->ctx, NULL, error);
        free(error);
        ssh_sandbox_unref(lc->sb);
        free(lc);
}

static void
trust_kh_cb(void *ctx, const char *data, size_t len, const char *error, int missing)
{
        struct trust_cred *lc = ctx;

        if (data)
                buf_append(&lc->sb->kh, data, len);
        trust_cred_done(lc, error && !missing ? xasprintf("known_hosts: %s", error) : NULL);
}

/* A client host's known_hosts, read as the client: the last credential. */
static void
trust_client_kh(struct trust_cred *lc)
{
        struct backend_sandbox *sb = lc->sb;

        free(sb->kh_label);
        sb->kh_label = sb->h.known_hosts
                               ? xstrdup(sb->h.known_hosts)
                               : xasprintf("%s/.ssh/known_hosts", sb->who.home ? sb->who.home : "");
        if (!sb->h.known_hosts && !sb->who.home) {
                trust_cred_done(lc, NULL);
                return;
        }
        caller_file_read(sshb.loop, &sb->who, sb->kh_label, SSH_KH_MAX, sshb.file_timeout_ms, lc,
                         trust_kh_cb);
}

static void
trust_agent_cb(void *ctx, int fd, const char *error)
{
        struct trust_cred *lc = ctx;
        struct backend_sandbox *sb = lc->sb;

        if (fd < 0) {
                trust_cred_done(lc, xasprintf("agent_socket: %s", error));
                return;
        }
        if (sb->agent_fd >= 0)
                close(sb->agent_fd);
        sb->agent_fd = fd;
        trust_client_kh(lc);
}

/* A client's ssh-agent, connected as the client (its server must run as the client), then
 * its known_hosts. */
static void
trust_client_agent(struct trust_cred *lc)
{
        struct backend_sandbox *sb = lc->sb;

        if (!sb->h.agent_socket) {
                trust_client_kh(lc);
                return;
        }
        free(sb->agent_label);
        sb->agent_label = xasprintf("the ssh-agent at %s", sb->h.agent_socket);
        caller_socket_connect(sshb.loop, &sb->who, sb->h.agent_socket, sshb.file_timeout_ms, lc,
                              trust_agent_cb);
}

static void
trust_key_cb(void *ctx, const char *data, size_t len, const char *error, int missing)
{
        struct trust_cred *lc = ctx;
        struct backend_sandbox *sb = lc->sb;
        char *why = data ? trust_import_key(sb->key_label, data, &sb->key)
                         : xasprintf("identity_file: %s", error);

        if (why || !sb->h.client)
                trust_cred_done(lc, why);
        else
                trust_client_agent(lc);
}

/* A host entry's key, read by the daemon (the operator's file) into *out: NULL or why not
 * (new). */
static char *
trust_own_key(const struct ssh_host *h, const char *label, ssh_key *out)
{
        struct buf key = {0};
        int r = trust_read_own(h->identity_file, SSH_KEY_MAX, &key);
        char *why;

        buf_append(&key, "", 1);
        if (r < 0 || key.len == 1)
                why = xasprintf("host entry '%s': cannot read identity_file %s: %s", h->name,
                                h->identity_file, r < 0 ? strerror(-r) : "no such file");
        else
                why = trust_import_key(label, key.data, out);
        explicit_bzero(key.data, key.len);
        buf_free(&key);
        return why;
}

/* An entry's key, and its jump host's: NULL or why not (new). */
static char *
trust_own_keys(struct backend_sandbox *sb)
{
        char *why = trust_own_key(&sb->h, sb->key_label, &sb->key);

        if (why || !sb->h.via)
                return why;
        free(sb->jump_key_label);
        sb->jump_key_label = xasprintf("identity_file %s of jump host '%s'",
                                       sb->h.via->identity_file, sb->h.jump);
        if (sb->jump_key)
                ssh_key_free(sb->jump_key);
        sb->jump_key = NULL;
        return trust_own_key(sb->h.via, sb->jump_key_label, &sb->jump_key);
}

/* Reads the keys (and a client host's known_hosts). */
void
ssh_trust_credentials(struct backend_sandbox *sb, void *ctx, ssh_conn_ready_cb cb)
{
        struct trust_cred *lc = xcalloc(1, sizeof(*lc));

        lc->sb = sb;
        ssh_sandbox_ref(sb);
        lc->ctx = ctx;
        lc->cb = cb;
        free(sb->key_label);
        sb->key_label = xasprintf("identity_file %s%s",
                                  sb->h.identity_file ? sb->h.identity_file : "(none)",
                                  sb->h.client ? " (read with the client's permissions)" : "");
        if (sb->h.client && !sb->h.identity_file) {
                trust_client_agent(lc);
                return;
        }
        if (sb->h.client) {
                caller_file_read(sshb.loop, &sb->who, sb->h.identity_file, SSH_KEY_MAX,
                                 sshb.file_timeout_ms, lc, trust_key_cb);
                return;
        }
        trust_cred_done(lc, trust_own_keys(sb));
}

/* ---- host keys ---- */

/* Where accept-new records a key: the entry's known_hosts, the backend's, or (a client's own
 * host) the backend's file for that uid (KNOWN_HOSTS.d/UID), never a client's file. New. */
static char *
trust_record_file(const struct backend_sandbox *sb, const struct ssh_host *h)
{
        if (h->client)
                return xasprintf("%s.d/%u", sshb.known_hosts, (unsigned) sb->who.uid);
        return xstrdup(h->known_hosts ? h->known_hosts : sshb.known_hosts);
}

/* The known_hosts texts that vouch for h, sb's host or its jump host (sources point into
 * bufs). */
struct trust_known {
        struct buf own;
        char *own_label;
        struct ssh_hk_source src[2];
        size_t n;
};

static void
trust_known_load(const struct backend_sandbox *sb, const struct ssh_host *h, struct trust_known *k)
{
        memset(k, 0, sizeof(*k));
        k->own_label = trust_record_file(sb, h);
        trust_read_own(k->own_label, SSH_KH_MAX, &k->own);
        k->src[k->n++] = (struct ssh_hk_source){k->own_label, k->own.data, k->own.len};
        if (h->client)
                k->src[k->n++] = (struct ssh_hk_source){sb->kh_label, sb->kh.data, sb->kh.len};
}

static void
trust_known_clear(struct trust_known *k)
{
        buf_free(&k->own);
        free(k->own_label);
}

static char *
trust_unknown(const struct ssh_host *h, const char *name, ssh_key key, const char *fp,
              struct trust_known *k)
{
        char *line = ssh_hostkey_line(name, key), *why;
        int r;

        if (h->accept_new && line) {
                r = ssh_hostkey_record(k->own_label, line);
                why = r < 0 ? xasprintf("cannot record the new host key of %s in %s: %s", name,
                                        k->own_label, strerror(-r))
                            : NULL;
                free(line);
                return why;
        }
        why = xasprintf("the host key of %s is not known (%s %s). Check the fingerprint with the "
                        "host's administrator, then add this line to %s: %s — or use "
                        "host_key_policy = accept-new to trust a host the first time",
                        name, ssh_key_type_to_char(ssh_key_type(key)), fp, k->own_label,
                        line ? line : "?");
        free(line);
        return why;
}

/* The key of h against its sources under its policy. */
char *
ssh_trust_check(struct backend_sandbox *sb, const struct ssh_host *h, ssh_key key, char **fp)
{
        char *name = ssh_hostkey_name(h->host, h->port), *where = NULL, *why = NULL;
        struct trust_known k;
        enum ssh_hk_verdict v;

        trust_known_load(sb, h, &k);
        free(*fp);
        *fp = ssh_hostkey_fingerprint(key);
        v = ssh_hostkey_check(name, key, k.src, k.n, &where);
        if (v == SSH_HK_UNKNOWN)
                why = trust_unknown(h, name, key, *fp, &k);
        else if (v == SSH_HK_CHANGED)
                why = xasprintf("THE HOST KEY OF %s HAS CHANGED: the server offers %s %s, but %s. "
                                "Someone may be intercepting the connection, or the host was "
                                "reinstalled: check with its administrator, then remove the old "
                                "line; sandboxd refuses the connection meanwhile",
                                name, ssh_key_type_to_char(ssh_key_type(key)), *fp, where);
        else if (v == SSH_HK_REVOKED)
                why = xasprintf("the host key of %s is revoked (%s): refused", name, where);
        free(where);
        free(name);
        trust_known_clear(&k);
        return why;
}

/* The host key algorithms the known keys of h call for. */
char *
ssh_trust_algorithms(const struct backend_sandbox *sb, const struct ssh_host *h)
{
        char *name = ssh_hostkey_name(h->host, h->port), *algs;
        struct trust_known k;

        trust_known_load(sb, h, &k);
        algs = ssh_hostkey_algorithms(name, k.src, k.n);
        free(name);
        trust_known_clear(&k);
        return algs;
}
