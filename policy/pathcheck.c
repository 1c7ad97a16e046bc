/* pathcheck.c — file.read and file.write judged by the path rules of shell reads and writes.
 *
 * Nothing is copied from the shell analyser: a file op becomes the simple commands a shell
 * would run for it, analysed by analyze_units() like any other — a write is `: > PATH` (the
 * redirection rules: startup files, credentials, system directories, block devices, the
 * daemon's own state, and rules-file `write=` matchers), a mode is `chmod MODE PATH`, a read
 * is `cat PATH` (rules-file matchers) plus the credential lists of analyze.c. Relies on
 * analyze.c for: RD_OUT redirections going through its write checks, the "chmod" entry of its
 * command table, and analyze_is_credential(). Where a path really leads is the caller's
 * business: the daemon passes the path the backend resolved as the client (daemon/files.c).
 */
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

/* Secrets outside the credential lists of analyze.c, which only know home-directory names.
 * Globs as in rules files (a star also crosses '/'). */
static const char *const read_secrets[] = {"/etc/shadow",
                                           "/etc/shadow-",
                                           "/etc/gshadow",
                                           "/etc/gshadow-",
                                           "/etc/ssh/ssh_host_*",
                                           "/proc/*/environ",
                                           "/proc/*/mem",
                                           "/proc/*/auxv",
                                           "/proc/kcore",
                                           "/dev/mem",
                                           NULL};
static const char *const key_names[] = {"id_rsa",      "id_dsa",        "id_ecdsa", "id_ed25519",
                                        "id_ecdsa_sk", "id_ed25519_sk", NULL};

static bool
pathcheck_secret(const char *path)
{
        const char *b = strrchr(path, '/');

        b = b ? b + 1 : path;
        for (const char *const *k = key_names; *k; k++)
                if (!strcmp(b, *k))
                        return true;
        for (const char *const *g = read_secrets; *g; g++)
                if (rulesfile_glob(*g, path))
                        return true;
        return analyze_is_credential(path);
}

/* One synthetic simple command argv[0..] with an optional `> out` redirection. */
static int
pathcheck_unit(struct eval *ev, const char *const *argv, const char *out)
{
        int k = parse_new_unit(ev, 0, 0);
        struct unit *u;
        struct redir *r;

        if (k < 0)
                return -1;
        for (; *argv; argv++) /* units keep the words: copies that live as long as ev */
                parse_unit_push(ev, k, arena_strdup(&ev->ar, *argv), 0);
        if (!out)
                return k;
        u = &ev->units[k];
        arena_grow(&ev->ar, (void **) &u->redir, &u->redircap, u->nredir, sizeof(*u->redir));
        r = &u->redir[u->nredir++];
        memset(r, 0, sizeof(*r));
        r->kind = RD_OUT;
        r->fd = 1;
        r->target.s = arena_strdup(&ev->ar, out);
        return k;
}

/* `: > path`, and `chmod MODE path` for the file that really gets the mode (real). */
static void
pathcheck_write(struct eval *ev, const char *path, bool real, int mode)
{
        const char *colon[] = {":", NULL};
        char m[8];
        const char *chmod[] = {"chmod", m, path, NULL};

        pathcheck_unit(ev, colon, path);
        if (mode >= 0 && real) {
                snprintf(m, sizeof(m), "%04o", (unsigned) mode & 07777);
                pathcheck_unit(ev, chmod, NULL);
        }
}

static void
pathcheck_read(struct eval *ev, const char *path)
{
        const char *cat[] = {"cat", path, NULL};
        int k = pathcheck_unit(ev, cat, NULL);

        if (pathcheck_secret(path))
                analyze_add(ev, k, "read.credential", path, path);
}

static bool
pathcheck_absolute(const char *path)
{
        return path && path[0] == '/' && strlen(path) <= 4096;
}

/* Judges a file operation (see policy.h). */
void
policy_eval_file(const struct policy *p, const struct policy_ctx *ctx,
                 const struct policy_file_op *op, struct policy_result *out)
{
        const char *paths[] = {op->path, op->resolved};
        size_t n = op->resolved && op->path && strcmp(op->resolved, op->path) ? 2 : 1;
        struct eval ev;

        analyze_init(&ev, p, ctx, op->path ? strlen(op->path) : 0);
        for (size_t i = 0; i < n; i++) {
                if (!pathcheck_absolute(paths[i]))
                        analyze_add(&ev, -1, "parse.error", "not an absolute path", NULL);
                else if (op->write)
                        pathcheck_write(&ev, paths[i], i == n - 1, op->mode);
                else
                        pathcheck_read(&ev, paths[i]);
        }
        /* Findings of both paths are added before the units run: one evaluation, deduplicated. */
        analyze_units(&ev, 0);
        if (op->write && op->nlink > 1)
                analyze_add(&ev, -1, "write.hardlink", op->resolved ? op->resolved : op->path,
                            NULL);
        ev.host_access = ctx && ctx->host_access;
        analyze_finish(&ev, out);
        analyze_free(&ev);
}
