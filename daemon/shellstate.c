/* shellstate.c — a sandbox's shell state: starting command execs from it, taking over what
 * they leave. */
#include "daemon/shellstate.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/shell.h"
#include "daemon/log.h"
#include "protocol/util.h"

static char *shellstate_shell;     /* the local backend's shell */
static char *shellstate_bash_init; /* its BASH_ENV start-up file, NULL when it is missing */
static char *shellstate_root;      /* the local state files' tmpfs directory, or NULL */
static char *shellstate_record;    /* <state dir>/shell-tmp: where that directory is */
static bool shellstate_root_tried; /* it is made on the first local command exec */

/* Whether sb's state files and bash's start-up file are the host's (else inside it). */
static bool
shellstate_local(const struct sandbox *sb)
{
        return (sb->caps & BACKEND_CAP_HOST) != 0;
}

/* Whether sb's commands run in the configured shell: on the host, or in a sandbox that sees
 * the host's file system (an isolated local one, where the path resolves in its own view). */
static bool
shellstate_own_shell(const struct sandbox *sb)
{
        return (sb->caps & (BACKEND_CAP_HOST | BACKEND_CAP_HOST_FS)) != 0;
}

static char *
shellstate_write_init(const char *state_dir)
{
        char *path = xasprintf("%s/shell-init.bash", state_dir);
        size_t n = strlen(SHELL_BASH_INIT);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

        if (fd < 0 || write(fd, SHELL_BASH_INIT, n) != (ssize_t) n || fchmod(fd, 0644) < 0) {
                log_warn("cannot write '%s': %s (bash then reports errors in a command's first "
                         "line with the wrapper's prefix)",
                         path, strerror(errno));
                if (fd >= 0)
                        close(fd);
                free(path);
                return NULL;
        }
        close(fd);
        return path;
}

/* A state file is written and removed for every command exec: on a disk file system that
 * costs the round trip more than the shell's own work, on a tmpfs next to nothing. The
 * directory is private (mkdtemp) and traverse-only for others, as the state directory is. */
static char *
shellstate_make_root(void)
{
        const char *rt = getenv("RUNTIME_DIRECTORY");
        char *bases[] = {rt ? xstrndup(rt, strcspn(rt, ":")) : NULL, xstrdup("/dev/shm")};
        char *root = NULL;
        struct statfs fs;

        for (size_t i = 0; i < ARRAY_SIZE(bases) && !root; i++) {
                if (!bases[i] || statfs(bases[i], &fs) < 0 || fs.f_type != TMPFS_MAGIC)
                        continue;
                root = xasprintf("%s/sandboxd-shell-XXXXXX", bases[i]);
                if (!mkdtemp(root) || chmod(root, 0711) < 0) {
                        free(root);
                        root = NULL;
                }
        }
        for (size_t i = 0; i < ARRAY_SIZE(bases); i++)
                free(bases[i]);
        return root;
}

/* Removes dir and the plain files and directories below it (two levels are all there is). */
static void
shellstate_rmtree(const char *dir, int depth)
{
        DIR *d = opendir(dir);
        struct dirent *e;

        while (d && (e = readdir(d))) {
                char *p;
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                        continue;
                p = xasprintf("%s/%s", dir, e->d_name);
                if (e->d_type == DT_DIR && depth > 0)
                        shellstate_rmtree(p, depth - 1);
                else
                        unlink(p);
                free(p);
        }
        if (d)
                closedir(d);
        rmdir(dir);
}

/* A daemon that was killed could not remove its directory: the next one with the same state
 * directory does, when the record names one of ours. */
static void
shellstate_remove_stale(void)
{
        char path[4096];
        int fd = open(shellstate_record, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, path, sizeof(path) - 1) : -1;

        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return;
        path[n] = '\0';
        if (path[0] == '/' && strstr(path, "/sandboxd-shell-") && !strstr(path, ".."))
                shellstate_rmtree(path, 1);
        unlink(shellstate_record);
}

/* Makes the directory on first use and records where it is. */
static void
shellstate_root_make(void)
{
        int fd;

        shellstate_root_tried = true;
        shellstate_root = shellstate_make_root();
        if (!shellstate_root)
                return;
        fd = open(shellstate_record, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 && write(fd, shellstate_root, strlen(shellstate_root)) < 0)
                log_debug("cannot record '%s': %s", shellstate_root, strerror(errno));
        if (fd >= 0)
                close(fd);
}

