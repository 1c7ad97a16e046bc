/* ssh_host.c — where an ssh sandbox goes and as whom: the operator's host entries
 * ([backend.ssh.NAME]) chosen by name, or — only where the operator allows clients to name
 * hosts ([backend.ssh] client_hosts) — a client's own host with the client's own key.
 *
 * A host entry carries the operator's credentials, so it is an allowlist of its own: only the
 * uids and groups it names (allow_users, allow_groups; default: the daemon's own uid and root)
 * may use it, and a request may not change where it goes or with what (host, port, user,
 * identity_file, known_hosts) nor weaken its host key policy. A client's own host is reached
 * with files read (and an ssh-agent socket connected) as the client, so the daemon's rights
 * never reach anything the client could not read or reach itself.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/ssh/ssh_int.h"

/* Keys of a host entry, with what they take. */
static const char *const ssh_entry_keys[] = {
        "host",        "port",         "user",  "identity_file", "known_hosts", "host_key_policy",
        "allow_users", "allow_groups", "agent", "remote_dir",    "jump_host",   NULL};

/* Keys of a request's "ssh" section. */
static const char *const ssh_request_keys[] = {
        "host", "port", "user", "identity_file", "agent_socket", "known_hosts", "host_key_policy",
        NULL};

/* Frees what h holds. */
void
ssh_host_clear(struct ssh_host *h)
{
        free(h->name);
        free(h->host);
        free(h->user);
        free(h->identity_file);
        free(h->agent_socket);
        free(h->known_hosts);
        free(h->remote_dir);
        free(h->jump);
        if (h->via)
                ssh_host_clear(h->via);
        free(h->via);
        memset(h, 0, sizeof(*h));
}

static bool
ssh_word_ok(const char *s, const char *extra, size_t max)
{
        static const char alnum[] =
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        size_t n = s ? strlen(s) : 0;

        if (!n || n > max || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr(alnum, s[i]) && !strchr(extra, s[i]))
                        return false;
        return true;
}

/* A host name or address as ssh would take it: no option, no shell or URL syntax. */
static bool
ssh_hostname_ok(const char *s)
{
        return ssh_word_ok(s, ".-_:%", 253);
}

static bool
ssh_user_ok(const char *s)
{
        return ssh_word_ok(s, ".-_", 64);
}

static bool
ssh_path_ok(const char *s)
{
        return s && s[0] == '/' && strlen(s) < PATH_MAX;
}

/* A Unix socket's path: absolute, and short enough for sockaddr_un. */
static bool
ssh_socket_path_ok(const char *s)
{
        return ssh_path_ok(s) && strlen(s) < SSH_SOCKET_PATH_MAX;
}

static bool
ssh_policy_parse(const char *v, bool *accept_new)
{
        if (!strcmp(v, "strict"))
                *accept_new = false;
        else if (!strcmp(v, "accept-new"))
                *accept_new = true;
        else
                return false;
        return true;
}

static const char *
ssh_entry_str(json_t *entry, const char *key)
{
        const char *v = json_string_value(json_object_get(entry, key));

        if (!v || !*v)
                v = json_string_value(json_object_get(sshb.defaults, key));
        return v && *v ? v : NULL;
}

/* A bad key of host entry name; param "NAME.key" (where the configuration has its line). */
static int
ssh_bad(struct sbx_error *err, const char *name, const char *key, const char *want)
{
        char *param = xasprintf("%s.%s", name, key);

        sbx_error_param(err, param, "[backend.ssh.%s] %s: %s", name, key, want);
        free(param);
        return -EINVAL;
}

