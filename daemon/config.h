/* config.h — the daemon's INI configuration (docs/configuration.md lists every key).
 * Loaded at start and on SIGHUP; a bad file keeps the old configuration. Loop thread only. */
#ifndef SANDBOXD_CONFIG_H
#define SANDBOXD_CONFIG_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"

struct config {
        /* [daemon] */
        char *socket;       /* NULL: protocol §1 default */
        char *state_dir;    /* NULL: /var/lib/sandboxd (root) or $XDG_STATE_HOME/sandboxd */
        char *socket_group; /* NULL: socket 0600; else 0660 with this group */
        char *log_level;    /* "info" */
        uid_t *allow_uids;
        size_t nallow_uids;
        gid_t *allow_gids;
        size_t nallow_gids;
        /* [limits] */
        uint64_t max_message_bytes;
        uint64_t conn_write_buffer_max;
        uint64_t max_connections;
        uint64_t max_connections_per_uid;
        uint64_t max_processes_per_uid;
        uint64_t max_sandboxes_per_uid;
        uint64_t max_sandbox_spec_bytes; /* sandbox.create params, compact JSON */
        uint64_t max_exited_per_uid;
        uint64_t max_exited_bytes_per_uid; /* command/argv, env, cwd, tag of exited ones */
        uint64_t max_spool_bytes_per_uid;  /* output their spools keep on disk */
        uint64_t spool_max_bytes;
        uint64_t max_output_bytes_limit;
        uint64_t max_output_bytes_per_uid; /* foreground results in memory, and queued output */
        uint64_t max_stdin_bytes;
        uint64_t max_pending_requests;
        uint64_t max_pending_requests_per_uid;
        uint64_t file_timeout_s;           /* each phase of a file op (resolve, I/O) */
        uint64_t max_input_bytes_per_uid;  /* read buffers (half-sent lines) of one uid */
        uint64_t max_path_lookups_per_uid; /* host path helpers of one uid (hostpaths.h) */
        uint64_t max_helpers_per_uid;      /* caller_file.h helpers of one uid still alive */
        /* [exec] */
        uint64_t default_timeout_s;
        uint64_t max_foreground_timeout_s;
        uint64_t kill_grace_ms;
        uint64_t drain_grace_ms;
        uint64_t exited_retention_s;
        uint64_t default_max_output_bytes;
        char *shell; /* NULL: bash if present, else sh */
        /* [sandbox] */
        char *default_backend;
        /* [policy] */
        char *policy_file;
        uint64_t approval_timeout_s;
        bool subagent_auto_approve;
        uid_t *batch_auto_approve_uids;
        size_t nbatch_auto_approve_uids;
        char *ask_isolated;       /* "allow" (default, NULL) | "ask": ASK without host access */
        uint64_t audit_max_bytes; /* rotate the audit log beyond this size */
        uint64_t audit_keep;      /* rotated audit files kept */
        /* [backend.NAME] sections: object name -> object of key -> string */
        json_t *backends;
        char *path; /* file it came from, NULL for defaults */
};

/* Defaults only (new). */
struct config *config_new_default(void);
/* Loads path over the defaults (new in *ret). A missing file is an error only if required.
 * Errors say "path:line: what". */
int config_load(const char *path, bool required, struct config **ret, struct sbx_error *err);
struct config *config_free(struct config *c);
/* The [backend.NAME] section (borrowed, never NULL: an empty object when absent). */
json_t *config_backend(const struct config *c, const char *name);
struct policy_host;
/* The host's CPUs, memory and kernel.pid_max, read at the first call (static): the shipped
 * defaults of the [backend.docker] maxima. */
const struct policy_host *config_host(void);

#endif
