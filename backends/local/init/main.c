/* main.c — sandboxd-nsbox: reads the daemon's plan, sets the sandbox up (setup.c, filter.c)
 * and runs sandboxd-agent as its PID 1 (nsinit.h has the hand-over). Not meant to be run by
 * hand: it refuses to run without the plan and the daemon's socket. */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/init/nsinit_int.h"

static struct nsinit_plan plan;

/* A string offset is inside the used pool and what it names ends there. */
static int
str_ok(uint32_t off)
{
        return off == 0 ||
               (off < plan.pool_used && memchr(plan.pool + off, 0, plan.pool_used - off));
}

static int
plan_ok(void)
{
        int ok = plan.magic == NSINIT_MAGIC && plan.version == NSINIT_VERSION &&
                 plan.pool_used <= sizeof(plan.pool) && plan.ngroups <= NSINIT_MAX_GROUP &&
                 plan.nsrc <= NSINIT_MAX_SRC && plan.nops <= NSINIT_MAX_OPS &&
                 plan.nrw <= NSINIT_MAX_RW && str_ok(plan.hostname);

        for (uint32_t i = 0; ok && i < plan.nsrc; i++)
                ok = str_ok(plan.src[i].path);
        for (uint32_t i = 0; ok && i < plan.nops; i++)
                ok = str_ok(plan.ops[i].dst) && str_ok(plan.ops[i].data) &&
                     (plan.ops[i].type != NSI_BIND ||
                      (plan.ops[i].src >= 0 && (uint32_t) plan.ops[i].src < plan.nsrc));
        for (uint32_t i = 0; ok && i < plan.nrw; i++)
                ok = str_ok(plan.rw[i]);
        for (int i = 0; ok && i < 8; i++)
                ok = str_ok(plan.argv[i]);
        for (int i = 0; ok && i < 4; i++)
                ok = str_ok(plan.envp[i]);
        return ok && plan.argv[0] != 0;
}

static void
read_plan(void)
{
        size_t got = 0;
        ssize_t n;

        while (got < sizeof(plan)) {
                n = pread(NSINIT_FD_PLAN, (char *) &plan + got, sizeof(plan) - got, (off_t) got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        close(NSINIT_FD_PLAN);
        if (got < offsetof(struct nsinit_plan, pool) || !plan_ok())
                nsinit_fail(NSI_STEP_PLAN, EINVAL, -1);
}

/* Entry point. */
int
main(int argc, char **argv)
{
        char *av[9], *ev[5];
        struct stat st;
        sigset_t none;
        int n = 0;

        (void) argv;
        if (argc != 1 || fstat(NSINIT_FD_CTL, &st) < 0 || !S_ISSOCK(st.st_mode) ||
            fstat(NSINIT_FD_PLAN, &st) < 0) {
                fprintf(stderr, "sandboxd-nsbox: started by sandboxd for its namespace "
                                "sandboxes; it is not meant to be run by hand\n");
                return 2;
        }
        syscall(SYS_close_range, NSINIT_NFDS, ~0U, 0); /* sandboxd-nsbox itself, and so on */
        fcntl(NSINIT_FD_CTL, F_SETFD, FD_CLOEXEC);
        fcntl(NSINIT_FD_AGENT, F_SETFD, FD_CLOEXEC);
        read_plan();
        nsinit_setup(&plan);
        nsinit_filters(&plan);
        for (n = 0; n < 8 && plan.argv[n]; n++)
                av[n] = (char *) nsinit_str(&plan, plan.argv[n]);
        av[n] = NULL;
        for (n = 0; n < 4 && plan.envp[n]; n++)
                ev[n] = (char *) nsinit_str(&plan, plan.envp[n]);
        ev[n] = NULL;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        syscall(SYS_execveat, NSINIT_FD_AGENT, "", av, ev, AT_EMPTY_PATH);
        nsinit_fail(NSI_STEP_EXEC, errno, -1);
}
