/* policy.h — the policy engine's public interface (protocol §6).
 *
 * Pure: no event loop, no logging; I/O only in policy_load(). Thread-compatible: a loaded
 * struct policy is immutable and may be shared; results belong to the caller.
 */
#ifndef SANDBOXD_POLICY_H
#define SANDBOXD_POLICY_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"

enum policy_verdict {
        POLICY_ALLOW = 0,
        POLICY_ASK = 1,
        POLICY_DENY = 2,
};

/* Finding flags. */
#define POLICY_F_FLOOR     0x1 /* catastrophic floor rule: nothing lifts it */
#define POLICY_F_NO_ALWAYS 0x2 /* broad carrier: never offer "always" */

struct policy_finding {
        char *rule; /* rule id, e.g. "floor.rm-root" */
        enum policy_verdict verdict;
        char *message; /* human sentence: what and why */
        char *match;   /* the text that matched, may be NULL */
        char *subject; /* what an approval key binds to (normalised argv / path), may be NULL */
        unsigned flags;
};

struct policy_result {
        enum policy_verdict verdict; /* strictest of the findings; ALLOW when none */
        struct policy_finding *findings;
        size_t nfindings;
        bool host_access; /* container checks: something from the host shows inside */
        /* Container checks: a field of the spec that cannot be judged (unknown, misspelt,
         * wrong type): -32602 with data {param}; code 0 when there is none. The verdict is
         * then DENY as well (container.invalid). */
        struct sbx_error invalid;
};

/* A caller as the kernel checks its access to files (policy_ctx.resolve_as). */
struct policy_who {
        uid_t uid;
        gid_t gid;
        const gid_t *groups; /* supplementary groups, borrowed */
        size_t ngroups;
};

/* The image a docker sandbox runs when its spec names none ([backend.docker] image). */
#define POLICY_DOCKER_IMAGE "debian:bookworm-slim"

/* What the host offers, for the shipped defaults of struct policy_docker_limits. */
struct policy_host {
        long cpus;       /* online CPUs */
        int64_t mem;     /* physical memory, bytes */
        int64_t pid_max; /* kernel.pid_max */
        bool cgroup2;    /* cgroup v2 (the default blkio weight is BFQ's 100, not 500) */
};

/* The rlimits a docker spec's Ulimits may set, with the most each may be, when
 * [backend.docker] max_ulimits is not given: those that only limit the container's own
 * processes are free; nofile is the kernel's fs.nr_open default, memlock and msgqueue stay
 * small (pinned memory and per-uid kernel memory), core 0 (a dump goes to the host's
 * core_pattern), nice 20 (no priority above the normal), rtprio 0 (no real-time scheduling);
 * sigpending is not listed (a per-uid host counter). */
#define POLICY_DOCKER_ULIMITS                                                                      \
        "as=unlimited cpu=unlimited data=unlimited fsize=unlimited locks=unlimited "               \
        "nproc=unlimited rss=unlimited rttime=unlimited stack=unlimited nofile=1048576 "           \
        "memlock=64m msgqueue=819200 core=0 nice=20 rtprio=0"
#define POLICY_ULIMITS        16 /* the rlimits Docker knows */
#define POLICY_ULIMIT_REFUSED (-2)
/* The name of rlimit i (< POLICY_ULIMITS) of policy_docker_limits.ulimit_max ("as" … "stack"). */
const char *policy_docker_ulimit_name(size_t i);

/* The operator's maxima of [backend.docker] (docs/backends/docker.md, "Limits and images"):
 * per sandbox, per uid (the sum over its live docker sandboxes), and the images an
 * unprivileged caller may run. Sizes in bytes; memory ones rounded up to whole MiB. */
struct policy_docker_limits {
        int64_t pids;             /* pids_limit: PidsLimit when the spec gives none */
        int64_t max_pids;         /* max_pids */
        int64_t max_pids_user;    /* max_pids_per_user */
        int64_t memory;           /* memory: Memory when the spec gives none */
        int64_t max_memory;       /* max_memory */
        int64_t max_memory_user;  /* max_memory_per_user */
        int64_t max_nano_cpus;    /* max_cpus × 1e9 */
        int64_t max_cpu_shares;   /* max_cpu_shares */
        int64_t max_blkio_weight; /* max_blkio_weight: BlkioWeight, BlkioWeightDevice weights */
        int64_t max_disk;         /* max_disk: StorageOpt size; 0: refused (not enforced) */
        /* max_ulimits: per rlimit (as, core, cpu, …, stack, alphabetical), the most Soft and
         * Hard may be; -1 unlimited, POLICY_ULIMIT_REFUSED not allowed */
        int64_t ulimit_max[POLICY_ULIMITS];
        const char *images; /* images: comma/blank separated allowlist, borrowed; "" none */
        const char *image;  /* image: the default image, borrowed */
        bool allow_pull;    /* allow_pull: an unprivileged caller's create may pull */
};

/* Parses the [backend.docker] section (borrowed, may be NULL; strings stay borrowed) into
 * out, with host's defaults where a key is absent. 0, or -EINVAL with err naming the key
 * (out is then all zeros: every request is above a maximum). */