/* Fills h from entry; -EINVAL with err for a bad one. */
static int
ssh_host_from_entry(const char *name, json_t *entry, struct ssh_host *h, struct sbx_error *err)
{
        const char *host = ssh_entry_str(entry, "host"), *port = ssh_entry_str(entry, "port");
        const char *pol = ssh_entry_str(entry, "host_key_policy");
        const char *agent = ssh_entry_str(entry, "agent");
        char *end = NULL;
        unsigned long p = port ? strtoul(port, &end, 10) : 22;

        memset(h, 0, sizeof(*h));
        if (!ssh_hostname_ok(host ? host : name))
                return ssh_bad(err, name, "host", "not a host name or address");
        if (port && (*end || p == 0 || p > 65535))
                return ssh_bad(err, name, "port", "a port from 1 to 65535");
        if (!ssh_user_ok(ssh_entry_str(entry, "user")))
                return ssh_bad(err, name, "user", "the remote user is required (a login name)");
        if (!ssh_path_ok(ssh_entry_str(entry, "identity_file")))
                return ssh_bad(err, name, "identity_file",
                               "an absolute path to the private key is required");
        if (ssh_entry_str(entry, "known_hosts") &&
            !ssh_path_ok(ssh_entry_str(entry, "known_hosts")))
                return ssh_bad(err, name, "known_hosts", "an absolute path");
        if (pol && !ssh_policy_parse(pol, &h->accept_new))
                return ssh_bad(err, name, "host_key_policy", "strict or accept-new");
        if (agent && strcasecmp(agent, "off") && strcasecmp(agent, "on"))
                return ssh_bad(err, name, "agent", "on or off");
        h->name = xstrdup(name);
        h->host = xstrdup(host ? host : name);
        h->port = (unsigned) p;
        h->user = xstrdup(ssh_entry_str(entry, "user"));
        h->identity_file = xstrdup(ssh_entry_str(entry, "identity_file"));
        h->known_hosts = ssh_entry_str(entry, "known_hosts")
                                 ? xstrdup(ssh_entry_str(entry, "known_hosts"))
                                 : NULL;
        h->agent_off = agent && !strcasecmp(agent, "off");
        h->remote_dir =
                xstrdup(ssh_entry_str(entry, "remote_dir") ? ssh_entry_str(entry, "remote_dir")
                                                           : SSH_REMOTE_DIR);
        h->jump = ssh_entry_str(entry, "jump_host") ? xstrdup(ssh_entry_str(entry, "jump_host"))
                                                    : NULL;
        return 0;
}

/* Whether owner may use the entry. */
static bool
ssh_entry_allows(json_t *entry, const struct backend_identity *owner)
{
        const char *users = json_string_value(json_object_get(entry, "allow_users"));
        const char *groups = json_string_value(json_object_get(entry, "allow_groups"));

        if (!users && !groups)
                return owner->uid == 0 || owner->uid == geteuid();
        return backend_identity_listed(users, groups, owner);
}

/* The configured entry names, for messages (new). */
static char *
ssh_entry_names(void)
{
        struct buf b = {0};
        const char *k;
        json_t *v;

        json_object_foreach(sshb.hosts, k, v) buf_appendf(&b, "%s%s", b.len ? ", " : "", k);
        return b.len ? b.data : xstrdup("none");
}

/* The entry called name, and its jump host's (one hop: the configuration has no chains). */
int
ssh_host_entry(const char *name, struct ssh_host *h, struct sbx_error *err)
{
        json_t *entry = json_object_get(sshb.hosts, name);
        char *names;

        if (!entry) {
                names = ssh_entry_names();
                sbx_error_param(err, "ssh.host", "no ssh host entry '%s' (configured: %s)", name,
                                names);
                free(names);
                return -ENOENT;
        }
        if (ssh_host_from_entry(name, entry, h, err) < 0)
                return -EINVAL;
        if (!h->jump)
                return 0;
        h->via = xcalloc(1, sizeof(*h->via));
        entry = json_object_get(sshb.hosts, h->jump);
        if (entry && ssh_host_from_entry(h->jump, entry, h->via, err) == 0 && !h->via->jump)
                return 0;
        if (!err->code)
                sbx_error_backend(err, SSH_BACKEND,
                                  "host entry '%s': its jump_host '%s' is not a host entry "
                                  "without a jump host of its own",
                                  name, h->jump);
        ssh_host_clear(h);
        return -EINVAL;
}

/* A request may pick an entry and make its policy stricter, nothing else. */
static int
ssh_entry_request(json_t *sec, const char *name, const struct backend_identity *owner,
                  struct ssh_host *h, struct sbx_error *err)
{
        static const char *const fixed[] = {"port", "user", "identity_file", "agent_socket",
                                            "known_hosts"};
        const char *pol = json_string_value(json_object_get(sec, "host_key_policy"));
        bool accept_new = false;

        for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
                if (json_object_get(sec, fixed[i])) {
                        sbx_error_param(err, "ssh",
                                        "invalid params: ssh.%s is set by the operator "
                                        "for host entry '%s' and cannot be given in a request",
                                        fixed[i], name);
                        return -EINVAL;
                }
        }
        if (!ssh_entry_allows(json_object_get(sshb.hosts, name), owner)) {
                sbx_error_set(err, SBX_E_PERMISSION, NULL,
                              "ssh host entry '%s' is not open to uid %u (the operator can add "
                              "allow_users or allow_groups to [backend.ssh.%s])",
                              name, (unsigned) owner->uid, name);
                return -EPERM;
        }
        if (ssh_host_entry(name, h, err) < 0)
                return -EINVAL;
        if (pol && ssh_policy_parse(pol, &accept_new) && accept_new && !h->accept_new) {
                sbx_error_param(err, "ssh.host_key_policy",
                                "invalid params: host entry '%s' checks host keys strictly; a "
                                "request can make that stricter, never weaker",
                                name);
                ssh_host_clear(h);
                return -EINVAL;
        }
        if (pol)
                h->accept_new = accept_new;
        return 0;
}

