/* ssh.c — the ssh backend's vtable: sandboxes on remote machines reached with libssh, each
 * running its commands through a detached sandboxd-agent on the remote host (or, where no
 * agent exists for the remote system, one plain exec channel per command). See
 * docs/backends/ssh.md; the files of the backend are listed in ssh_int.h.
 */
#include "backends/ssh/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/transport.h"
#include "backends/remote_file.h"
#include "backends/ssh/ssh_int.h"
#include "backends/ssh/ssh_jump.h"
#include "protocol/sha256.h"

struct ssh_state sshb;

/* ---- sandboxes ---- */

void
ssh_sandbox_ref(struct backend_sandbox *sb)
{
        sb->refs++;
}

void
ssh_sandbox_unref(struct backend_sandbox *sb)
{
        char **strs[] = {&sb->id,
                         &sb->key_label,
                         &sb->jump_key_label,
                         &sb->jump_fingerprint,
                         &sb->kh_label,
                         &sb->agent_label,
                         &sb->where,
                         &sb->fingerprint,
                         &sb->r_os,
                         &sb->r_arch,
                         &sb->r_home,
                         &sb->r_user,
                         &sb->r_hostname,
                         &sb->r_uid,
                         &sb->r_rtbase,
                         &sb->agent_path,
                         &sb->rt,
                         &sb->sock,
                         &sb->workdir,
                         &sb->plain_note,
                         &sb->cut_off,
                         (char **) &sb->who.user,
                         (char **) &sb->who.home};

        if (--sb->refs > 0)
                return;
        list_del(&sb->link);
        ssh_conn_close(sb->conn);
        ssh_jump_close(sb->jump);
        if (sb->key)
                ssh_key_free(sb->key);
        if (sb->jump_key)
                ssh_key_free(sb->jump_key);
        if (sb->agent_fd >= 0)
                close(sb->agent_fd);
        ssh_host_clear(&sb->h);
        buf_free(&sb->kh);
        buf_free(&sb->lost);
        free(sb->who.groups);
        for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
                free(*strs[i]);
        explicit_bzero(sb->secret, sizeof(sb->secret));
        free(sb);
}

/* The agent session, (re)opened when there is none that still lives. */
struct agent_session *
ssh_agent_session(struct backend_sandbox *sb, bool adopting)
{
        struct agent_session_config cfg = {
                .backend = SSH_BACKEND,
                .where = sb->where,
                .secret = sb->secret,
                .secret_len = SSH_SECRET_LEN,
                .ready_timeout_ms = sshb.connect_ms + 10000,
                .ping_interval_ms = sshb.ping_ms,
                .link_timeout_ms = sshb.link_timeout_ms,
                .reconnect_timeout_ms = sshb.reconnect_ms,
                .adopting = adopting,
        };

        if (agent_session_alive(sb->session))
                return sb->session;
        if (sb->session)
                agent_session_close(sb->session, NULL, false);
        sb->session = agent_session_new(sshb.loop, &cfg, &ssh_link_session_cbs, sb);
        agent_session_open(sb->session);
        return sb->session;
}

/* ---- configuration ---- */

static const struct {
        const char *key;
        size_t off;
        unsigned dflt, min, max;
} ssh_cfg_ms[] = {
        {"connect_timeout_ms", offsetof(struct ssh_state, connect_ms), 10000, 100, 600000},
        {"ping_ms", offsetof(struct ssh_state, ping_ms), 5000, 100, 600000},
        {"link_timeout_ms", offsetof(struct ssh_state, link_timeout_ms), 20000, 200, 3600000},
        {"reconnect_ms", offsetof(struct ssh_state, reconnect_ms), 60000, 0, 86400000},
        {"agent_linger_s", offsetof(struct ssh_state, linger_s), 3600, 10, 31536000},
        {"file_timeout_ms", offsetof(struct ssh_state, file_timeout_ms), 60000, 100, 86400000},
};

static int
ssh_cfg_numbers(json_t *config, struct ssh_state *st, struct sbx_error *err)
{
        for (size_t i = 0; i < ARRAY_SIZE(ssh_cfg_ms); i++) {
                const char *v = json_string_value(json_object_get(config, ssh_cfg_ms[i].key));
                char *end = NULL;
                unsigned long n = v ? strtoul(v, &end, 10) : ssh_cfg_ms[i].dflt;
                if (v && (*end || !*v || n < ssh_cfg_ms[i].min || n > ssh_cfg_ms[i].max)) {
                        sbx_error_param(err, ssh_cfg_ms[i].key,
                                        "[backend.ssh] %s must be a whole number from %u to %u",
                                        ssh_cfg_ms[i].key, ssh_cfg_ms[i].min, ssh_cfg_ms[i].max);
                        return -EINVAL;
                }
                *(unsigned *) ((char *) st + ssh_cfg_ms[i].off) = (unsigned) n;
        }
        return 0;
}

