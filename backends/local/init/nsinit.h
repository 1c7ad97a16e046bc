/* nsinit.h — sandboxd-nsbox, the set-up stage of a namespace sandbox (backends/local/init/),
 * and the plan the daemon hands it. Shared by the program (static, libc only; the agent's code
 * is linked in, backends/agent/prog/) and the daemon's side (backends/local/nsbox*.c).
 *
 * The daemon spawns sandboxd-nsbox (a fresh image: none of the daemon's memory, so it may be
 * dumpable while the daemon writes its maps) with:
 *   fd 0, 1   the socket the agent will serve on
 *   fd 2      /dev/null
 *   fd 3      the plan (a memfd holding one struct nsinit_plan)
 *   fd 4      ctl: a SOCK_SEQPACKET socket of struct nsinit_msg both ways
 * It makes a user namespace (it then has every capability there and none outside) and asks
 * for its maps (NSI_MSG_MAPS); the daemon writes them (the caller's uid, gid and groups when
 * it is root, its own uid and gid otherwise), puts it in the sandbox's cgroup and says go
 * (NSI_MSG_GO). It becomes the caller, makes the mount, pid, ipc, uts (and net) namespaces,
 * sends them with the pid of the sandbox's PID 1 (NSI_MSG_READY with SCM_RIGHTS), and forks
 * that PID 1, which builds the tree, closes ctl and goes on as the agent (agent_main, with the
 * plan's argv and envp: the same program, so no exec and no second libc start-up, which costs
 * ~0.3 ms of cpuid traps in a VM). sandboxd-nsbox stays as its parent, with nothing open, and
 * exits with it; killing it kills the PID 1 (PR_SET_PDEATHSIG) and with that the whole pid
 * namespace. A failure at any step is an NSI_MSG_FAIL; ctl reaches EOF once the agent runs.
 *
 * The plan is plain data: strings are offsets into pool (0: none), so it needs no pointer
 * fix-up and is checked for bounds before use.
 */
#ifndef SANDBOXD_LOCAL_INIT_NSINIT_H
#define SANDBOXD_LOCAL_INIT_NSINIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NSINIT_MAGIC   0x6e73626fu /* "nsbo" */
#define NSINIT_VERSION 2

#define NSINIT_FD_PLAN 3
#define NSINIT_FD_CTL  4
#define NSINIT_NFDS    5

#define NSINIT_MAX_SRC   64  /* host paths bound into one sandbox */
#define NSINIT_MAX_OPS   320 /* steps of its mount tree */
#define NSINIT_MAX_RW    64  /* Landlock: directories where writes are allowed */
#define NSINIT_MAX_GROUP 339 /* a gid_map holds 340 lines: the primary group and these */
#define NSINIT_POOL      (96u << 10)

/* One step of the mount tree, applied in order inside the new root (dst is a path as the
 * sandbox sees it, resolved with RESOLVE_IN_ROOT so that no symlink leads out of it). */
enum nsinit_op_type {
        NSI_TMPFS = 1, /* a tmpfs on dst (data: its options) */
        NSI_BIND,      /* bind src (a host path opened as the caller before the pivot) on dst */
        NSI_DEV,       /* bind the host device node data ("/dev/null") on the file dst */
        NSI_PROC,      /* a procfs of the sandbox's pid namespace on dst */
        NSI_DEVPTS,    /* a new devpts instance on dst */
        NSI_SYMLINK,   /* dst -> data */
        NSI_RDONLY,    /* a cover, once populated: read-only; hidden again if a bind uncovered it */
        NSI_HIDE,      /* what dst resolves to is hidden: a directory under an empty read-only
                          tmpfs, anything else under /dev/null; absent: nothing */
};

struct nsinit_op {
        uint8_t type;     /* enum nsinit_op_type */
        uint8_t mkdir;    /* create dst and what is missing above it */
        uint8_t optional; /* a failure skips the step instead of failing the sandbox */
        uint8_t rdonly;   /* a read-only bind or tmpfs */
        int32_t src;      /* NSI_BIND: index in src[] */
        uint32_t dst;
        uint32_t data;
};

