/* ssh.h — the ssh backend (docs/backends/ssh.md). */
#ifndef SANDBOXD_SSH_H
#define SANDBOXD_SSH_H

#include "backends/backend.h"

extern const struct backend_ops ssh_backend_ops;

#endif
