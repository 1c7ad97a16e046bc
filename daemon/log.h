/* log.h — the daemon's logging: stderr, with syslog priority prefixes ("<3>") when started by
 * systemd (JOURNAL_STREAM set) so the journal keeps levels. Only daemon/ logs above debug.
 * Loop thread only. errno is preserved across calls. */
#ifndef SANDBOXD_LOG_H
#define SANDBOXD_LOG_H

#include <stdbool.h>

enum log_level {
        LOG_LEVEL_ERR = 3,
        LOG_LEVEL_WARNING = 4,
        LOG_LEVEL_INFO = 6,
        LOG_LEVEL_DEBUG = 7,
};

/* Sets the threshold and decides on priority prefixes (from JOURNAL_STREAM). */
void log_init(enum log_level level);
void log_set_level(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)   log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
