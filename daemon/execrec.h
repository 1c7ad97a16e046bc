/* execrec.h — records of execs that outlive the daemon, in one append-only journal,
 * <state_dir>/spool/execs.jsonl, beside the execs' spools: one JSON line when an exec whose
 * backend can take it back after a restart (backend_proc_ops.save) starts, one when it ends,
 * one when it is forgotten. A restarted daemon replays it (the last line of each exec wins),
 * re-adopts the running execs and keeps showing the ended ones. Appending costs one write(2) per
 * event, so an exec pays microseconds for it; the journal is rewritten compactly (atomic rename)
 * at start-up, whenever it holds much more than the live records and before an append would take
 * it past the 256 MiB a restart replays (the live records may hold half of that; a record past it
 * is refused with -ENOSPC, its exec then does not outlive the daemon). Not fsynced: it must
 * survive the daemon, not the machine (the containers do not either). Loop thread only.
 *
 * A record (version 1): {"version": 1, "key" (the daemon's own name of the exec: its spools,
 * the agent's exec name), "exec_id" (what clients call it), "sandbox", "owner" (uid), "state":
 * "running" | "exited", "command" | "argv", "tag"?, "cwd"?, "env"?, "background", "base64",
 * "pty", "rows", "cols", "stdin_open", "merge_stderr", "max_output", "timeout_ms",
 * "started_ms" (wall), "state_path"?, "policy" ({verdict, resolution, findings}), "record"
 * (the backend's), "own_bytes"? ([stdout, stderr]: bytes of the spools the daemon wrote itself,
 * such as the note on a removed cwd, which the backend never sent: resumed without them), and when
 * exited the exit fields of exec.exit plus "ended_ms". A line
 * {"version": 1, "key", "forget": true} drops an exec.
 */
#ifndef SANDBOXD_EXECREC_H
#define SANDBOXD_EXECREC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define EXECREC_VERSION 1
/* Records kept at most (more are not recorded: those execs do not outlive the daemon). */
#define EXECREC_MAX 65536
/* A journal larger than this is not replayed; live records take at most half of it. */
#define EXECREC_MAX_BYTES (256u << 20)

/* Sets the bound above for the next execrec_open (tests: the same logic at a smaller scale). */
void execrec_set_max_bytes(uint64_t bytes);

/* Replays dir's journal and rewrites it compactly; returns every live record (new array).
 * *warning (new, may be NULL) says what was wrong with it. Opens the journal for appending. */
json_t *execrec_open(const char *dir, char **warning);
/* Records rec (borrowed; its key names it). Returns 0 or negative errno. */
int execrec_put(json_t *rec);
/* Forgets an exec. */
void execrec_drop(const char *id);
/* Closes the journal (shutdown). */
void execrec_close(void);
/* Whether id can name a record ([A-Za-z0-9._-], 1 to 64 bytes). */
bool execrec_id_ok(const char *id);

#endif
