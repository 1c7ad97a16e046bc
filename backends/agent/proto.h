/* proto.h — the wire format between the daemon's agent sessions (backends/agent/session.c)
 * and sandboxd-agent (backends/agent/prog/). Shared by both sides; no dependencies beyond
 * <stdint.h> and <string.h>.
 *
 * The agent runs every exec of a sandbox over one byte stream: a container's attach stream, a
 * pair of pipes to `apptainer exec` / `kubectl exec -i` / `ssh`, a Unix socket, a libssh channel.
 * Nothing here depends on which.
 *
 * Messages, both ways: a 12-byte header and len payload bytes (integers little-endian):
 *
 *     u32 len | u32 id | u8 type | u8 0 | u8 0 | u8 0
 *
 * id names an exec within the current session (chosen by the daemon, never 0) or is 0 for the
 * channel itself. Strings are NUL-terminated. An exec also has a durable name (the daemon's
 * exec id, "p_…") that outlives sessions: RESUME binds a name to the id of a new session.
 *
 * Daemon -> agent bytes are stuffed so that a new session can always be told from the tail of
 * an old one (a daemon killed in the middle of a message): 0xFE is written as FE 01, and FE 00
 * (SYNC) starts a session — the agent drops any partial message when it sees it. The daemon
 * sends SYNC first on every new stream. Agent -> daemon bytes are not stuffed: the daemon skips
 * everything before the READY that echoes the random nonce of its HELLO (the stream may begin
 * with an earlier session's bytes, even mid-message).
 *
 * A session: [CHALLENGE/AUTH/AUTH_OK: detached agents only] HELLO -> READY, then RESUME for
 * every exec the daemon still has, RESUME_END (execs nobody resumed are killed), then START,
 * STDIN, KILL, … Nothing about an exec is lost when a session ends: the agent keeps its output
 * in a spool until the daemon acknowledges it (ACK), and its exit status until FORGET.
 *
 * Flow control: the agent sends at most AGENT_OUT_WINDOW unacknowledged output bytes per exec
 * and stream; the daemon sends at most AGENT_STDIN_WINDOW stdin bytes the agent has not yet
 * written to the child. The agent stops reading a child's pipes when its spool quota is full.
 */
#ifndef SANDBOXD_AGENT_PROTO_H
#define SANDBOXD_AGENT_PROTO_H

#include <stdint.h>
#include <string.h>

#define AGENT_PROTO_VERSION 2u
#define AGENT_HDR_LEN       12u
#define AGENT_MAX_PAYLOAD   (1u << 20)               /* larger is a protocol error */
#define AGENT_OUT_CHUNK     (64u << 10)              /* the agent's largest output payload */
#define AGENT_OUT_WINDOW    (1u << 20)               /* unacknowledged output per exec and stream */
#define AGENT_STDIN_WINDOW  (256u << 10)             /* stdin in flight per exec */
#define AGENT_STDIN_CHUNK   (64u << 10)              /* the daemon's largest STDIN payload */
#define AGENT_MAX_STATE     (AGENT_MAX_PAYLOAD - 32) /* largest shell state in EXIT */
#define AGENT_NONCE_LEN     16u
#define AGENT_AUTH_LEN      32u                /* challenge and MAC sizes (HMAC-SHA-256) */
#define AGENT_NAME_MAX      64u                /* exec names: [A-Za-z0-9._-], 1..64 bytes */
#define AGENT_PATH          "/.sandboxd/agent" /* where the docker backend mounts the binary */

/* Stuffing of the daemon -> agent direction. */
#define AGENT_ESC      0xFEu
#define AGENT_ESC_SYNC 0x00u
#define AGENT_ESC_LIT  0x01u