static bool
ssh_client_host_allowed(const char *host)
{
        char *copy, *save = NULL, *tok;
        bool hit = false;

        if (!sshb.client_hosts)
                return false;
        copy = xstrdup(sshb.client_hosts);
        for (tok = strtok_r(copy, " ,", &save); tok && !hit; tok = strtok_r(NULL, " ,", &save))
                hit = fnmatch(tok, host, FNM_CASEFOLD) == 0;
        free(copy);
        return hit;
}

/* A client's own host: its names checked, its files to be read as the client. */
static int
ssh_client_request(json_t *sec, const char *host, const struct backend_identity *owner,
                   struct ssh_host *h, struct sbx_error *err)
{
        const char *user = json_string_value(json_object_get(sec, "user"));
        const char *id = json_string_value(json_object_get(sec, "identity_file"));
        const char *ag = json_string_value(json_object_get(sec, "agent_socket"));
        const char *kh = json_string_value(json_object_get(sec, "known_hosts"));
        const char *pol = json_string_value(json_object_get(sec, "host_key_policy"));
        json_int_t port = json_integer_value(json_object_get(sec, "port"));
        char *names;

        if (!ssh_client_host_allowed(host)) {
                names = ssh_entry_names();
                sbx_error_param(err, "ssh.host",
                                "invalid params: ssh.host '%s' is no host entry (configured: %s) "
                                "and this daemon lets clients name only hosts matching "
                                "[backend.ssh] client_hosts (%s)",
                                host, names, sshb.client_hosts ? sshb.client_hosts : "unset");
                free(names);
                return -EINVAL;
        }
        if (!ssh_hostname_ok(host) || (user && !ssh_user_ok(user)) ||
            (json_object_get(sec, "port") && (port < 1 || port > 65535)) || (!id && !ag) ||
            (id && !ssh_path_ok(id)) || (ag && !ssh_socket_path_ok(ag)) ||
            (kh && !ssh_path_ok(kh))) {
                sbx_error_param(err, "ssh",
                                "invalid params: ssh needs host (a name or address), and "
                                "identity_file (an absolute path to your private key, read with "
                                "your permissions) or agent_socket (the absolute path, under %zu "
                                "bytes, of your own ssh-agent's socket, connected as you) or "
                                "both; optionally port (1-65535), user (a login name) and "
                                "known_hosts (an absolute path)",
                                SSH_SOCKET_PATH_MAX);
                return -EINVAL;
        }
        memset(h, 0, sizeof(*h));
        h->host = xstrdup(host);
        h->port = port ? (unsigned) port : 22;
        h->user = xstrdup(user ? user : owner->user ? owner->user : "root");
        h->identity_file = id ? xstrdup(id) : NULL;
        h->agent_socket = ag ? xstrdup(ag) : NULL;
        h->known_hosts = kh ? xstrdup(kh) : NULL;
        h->client = true;
        h->accept_new = pol && !strcmp(pol, "accept-new");
        h->remote_dir = xstrdup(SSH_REMOTE_DIR);
        return 0;
}

/* The host of a request. */
int
ssh_host_resolve(json_t *sec, const struct backend_identity *owner, struct ssh_host *h,
                 struct sbx_error *err)
{
        const char *host = json_string_value(json_object_get(sec, "host"));
        const char *pol = json_string_value(json_object_get(sec, "host_key_policy"));
        bool an;
        const char *k;
        json_t *v;

