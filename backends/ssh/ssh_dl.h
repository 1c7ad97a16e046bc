/* ssh_dl.h — libssh, loaded with dlopen() on first use (ssh_dl.c) rather than linked, as
 * libcurl is (backends/http.c): with it come OpenSSL, zlib and Kerberos, megabytes that a daemon
 * which never opens an ssh sandbox should not carry.
 *
 * Every libssh function the ssh backend calls goes through the table below, with the exact
 * types of <libssh/libssh.h>; the macros at the end let the backend's files call them by their
 * own names. Include this header instead of <libssh/libssh.h>, in backends/ssh/ only.
 * Loop thread only (libssh sessions are used by one thread).
 */
#ifndef SANDBOXD_SSH_DL_H
#define SANDBOXD_SSH_DL_H

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

struct ssh_dl {
        void *handle;
        __typeof__(ssh_init) *init;
        __typeof__(ssh_version) *version;
        __typeof__(ssh_new) *new_session;
        __typeof__(ssh_free) *free_session;
        __typeof__(ssh_options_set) *options_set;
        __typeof__(ssh_set_blocking) *set_blocking;
        __typeof__(ssh_connect) *connect;
        __typeof__(ssh_disconnect) *disconnect;
        __typeof__(ssh_get_error) *get_error;
        __typeof__(ssh_get_poll_flags) *get_poll_flags;
        __typeof__(ssh_is_connected) *is_connected;
        __typeof__(ssh_get_fd) *get_fd;
        __typeof__(ssh_get_openssh_version) *get_openssh_version;
        __typeof__(ssh_get_server_publickey) *get_server_publickey;
        __typeof__(ssh_get_publickey_hash) *get_publickey_hash;
        __typeof__(ssh_get_fingerprint_hash) *get_fingerprint_hash;
        __typeof__(ssh_clean_pubkey_hash) *clean_pubkey_hash;
        __typeof__(ssh_string_free_char) *string_free_char;
        __typeof__(ssh_key_free) *key_free;
        __typeof__(ssh_key_cmp) *key_cmp;
        __typeof__(ssh_key_type) *key_type;
        __typeof__(ssh_key_type_to_char) *key_type_to_char;
        __typeof__(ssh_pki_import_privkey_base64) *pki_import_privkey_base64;
        __typeof__(ssh_pki_export_privkey_to_pubkey) *pki_export_privkey_to_pubkey;
        __typeof__(ssh_pki_export_pubkey_base64) *pki_export_pubkey_base64;
        __typeof__(ssh_known_hosts_parse_line) *known_hosts_parse_line;
        __typeof__(ssh_knownhosts_entry_free) *knownhosts_entry_free;
        __typeof__(ssh_userauth_none) *userauth_none;
        __typeof__(ssh_userauth_list) *userauth_list;
        __typeof__(ssh_userauth_publickey) *userauth_publickey;
        __typeof__(ssh_userauth_agent) *userauth_agent;
        __typeof__(ssh_set_agent_socket) *set_agent_socket;
        __typeof__(ssh_channel_new) *channel_new;
        __typeof__(ssh_channel_free) *channel_free;
        __typeof__(ssh_channel_open_session) *channel_open_session;
        __typeof__(ssh_channel_open_forward) *channel_open_forward;
        __typeof__(ssh_channel_open_forward_unix) *channel_open_forward_unix;
        __typeof__(ssh_channel_request_exec) *channel_request_exec;
        __typeof__(ssh_channel_request_pty_size) *channel_request_pty_size;
        __typeof__(ssh_channel_change_pty_size) *channel_change_pty_size;
        __typeof__(ssh_channel_write) *channel_write;
        __typeof__(ssh_channel_read_nonblocking) *channel_read_nonblocking;
        __typeof__(ssh_channel_send_eof) *channel_send_eof;
        __typeof__(ssh_channel_close) *channel_close;
        __typeof__(ssh_channel_window_size) *channel_window_size;
        __typeof__(ssh_set_channel_callbacks) *set_channel_callbacks;
        __typeof__(ssh_remove_channel_callbacks) *remove_channel_callbacks;
        __typeof__(ssh_event_new) *event_new;
        __typeof__(ssh_event_free) *event_free;
        __typeof__(ssh_event_add_session) *event_add_session;
        __typeof__(ssh_event_remove_session) *event_remove_session;
        __typeof__(ssh_event_dopoll) *event_dopoll;
};