int policy_docker_limits_parse(json_t *section, const struct policy_host *host,
                               struct policy_docker_limits *out, struct sbx_error *err);
/* An image reference as dockerd lists it in an image's RepoTags ("busybox:1" for
 * "docker.io/library/busybox:1") or, with a digest, RepoDigests ("name@sha256:…"), into out
 * (n bytes, 512 is enough). 0, or -EINVAL for what the images allowlist would refuse (no tag
 * or digest, an ID). */
int policy_image_familiar(const char *ref, char *out, size_t n);
/* The pids and memory (bytes) a docker sandbox of spec (borrowed) takes against the per-uid
 * maxima: what it asks for, or the defaults of l. */
void policy_docker_usage(const struct policy_docker_limits *l, json_t *spec, int64_t *pids,
                         int64_t *mem);

/* Facts about where a command would run. All fields optional (NULL / false / 0). */
struct policy_ctx {
        const char *backend; /* "local", "docker", … */
        bool host_access;    /* the sandbox exposes the host (local always does) */
        const char *cwd;
        /* The home directory of the account the command runs as: the caller's on the host, the
         * remote account's on ssh or daytona (the HOME the exec gets). */
        const char *home;
        /* That home is not known (a remote sandbox judged before it is made: policy.check's
         * preview): home and $HOME in env are ignored, and a path deleted or changed that is
         * nothing else may be it (home.unknown, ask). */
        bool home_unknown;
        /* The environment the command starts with (object of strings, borrowed): values of
         * variables, and $HOME as the shell expands ~. */
        json_t *env;
        /* env holds the whole environment (local backend): a variable neither in it nor set
         * by the command is unset, and expands to nothing. */
        bool env_complete;
        /* Variables the request itself sets (exec `env`; object of strings, borrowed): judged
         * like assignment prefixes on the command (LD_PRELOAD, BASH_ENV, PATH, …). */
        json_t *request_env;
        const char *const *protected_paths; /* daemon config/state paths, NULL-terminated */
        /* The workspace: binds below it are fine for the container checks (still host access),
         * and build output below it may be cleaned without asking. */
        const char *workspace;
        /* What the command reads on stdin when nothing in it redirects stdin: stdin_data
         * (stdin_len bytes, borrowed, may be NULL) and, with stdin_open, more to come that is
         * not known yet (process.write). */
        const char *stdin_data;
        size_t stdin_len;
        bool stdin_open;
        long daemon_pid; /* the daemon's own pid (signals to it are refused), 0: unknown */
        /* Container checks of a sandbox.create. */
        bool unprivileged;            /* the caller is neither root nor the daemon's owner */
        unsigned caller_uid;          /* its uid (volume label sandboxd.owner), when unprivileged */
        const char *unchecked_fields; /* operator: HostConfig fields accepted unchecked, "A, B" */
        const char *volume_drivers;   /* operator: volume drivers accepted besides local */
        const char *runtime;          /* operator: the OCI runtime of sandboxes; NULL: Docker's */
        /* operator: the docker maxima and images (NULL: not judged; the daemon always gives
         * them for a sandbox.create, the read-back of a created container does not) */
        const struct policy_docker_limits *docker_limits;
        /* With resolve_as set, host paths (bind sources, volume devices) are resolved as who
         * could resolve them, not with the daemon's rights (for a caller that is neither root
         * nor the daemon's uid): what lies behind a directory it may not search is not for it
         * to learn. */
        bool resolve_as;
        struct policy_who who;
        /* Host paths resolved before the judgement (object, borrowed; NULL: resolved here,
         * on the calling thread): path as written (lexically normalised) -> where it leads as
         * the caller could follow it (a missing tail as written), or null when the caller
         * cannot reach it. With it set, nothing is looked up on the filesystem: a path not in
         * it is added to wanted (object: path -> null, borrowed, may be NULL) and judged
         * unreachable (closed), so a first judgement tells what to resolve for the second one. */
        json_t *host_paths;
        json_t *host_paths_wanted;
        /* (policy_host_path_key gives the key a path has in them.) */
        /* The caller is root: its home /root (ctx->home, the account's, not $HOME) is its home
         * and its workspace is its workspace, as /home/alice is alice's; for any other caller
         * /root is a system directory. */
        bool caller_root;
};

struct policy;

/* The built-in policy with no rules file (new). */
struct policy *policy_new_default(void);
/* Loads built-ins plus the rules file at path (new in *ret). On error returns negative errno,
 * leaves *ret untouched and sets err with "path:line: what is wrong". A missing file is an
 * error only when required is true. */
int policy_load(const char *path, bool required, struct policy **ret, struct sbx_error *err);
/* Frees p; NULL is fine. Returns NULL. */
struct policy *policy_free(struct policy *p);
/* Number of rules (built-in + file) and the hex SHA-256 of the rules file (or of "" ). */
size_t policy_rule_count(const struct policy *p);
const char *policy_sha256(const struct policy *p);
/* Hex SHA-256 of any bytes into out (65 chars with the NUL); used by the audit log. */
void policy_sha256_hex(const void *data, size_t len, char out[65]);