/* The agent to install on Linux x86_64 hosts, and its digest. */
static int
ssh_cfg_agent(json_t *config, struct sbx_error *err)
{
        const char *v = json_string_value(json_object_get(config, "agent"));
        char *tried = NULL;
        struct buf bin = {0};
        int fd;
        ssize_t n;
        char b[65536];

        if (v && !strcmp(v, "off")) {
                sshb.agent_note = xstrdup("agent = off in [backend.ssh]: every command runs in a "
                                          "plain exec channel");
                return 0;
        }
        sshb.agent = v && *v ? agent_locate_file(v) : agent_locate(&tried);
        if (!sshb.agent && v && *v) {
                sbx_error_param(err, "agent",
                                "ssh agent '%s' is not an executable file (build it with make, "
                                "or set agent = off)",
                                v);
                return -EINVAL;
        }
        if (!sshb.agent)
                sshb.agent_note = xasprintf("sandboxd-agent not found %s: every command runs in "
                                            "a plain exec channel (run make install)",
                                            tried);
        free(tried); /* agent_locate says where it looked, found or not */
        if (!sshb.agent)
                return 0;
        fd = open(sshb.agent, O_RDONLY | O_CLOEXEC);
        while (fd >= 0 && (n = read(fd, b, sizeof(b))) > 0)
                buf_append(&bin, b, (size_t) n);
        if (fd >= 0)
                close(fd);
        sha256_hex(bin.data ? bin.data : "", bin.len, sshb.agent_sha);
        buf_free(&bin);
        return 0;
}

static void
ssh_free_config(void)
{
        free(sshb.known_hosts);
        free(sshb.client_hosts);
        free(sshb.agent);
        free(sshb.agent_note);
        json_decref(sshb.defaults);
        json_decref(sshb.hosts);
}

static const char *const ssh_keys[] = {"known_hosts",     "client_hosts",    "agent",
                                       "host_key_policy", "remote_dir",      "connect_timeout_ms",
                                       "ping_ms",         "link_timeout_ms", "reconnect_ms",
                                       "agent_linger_s",  "sections",        NULL};

static int
ssh_cfg_known_hosts(json_t *config, struct ssh_state *st, struct sbx_error *err)
{
        const char *kh = json_string_value(json_object_get(config, "known_hosts"));

        if (kh && *kh && kh[0] != '/') {
                sbx_error_param(err, "known_hosts", "[backend.ssh] known_hosts must be absolute");
                return -EINVAL;
        }
        return 0;
}

/* The host entries, judged with this section's defaults (init keeps them in sshb.defaults). */
static int
ssh_cfg_entries(json_t *config, struct ssh_state *st, struct sbx_error *err)
{
        json_t *saved = sshb.defaults;
        int r;

        sshb.defaults = config;
        r = ssh_host_check_config(config, err);
        sshb.defaults = saved;
        return r;
}

/* The section into st's numbers, every problem reported; returns how many there were. */
static int
ssh_config_parse(json_t *config, struct ssh_state *st, backend_config_report_fn report, void *ctx)
{
        static int (*const steps[])(json_t *, struct ssh_state *, struct sbx_error *) = {
                ssh_cfg_numbers, ssh_cfg_known_hosts, ssh_cfg_entries};
        struct backend_config_tally rep = {report, ctx, 0};
        struct sbx_error e = {0};

        backend_config_known(config, "ssh", ssh_keys, backend_config_tally_cb, &rep);
        for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
                if (steps[i](config, st, &e) != 0)
                        backend_config_tally_error(&rep, NULL, &e);
        }
        return rep.n;
}

/* backend_ops.validate: the parse into a scratch state. */
static int
ssh_validate(json_t *config, backend_config_report_fn report, void *ctx)
{
        struct ssh_state scratch = {0};

        return ssh_config_parse(config, &scratch, report, ctx);
}

