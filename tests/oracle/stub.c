/* stub.c — the differential oracle's stand-in for every program (tests/integration/
 * test_policy_oracle.py): it records how it was run and does nothing else.
 *
 * Installed under many names (hard links) in the PATH of a throwaway bwrap root. It appends one
 * line to /oracle-log/argv.N, N being the snippet number ($ORACLE_ID, or what the driver wrote
 * to /oracle-log/current when a snippet cleared the environment): "cwd exe arg1 arg2 …", every
 * field "x" + hex, so any byte survives.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
hex(FILE *f, const char *s)
{
        fputc('x', f); /* so that an empty argument is a field too */
        for (; *s; s++)
                fprintf(f, "%02x", (unsigned char) *s);
        fputc(' ', f);
}

int
main(int argc, char **argv)
{
        char cur[64] = "none", path[128], exe[4096], cwd[4096];
        int fd = open("/oracle-log/current", O_RDONLY | O_CLOEXEC);
        ssize_t n;

        const char *id = getenv("ORACLE_ID");

        if (id && *id && strlen(id) < sizeof(cur)) {
                strcpy(cur, id);
                if (fd >= 0)
                        close(fd);
                fd = -1;
        }
        if (fd >= 0) {
                n = read(fd, cur, sizeof(cur) - 1);
                cur[n > 0 ? n : 0] = '\0';
                cur[strcspn(cur, "\n")] = '\0';
                close(fd);
        }
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = '\0';
        if (!getcwd(cwd, sizeof(cwd)))
                strcpy(cwd, "?");
        snprintf(path, sizeof(path), "/oracle-log/argv.%s", cur);
        FILE *f = fopen(path, "a");
        if (!f)
                return 0;
        hex(f, cwd);
        hex(f, exe);
        for (int i = 1; i < argc; i++)
                hex(f, argv[i]);
        fputc('\n', f);
        fclose(f);
        return 0;
}
