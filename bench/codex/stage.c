/* stage.c — codex-stage, bench_local's stand-in for Codex CLI's codex-linux-sandbox: per
 * command, the chain of processes Codex's bubblewrap pipeline runs on Linux (openai/codex
 * codex-rs/linux-sandbox/src/linux_run_main.rs at c63929af, with launcher.rs, bwrap.rs and
 * seccomp.rs; docs/performance.md has the reading), each stage doing the system calls Codex's
 * does. Codex's stages are one large static musl Rust binary; this one is a small static musl C
 * program, so it understates their start-up. Built with the bench, installed nowhere.
 *
 *   codex-stage --sandbox-policy-cwd W -- CMD...            the outer stage: runs `bwrap --help`
 *        (the launcher's probe for --as-pid-1, --argv0, --perms), then the /proc preflight (a
 *        whole bwrap of `/usr/bin/true`, its stderr read for a failed /proc mount), then execs
 *        the real bwrap, whose command is this program again:
 *   codex-stage --sandbox-policy-cwd W --apply-seccomp-then-exec -- CMD...   the inner stage:
 *        checks that no capability is left (root excepted, see restrict_self), sets no_new_privs,
 * installs Codex's seccomp filter for a sandbox without network, forks CMD and exits with its
 * status (bwrap runs this stage --as-pid-1: it is the PID 1 that reaps).
 *
 * Left out (each would make the baseline slower, not faster): the masks Codex adds over
 * `.git`, `.agents` and `.codex` in every writable root (where they are missing it mounts over
 * empty stand-ins it creates and removes around the command, the outer stage then staying
 * bwrap's parent), the other default writable roots (/tmp, $TMPDIR), argument parsing and the
 * permission profile's JSON.
 */
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#define STAGE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define STAGE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "stage.c: Codex's filter is built for x86_64 and aarch64 only"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ARGV_MAX      64

static void
die(const char *what)
{
        fprintf(stderr, "codex-stage: %s: %s\n", what, strerror(errno));
        exit(125);
}

/* ---- the inner stage (linux_run_main.rs: the apply_seccomp_then_exec branch) ---- */

/* seccomp.rs, NetworkSeccompMode::Restricted: EPERM for these, socket and socketpair of any
 * family but AF_UNIX; everything else allowed; another architecture is killed (seccompiler). */
static const int codex_denied[] = {
        __NR_ptrace,         __NR_process_vm_readv, __NR_process_vm_writev,
        __NR_io_uring_setup, __NR_io_uring_enter,   __NR_io_uring_register,
        __NR_connect,        __NR_accept,           __NR_accept4,
        __NR_bind,           __NR_listen,           __NR_getpeername,
        __NR_getsockname,    __NR_shutdown,         __NR_sendto,
        __NR_sendmmsg,       __NR_recvmmsg,         __NR_getsockopt,
        __NR_setsockopt,
};
static const int codex_unix_only[] = {__NR_socket, __NR_socketpair};

#define BPF_RET_ERRNO BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
#define BPF_RET_ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define BPF_LOAD(f)   BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, f))

static void
install_filter(void)
{
        struct sock_filter p[8 + 2 * ARRAY_SIZE(codex_denied) + 5 * ARRAY_SIZE(codex_unix_only)];
        struct sock_fprog prog = {.filter = p};
        unsigned short n = 0;

        p[n++] = (struct sock_filter) BPF_LOAD(arch);
        p[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, STAGE_AUDIT_ARCH, 1, 0);
        p[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        p[n++] = (struct sock_filter) BPF_LOAD(nr);
        for (size_t i = 0; i < ARRAY_SIZE(codex_denied); i++) {
                p[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                       (unsigned) codex_denied[i], 0, 1);
                p[n++] = (struct sock_filter) BPF_RET_ERRNO;
        }
        for (size_t i = 0; i < ARRAY_SIZE(codex_unix_only); i++) {
                p[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                       (unsigned) codex_unix_only[i], 0, 4);
                p[n++] = (struct sock_filter) BPF_LOAD(args[0]);
                p[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0);
                p[n++] = (struct sock_filter) BPF_RET_ERRNO;
                p[n++] = (struct sock_filter) BPF_RET_ALLOW;
        }
        p[n++] = (struct sock_filter) BPF_RET_ALLOW;
        prog.len = n;
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                die("seccomp");
}

/* The capability check, no_new_privs and the filter (apply_permission_profile_to_current_thread
 * with apply_landlock_fs false: no Landlock in the bubblewrap pipeline). Codex panics when a
 * capability is left, which is what a root caller gets (bwrap keeps uid 0's capabilities in its
 * user namespace): the stand-in makes the same capget and goes on when root runs it, so that
 * the bench can run as root; for anyone else it refuses as Codex does. */
static void
restrict_self(void)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                die("capget");
        for (int i = 0; i < 2 && getuid() != 0; i++)
                if (d[i].effective || d[i].permitted) {
                        fprintf(stderr, "codex-stage: capabilities retained\n");
                        exit(125);
                }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                die("no_new_privs");
        install_filter();
}

static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};
static volatile pid_t command_pid;

static void
forward(int sig)
{
        if (command_pid > 0)
                kill(command_pid, sig);
}