extern struct ssh_dl ssh_dl;

#define SSH_DL_SONAME "libssh.so.4"

/* Loads libssh once and initialises it; 0, or -ELIBACC (why: a message, static) when it or one
 * of its functions is missing. */
int ssh_dl_load(const char **why);

#define ssh_init                         (*ssh_dl.init)
#define ssh_version                      (*ssh_dl.version)
#define ssh_new                          (*ssh_dl.new_session)
#define ssh_free                         (*ssh_dl.free_session)
#define ssh_options_set                  (*ssh_dl.options_set)
#define ssh_set_blocking                 (*ssh_dl.set_blocking)
#define ssh_connect                      (*ssh_dl.connect)
#define ssh_disconnect                   (*ssh_dl.disconnect)
#define ssh_get_error                    (*ssh_dl.get_error)
#define ssh_get_poll_flags               (*ssh_dl.get_poll_flags)
#define ssh_is_connected                 (*ssh_dl.is_connected)
#define ssh_get_fd                       (*ssh_dl.get_fd)
#define ssh_get_openssh_version          (*ssh_dl.get_openssh_version)
#define ssh_get_server_publickey         (*ssh_dl.get_server_publickey)
#define ssh_get_publickey_hash           (*ssh_dl.get_publickey_hash)
#define ssh_get_fingerprint_hash         (*ssh_dl.get_fingerprint_hash)
#define ssh_clean_pubkey_hash            (*ssh_dl.clean_pubkey_hash)
#define ssh_string_free_char             (*ssh_dl.string_free_char)
#define ssh_key_free                     (*ssh_dl.key_free)
#define ssh_key_cmp                      (*ssh_dl.key_cmp)
#define ssh_key_type                     (*ssh_dl.key_type)
#define ssh_key_type_to_char             (*ssh_dl.key_type_to_char)
#define ssh_pki_import_privkey_base64    (*ssh_dl.pki_import_privkey_base64)
#define ssh_pki_export_privkey_to_pubkey (*ssh_dl.pki_export_privkey_to_pubkey)
#define ssh_pki_export_pubkey_base64     (*ssh_dl.pki_export_pubkey_base64)
#define ssh_known_hosts_parse_line       (*ssh_dl.known_hosts_parse_line)
#define ssh_knownhosts_entry_free        (*ssh_dl.knownhosts_entry_free)
#define ssh_userauth_none                (*ssh_dl.userauth_none)
#define ssh_userauth_list                (*ssh_dl.userauth_list)
#define ssh_userauth_publickey           (*ssh_dl.userauth_publickey)
#define ssh_userauth_agent               (*ssh_dl.userauth_agent)
#define ssh_set_agent_socket             (*ssh_dl.set_agent_socket)
#define ssh_channel_new                  (*ssh_dl.channel_new)
#define ssh_channel_free                 (*ssh_dl.channel_free)
#define ssh_channel_open_session         (*ssh_dl.channel_open_session)
#define ssh_channel_open_forward         (*ssh_dl.channel_open_forward)
#define ssh_channel_open_forward_unix    (*ssh_dl.channel_open_forward_unix)
#define ssh_channel_request_exec         (*ssh_dl.channel_request_exec)
#define ssh_channel_request_pty_size     (*ssh_dl.channel_request_pty_size)
#define ssh_channel_change_pty_size      (*ssh_dl.channel_change_pty_size)
#define ssh_channel_write                (*ssh_dl.channel_write)
#define ssh_channel_read_nonblocking     (*ssh_dl.channel_read_nonblocking)
#define ssh_channel_send_eof             (*ssh_dl.channel_send_eof)
#define ssh_channel_close                (*ssh_dl.channel_close)
#define ssh_channel_window_size          (*ssh_dl.channel_window_size)
#define ssh_set_channel_callbacks        (*ssh_dl.set_channel_callbacks)
#define ssh_remove_channel_callbacks     (*ssh_dl.remove_channel_callbacks)
#define ssh_event_new                    (*ssh_dl.event_new)
#define ssh_event_free                   (*ssh_dl.event_free)
#define ssh_event_add_session            (*ssh_dl.event_add_session)
#define ssh_event_remove_session         (*ssh_dl.event_remove_session)
#define ssh_event_dopoll                 (*ssh_dl.event_dopoll)

#endif