/* Picks the local shell, writes bash's start-up file, removes a killed predecessor's state
 * files' directory. */
void
shellstate_init(const char *state_dir, const char *configured_shell)
{
        const char *sh = configured_shell                 ? configured_shell
                         : access("/bin/bash", X_OK) == 0 ? "/bin/bash"
                                                          : "/bin/sh";

        shellstate_shutdown();
        shellstate_shell = xstrdup(sh);
        if (shell_kind_of(sh) == SHELL_BASH)
                shellstate_bash_init = shellstate_write_init(state_dir);
        shellstate_record = xasprintf("%s/shell-tmp", state_dir);
        shellstate_remove_stale();
}

/* Removes the state files' directory and frees the shell settings. */
void
shellstate_shutdown(void)
{
        if (shellstate_root) {
                shellstate_rmtree(shellstate_root, 1);
                unlink(shellstate_record);
        }
        free(shellstate_shell);
        free(shellstate_bash_init);
        free(shellstate_root);
        free(shellstate_record);
        shellstate_shell = shellstate_bash_init = shellstate_root = shellstate_record = NULL;
        shellstate_root_tried = false;
}

/* The owner's directory for sb's local state files: <root>/<id>, else the sandbox's own
 * <state dir>/shell (made with the sandbox). */
static char *
shellstate_local_dir(struct sandbox *sb, struct sbx_error *err)
{
        char *dir;

        if (!shellstate_root_tried)
                shellstate_root_make();
        if (!shellstate_root)
                return xasprintf("%s/shell", sb->state_dir);
        dir = xasprintf("%s/%s", shellstate_root, sb->id);
        if (sb->shell_dir_made)
                return dir;
        if ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
            (geteuid() == 0 && chown(dir, sb->owner, sb->who.gid) < 0)) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot prepare '%s': %s", dir,
                              strerror(errno));
                free(dir);
                return NULL;
        }
        sb->shell_dir_made = true;
        return dir;
}

/* The directory of the state files inside a sandbox that is not the host. */
static const char *
shellstate_remote_dir(const struct sandbox *sb)
{
        return sb->runtime_dir ? sb->runtime_dir : BACKEND_RUNTIME_DIR;
}

/* Where an exec's state file goes. */
char *
shellstate_path(struct sandbox *sb, const char *exec_id, struct sbx_error *err)
{
        char *dir, *path;

        if (!shellstate_local(sb))
                return xasprintf("%s/%s.state", shellstate_remote_dir(sb), exec_id);
        dir = shellstate_local_dir(sb, err);
        if (!dir)
                return NULL;
        path = xasprintf("%s/%s.state", dir, exec_id);
        free(dir);
        return path;
}

/* Removes a destroyed sandbox's local state directory. */
void
shellstate_forget(struct sandbox *sb)
{
        char *dir;

        if (!shellstate_root || !sb->shell_dir_made)
                return;
        dir = xasprintf("%s/%s", shellstate_root, sb->id);
        shellstate_rmtree(dir, 0);
        free(dir);
        sb->shell_dir_made = false;
}

/* The argv of a command exec: the local shell, or bash/sh in a container (learnt from the
 * first command's state; until then the wrapper picks). */
char **
shellstate_argv(struct sandbox *sb, const char *command, const char **state_path, json_t *env,
                const char **path)
{
        struct shell_exec x = {
                .kind = sb->shell_kind,
                .command = command,
                .state_path = *state_path,
        };
        char *remote_init = NULL;
        char **argv;

        if (shellstate_own_shell(sb)) {
                x.kind = shell_kind_of(shellstate_shell);
                x.name = shell_basename(shellstate_shell);
        }
        if (!shellstate_local(sb)) {
                /* the backend writes bash's start-up file beside the state file */
                if (*state_path)
                        x.bash_init = remote_init = shell_bash_init_path(*state_path);
        } else {
                if (x.kind == SHELL_BASH && !shellstate_bash_init)
                        x.kind = SHELL_SH;
                x.bash_init = shellstate_bash_init;
        }
        *path = shellstate_own_shell(sb) ? shellstate_shell : NULL;
        if (x.state_path && shell_stateless(&x, env))
                x.state_path = *state_path = NULL;
        argv = shell_wrap(&x, env);
        free(remote_init);
        return argv;
}

