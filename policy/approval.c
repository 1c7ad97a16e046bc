/* approval.c — approval memory helpers (pure): keys, coverage, choices, the persisted set.
 *
 * A key is "rule|subject": approving a recursive delete of build/ does not approve every
 * recursive delete. A set is a JSON object key -> {rule, subject}. The "always" set lives in a
 * JSON file {"version":1,"always":{…}} written atomically (tmp + fsync + rename).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "protocol/util.h"

#define APPROVALS_MAX_FILE (4 * 1024 * 1024)

/* Approval key of a finding (new). */
char *
policy_approval_key(const struct policy_finding *f)
{
        return xasprintf("%s|%s", f->rule, f->subject ? f->subject : "");
}

/* Keys of every ASK finding (new array). */
json_t *
policy_approval_keys(const struct policy_result *r)
{
        json_t *a = json_array();

        for (size_t k = 0; k < r->nfindings; k++) {
                if (r->findings[k].verdict != POLICY_ASK)
                        continue;
                char *key = policy_approval_key(&r->findings[k]);
                json_array_append_new(a, json_string(key));
                free(key);
        }
        return a;
}

/* Whether set (borrowed object, may be NULL) holds every ASK finding and r has no DENY. */
bool
policy_approval_covers(const struct policy_result *r, json_t *set)
{
        if (r->verdict == POLICY_DENY)
                return false;
        for (size_t k = 0; k < r->nfindings; k++) {
                const struct policy_finding *f = &r->findings[k];
                if (f->verdict == POLICY_DENY)
                        return false;
                if (f->verdict != POLICY_ASK)
                        continue;
                char *key = policy_approval_key(f);
                bool hit = set && json_object_get(set, key) != NULL;
                free(key);
                if (!hit)
                        return false;
        }
        return true;
}

/* Whether "always" may be offered for r. */
bool
policy_result_allows_always(const struct policy_result *r)
{
        for (size_t k = 0; k < r->nfindings; k++)
                if (r->findings[k].flags & (POLICY_F_FLOOR | POLICY_F_NO_ALWAYS))
                        return false;
        return r->verdict != POLICY_DENY;
}

/* The choices for an approval request (new array). */
json_t *
policy_result_choices(const struct policy_result *r)
{
        if (r->verdict == POLICY_DENY)
                return json_pack("[s]", "deny");
        if (policy_result_allows_always(r))
                return json_pack("[s,s,s,s]", "once", "session", "always", "deny");
        return json_pack("[s,s,s]", "once", "session", "deny");
}

/* Adds the keys of r's ASK findings to set; -EPERM (nothing added) for an always that is not
 * allowed or a result with DENY. */
int
policy_approval_remember(const struct policy_result *r, json_t *set, bool always)
{
        if (r->verdict == POLICY_DENY || (always && !policy_result_allows_always(r)))
                return -EPERM;
        for (size_t k = 0; k < r->nfindings; k++) {
                const struct policy_finding *f = &r->findings[k];
                if (f->verdict != POLICY_ASK)
                        continue;
                char *key = policy_approval_key(f);
                json_object_set_new(set, key,
                                    json_pack("{s:s,s:s}", "rule", f->rule, "subject",
                                              f->subject ? f->subject : ""));
                free(key);
        }
        return 0;
}

/* Removes key from set; -ENOENT if absent. */
int
policy_approvals_revoke(json_t *set, const char *key)
{
        return json_object_del(set, key) == 0 ? 0 : -ENOENT;
}

/* Loads the persisted "always" set (new object in *ret); a missing file is an empty set. */
int
policy_approvals_load(const char *path, json_t **ret, struct sbx_error *err)
{
        json_error_t je;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 && errno == ENOENT) {
                *ret = json_object();
                return 0;
        }
        if (fd < 0) {
                int e = -errno;
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s: %s", path, strerror(-e));
                return e;
        }
        FILE *f = fdopen(fd, "r");
        json_t *root = f ? json_loadf(f, JSON_REJECT_DUPLICATES, &je) : NULL;
        if (f)
                fclose(f);
        else
                close(fd);
        json_t *set = json_object_get(root, "always");
        if (!json_is_object(set) || json_integer_value(json_object_get(root, "version")) != 1) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s:%d: not an approvals file%s%s", path,
                              root ? 0 : je.line, root ? "" : ": ", root ? "" : je.text);
                json_decref(root);
                return -EINVAL;
        }
        *ret = json_incref(set);
        json_decref(root);
        return 0;
}

/* Saves set atomically (tmp file + fsync + rename), mode 0600. */
int
policy_approvals_save(const char *path, json_t *set, struct sbx_error *err)
{
        char *tmp = xasprintf("%s.tmp.%ld", path, (long) getpid());
        json_t *root = json_pack("{s:i,s:O}", "version", 1, "always", set);
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
        int rc = 0;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        json_decref(root);
        if (fd < 0) {
                rc = -errno;
        } else {
                size_t len = strlen(text), off = 0;
                while (off < len && rc == 0) {
                        ssize_t n = write(fd, text + off, len - off);
                        if (n < 0 && errno != EINTR)
                                rc = -errno;
                        else if (n > 0)
                                off += (size_t) n;
                }
                if (rc == 0 && (write(fd, "\n", 1) != 1 || fsync(fd) < 0))
                        rc = -errno ? -errno : -EIO;
                if (close(fd) < 0 && rc == 0)
                        rc = -errno;
                if (rc == 0 && rename(tmp, path) < 0)
                        rc = -errno;
                if (rc < 0)
                        unlink(tmp);
        }
        if (rc < 0)
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s: %s", path, strerror(-rc));
        free(text);
        free(tmp);
        return rc;
}
