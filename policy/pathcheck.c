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
        for (; *argv; argv++)
                parse_unit_push(ev, k, *argv, 0);
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

static void
pathcheck_write(struct eval *ev, const struct policy_file_op *op)
{
        const char *colon[] = {":", NULL};
        char m[8];
        const char *chmod[] = {"chmod", m, op->path, NULL};

        pathcheck_unit(ev, colon, op->path);
        if (op->mode >= 0) {
                snprintf(m, sizeof(m), "%04o", (unsigned) op->mode & 07777);
                pathcheck_unit(ev, chmod, NULL);
        }
        analyze_units(ev, 0);
        if (op->nlink > 1)
                analyze_add(ev, -1, "write.hardlink", op->path, op->path);
}

static void
pathcheck_read(struct eval *ev, const struct policy_file_op *op)
{
        const char *cat[] = {"cat", op->path, NULL};
        int k = pathcheck_unit(ev, cat, NULL);

        analyze_units(ev, 0);
        if (pathcheck_secret(op->path))
                analyze_add(ev, k, "read.credential", op->path, op->path);
}

/* Judges a file operation (see policy.h). */
void
policy_eval_file(const struct policy *p, const struct policy_ctx *ctx,
                 const struct policy_file_op *op, struct policy_result *out)
{
        struct eval ev;
        const char *path = op->path ? op->path : "";

        analyze_init(&ev, p, ctx, strlen(path));
        if (path[0] != '/' || strlen(path) > 4096)
                analyze_add(&ev, -1, "parse.error", "not an absolute path", NULL);
        else if (op->write)
                pathcheck_write(&ev, op);
        else
                pathcheck_read(&ev, op);
        ev.host_access = ctx && ctx->host_access;
        analyze_finish(&ev, out);
        analyze_free(&ev);
}