enum agent_msg {
        /* daemon -> agent */
        AGENT_HELLO = 1,      /* id 0; u32 version, nonce[16], u32 flags (0) */
        AGENT_START = 2,      /* see below */
        AGENT_STDIN = 3,      /* u64 offset of the first byte, bytes */
        AGENT_EOF = 4,        /* u64 stdin length: close stdin once that much is written */
        AGENT_KILL = 5,       /* u32 sig, u32 grace_ms, u32 mode (AGENT_KILL_*), u32 tag */
        AGENT_ACK = 6,        /* u64 stdout, u64 stderr: output received up to these offsets */
        AGENT_RESIZE = 7,     /* u16 rows, u16 cols */
        AGENT_RESUME = 8,     /* u64 stdout, u64 stderr (received so far), name */
        AGENT_RESUME_END = 9, /* id 0; every exec still wanted is resumed or started */
        AGENT_FORGET = 10,    /* the exit status is recorded: free the exec */
        AGENT_PING = 11,      /* id 0; u64 token */
        AGENT_AUTH = 12,      /* id 0; u8 client_nonce[32], u8 mac[32] (see auth below) */

        /* agent -> daemon */
        AGENT_READY = 64,     /* id 0; u32 version, u32 pid, nonce[16], u64 instance (random
                                 per agent process: a new one means the agent restarted),
                                 u32 flags (AGENT_READY_*) */
        AGENT_STARTED = 65,   /* u32 pid (= session id of the exec's tree), u64 stdin offset */
        AGENT_FAILED = 66,    /* u32 errno, string step ("chdir", "exec", "fork", "pty", …)
                                 — the exec never ran; nothing else follows for this id */
        AGENT_STDOUT = 67,    /* u64 offset, bytes */
        AGENT_STDERR = 68,    /* u64 offset, bytes */
        AGENT_STDIN_ACK = 69, /* u64 stdin bytes written to the child (or dropped) so far */
        AGENT_EXIT = 70,      /* i32 wait status, u32 flags (AGENT_EXIT_*), u64 stdout total,
                                 u64 stderr total, then the shell state's bytes (at most
                                 SHELL_STATE_MAX, backends/shell_init.h); after all of
                                 the exec's output. Sent again in every session until FORGET. */
        AGENT_KILLED = 71,    /* u32 tag, u32 processes of the tree still alive */
        AGENT_ERROR = 72,     /* id 0; string. A protocol error: the agent ends the session
                                 (a socket is closed; on stdio it ignores input up to the next
                                 SYNC). Execs go on. */
        AGENT_RESUMED = 73,   /* u32 pid, u32 flags (AGENT_RESUMED_*), u64 stdout start,
                                 u64 stderr start (the oldest offsets it still has), u64 stdin
                                 offset; then the output from the RESUME's offsets, and EXIT */
        AGENT_UNKNOWN = 74,   /* no exec of the RESUME's name (never started, or forgotten) */
        AGENT_PONG = 75,      /* id 0; the PING's token */
        AGENT_CHALLENGE = 76, /* id 0; u32 version, u8 agent_nonce[32] (detached agents) */
        AGENT_AUTH_OK = 77,   /* id 0; u8 mac[32] */
        AGENT_REFUSED = 78,   /* u64 stdout, u64 stderr (the exec's output so far): a RESUME
                                 from beyond them (the daemon holds bytes the agent never
                                 sent). The exec stays unbound: RESUME_END kills it. Never a
                                 session error, which would repeat at every reconnect. */
};

/* START payload: u32 flags, u16 rows, u16 cols, u32 argc, u32 envc, then NUL-terminated: name,
 * cwd ("" = the agent's), state path ("" = none), with AGENT_START_PATH the program's path,
 * argv[argc], env[envc] ("K=V", laid over the agent's own environment, as `docker exec -e`
 * does). A START whose name the agent knows is
 * answered like a RESUME from offset 0 (a START re-sent after a lost link). With a state path
 * the agent makes its directory and writes bash's start-up file there (SHELL_BASH_INIT_NAME)
 * when it is missing; after the exit it sends the file's bytes in EXIT and removes it. */
