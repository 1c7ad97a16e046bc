/* daemon.h — process-wide daemon state shared by the daemon/ modules. Loop thread only. */
#ifndef SANDBOXD_DAEMON_H
#define SANDBOXD_DAEMON_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/config.h"
#include "policy/policy.h"

struct daemon_state {
        uv_loop_t *loop;
        struct config *config;
        char *config_path; /* NULL: defaults only */
        struct policy *policy;
        char *policy_error;  /* last policy load problem, NULL when fine */
        char *state_dir;     /* absolute, exists, 0700 */
        char *socket_path;   /* what we listen on (NULL when handed over without a path) */
        uint64_t started_ms; /* monotonic */
        uid_t uid;           /* the daemon's own uid */
        bool stopping;
        const char *protected_paths[6]; /* state dir, config, socket, audit dir; NULL-ended */
};

extern struct daemon_state g;

/* Whether uid may use the daemon as its owner/root ("admin" methods). */
bool daemon_is_admin(uid_t uid);

#endif
