/* audit.h — the audit log: append-only JSON lines in <state_dir>/audit/audit.log, one record per
 * policy decision and per approval answer, hash-chained (each line carries the hash of the one
 * before), rotated by size into audit.log.1 … audit.log.N, never holding secret values
 * (docs/policy.md, "Audit log"). A write failure is logged once and does not stop the daemon.
 * One log per process; loop thread only. Independent of the daemon's global state, so the unit
 * tests drive it directly. */
#ifndef SANDBOXD_AUDIT_H
#define SANDBOXD_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/error.h"

#define AUDIT_MAX_TEXT 8192 /* bytes of a command (or argv element) kept in a record */

/* Opens (creating 0700 / 0600) dir/audit.log and continues the chain of what is there. Rotates
 * when a line would take the file past max_bytes; keeps `keep` old files (at least 1). */
int audit_open(const char *dir, uint64_t max_bytes, unsigned keep, struct sbx_error *err);
/* Changes the rotation settings (configuration reload). */
void audit_set_limits(uint64_t max_bytes, unsigned keep);
/* Closes the log; audit_write() then drops records. */
void audit_close(void);
/* Path of the current file (borrowed; NULL before audit_open) and the directory. */
const char *audit_path(void);
const char *audit_dir(void);
/* Number of records that could not be written since start. */
uint64_t audit_errors(void);
/* Appends one record (stolen): sets ts, seq, prev and hash. Never fails the caller. */
void audit_write(json_t *rec);

/* A copy of a shell command with secret values replaced by "***" (new): NAME=value assignments
 * and --name=value / --name value options whose name holds a secret word, credential headers,
 * Bearer/Basic tokens, URL passwords, `-u user:password`. Cut to AUDIT_MAX_TEXT bytes. */
char *audit_redact_command(const char *command);
/* The same for an argv array of strings (borrowed); returns a new array. */
json_t *audit_redact_argv(json_t *argv);
/* What a sandbox.create spec (borrowed) asks for, without env values: backend, name, image,
 * workdir, network, mounts, env names, docker host_config keys (new). */
json_t *audit_spec_summary(json_t *spec);

#endif
