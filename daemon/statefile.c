/* statefile.c — atomic, versioned JSON state file; unusable files are moved aside. */
#include "daemon/statefile.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "protocol/util.h"

/* Tries this many "-N" suffixes when two corrupt files are moved aside in the same second. */
#define STATEFILE_ASIDE_TRIES 100

/* The directory holding path (new string). */
static char *
statefile_dir(const char *path)
{
        const char *slash = strrchr(path, '/');

        if (!slash)
                return xstrdup(".");
        if (slash == path)
                return xstrdup("/");
        return xstrndup(path, (size_t) (slash - path));
}

static int
statefile_write_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, data, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                data += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Makes a rename in dir durable. */
static int
statefile_fsync_dir(const char *dir)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = 0;

        if (fd < 0)
                return -errno;
        if (fsync(fd) < 0)
                r = -errno;
        close(fd);
        return r;
}

/* Creates name (a mkostemp template) 0600, writes data and syncs it; *step names what failed. */
static int
statefile_write_tmp(char *name, const char *data, size_t len, const char **step)
{
        int fd, r;

        *step = "create temporary file";
        fd = mkostemp(name, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *step = "write temporary file";
        r = fchmod(fd, 0600) < 0 ? -errno : 0;
        if (r == 0)
                r = statefile_write_all(fd, data, len);
        if (r == 0 && fsync(fd) < 0) {
                *step = "fsync temporary file";
                r = -errno;
        }
        if (close(fd) < 0 && r == 0) {
                *step = "close temporary file";
                r = -errno;
        }
        if (r < 0)
                unlink(name);
        return r;
}

/* The on-disk text for doc: version first, then doc's own fields (new string). */
static char *
statefile_dump(json_t *doc)
{
        json_t *out = json_object();
        char *text;

        json_object_set_new(out, "version", json_integer(STATEFILE_VERSION));
        json_object_update_missing(out, doc);
        text = json_dumps(out, JSON_INDENT(1));
        json_decref(out);
        return text;
}

/* Atomically replaces the state file. */
int
statefile_save(const char *path, json_t *doc, struct sbx_error *err)
{
        const char *step = "encode";
        char *text, *tmp, *dir;
        int r = -EINVAL;

        if (!json_is_object(doc)) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "state file '%s': not an object", path);
                return -EINVAL;
        }
        text = statefile_dump(doc);
        if (text && strlen(text) + 1 > STATEFILE_MAX_BYTES) {
                /* a file a start would refuse loses every record in it: keep the last one */
                sbx_error_set(err, SBX_E_LIMIT,
                              json_pack("{s:s,s:I}", "limit", "state_file_bytes", "value",
                                        (json_int_t) STATEFILE_MAX_BYTES),
                              "state file '%s': not saved: it would be larger than the %u bytes a "
                              "start reads; the previous one is kept",
                              path, STATEFILE_MAX_BYTES);
                free(text);
                return -EFBIG;
        }
        tmp = xasprintf("%s.tmp-XXXXXX", path);
        dir = statefile_dir(path);
        if (text) {
                char *line = xasprintf("%s\n", text);

                r = statefile_write_tmp(tmp, line, strlen(line), &step);
                free(line);
        }
        if (r == 0 && rename(tmp, path) < 0) {
                step = "rename";
                r = -errno;
                unlink(tmp);
        }
        if (r == 0 && (r = statefile_fsync_dir(dir)) < 0)
                step = "fsync directory";
        if (r < 0)
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "state file '%s': %s: %s", path, step,
                              strerror(-r));
        free(text);
        free(tmp);
        free(dir);
        return r;
}

/* Reads a regular file of at most STATEFILE_MAX_BYTES into b; -ENOENT when missing. */
static int
statefile_read(const char *path, struct buf *b)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        int r = 0;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if (!S_ISREG(st.st_mode))
                r = -EINVAL;
        while (r == 0) {
                ssize_t n;

                buf_reserve(b, 65536);
                n = read(fd, b->data + b->len, MIN(b->cap - b->len - 1, (size_t) 65536));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : 0;
                        break;
                }
                b->len += (size_t) n;
                if (b->len > STATEFILE_MAX_BYTES)
                        r = -EFBIG;
        }
        close(fd);
        return r;
}

