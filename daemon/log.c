/* log.c — stderr logging with optional syslog priority prefixes. */
#include "daemon/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static enum log_level log_threshold = LOG_LEVEL_INFO;
static bool log_prefix;

/* Chooses the threshold and output format. */
void
log_init(enum log_level level)
{
        log_threshold = level;
        log_prefix = getenv("JOURNAL_STREAM") != NULL;
}

/* Changes the threshold (config reload). */
void
log_set_level(enum log_level level)
{
        log_threshold = level;
}

/* Writes one line if level passes the threshold. */
void
log_msg(enum log_level level, const char *fmt, ...)
{
        int saved = errno;
        va_list ap;

        if (level > log_threshold) {
                errno = saved;
                return;
        }
        if (log_prefix)
                fprintf(stderr, "<%d>", (int) level);
        else
                fputs("sandboxd: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        errno = saved;
}
