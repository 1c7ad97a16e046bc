/* server.h — the listening socket (own or handed over by systemd), accepting with peer checks
 * and connection limits, reload and shutdown. Loop thread only. */
#ifndef SANDBOXD_SERVER_H
#define SANDBOXD_SERVER_H

#include <stdbool.h>
#include <uv.h>

#include "protocol/error.h"

/* Opens the listener: a socket from systemd (LISTEN_FDS) when there is one and no explicit
 * path was given, else binds path (creating its directory 0700). A passed socket must be
 * exactly one listening Unix stream socket, anything else is an error (-EINVAL, err says what
 * fd 3 is); g.socket_path is then replaced by the passed socket's own path (NULL when it has
 * none), so path must not be used by the caller afterwards if it is g.socket_path. */
int server_open(uv_loop_t *loop, const char *path, bool explicit_path, const char *group,
                struct sbx_error *err);
/* Reloads the policy from the configured rules file; keeps the old one on error. */
int server_reload_policy(struct sbx_error *err);
/* Stops accepting; closes the listener (and unlinks our own socket file). */
void server_close(void);
/* Whether the socket came from systemd. */
bool server_activated(void);

#endif