enum agent_start_flags {
        AGENT_START_TTY = 1u,   /* run on a new pty (stdout only; stdin via the pty) */
        AGENT_START_STDIN = 2u, /* give the child a stdin pipe (else /dev/null) */
        AGENT_START_MERGE = 4u, /* stderr into the stdout stream */
        /* a path follows the state path: the program executed (argv[0] is then only its name,
         * as the local backend runs its configured shell); without it argv[0] by PATH. An
         * agent that does not know the flag refuses the START, never runs something else. */
        AGENT_START_PATH = 8u,
};

enum agent_kill_mode {
        AGENT_KILL_SIGNAL = 0, /* send sig to the tree once, no answer */
        AGENT_KILL_WAIT = 1,   /* sig, up to grace_ms for the tree to go, then SIGKILL; KILLED */
};

enum agent_exit_flags {
        AGENT_EXIT_OOM = 1u,       /* the exec's cgroup oom_kill count rose while it ran */
        AGENT_EXIT_STATE_BIG = 2u, /* the state file was over SHELL_STATE_MAX: not sent */
};

enum agent_resumed_flags {
        AGENT_RESUMED_ENDED = 1u, /* the exec has exited (EXIT follows its output) */
};

enum agent_ready_flags {
        AGENT_READY_DETACHED = 1u, /* a detached agent on a socket (else on its stdio) */
};

/* Detached agents (sandboxd-agent --detach): the agent sends CHALLENGE on accept; the client
 * answers AUTH with mac = HMAC-SHA-256(secret, AGENT_AUTH_CLIENT || agent_nonce ||
 * client_nonce); the agent checks it and proves itself with AUTH_OK, mac = HMAC-SHA-256(secret,
 * AGENT_AUTH_AGENT || agent_nonce || client_nonce). Anything else closes the connection. */
#define AGENT_AUTH_CLIENT "sandboxd-agent client v2"
#define AGENT_AUTH_AGENT  "sandboxd-agent agent v2"

static inline void
agent_put32(unsigned char *p, uint32_t v)
{
        p[0] = (unsigned char) v;
        p[1] = (unsigned char) (v >> 8);
        p[2] = (unsigned char) (v >> 16);
        p[3] = (unsigned char) (v >> 24);
}

static inline uint32_t
agent_get32(const unsigned char *p)
{
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
               (uint32_t) p[3] << 24;
}

static inline void
agent_put64(unsigned char *p, uint64_t v)
{
        agent_put32(p, (uint32_t) v);
        agent_put32(p + 4, (uint32_t) (v >> 32));
}

static inline uint64_t
agent_get64(const unsigned char *p)
{
        return (uint64_t) agent_get32(p) | (uint64_t) agent_get32(p + 4) << 32;
}

static inline void
agent_put16(unsigned char *p, uint16_t v)
{
        p[0] = (unsigned char) v;
        p[1] = (unsigned char) (v >> 8);
}

static inline uint16_t
agent_get16(const unsigned char *p)
{
        return (uint16_t) (p[0] | p[1] << 8);
}

/* Writes a header for a message of len payload bytes. */
static inline void
agent_hdr(unsigned char h[AGENT_HDR_LEN], uint32_t len, uint32_t id, enum agent_msg type)
{
        agent_put32(h, len);
        agent_put32(h + 4, id);
        h[8] = (unsigned char) type;
        h[9] = h[10] = h[11] = 0;
}

/* Stuffs n bytes of src into dst (room for 2 * n); returns the bytes written. */
static inline size_t
agent_stuff(unsigned char *dst, const unsigned char *src, size_t n)
{
        size_t o = 0;

        while (n) {
                const unsigned char *e = (const unsigned char *) memchr(src, AGENT_ESC, n);
                size_t k = e ? (size_t) (e - src) : n;
                memcpy(dst + o, src, k);
                o += k;
                src += k;
                n -= k;
                if (!e)
                        break;
                dst[o++] = AGENT_ESC;
                dst[o++] = AGENT_ESC_LIT;
                src++;
                n--;
        }
        return o;
}

/* Whether name is a valid exec name. */
static inline int
agent_name_ok(const char *name)
{
        size_t n = strlen(name);

        if (n == 0 || n > AGENT_NAME_MAX)
                return 0;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-'))
                        return 0;
        }
        return 1;
}

#endif
