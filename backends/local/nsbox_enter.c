/* nsbox_enter.c — a helper of the daemon steps into a namespace sandbox's view (nsbox.h): its
 * user and mount namespaces, as the sandbox's identity, with no capability left. For the file
 * ops of local_file.c, which then resolve paths exactly as the sandbox's commands would.
 * Async-signal-safe (it runs in a fork of the daemon). */
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/nsbox.h"

/* Enters the namespaces as who (nsbox.h). */
int
nsbox_enter(int userns, int mntns, const struct backend_identity *who, bool set_groups)
{
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];

        /* Raw calls: glibc's set*id wrappers would signal the daemon's threads. */
        if (syscall(SYS_setns, userns, CLONE_NEWUSER) < 0 ||
            syscall(SYS_setns, mntns, CLONE_NEWNS) < 0)
                return errno;
        if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0 ||
            (set_groups && syscall(SYS_setgroups, who->ngroups, who->groups) < 0) ||
            syscall(SYS_setresgid, who->gid, who->gid, who->gid) < 0 ||
            syscall(SYS_setresuid, who->uid, who->uid, who->uid) < 0)
                return errno;
        memset(d, 0, sizeof(d));
        if (syscall(SYS_capset, &h, d) < 0)
                return errno;
        return chdir("/") < 0 ? errno : 0;
}
