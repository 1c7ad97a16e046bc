/* ssh_dl.c — libssh through dlopen() (ssh_dl.h). */
#include "backends/ssh/ssh_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "protocol/util.h"

struct ssh_dl ssh_dl;

#define SYM(field, sym)                                                                            \
        {                                                                                          \
#sym, offsetof(struct ssh_dl, field)                                               \
        }

static const struct {
        const char *name;
        size_t offset;
} ssh_dl_syms[] = {
        SYM(init, ssh_init),
        SYM(version, ssh_version),
        SYM(new_session, ssh_new),
        SYM(free_session, ssh_free),
        SYM(options_set, ssh_options_set),
        SYM(set_blocking, ssh_set_blocking),
        SYM(connect, ssh_connect),
        SYM(disconnect, ssh_disconnect),
        SYM(get_error, ssh_get_error),
        SYM(get_poll_flags, ssh_get_poll_flags),
        SYM(is_connected, ssh_is_connected),
        SYM(get_fd, ssh_get_fd),
        SYM(get_openssh_version, ssh_get_openssh_version),
        SYM(get_server_publickey, ssh_get_server_publickey),
        SYM(get_publickey_hash, ssh_get_publickey_hash),
        SYM(get_fingerprint_hash, ssh_get_fingerprint_hash),
        SYM(clean_pubkey_hash, ssh_clean_pubkey_hash),
        SYM(string_free_char, ssh_string_free_char),
        SYM(key_free, ssh_key_free),
        SYM(key_cmp, ssh_key_cmp),
        SYM(key_type, ssh_key_type),
        SYM(key_type_to_char, ssh_key_type_to_char),
        SYM(pki_import_privkey_base64, ssh_pki_import_privkey_base64),
        SYM(pki_export_privkey_to_pubkey, ssh_pki_export_privkey_to_pubkey),
        SYM(pki_export_pubkey_base64, ssh_pki_export_pubkey_base64),
        SYM(known_hosts_parse_line, ssh_known_hosts_parse_line),
        SYM(knownhosts_entry_free, ssh_knownhosts_entry_free),
        SYM(userauth_none, ssh_userauth_none),
        SYM(userauth_list, ssh_userauth_list),
        SYM(userauth_publickey, ssh_userauth_publickey),
        SYM(userauth_agent, ssh_userauth_agent),
        SYM(set_agent_socket, ssh_set_agent_socket),
        SYM(channel_new, ssh_channel_new),
        SYM(channel_free, ssh_channel_free),
        SYM(channel_open_session, ssh_channel_open_session),
        SYM(channel_open_forward, ssh_channel_open_forward),
        SYM(channel_open_forward_unix, ssh_channel_open_forward_unix),
        SYM(channel_request_exec, ssh_channel_request_exec),
        SYM(channel_request_pty_size, ssh_channel_request_pty_size),
        SYM(channel_change_pty_size, ssh_channel_change_pty_size),
        SYM(channel_write, ssh_channel_write),
        SYM(channel_read_nonblocking, ssh_channel_read_nonblocking),
        SYM(channel_send_eof, ssh_channel_send_eof),
        SYM(channel_close, ssh_channel_close),
        SYM(channel_window_size, ssh_channel_window_size),
        SYM(set_channel_callbacks, ssh_set_channel_callbacks),
        SYM(remove_channel_callbacks, ssh_remove_channel_callbacks),
        SYM(event_new, ssh_event_new),
        SYM(event_free, ssh_event_free),
        SYM(event_add_session, ssh_event_add_session),
        SYM(event_remove_session, ssh_event_remove_session),
        SYM(event_dopoll, ssh_event_dopoll),
};

/* Loads and initialises libssh once. */
int
ssh_dl_load(const char **why)
{
        void *h;

        if (ssh_dl.handle)
                return 0;
        h = dlopen(SSH_DL_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                *why = SSH_DL_SONAME " cannot be loaded (install libssh-4)";
                return -ELIBACC;
        }
        for (size_t i = 0; i < ARRAY_SIZE(ssh_dl_syms); i++) {
                void *f = dlsym(h, ssh_dl_syms[i].name);
                if (!f) {
                        dlclose(h);
                        *why = SSH_DL_SONAME " lacks a function sandboxd needs (libssh 0.10 "
                                             "or later is required)";
                        return -ELIBACC;
                }
                memcpy((char *) &ssh_dl + ssh_dl_syms[i].offset, &f, sizeof(f));
        }
        ssh_dl.handle = h;
        if (ssh_init() < 0) {
                *why = "libssh could not initialise its crypto library";
                return -ELIBACC;
        }
        return 0;
}