        json_object_foreach(sec, k, v)
        {
                if (!strv_contains(ssh_request_keys, k) ||
                    (!json_is_string(v) && !(json_is_integer(v) && !strcmp(k, "port")))) {
                        sbx_error_param(err, "ssh",
                                        "invalid params: ssh.%s is %s (ssh takes host, port, "
                                        "user, identity_file, agent_socket, known_hosts, "
                                        "host_key_policy)",
                                        k,
                                        strv_contains(ssh_request_keys, k) ? "of the wrong type"
                                                                           : "not known");
                        return -EINVAL;
                }
        }
        if (!host || !*host) {
                char *names = ssh_entry_names();
                sbx_error_param(err, "ssh.host",
                                "invalid params: ssh.host is required: a host entry (configured: "
                                "%s)%s",
                                names, sshb.client_hosts ? " or a host of your own" : "");
                free(names);
                return -EINVAL;
        }
        if (pol && !ssh_policy_parse(pol, &an)) {
                sbx_error_param(err, "ssh.host_key_policy",
                                "invalid params: ssh.host_key_policy is strict or accept-new");
                return -EINVAL;
        }
        if (json_object_get(sshb.hosts, host))
                return ssh_entry_request(sec, host, owner, h, err);
        return ssh_client_request(sec, host, owner, h, err);
}

/* h's jump_host names another entry of sections that has none itself: one hop, so no loop
 * and no chain (each hop would be one more connection to keep and to resume). */
static int
ssh_check_jump(json_t *sections, const struct ssh_host *h, struct sbx_error *err)
{
        json_t *via = h->jump ? json_object_get(sections, h->jump) : NULL;
        const char *next = json_string_value(json_object_get(via, "jump_host"));
        char *want;
        int r;

        if (!h->jump)
                return 0;
        if (!strcmp(h->jump, h->name))
                want = xasprintf("'%s' is this entry itself", h->jump);
        else if (!via)
                want = xasprintf("no host entry [backend.ssh.%s]: name another entry, whose "
                                 "host, port, user, identity_file and known_hosts reach the "
                                 "jump host",
                                 h->jump);
        else if (next && *next)
                want = xasprintf("'%s' has a jump_host of its own ('%s'): chains of jump hosts "
                                 "are not supported; point jump_host at the last hop, reachable "
                                 "directly",
                                 h->jump, next);
        else
                return 0;
        r = ssh_bad(err, h->name, "jump_host", want);
        free(want);
        return r;
}

/* Checks the configuration. */
int
ssh_host_check_config(json_t *config, struct sbx_error *err)
{
        const char *name;
        json_t *entry;
        struct ssh_host h;

        json_object_foreach(json_object_get(config, "sections"), name, entry)
        {
                const char *k;
                json_t *v;

                json_object_foreach(entry, k, v)
                {
                        if (!strv_contains(ssh_entry_keys, k)) {
                                char *param = xasprintf("%s.%s", name, k);
                                sbx_error_param(err, param,
                                                "unknown key '%s' in section [backend.ssh.%s] "
                                                "(see docs/backends/ssh.md)",
                                                k, name);
                                free(param);
                                return -EINVAL;
                        }
                }
                if (ssh_host_from_entry(name, entry, &h, err) < 0 ||
                    ssh_check_jump(json_object_get(config, "sections"), &h, err) < 0) {
                        ssh_host_clear(&h);
                        return -EINVAL;
                }
                ssh_host_clear(&h);
        }
        return 0;
}

/* What a sandbox records about its host. */
json_t *
ssh_host_save(const struct ssh_host *h)
{
        if (!h->client)
                return json_pack("{s:s,s:b}", "entry", h->name, "accept_new", h->accept_new);
        return json_pack("{s:{s:s,s:i,s:s,s:s?,s:s?,s:s?,s:b}}", "client", "host", h->host, "port",
                         (int) h->port, "user", h->user, "identity_file", h->identity_file,
                         "agent_socket", h->agent_socket, "known_hosts", h->known_hosts,
                         "accept_new", h->accept_new);
}

/* The host of a record: the entry as configured now (it must still be open to owner), or the
 * client's host (where clients may still name it). */
int
ssh_host_load(json_t *rec, const struct backend_identity *owner, struct ssh_host *h,
              struct sbx_error *err)
{
        const char *entry = json_string_value(json_object_get(rec, "entry"));
        json_t *cl = json_object_get(rec, "client"), *sec;
        int r;

        if (entry) {
                sec = json_pack("{s:s}", "host", entry);
                if (!json_is_true(json_object_get(rec, "accept_new")))
                        json_object_set_new(sec, "host_key_policy", json_string("strict"));
        } else if (json_is_object(cl)) {
                sec = json_deep_copy(cl);
                json_object_del(sec, "accept_new");
                if (json_is_true(json_object_get(cl, "accept_new")))
                        json_object_set_new(sec, "host_key_policy", json_string("accept-new"));
        } else {
                sbx_error_backend(err, SSH_BACKEND, "the sandbox's record names no host");
                return -EINVAL;
        }
        r = ssh_host_resolve(sec, owner, h, err);
        json_decref(sec);
        return r;
}
