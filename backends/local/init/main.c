/* main.c — sandboxd-nsbox: reads the daemon's plan, sets the sandbox up (setup.c, filter.c)
 * and goes on as the agent, its PID 1 (nsinit.h has the hand-over). Not meant to be run by
 * hand: it refuses to run without the plan and the daemon's socket. */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"
#include "backends/local/init/nsinit_int.h"

extern char **environ;

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
        static char *av[9], *ev[5];
        struct stat st;
        sigset_t none;
        int ac, n;

        (void) argv;
        if (argc != 1 || fstat(NSINIT_FD_CTL, &st) < 0 || !S_ISSOCK(st.st_mode) ||
            fstat(NSINIT_FD_PLAN, &st) < 0) {
                fprintf(stderr, "sandboxd-nsbox: started by sandboxd for its namespace "
                                "sandboxes; it is not meant to be run by hand\n");
                return 2;
        }
        syscall(SYS_close_range, NSINIT_NFDS, ~0U, 0); /* sandboxd-nsbox itself, and so on */
        fcntl(NSINIT_FD_CTL, F_SETFD, FD_CLOEXEC);
        read_plan();
        nsinit_setup(&plan);
        nsinit_filters(&plan);
        for (ac = 0; ac < 8 && plan.argv[ac]; ac++)
                av[ac] = (char *) nsinit_str(&plan, plan.argv[ac]);
        av[ac] = NULL;
        for (n = 0; n < 4 && plan.envp[n]; n++)
                ev[n] = (char *) nsinit_str(&plan, plan.envp[n]);
        ev[n] = NULL;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The last copy of ctl: its EOF tells the daemon that the agent runs. */
        close(NSINIT_FD_CTL);
        prctl(PR_SET_NAME, "sandboxd-agent", 0, 0, 0);
        environ = ev;
        return agent_main(ac, av);
}
