/* secrets.c — non-dumpable daemon, credential variables out of the environment (secrets.h). */
#include "daemon/secrets.h"

#include <sys/prctl.h>

#include <errno.h>

#include "backends/credenv.h"

/* Makes the process non-dumpable and moves the credentials into memory. */
int
secrets_protect_process(int *moved)
{
        int r = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ? -errno : 0;

        *moved = credenv_capture();
        return r;
}
