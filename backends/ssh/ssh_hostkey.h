/* ssh_hostkey.h — host keys checked against known_hosts text, never against a file libssh
 * opens itself: the daemon reads its own known_hosts files, and a client's only through a
 * helper running as the client (backends/caller_file.h), so each source arrives as bytes.
 *
 * OpenSSH's rules: a line that names the host (plain, [host]:port, hashed |1|…, patterns)
 * with the server's key is a match; a line with another key of the same type means the key
 * changed; lines of other types only are a mismatch too (never a silent accept); @revoked
 * with the server's key refuses it; @cert-authority lines are not supported (skipped).
 * Pure apart from the record (an append to a daemon-owned file). Loop thread only (libssh).
 */
#ifndef SANDBOXD_SSH_HOSTKEY_H
#define SANDBOXD_SSH_HOSTKEY_H

#include <stddef.h>

#include "backends/ssh/ssh_dl.h"

/* One known_hosts text: its name for messages (a path) and its bytes (borrowed). */
struct ssh_hk_source {
        const char *label;
        const char *data;
        size_t len;
};

enum ssh_hk_verdict {
        SSH_HK_OK,      /* a line has this key */
        SSH_HK_UNKNOWN, /* no line names the host */
        SSH_HK_CHANGED, /* lines name the host with other keys */
        SSH_HK_REVOKED, /* an @revoked line has this key */
};

/* "host" for port 22, else "[host]:port", lower case (new): how known_hosts names it. */
char *ssh_hostkey_name(const char *host, unsigned port);
/* Checks key for name against the sources. For CHANGED/REVOKED *where (new) says which line
 * ("FILE line N: ssh-ed25519 SHA256:…"). */
enum ssh_hk_verdict ssh_hostkey_check(const char *name, ssh_key key,
                                      const struct ssh_hk_source *src, size_t n, char **where);
/* The host key algorithms of the lines that name the host, for SSH_OPTIONS_HOSTKEYS (new), or
 * NULL when none does (libssh's defaults then). */
char *ssh_hostkey_algorithms(const char *name, const struct ssh_hk_source *src, size_t n);
/* "SHA256:…" of key (new), or NULL. */
char *ssh_hostkey_fingerprint(ssh_key key);
/* The known_hosts line for key (new, without newline), or NULL. */
char *ssh_hostkey_line(const char *name, ssh_key key);
/* Appends line to a daemon-owned known_hosts file (created 0600, parent 0700); 0 or -errno. */
int ssh_hostkey_record(const char *path, const char *line);

#endif