struct nsinit_src {
        uint32_t path;     /* host path, opened O_PATH as the caller before the pivot */
        uint32_t optional; /* absent: the binds of it are skipped */
        uint32_t placed;   /* a workdir or writable path: where it leads must pass
                              nsinit_place (else NSI_STEP_PLACE, err = its answer) */
};

/* Steps of the set-up, reported on failure. */
enum nsinit_step {
        NSI_STEP_PLAN = 1,
        NSI_STEP_USERNS,
        NSI_STEP_SYNC,
        NSI_STEP_IDENTITY,
        NSI_STEP_NAMESPACES,
        NSI_STEP_FORK,
        NSI_STEP_SOURCE,
        NSI_STEP_ROOT,
        NSI_STEP_OP,
        NSI_STEP_PIVOT,
        NSI_STEP_HOSTNAME,
        NSI_STEP_LOOPBACK,
        NSI_STEP_RLIMIT,
        NSI_STEP_CAPS,
        NSI_STEP_LANDLOCK,
        NSI_STEP_SECCOMP,
        NSI_STEP_STDIO,
        NSI_STEP_HIDDEN, /* a host path to bind leads into a hidden path */
        NSI_STEP_PLACE,  /* a workdir or writable path leads to a place of the sandbox's own */
};

enum nsinit_msg_type {
        NSI_MSG_MAPS = 1, /* -> daemon: write my uid/gid maps (I am in my user namespace) */
        NSI_MSG_GO,       /* <- daemon: the maps and the cgroup are in place */
        NSI_MSG_READY,    /* -> daemon: pid = the PID 1; SCM_RIGHTS: its userns and mntns */
        NSI_MSG_FAIL,     /* -> daemon: step, err, index */
};

struct nsinit_msg {
        int32_t type;  /* enum nsinit_msg_type */
        int32_t step;  /* enum nsinit_step */
        int32_t err;   /* errno */
        int32_t index; /* the op or source, -1 when not applicable */
        int32_t pid;
};

enum nsinit_rlimit { NSI_RL_AS, NSI_RL_NPROC, NSI_RL_CPU, NSI_RL_NOFILE, NSI_RL_N };

struct nsinit_plan {
        uint32_t magic, version, size;
        uint32_t uid, gid;
        uint32_t set_groups; /* the daemon is root: the gid_map holds groups[] */
        uint32_t ngroups;
        uint32_t groups[NSINIT_MAX_GROUP];
        uint32_t new_net; /* a new network namespace (network "none"): lo up, nothing else */
        uint32_t hostname;
        uint32_t nsrc;
        struct nsinit_src src[NSINIT_MAX_SRC];
        uint32_t nops;
        struct nsinit_op ops[NSINIT_MAX_OPS];
        uint32_t nrw;
        uint32_t rw[NSINIT_MAX_RW];
        uint64_t rlimit[NSI_RL_N]; /* 0: leave */
        uint64_t nofile_soft;      /* the soft RLIMIT_NOFILE to give back (0: leave) */
        uint32_t argv[8];          /* the agent's, 0-terminated */
        uint32_t envp[4];
        uint32_t pool_used;
        char pool[NSINIT_POOL];
};

/* prefix followed by the decimal fd into out (strlen(prefix) + 11 bytes at least): the magic
 * links of /proc/self/fd, used by both sides. Async-signal-safe. */
static inline void
nsinit_fd_path(const char *prefix, int fd, char *out)
{
        char digits[16];
        size_t n = 0, p = strlen(prefix);

        memcpy(out, prefix, p);
        do
                digits[n++] = (char) ('0' + fd % 10);
        while ((fd /= 10) > 0);
        for (size_t i = 0; i < n; i++)
                out[p + i] = digits[n - 1 - i];
        out[p + n] = '\0';
}

/* The sandbox's own places: a private tmpfs (/tmp, /var/tmp, /run), its own /dev and /proc,
 * and /sys (the host's kernel state, read-only). A bind of the host's directory on one of them,
 * or on a directory above one (/, /var), would put the host's in place of the sandbox's, and
 * one inside /run, /dev, /proc or /sys would show host sockets (D-Bus, systemd), shared memory
 * or kernel files: below /tmp and /var/tmp only is a bind allowed. */
