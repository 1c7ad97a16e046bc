/* filter.c — sandboxd-nsbox: the last fences of a namespace sandbox, applied just before
 * sandboxd-agent runs and inherited by everything in it: no_new_privs (setuid bits and file
 * capabilities mean nothing), Landlock on writes (a second fence behind the read-only mount
 * tree: writes only below the sandbox's writable directories) with abstract Unix sockets and
 * signals scoped to the sandbox where the kernel has ABI 6, and a seccomp BPF program written
 * here (docs/backends/local.md lists every refused call and why).
 *
 * The BPF program: kill on a foreign architecture (i386 and x32 calls included); EPERM for
 * the calls of NSINIT_DENIED; clone and unshare refused (EPERM) when they ask for a namespace;
 * clone3, whose flags are out of a filter's reach, fails with ENOSYS so that libc falls back
 * to clone; ioctl TIOCSTI and TIOCLINUX (typing into a terminal) refused; the rest allowed.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>
#include <unistd.h>

#include "backends/local/init/nsinit_int.h"

#if defined(__x86_64__)
#define NSI_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NSI_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "filter.c: add this architecture's AUDIT_ARCH"
#endif

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Landlock, spelt out: the build's kernel headers may be older than the kernel. */
#define LL_CREATE_VERSION (1u << 0)
#define LL_RULE_PATH      1
#define LL_WRITE_FILE     (1ull << 1)
#define LL_REMOVE_DIR     (1ull << 4) /* REMOVE_DIR .. MAKE_SYM are bits 4 to 12 */
#define LL_MAKE_SYM       (1ull << 12)
#define LL_REFER          (1ull << 13) /* ABI 2 */
#define LL_TRUNCATE       (1ull << 14) /* ABI 3 */
#define LL_SCOPE_ABSTRACT (1ull << 0)  /* ABI 6 */
#define LL_SCOPE_SIGNAL   (1ull << 1)  /* ABI 6 */

#define NSI_CLONE_NEWTIME 0x00000080
#define NSI_NS_FLAGS                                                                               \
        (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
         CLONE_NEWPID | CLONE_NEWNET | NSI_CLONE_NEWTIME)

struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

struct ll_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

#define NSI_NR(n) __NR_##n,
static const int nsi_denied[] = {
        NSINIT_DENIED(NSI_NR)
#ifdef __NR_iopl
                __NR_iopl,
        __NR_ioperm,
#endif
};

#define NSI_PROG_MAX 192

static struct sock_filter nsi_prog[NSI_PROG_MAX];
static struct sock_fprog nsi_fprog = {.filter = nsi_prog};
static int nsi_landlock_abi;

static void
emit(struct sock_filter f)
{
        if (nsi_fprog.len < NSI_PROG_MAX)
                nsi_prog[nsi_fprog.len++] = f;
}

static void
emit_deny(int nr, int err)
{
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) nr, 0, 1));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t) err));
}

/* nr is refused when its argument arg has a bit of mask (the low 32 bits: all of what the
 * kernel reads of clone's and unshare's namespace flags). */
static void
emit_arg_mask(int nr, int arg, uint32_t mask)
{
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) nr, 0, 4));
        emit((struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                           offsetof(struct seccomp_data, args[arg])));
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

/* ioctl's request is an unsigned int in the kernel: its low 32 bits are all there is. */
static void
emit_ioctl(void)
{
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5));
        emit((struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                           offsetof(struct seccomp_data, args[1])));
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 1, 0));
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 0, 1));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

static void
build(void)
{
        emit((struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                           offsetof(struct seccomp_data, arch)));
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NSI_AUDIT_ARCH, 1, 0));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
        emit((struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                           offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
        /* x32 system calls (the same numbers with bit 30) would dodge every rule below. */
        emit((struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
        for (size_t i = 0; i < ARRAY_SIZE(nsi_denied); i++)
                emit_deny(nsi_denied[i], EPERM);
        emit_deny(__NR_clone3, ENOSYS);
        emit_arg_mask(__NR_clone, 0, NSI_NS_FLAGS);
        emit_arg_mask(__NR_unshare, 0, NSI_NS_FLAGS);
        emit_ioctl();
        emit((struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

static uint64_t
ll_writes(void)
{
        uint64_t w = LL_WRITE_FILE | (((LL_MAKE_SYM << 1) - 1) & ~(LL_REMOVE_DIR - 1));

        if (nsi_landlock_abi >= 2)
                w |= LL_REFER;
        if (nsi_landlock_abi >= 3)
                w |= LL_TRUNCATE;
        return w;
}

/* Landlock: writes only below the plan's writable directories. 0 or errno. */
static int
ll_apply(const struct nsinit_plan *p)
{
        struct ll_ruleset_attr attr = {.handled_access_fs = ll_writes()};
        size_t size = nsi_landlock_abi >= 6 ? sizeof(attr)
                      : nsi_landlock_abi >= 4
                              ? offsetof(struct ll_ruleset_attr, scoped)
                              : offsetof(struct ll_ruleset_attr, handled_access_net);
        int rs, e = 0;

        if (nsi_landlock_abi >= 6)
                attr.scoped = LL_SCOPE_ABSTRACT | LL_SCOPE_SIGNAL;
        rs = (int) syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        if (rs < 0)
                return errno;
        for (uint32_t i = 0; i < p->nrw && !e; i++) {
                struct ll_path_beneath_attr pb = {.allowed_access = attr.handled_access_fs};
                pb.parent_fd = open(nsinit_str(p, p->rw[i]), O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (pb.parent_fd < 0)
                        continue; /* not there (an optional tmpfs): nothing to allow */
                if (syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH, &pb, 0) < 0)
                        e = errno;
                close(pb.parent_fd);
        }
        if (!e && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
                e = errno;
        close(rs);
        return e;
}

/* no_new_privs, Landlock (where the kernel has it), seccomp: last before the agent runs. */
void
nsinit_filters(const struct nsinit_plan *p)
{
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
        int e;

        nsi_landlock_abi = abi > 0 ? (int) abi : 0;
        build();
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                nsinit_fail(NSI_STEP_CAPS, errno, -1);
        if (nsi_landlock_abi > 0 && (e = ll_apply(p)) != 0)
                nsinit_fail(NSI_STEP_LANDLOCK, e, -1);
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &nsi_fprog) < 0)
                nsinit_fail(NSI_STEP_SECCOMP, errno, -1);
}