/* Names a shell cannot export (bash passes them through, dash drops them) stay as they were;
 * so do bash functions the state does not list only when the shell was not bash. */
static void
shellstate_carry(json_t *env, json_t *base, enum shell_kind kind)
{
        const char *k;
        json_t *v;

        json_object_foreach(base, k, v)
        {
                size_t n = strlen(k);
                bool func = n > 12 && !strncmp(k, "BASH_FUNC_", 10) && !strcmp(k + n - 2, "%%");
                if (shell_name_valid(k, n) || (func && kind == SHELL_BASH) ||
                    json_object_get(env, k))
                        continue;
                json_object_set_nocheck(env, k, v);
        }
}

/* An exec's own env holds for that exec only: what it overrode comes back. */
static void
shellstate_restore(json_t *env, json_t *base, json_t *exec_env)
{
        const char *k;
        json_t *v;

        json_object_foreach(exec_env, k, v)
        {
                json_t *old = json_object_get(base, k);
                if (old)
                        json_object_set_nocheck(env, k, old);
                else if (json_equal(json_object_get(env, k), v))
                        json_object_del(env, k);
        }
}

/* Takes over the state an exec left. */
char *
shellstate_apply(struct sandbox *sb, const struct exec_exit *ex, json_t *base, json_t *exec_env,
                 bool keep_cwd)
{
        struct shell_state st;
        char *why = NULL, *note;
        int r;

        if (ex->state_too_big) {
                why = xasprintf("it is more than the %u bytes a sandbox keeps", SHELL_STATE_MAX);
                r = -E2BIG;
        } else if (!ex->state) {
                return NULL;
        } else {
                r = shell_state_parse(ex->state, ex->state_len, &st, &why);
        }
        if (r < 0) {
                note = xasprintf("sandboxd: the shell state this command left (working directory, "
                                 "exported variables) was not kept: %s; the next command starts "
                                 "from the state before it%s\n",
                                 why, r == -E2BIG ? " (unset or shorten large variables)" : "");
                free(why);
                return note;
        }
        if (!shellstate_own_shell(sb))
                sb->shell_kind = st.kind;
        if (keep_cwd && st.cwd) {
                free(sb->cwd);
                sb->cwd = st.cwd;
                st.cwd = NULL;
        }
        shellstate_carry(st.env, base, st.kind);
        shellstate_restore(st.env, base, exec_env);
        json_decref(sb->shell_env);
        sb->shell_env = json_incref(st.env);
        shell_state_clear(&st);
        return NULL;
}

/* Moves sb's cwd up when the exec failed on it. */
bool
shellstate_cwd_gone(struct sandbox *sb, const struct sbx_error *err, char **lost)
{
        const char *param = json_string_value(json_object_get(err->data, "param"));
        char *slash;

        if (!sb->cwd || !param || strcmp(param, "cwd") != 0)
                return false;
        if (!*lost)
                *lost = xstrdup(sb->cwd);
        slash = strrchr(sb->cwd, '/');
        if (slash && slash != sb->cwd) {
                *slash = '\0';
        } else if (slash && sb->cwd[1]) {
                sb->cwd[1] = '\0';
        } else {
                free(sb->cwd); /* "/" itself failed: the sandbox's workdir */
                sb->cwd = NULL;
        }
        return true;
}

/* Forgets a learnt shell that can no longer be started. */
bool
shellstate_shell_gone(struct sandbox *sb, const struct sbx_error *err)
{
        const char *param = json_string_value(json_object_get(err->data, "param"));

        if (shellstate_own_shell(sb) || sb->shell_kind == SHELL_PICK || !param ||
            strcmp(param, "argv") != 0)
                return false;
        sb->shell_kind = SHELL_PICK;
        return true;
}

/* The note for an exec that runs above its removed directory. */
char *
shellstate_cwd_note(struct sandbox *sb, const char *lost)
{
        return xasprintf("sandboxd: the working directory %s no longer exists; this command runs "
                         "in %s\n",
                         lost,
                         sb->cwd       ? sb->cwd
                         : sb->workdir ? sb->workdir
                                       : "/");
}