#define NSINIT_PLACES                                                                              \
        {                                                                                          \
                {"/tmp", 1}, {"/var/tmp", 1}, {"/run", 0}, {"/dev", 0}, {"/proc", 0}, {"/sys", 0}, \
        }

/* Whether the host directory at the resolved path real may be bound writable in a sandbox: 0,
 * or 1 + 2 * i + inside for the place i of NSINIT_PLACES that refuses it (inside: real is
 * below it, else real is it or above it). Pure, async-signal-safe. */
static inline int
nsinit_place(const char *real)
{
        static const struct {
                const char *dir;
                int below_ok;
        } places[] = NSINIT_PLACES;
        size_t n = strlen(real);

        while (n > 1 && real[n - 1] == '/')
                n--; /* a path as written in the configuration: "/run/" */
        for (int i = 0; i < (int) (sizeof(places) / sizeof(places[0])); i++) {
                const char *d = places[i].dir;
                size_t k = strlen(d);
                if (n == 1 || (n <= k && !strncmp(d, real, n) && (d[n] == '\0' || d[n] == '/')))
                        return 1 + 2 * i;
                if (n > k && !strncmp(real, d, k) && real[k] == '/' && !places[i].below_ok)
                        return 2 + 2 * i;
        }
        return 0;
}

/* Refused by the seccomp filter with EPERM (filter.c; backend.list shows the names; why each
 * one is in docs/backends/local.md). */
/* clang-format off */
#define NSINIT_DENIED(X)                                                                           \
        X(mount) X(umount2) X(pivot_root) X(chroot) X(setns) X(move_mount) X(open_tree)            \
        X(fsopen) X(fsconfig) X(fsmount) X(fspick) X(mount_setattr) X(keyctl) X(add_key)           \
        X(request_key) X(bpf) X(perf_event_open) X(userfaultfd) X(init_module)                     \
        X(finit_module) X(delete_module) X(kexec_load) X(kexec_file_load) X(reboot)                \
        X(swapon) X(swapoff) X(acct) X(open_by_handle_at) X(ptrace) X(process_vm_readv)            \
        X(process_vm_writev) X(io_uring_setup) X(io_uring_enter) X(io_uring_register)              \
        X(settimeofday) X(clock_settime) X(clock_adjtime) X(adjtimex) X(syslog) X(quotactl)        \
        X(fanotify_init) X(lookup_dcookie) X(personality)
/* clang-format on */

/* The steps' names, for the daemon's messages. */
#define NSINIT_STEP_NAMES                                                                          \
        {                                                                                          \
                [NSI_STEP_PLAN] = "read its plan",                                                 \
                [NSI_STEP_USERNS] = "create its user namespace",                                   \
                [NSI_STEP_SYNC] = "wait for the daemon",                                           \
                [NSI_STEP_IDENTITY] = "become the caller",                                         \
                [NSI_STEP_NAMESPACES] = "create its namespaces",                                   \
                [NSI_STEP_FORK] = "fork its PID 1", [NSI_STEP_SOURCE] = "open",                    \
                [NSI_STEP_ROOT] = "build the root", [NSI_STEP_OP] = "mount",                       \
                [NSI_STEP_PIVOT] = "pivot into the new root",                                      \
                [NSI_STEP_HOSTNAME] = "set the hostname",                                          \
                [NSI_STEP_LOOPBACK] = "bring up the loopback interface",                           \
                [NSI_STEP_RLIMIT] = "set an rlimit", [NSI_STEP_CAPS] = "drop capabilities",        \
                [NSI_STEP_LANDLOCK] = "apply Landlock", [NSI_STEP_SECCOMP] = "apply seccomp",      \
                [NSI_STEP_STDIO] = "set up stdio",                                                 \
                [NSI_STEP_HIDDEN] = "bind a path that leads into a hidden path",                   \
                [NSI_STEP_PLACE] = "bind a path on a place of the sandbox's own",                  \
        }

#endif