static int
ssh_backend_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        /* The daemon's state directory, unless the operator set instance to a label. */
        const char *state = json_string_value(json_object_get(config, "instance"));
        const char *kh = json_string_value(json_object_get(config, "known_hosts"));
        const char *ch = json_string_value(json_object_get(config, "client_hosts"));

        if (sshb.initialised)
                return 0;
        ssh_free_config();
        memset(&sshb, 0, sizeof(sshb));
        list_init(&sshb.sandboxes);
        list_init(&sshb.destroying);
        sshb.loop = loop;
        if (ssh_config_parse(config, &sshb, backend_config_first_error, err) > 0 ||
            ssh_cfg_agent(config, err) < 0)
                return -EINVAL;
        if ((!state || state[0] != '/') && (!kh || !*kh)) { /* instance: the daemon's */
                sbx_error_param(err, "known_hosts",
                                "[backend.ssh] instance is not a directory: set known_hosts to "
                                "the file the backend trusts and records host keys in");
                return -EINVAL;
        }
        sshb.known_hosts = kh && *kh ? xstrdup(kh) : xasprintf("%s/ssh/known_hosts", state);
        sshb.client_hosts = ch && *ch && strcmp(ch, "no") ? xstrdup(ch) : NULL;
        sshb.defaults = json_deep_copy(config);
        json_object_del(sshb.defaults, "sections");
        sshb.hosts = json_incref(json_object_get(config, "sections"));
        if (!sshb.hosts)
                sshb.hosts = json_object();
        /* Only a daemon with somewhere to go pays for libssh and its crypto libraries. */
        if ((json_object_size(sshb.hosts) || sshb.client_hosts) &&
            ssh_dl_load(&sshb.dl_error) < 0 && !sshb.dl_error)
                sshb.dl_error = "libssh cannot be loaded";
        sshb.initialised = true;
        return 0;
}

/* ---- probe ---- */

/* What backend.list shows: the hosts, who may name their own, the agent. */
static json_t *
ssh_probe_details(void)
{
        json_t *hosts = json_array();
        const char *name;
        json_t *v;

        json_object_foreach(sshb.hosts, name, v) json_array_append_new(hosts, json_string(name));
        return json_pack("{s:o,s:s?,s:s,s:s?,s:s?,s:s,s:s}", "hosts", hosts, "client_hosts",
                         sshb.client_hosts, "known_hosts", sshb.known_hosts, "agent", sshb.agent,
                         "agent_note", sshb.agent_note, "exec",
                         sshb.agent ? "sandboxd-agent on Linux x86_64 hosts, plain exec channels "
                                      "elsewhere (slower; a dropped link ends what ran)"
                                    : "plain exec channels (slower; a dropped link ends what ran)",
                         "libssh", ssh_dl.handle ? ssh_version(0) : "not loaded");
}

static void
ssh_probe(void *ctx, backend_probe_cb cb)
{
        json_t *d = ssh_probe_details();

        if (sshb.dl_error) {
                backend_probe_public(d, "libssh is not installed on the daemon's machine",
                                     "the operator must install libssh-4");
                cb(ctx, false, sshb.dl_error, "install libssh-4 (apt-get install libssh-4)", d);
                return;
        }
        if (!json_object_size(sshb.hosts) && !sshb.client_hosts) {
                backend_probe_public(d, "no ssh hosts are configured",
                                     "the operator must add a [backend.ssh.NAME] section "
                                     "(docs/backends/ssh.md)");
                cb(ctx, false, "no ssh hosts are configured",
                   "add a [backend.ssh.NAME] section with host, user and identity_file "
                   "(docs/backends/ssh.md)",
                   d);
                return;
        }
        cb(ctx, true, NULL, NULL, d);
}

/* ---- execs ---- */

/* envp with the caller's HOME, USER and LOGNAME (as the daemon sets them) replaced by the
 * remote user's: the local ones mean nothing there. New, NULL-terminated. */
static char **
ssh_remote_env(struct backend_sandbox *sb, const struct exec_spec *spec)
{
        const struct {
                const char *key, *local, *remote;
        } swap[] = {
                {"HOME=", spec->who ? spec->who->home : NULL, sb->r_home},
                {"USER=", spec->who ? spec->who->user : NULL, sb->r_user},
                {"LOGNAME=", spec->who ? spec->who->user : NULL, sb->r_user},
        };
        size_t n = 0;
        char **env;

        while (spec->envp && spec->envp[n])
                n++;
        env = xcalloc(n + 1, sizeof(*env));
        for (size_t i = 0; i < n; i++) {
                const char *e = spec->envp[i];
                env[i] = NULL;
                for (size_t k = 0; k < ARRAY_SIZE(swap) && !env[i]; k++) {
                        size_t kl = strlen(swap[k].key);
                        if (!strncmp(e, swap[k].key, kl) && swap[k].local && swap[k].remote &&
                            !strcmp(e + kl, swap[k].local))
                                env[i] = xasprintf("%s%s", swap[k].key, swap[k].remote);
                }
                if (!env[i])
                        env[i] = xstrdup(e);
        }
        return env;
}