/* Judges a shell command string. Fills *out (caller clears with policy_result_clear). */
void policy_eval_command(const struct policy *p, const struct policy_ctx *ctx, const char *command,
                         struct policy_result *out);
/* Judges an argv exec (no shell). */
void policy_eval_argv(const struct policy *p, const struct policy_ctx *ctx, char *const *argv,
                      struct policy_result *out);
/* Judges a sandbox.create spec (object, borrowed). facts (borrowed, may be NULL) is what the
 * backend inspected: {"volumes": {name: GET /volumes/{name} body}, "containers": {name:
 * GET /containers/{name}/json body}} for the named volumes and VolumesFrom containers the spec
 * mentions. A field that cannot be judged sets out->invalid. */
/* The params of sandbox.create (protocol §4), NULL-terminated; the backend sections (each an
 * object) are its tail, policy_sandbox_sections. A spec with any other key is invalid. */
extern const char *const policy_sandbox_keys[];
extern const char *const *const policy_sandbox_sections;
void policy_eval_sandbox(const struct policy *p, const struct policy_ctx *ctx, json_t *spec,
                         json_t *facts, struct policy_result *out);
/* Checks the operator's [backend.docker] unchecked_host_config_fields and volume_drivers
 * lists (comma or blank separated): names only, none that Docker would read as a field the
 * policy checks itself. 0, or -EINVAL with err saying which. */
int policy_container_config_check(const char *unchecked_fields, const char *volume_drivers,
                                  struct sbx_error *err);

/* How dockerd reads one HostConfig.SecurityOpt entry for no-new-privileges (the one table both
 * the policy and the docker backend use): 1 on, 0 off, -1 no-new-privileges with a value that is
 * not a boolean (dockerd refuses it), -2 another option. */
int policy_secopt_nnp(const char *opt);

/* The key an absolute host path has in policy_ctx.host_paths (its lexical normal form: "//",
 * ".", "..", /proc/self/root/ undone; new), or NULL when it is not absolute. */
char *policy_host_path_key(const char *path);

/* Docker's rule for volume and container names: [A-Za-z0-9][A-Za-z0-9_.-]+ (at most 255). */
bool policy_container_name_ok(const char *name);

/* A file operation: file.write (create, truncate, append) or file.read of one path. */
struct policy_file_op {
        const char *path;     /* absolute, as the client gave it */
        const char *resolved; /* what it really leads to (symlinks, ".."), NULL: unknown/same */
        bool write;
        int mode;       /* mode a write sets, -1 none */
        unsigned nlink; /* hard links of the existing file (0: new or unknown) */
};

/* Judges a file operation with the path rules of a shell write (`> path`, `chmod mode path`)
 * or, for a read, the credential and secret-file rules — applied to the requested path and to
 * the resolved one: writing through a link named ~/.bashrc changes what bash runs, and so does
 * writing through any link that leads to it. Fills *out like policy_eval_command. */
void policy_eval_file(const struct policy *p, const struct policy_ctx *ctx,
                      const struct policy_file_op *op, struct policy_result *out);

/* Releases the findings. */
void policy_result_clear(struct policy_result *r);
/* "allow" | "ask" | "deny". */
const char *policy_verdict_name(enum policy_verdict v);
/* The findings as protocol JSON: [{rule, verdict, message, match?}] (new). */
json_t *policy_findings_json(const struct policy_result *r);

/* ---- approval memory (policy/approval.c; pure, I/O only in load/save) ----
 * A key is "rule|subject" (not the rule alone). A set is a JSON object key -> {rule, subject}. */

/* Approval key of one finding (new string). */
char *policy_approval_key(const struct policy_finding *f);
/* Keys of every ASK finding of r (new array of strings). */
json_t *policy_approval_keys(const struct policy_result *r);
/* True when r has no DENY finding and set (borrowed, may be NULL) holds every ASK key. */
bool policy_approval_covers(const struct policy_result *r, json_t *set);
/* True when no finding is FLOOR or NO_ALWAYS and the verdict is not DENY. */
bool policy_result_allows_always(const struct policy_result *r);
/* Choices to offer for r (new array): ["once","session","always","deny"], without "always"
 * when policy_result_allows_always() is false; ["deny"] for DENY. */
json_t *policy_result_choices(const struct policy_result *r);
/* Adds the keys of r's ASK findings to set (borrowed). -EPERM and nothing added when r is DENY
 * or when always is true but "always" is not allowed for r. */
int policy_approval_remember(const struct policy_result *r, json_t *set, bool always);
/* Removes one key from set; -ENOENT when absent. */
int policy_approvals_revoke(json_t *set, const char *key);
/* Loads the persisted "always" set from path (new object in *ret); missing file = empty set. */
int policy_approvals_load(const char *path, json_t **ret, struct sbx_error *err);
/* Writes set to path atomically (tmp + fsync + rename, mode 0600). */
int policy_approvals_save(const char *path, json_t *set, struct sbx_error *err);

#endif
