/* locate.c — where the daemon finds the sandboxd-agent binary it puts into sandboxes. */
#include <sys/stat.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/transport.h"
#include "protocol/util.h"

#ifndef SANDBOXD_LIBEXECDIR
#define SANDBOXD_LIBEXECDIR "/usr/local/libexec/sandboxd"
#endif

/* An executable regular file, by its real path (new), or NULL. */
char *
agent_locate_file(const char *path)
{
        char real[PATH_MAX];
        struct stat st;

        if (!realpath(path, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
            access(real, X_OK) < 0)
                return NULL;
        return xstrdup(real);
}

/* Next to the daemon's binary (the build tree), PREFIX/libexec/sandboxd for the PREFIX the
 * daemon runs from, then SANDBOXD_LIBEXECDIR. */
char *
agent_locate_named(const char *name, char **looked)
{
        char self[PATH_MAX], *near = NULL, *found = NULL, *rel = NULL, *dflt;
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        if (n > 0) {
                self[n] = '\0';
                *strrchr(self, '/') = '\0';
                near = xasprintf("%s/%s", self, name);
                found = agent_locate_file(near);
                rel = xasprintf("%s/../libexec/sandboxd/%s", self, name);
                if (!found)
                        found = agent_locate_file(rel);
        }
        dflt = xasprintf("%s/%s", SANDBOXD_LIBEXECDIR, name);
        if (!found)
                found = agent_locate_file(dflt);
        if (looked)
                *looked = xasprintf("next to sandboxd, in %s or in " SANDBOXD_LIBEXECDIR,
                                    rel ? rel : "../libexec/sandboxd");
        free(dflt);
        free(near);
        free(rel);
        return found;
}

char *
agent_locate(char **looked)
{
        return agent_locate_named("sandboxd-agent", looked);
}