static void
ssh_strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static int
ssh_exec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
               const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
               struct sbx_error *err)
{
        struct exec_spec s = *spec;
        int r;

        if (sb->destroyed) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "ssh sandbox %s is being destroyed", sb->id);
                return -ESRCH;
        }
        s.envp = ssh_remote_env(sb, spec);
        if (sb->plain)
                r = ssh_plain_start(sb, &s, cbs, ctx, ret, err);
        else
                r = agent_exec_start(ssh_agent_session(sb, false), &s, cbs, ctx, ret, err);
        ssh_strv_free((char **) s.envp);
        return r;
}

static int
ssh_exec_adopt(struct backend_sandbox *sb, const struct exec_spec *spec, json_t *record,
               const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
               struct backend_proc **ret, struct sbx_error *err)
{
        if (sb->plain) {
                sbx_error_backend(err, SSH_BACKEND,
                                  "exec %s ran in a plain exec channel (no sandboxd-agent on %s): "
                                  "it cannot be taken back after a restart",
                                  spec->exec_id, sb->where);
                return -ENOTSUP;
        }
        return agent_exec_adopt(ssh_agent_session(sb, true), spec, offsets, cbs, ctx, ret, err);
}

static void
ssh_exec_adopt_done(struct backend_sandbox *sb)
{
        if (sb->session)
                agent_session_adopt_done(sb->session);
}

/* ---- files: helper commands through the agent (SFTP in libssh 0.10 blocks) ---- */

static void
ssh_file_helper(void *sb, char *const *argv, const void *in, size_t inlen, void *ctx,
                remote_file_helper_cb cb)
{
        ssh_helper(sb, argv, in, inlen, ctx, cb);
}

static void
ssh_file_ref(void *sb)
{
        ssh_sandbox_ref(sb);
}

static void
ssh_file_unref(void *sb)
{
        ssh_sandbox_unref(sb);
}

static const struct remote_file_ops ssh_file_ops = {
        .helper = ssh_file_helper,
        .ref = ssh_file_ref,
        .unref = ssh_file_unref,
};

/* Paths are the sandbox's: judge gets the requested path. */
REMOTE_FILE_ENTRIES(ssh, ssh_file_ops)

/* ---- save, shutdown ---- */

static json_t *
ssh_save(struct backend_sandbox *sb)
{
        char secret[2 * SSH_SECRET_LEN + 1];
        json_t *rec;

        for (size_t i = 0; i < SSH_SECRET_LEN; i++)
                snprintf(secret + 2 * i, 3, "%02x", sb->secret[i]);
        rec = json_pack("{s:i,s:o,s:s?,s:b,s:b,s:s}", "v", 1, "host", ssh_host_save(&sb->h),
                        "agent", sb->plain ? NULL : sb->agent_path, "plain", sb->plain, "bridge",
                        sb->bridge, "secret", secret);
        for (const struct ssh_fact *f = ssh_facts; f->key; f++)
                if (f->where & SSH_FACT_RECORD)
                        json_object_set_new(rec, f->key, json_string(*SSH_FACT(sb, f)));
        explicit_bzero(secret, sizeof(secret));
        return rec;
}

static void
ssh_shutdown(void)
{
        struct list *pos, *tmp;

        if (!sshb.initialised)
                return;
        sshb.initialised = false;
        LIST_FOREACH_SAFE(pos, tmp, &sshb.sandboxes)
        {
                struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                list_del(pos);
                agent_session_detach(sb->session); /* the agent keeps everything */
                sb->session = NULL;
                ssh_link_drop(sb);
                if (!sb->destroyed)
                        ssh_sandbox_unref(sb);
        }
        ssh_destroy_abandon(); /* their connections would keep the loop running */
}

const struct backend_ops ssh_backend_ops = {
        .name = SSH_BACKEND,
        .caps = BACKEND_CAP_SECTIONS | BACKEND_CAP_OWN_HOME,
        .init = ssh_backend_init,
        .validate = ssh_validate,
        .probe = ssh_probe,
        .create = ssh_create,
        .cancel = ssh_cancel,
        .save = ssh_save,
        .adopt = ssh_adopt,
        .destroy = ssh_destroy,
        .exec_start = ssh_exec_start,
        .exec_adopt = ssh_exec_adopt,
        .exec_adopt_done = ssh_exec_adopt_done,
        .file_read = ssh_file_read,
        .file_write = ssh_file_write,
        .shutdown = ssh_shutdown,
};