/* Parses and checks the text; on failure *why (new) says what is wrong. */
static json_t *
statefile_parse(const struct buf *b, char **why)
{
        json_error_t jerr;
        json_t *doc = json_loadb(b->data ? b->data : "", b->len, JSON_REJECT_DUPLICATES, &jerr);
        json_t *version;

        if (!doc) {
                *why = xasprintf("is not valid JSON (line %d column %d: %s)", jerr.line,
                                 jerr.column, jerr.text);
                return NULL;
        }
        version = json_object_get(doc, "version");
        if (!json_is_object(doc))
                *why = xstrdup("is not a JSON object");
        else if (!json_is_integer(version))
                *why = xstrdup("has no integer \"version\"");
        else if (json_integer_value(version) != STATEFILE_VERSION)
                *why = xasprintf("has version %lld, this sandboxd reads version %d",
                                 (long long) json_integer_value(version), STATEFILE_VERSION);
        else
                return doc;
        json_decref(doc);
        return NULL;
}

/* Renames path to "<path>.corrupt-<UTC time>[-N]" without replacing anything; *ret new name. */
static int
statefile_move_aside(const char *path, char **ret)
{
        char stamp[32];
        struct tm tm;
        time_t now = time(NULL);
        int r = -EEXIST;

        gmtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        for (int i = 0; i < STATEFILE_ASIDE_TRIES && r == -EEXIST; i++) {
                char *dest = i ? xasprintf("%s.corrupt-%s-%d", path, stamp, i)
                               : xasprintf("%s.corrupt-%s", path, stamp);

                r = renameat2(AT_FDCWD, path, AT_FDCWD, dest, RENAME_NOREPLACE) < 0 ? -errno : 0;
                /* Filesystems without RENAME_NOREPLACE: check first, then plain rename. */
                if (r == -EINVAL || r == -ENOSYS)
                        r = access(dest, F_OK) == 0 ? -EEXIST
                                                    : (rename(path, dest) < 0 ? -errno : 0);
                if (r == 0) {
                        *ret = dest;
                        return 0;
                }
                free(dest);
        }
        return r;
}

/* Builds the warning for an unusable file and moves it aside (why is consumed). */
static char *
statefile_reject(const char *path, char *why)
{
        char *dest = NULL, *warning;
        int r = statefile_move_aside(path, &dest);

        if (r == 0)
                warning = xasprintf("state file '%s' %s; moved it to '%s' and started with "
                                    "empty state",
                                    path, why, dest);
        else
                warning = xasprintf("state file '%s' %s; could not move it aside (%s), "
                                    "starting with empty state and it will be replaced at the "
                                    "next save",
                                    path, why, strerror(-r));
        free(dest);
        free(why);
        return warning;
}

/* Removes temporary files a crash during statefile_save() left behind (we are the only writer). */
static void
statefile_remove_stale(const char *path)
{
        char *pattern = xasprintf("%s.tmp-??????", path);
        glob_t g;

        if (glob(pattern, GLOB_NOSORT | GLOB_NOESCAPE, NULL, &g) == 0) {
                for (size_t i = 0; i < g.gl_pathc; i++)
                        unlink(g.gl_pathv[i]);
                globfree(&g);
        }
        free(pattern);
}

/* Loads the state file; never fails. */
int
statefile_load(const char *path, json_t **ret, char **warning)
{
        struct buf b = {0};
        json_t *doc = NULL;
        char *why = NULL;
        int r = statefile_read(path, &b);

        *warning = NULL;
        statefile_remove_stale(path);
        if (r == -EFBIG)
                why = xasprintf("is larger than %u bytes", STATEFILE_MAX_BYTES);
        else if (r == -EINVAL)
                why = xstrdup("is not a regular file");
        else if (r < 0 && r != -ENOENT)
                why = xasprintf("could not be read (%s)", strerror(-r));
        else if (r == 0)
                doc = statefile_parse(&b, &why);
        buf_free(&b);
        if (why)
                *warning = statefile_reject(path, why);
        if (!doc)
                doc = json_object();
        json_object_del(doc, "version");
        *ret = doc;
        return 0;
}
