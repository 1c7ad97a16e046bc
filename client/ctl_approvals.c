/* ctl_approvals.c — `sandboxctl approvals ls|rm`: the persisted ("always") approvals. */
#include <stdlib.h>
#include <string.h>

#include "client/ctl_conn.h"
#include "client/ctl_table.h"
#include "client/ctl_util.h"

static const struct ctl_help ctl_approvals_ls_help = {
        "approvals ls",
        "approvals ls",
        "Lists the persisted (\"always\") approvals of your uid (root: of every uid).",
        NULL,
};

static int
ctl_approvals_ls(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const char *const hdr[] = {"UID", "CREATED", "KEY"};
        struct ctl_table *t;
        int first, rc;
        json_t *res, *a;
        size_t i;

        rc = ctl_util_parse(ctx, &ctl_approvals_ls_help, "", NULL, argc, argv, NULL, NULL, &first);
        if (rc < 0 && first < argc)
                rc = ctl_util_usage_error("approvals ls", "unexpected argument '%s'", argv[first]);
        if (rc >= 0)
                return rc;
        if (!(res = ctl_call(ctx, "approval.list", json_object())))
                return CTL_EXIT_ERROR;
        if (ctx->json) {
                ctl_util_print_json(stdout, res);
                json_decref(res);
                return CTL_EXIT_OK;
        }
        t = ctl_table_new(hdr, ARRAY_SIZE(hdr));
        json_array_foreach(json_object_get(res, "approvals"), i, a)
        {
                char *uid = ctl_table_cell(json_object_get(a, "uid"));
                const char *row[] = {uid, ctl_util_str(a, "created_at", NULL),
                                     ctl_util_str(a, "key", NULL)};
                ctl_table_add(t, row);
                free(uid);
        }
        ctl_table_print(t, stdout);
        ctl_table_free(t);
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_approvals_rm_help = {
        "approvals rm",
        "approvals rm KEY...",
        "Revokes persisted approvals by key (as `approvals ls` shows them); root revokes the key "
        "for every uid.",
        NULL,
};

static void
ctl_approvals_rm_show(json_t *res, const char *operand)
{
        (void) res;
        printf("revoked %s\n", operand);
}

static int
ctl_approvals_rm(struct ctl_ctx *ctx, int argc, char **argv)
{
        return ctl_each_operand(ctx, &ctl_approvals_rm_help, "expected a key (see 'approvals ls')",
                                "approval.revoke", "key", ctl_approvals_rm_show, argc, argv);
}

static const struct ctl_subcmd ctl_approvals_cmds[] = {
        {"ls", ctl_approvals_ls, "list persisted approvals"},
        {"rm", ctl_approvals_rm, "revoke persisted approvals"},
};

/* `sandboxctl approvals ...`. */
int
ctl_approvals_main(struct ctl_ctx *ctx, int argc, char **argv)
{
        return ctl_group_main(ctx, "approvals", ctl_approvals_cmds, ARRAY_SIZE(ctl_approvals_cmds),
                              argc, argv);
}
