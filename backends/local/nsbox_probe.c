/* nsbox_probe.c — whether this kernel and this daemon can make namespace sandboxes (nsbox.h):
 * the system calls the set-up needs, and a real clone into every namespace it uses (the only
 * test that sees every sysctl, LSM and container runtime that may forbid one). Once, at init:
 * none of this changes while the daemon runs. */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/nsbox.h"
#include "protocol/util.h"

#define NSB_PROBE_FLAGS                                                                            \
        (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)

static bool probed, probe_ok;
static const char *probe_reason, *probe_hint;
static json_t *probe_details;

/* A sysctl's value, -1 when it does not exist. */
static long
sysctl_value(const char *path)
{
        char buf[32] = "";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        return n > 0 ? strtol(buf, NULL, 10) : -1;
}

static int
probe_child(void *arg)
{
        (void) arg;
        return 0;
}

/* 0, or the errno of a clone into the namespaces. */
static int
probe_clone(void)
{
        static char stack[16384] __attribute__((aligned(16)));
        sigset_t all, saved;
        int st, e;
        pid_t pid;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid = clone(probe_child, stack + sizeof(stack),
                    NSB_PROBE_FLAGS | CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
        e = errno;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (pid < 0)
                return e;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        return 0;
}

/* Why user namespaces are refused, from the sysctls that say so. */
static void
probe_userns_hint(int e)
{
        probe_reason = "this kernel refuses new user namespaces to sandboxd";
        if (sysctl_value("/proc/sys/kernel/unprivileged_userns_clone") == 0)
                probe_hint = "allow them: sysctl -w kernel.unprivileged_userns_clone=1 (or run "
                             "sandboxd as root), or set [backend.local] isolation = none";
        else if (sysctl_value("/proc/sys/user/max_user_namespaces") == 0)
                probe_hint = "allow them: sysctl -w user.max_user_namespaces=15000, or set "
                             "[backend.local] isolation = none";
        else if (sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
                probe_hint = "AppArmor restricts unprivileged user namespaces: give sandboxd a "
                             "profile with 'userns,' (or sysctl -w "
                             "kernel.apparmor_restrict_unprivileged_userns=0), or run it as root";
        else if (e == ENOSPC)
                probe_hint = "the user namespace limit is reached: raise "
                             "user.max_user_namespaces";
        else
                probe_hint = "sandboxd may be running in a container without user namespaces "
                             "(docker: --security-opt seccomp=unconfined, or run it on the "
                             "host), or set [backend.local] isolation = none";
}

static bool
probe_syscalls(void)
{
        /* Invalid arguments: ENOSYS says the call does not exist, anything else that it does. */
        errno = 0;
        if (syscall(SYS_openat2, -1, "", NULL, 0) < 0 && errno == ENOSYS) {
                probe_reason = "this kernel has no openat2 (Linux 5.6)";
                probe_hint = "namespace sandboxes need Linux 5.12 or later; set [backend.local] "
                             "isolation = none";
                return false;
        }
        errno = 0;
        if (syscall(SYS_mount_setattr, -1, "", 0, NULL, 0) < 0 && errno == ENOSYS) {
                probe_reason = "this kernel has no mount_setattr (Linux 5.12)";
                probe_hint = "namespace sandboxes need Linux 5.12 or later; set [backend.local] "
                             "isolation = none";
                return false;
        }
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
                probe_reason = "this kernel has no seccomp";
                probe_hint = "namespace sandboxes need CONFIG_SECCOMP_FILTER; set [backend.local] "
                             "isolation = none";
                return false;
        }
        return true;
}

static json_t *
probe_denied(void)
{
#define NSB_NAME(n) #n,
        static const char *const names[] = {NSINIT_DENIED(NSB_NAME)};
#undef NSB_NAME
        json_t *a = json_array();

        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                json_array_append_new(a, json_string(names[i]));
        json_array_append_new(a, json_string("clone/unshare of namespaces"));
        json_array_append_new(a, json_string("clone3 (ENOSYS, libc falls back to clone)"));
        json_array_append_new(a, json_string("ioctl TIOCSTI/TIOCLINUX"));
        return a;
}

static void
probe_run(void)
{
        struct utsname u;
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1u);
        int e = 0;

        probe_ok = probe_syscalls();
        if (probe_ok && (e = probe_clone()) != 0) {
                probe_ok = false;
                probe_userns_hint(e);
        }
        uname(&u);
        probe_details =
                json_pack("{s:s,s:s,s:b,s:o,s:b,s:o}", "kernel", u.release, "user_namespaces",
                          geteuid() == 0 ? "created by root" : "created unprivileged", "namespaces",
                          probe_ok, "landlock_abi", abi > 0 ? json_integer(abi) : json_null(),
                          "seccomp", probe_ok, "seccomp_denies", probe_denied());
        if (e)
                json_object_set_new(probe_details, "clone_error", json_string(strerror(e)));
}

/* Whether namespace sandboxes can be made here (cached). */
bool
nsbox_probe(json_t **details, const char **reason, const char **hint)
{
        if (!probed) {
                probed = true;
                probe_run();
        }
        if (details)
                *details = json_incref(probe_details);
        *reason = probe_reason;
        *hint = probe_hint;
        return probe_ok;
}