/* Codex's exit_with_wait_status: the command's code, or its signal raised again. */
static void
exit_as(int st)
{
        if (WIFSIGNALED(st)) {
                signal(WTERMSIG(st), SIG_DFL);
                kill(getpid(), WTERMSIG(st));
                exit(128 + WTERMSIG(st));
        }
        exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

/* Forks the command with the forwarded signals blocked over the fork, forwards them while it
 * runs and reaps every child until it is the command that exited. */
static void
run_inner(char **cmd)
{
        sigset_t block, old;
        struct sigaction fw = {.sa_handler = forward};
        int st;
        pid_t r;

        restrict_self();
        sigemptyset(&block);
        for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
                sigaddset(&block, forwarded[i]);
        sigprocmask(SIG_BLOCK, &block, &old);
        command_pid = fork();
        if (command_pid < 0)
                die("fork");
        if (command_pid == 0) {
                sigprocmask(SIG_SETMASK, &old, NULL);
                execvp(cmd[0], cmd);
                die(cmd[0]);
        }
        for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
                sigaction(forwarded[i], &fw, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        while ((r = waitpid(-1, &st, 0)) != command_pid)
                if (r < 0 && errno != EINTR)
                        die("waitpid");
        exit_as(st);
}

/* ---- the outer stage (linux_run_main.rs run_main, launcher.rs exec_bwrap) ---- */

/* Runs argv with its stderr (and stdout, if both) into a pipe, reads that to its end (at most
 * size - 1 bytes: Codex keeps 64 KiB of the preflight's) and waits: Rust's Command::output for
 * the probe, run_bwrap_in_child_capture_stderr for the preflight. The text, NUL-terminated, in
 * out. */
static void
run_capture(char **argv, int both, char *out, size_t size)
{
        int fd[2], st;
        size_t len = 0;
        ssize_t k;
        pid_t pid;

        if (pipe2(fd, O_CLOEXEC) < 0 || (pid = fork()) < 0)
                die("pipe/fork");
        if (pid == 0) {
                if ((both && dup2(fd[1], STDOUT_FILENO) < 0) || dup2(fd[1], STDERR_FILENO) < 0)
                        die("dup2");
                execvp(argv[0], argv);
                die(argv[0]);
        }
        close(fd[1]);
        while (len < size - 1 && (k = read(fd[0], out + len, size - 1 - len)) != 0) {
                if (k < 0 && errno != EINTR)
                        die("read");
                len += k > 0 ? (size_t) k : 0;
        }
        out[len] = '\0';
        close(fd[0]);
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        die("waitpid");
}

/* An argv under construction. */
struct args {
        char *v[ARGV_MAX];
        int n;
};

static void
add(struct args *a, int k, char *const *s)
{
        for (int i = 0; i < k && a->n < ARGV_MAX - 1; i++)
                a->v[a->n++] = s[i];
        a->v[a->n] = NULL;
}

#define ADD(a, ...) add((a), ARRAY_SIZE(((char *[]){__VA_ARGS__})), (char *[]){__VA_ARGS__})

/* The preflight's filesystem (build_preflight_bwrap_argv: the `:minimal` read policy, an empty
 * root with the platform's read-only directories) with the namespaces of the real run. */
static void
preflight_args(struct args *a)
{
        static char *const roots[] = {"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64"};

        ADD(a, "bwrap", "--as-pid-1", "--new-session", "--die-with-parent", "--tmpfs", "/", "--dev",
            "/dev");
        for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
                if (access(roots[i], F_OK) == 0)
                        ADD(a, "--ro-bind", roots[i], roots[i]);
        ADD(a, "--unshare-user", "--unshare-pid", "--unshare-net", "--proc", "/proc", "--",
            "/usr/bin/true");
}

/* bwrap.rs create_bwrap_flags for workspace-write without network, with exec_bwrap's
 * --as-pid-1; the command is this program's inner stage (Debian's bwrap 0.8 has no --argv0:
 * Codex then names itself by its argv[0], as here). */
static void
real_args(struct args *a, char *self, char *cwd, int proc, char **cmd)
{
        ADD(a, "bwrap", "--as-pid-1", "--new-session", "--die-with-parent", "--ro-bind", "/", "/",
            "--dev", "/dev", "--bind", cwd, cwd, "--unshare-user", "--unshare-pid",
            "--unshare-net");
        if (proc)
                ADD(a, "--proc", "/proc");
        ADD(a, "--", self, "--sandbox-policy-cwd", cwd, "--apply-seccomp-then-exec", "--");
        while (*cmd)
                add(a, 1, cmd++);
}

static void
run_outer(char *self, char *cwd, char **cmd)
{
        static char out[64 * 1024];
        struct args pre = {.n = 0}, real = {.n = 0};
        int proc;

        run_capture((char *[]){"bwrap", "--help", NULL}, 1, out, sizeof(out));
        if (!strstr(out, "--as-pid-1") || !strstr(out, "--perms")) {
                fprintf(stderr, "codex-stage: this bwrap lacks --as-pid-1 or --perms (Codex "
                                "would use its bundled bwrap)\n");
                exit(125);
        }
        preflight_args(&pre);
        run_capture(pre.v, 0, out, sizeof(out));
        proc = !(strstr(out, "Can't mount proc") && strstr(out, "/newroot/proc"));
        real_args(&real, self, cwd, proc, cmd);
        execvp(real.v[0], real.v);
        die("bwrap");
}

int
main(int argc, char **argv)
{
        int inner = argc > 4 && strcmp(argv[3], "--apply-seccomp-then-exec") == 0;
        int sep = inner ? 4 : 3;

        if (argc <= sep + 1 || strcmp(argv[1], "--sandbox-policy-cwd") != 0 ||
            strcmp(argv[sep], "--") != 0) {
                fprintf(stderr, "usage: codex-stage --sandbox-policy-cwd DIR "
                                "[--apply-seccomp-then-exec] -- CMD...\n");
                return 2;
        }
        if (inner)
                run_inner(argv + sep + 1);
        run_outer(argv[0], argv[2], argv + sep + 1);
        return 125;
}
