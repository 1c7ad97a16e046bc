/* ctl_sandbox.c — `sandboxctl sandbox create|ls|get|rm`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl_conn.h"
#include "client/ctl_table.h"
#include "client/ctl_util.h"

#define CTL_SANDBOX_SPEC_MAX (1u << 20) /* bytes of a --spec file */

enum {
        OPT_BACKEND = CTL_OPT_LONG,
        OPT_NAME,
        OPT_IMAGE,
        OPT_SPEC,
        OPT_WORKDIR,
        OPT_NETWORK,
};

struct ctl_sandbox_opts {
        json_t *spec; /* owned object: flags are merged over --spec */
        json_t *env;  /* owned object */
        const char *backend;
};

static int
ctl_sandbox_load_spec(struct ctl_sandbox_opts *o, const char *arg)
{
        json_error_t jerr;
        json_t *v;

        if (arg[0] == '@') {
                FILE *f = fopen(arg + 1, "re");
                if (!f)
                        return ctl_util_opt_error("sandbox create", "cannot open %s: %s", arg + 1,
                                                  strerror(errno));
                char *text = xcalloc(1, CTL_SANDBOX_SPEC_MAX + 1);
                size_t n = fread(text, 1, CTL_SANDBOX_SPEC_MAX + 1, f);
                fclose(f);
                v = n <= CTL_SANDBOX_SPEC_MAX ? json_loadb(text, n, 0, &jerr) : NULL;
                free(text);
                if (n > CTL_SANDBOX_SPEC_MAX)
                        return ctl_util_opt_error("sandbox create", "%s is over %u bytes", arg + 1,
                                                  CTL_SANDBOX_SPEC_MAX);
        } else {
                v = json_loads(arg, 0, &jerr);
        }
        if (!json_is_object(v)) {
                json_decref(v);
                return ctl_util_opt_error("sandbox create", "--spec is not a JSON object%s%s",
                                          v ? "" : ": ", v ? "" : jerr.text);
        }
        json_object_update(v, o->spec); /* flags given before --spec still win */
        json_decref(o->spec);
        o->spec = v;
        return 0;
}

static int
ctl_sandbox_env(struct ctl_sandbox_opts *o, const char *arg)
{
        const char *eq = strchr(arg, '=');
        char *key;

        if (!eq || eq == arg)
                return ctl_util_opt_error("sandbox create", "bad --env '%s' (want NAME=VALUE)",
                                          arg);
        key = xstrndup(arg, (size_t) (eq - arg));
        json_object_set_new(o->env, key, json_string(eq + 1));
        free(key);
        return 0;
}

static int
ctl_sandbox_opt_cb(void *st, int opt, const char *arg)
{
        static const struct {
                int opt;
                const char *key;
        } fields[] = {{OPT_BACKEND, "backend"},
                      {OPT_NAME, "name"},
                      {OPT_IMAGE, "image"},
                      {OPT_WORKDIR, "workdir"},
                      {OPT_NETWORK, "network"},
                      {'b', "backend"},
                      {'n', "name"},
                      {'i', "image"}};
        struct ctl_sandbox_opts *o = st;

        if (opt == OPT_SPEC)
                return ctl_sandbox_load_spec(o, arg);
        if (opt == 'e')
                return ctl_sandbox_env(o, arg);
        if (opt == 'b' || opt == OPT_BACKEND)
                o->backend = arg;
        for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
                if (fields[i].opt != opt)
                        continue;
                if (!*arg)
                        return ctl_util_opt_error("sandbox", "empty --%s", fields[i].key);
                json_object_set_new(o->spec, fields[i].key, json_string(arg));
                return 0;
        }
        return -1;
}

static void
ctl_sandbox_progress_cb(void *arg, const char *method, json_t *params)
{
        json_t *cur = json_object_get(params, "current"), *tot = json_object_get(params, "total");
        char *msg;

        (void) arg;
        if (strcmp(method, "sandbox.progress") != 0)
                return;
        msg = ctl_util_escape(ctl_util_str(params, "message", ""), 300);
        if (json_is_number(cur) && json_is_number(tot))
                fprintf(stderr, "sandboxctl: %s: %s (%.0f/%.0f)\n",
                        ctl_util_str(params, "phase", "progress"), msg, json_number_value(cur),
                        json_number_value(tot));
        else
                fprintf(stderr, "sandboxctl: %s: %s\n", ctl_util_str(params, "phase", "progress"),
                        msg);
        free(msg);
}

static const struct ctl_help ctl_sandbox_create_help = {
        "sandbox create",
        "sandbox create [OPTIONS]",
        "Creates a sandbox (or returns the usable one of the same name) and prints its id.",
        "  -b, --backend B       local, docker, ssh, singularity, modal or daytona\n"
        "  -n, --name N          name, unique among your sandboxes\n"
        "  -i, --image I         image (container backends)\n"
        "      --workdir DIR     working directory inside the sandbox\n"
        "      --network NET     none, bridge or host\n"
        "  -e, --env K=V         environment variable (repeatable)\n"
        "      --spec JSON|@FILE the whole sandbox.create spec as a JSON object; the other\n"
        "                        options override its fields\n",
};

static int
ctl_sandbox_create(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"backend", required_argument, NULL, OPT_BACKEND},
                {"name", required_argument, NULL, OPT_NAME},
                {"image", required_argument, NULL, OPT_IMAGE},
                {"workdir", required_argument, NULL, OPT_WORKDIR},
                {"network", required_argument, NULL, OPT_NETWORK},
                {"env", required_argument, NULL, 'e'},
                {"spec", required_argument, NULL, OPT_SPEC},
                {NULL, 0, NULL, 0},
        };
        struct ctl_sandbox_opts o = {.spec = json_object(), .env = json_object()};
        int first, rc;
        json_t *res;

        rc = ctl_util_parse(ctx, &ctl_sandbox_create_help, "b:n:i:e:", opts, argc, argv,
                            ctl_sandbox_opt_cb, &o, &first);
        if (rc < 0 && first < argc)
                rc = ctl_util_usage_error("sandbox create", "unexpected argument '%s'",
                                          argv[first]);
        if (rc < 0 && json_object_size(o.env)) {
                json_t *env = json_object_get(o.spec, "env");
                if (json_is_object(env))
                        json_object_update(env, o.env);
                else
                        json_object_set(o.spec, "env", o.env);
        }
        json_decref(o.env);
        if (rc >= 0 || !ctl_connect(ctx)) {
                json_decref(o.spec);
                return rc >= 0 ? rc : CTL_EXIT_ERROR;
        }
        ctl_conn_set_notify(ctx->conn, ctl_sandbox_progress_cb, NULL);
        if (!(res = ctl_call(ctx, "sandbox.create", o.spec)))
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                printf("%s%s\n", ctl_util_str(res, "id", "?"),
                       json_is_true(json_object_get(res, "reused")) ? " (reused)" : "");
        json_decref(res);
        return CTL_EXIT_OK;
}

static void
ctl_sandbox_print_list(const json_t *res)
{
        static const char *const hdr[] = {"ID", "NAME", "BACKEND", "STATE", "IMAGE", "CREATED"};
        struct ctl_table *t = ctl_table_new(hdr, ARRAY_SIZE(hdr));
        size_t i;
        json_t *s;

        json_array_foreach(json_object_get(res, "sandboxes"), i, s)
        {
                char *created = xstrndup(ctl_util_str(s, "created_at", "-"), 19);
                const char *row[] = {
                        ctl_util_str(s, "id", NULL),      ctl_util_str(s, "name", NULL),
                        ctl_util_str(s, "backend", NULL), ctl_util_str(s, "state", NULL),
                        ctl_util_str(s, "image", NULL),   created};
                ctl_table_add(t, row);
                free(created);
        }
        ctl_table_print(t, stdout);
        ctl_table_free(t);
}

static const struct ctl_help ctl_sandbox_ls_help = {
        "sandbox ls",
        "sandbox ls [-b BACKEND]",
        "Lists your sandboxes.",
        "  -b, --backend B       only sandboxes of this backend\n",
};

static int
ctl_sandbox_ls(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"backend", required_argument, NULL, OPT_BACKEND},
                {NULL, 0, NULL, 0},
        };
        struct ctl_sandbox_opts o = {.spec = json_object()};
        int first, rc;
        json_t *params, *res;

        rc = ctl_util_parse(ctx, &ctl_sandbox_ls_help, "b:", opts, argc, argv, ctl_sandbox_opt_cb,
                            &o, &first);
        json_decref(o.spec);
        if (rc < 0 && first < argc)
                rc = ctl_util_usage_error("sandbox ls", "unexpected argument '%s'", argv[first]);
        if (rc >= 0)
                return rc;
        params = o.backend ? json_pack("{s:s}", "backend", o.backend) : json_object();
        if (!(res = ctl_call(ctx, "sandbox.list", params)))
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_sandbox_print_list(res);
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_sandbox_get_help = {
        "sandbox get",
        "sandbox get ID",
        "Shows a sandbox (by id or name), its processes and its last activity.",
        NULL,
};

static int
ctl_sandbox_get(struct ctl_ctx *ctx, int argc, char **argv)
{
        int first, rc;
        json_t *res;

        rc = ctl_util_parse(ctx, &ctl_sandbox_get_help, "", NULL, argc, argv, NULL, NULL, &first);
        if (rc < 0 && argc - first != 1)
                rc = ctl_util_usage_error("sandbox get", "expected one sandbox id or name");
        if (rc >= 0)
                return rc;
        if (!(res = ctl_call(ctx, "sandbox.get", json_pack("{s:s}", "id", argv[first]))))
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_table_print_fields(stdout, res);
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_sandbox_rm_help = {
        "sandbox rm",
        "sandbox rm ID...",
        "Destroys sandboxes (by id or name); their processes are killed first.",
        NULL,
};

static void
ctl_sandbox_rm_show(json_t *res, const char *operand)
{
        printf("%s\n", ctl_util_str(res, "id", operand));
}

static int
ctl_sandbox_rm(struct ctl_ctx *ctx, int argc, char **argv)
{
        return ctl_each_operand(ctx, &ctl_sandbox_rm_help, "expected a sandbox id or name",
                                "sandbox.destroy", "id", ctl_sandbox_rm_show, argc, argv);
}

static const struct ctl_subcmd ctl_sandbox_cmds[] = {
        {"create", ctl_sandbox_create, "create a sandbox"},
        {"ls", ctl_sandbox_ls, "list sandboxes"},
        {"get", ctl_sandbox_get, "show a sandbox"},
        {"rm", ctl_sandbox_rm, "destroy sandboxes"},
};

/* `sandboxctl sandbox ...`. */
int
ctl_sandbox_main(struct ctl_ctx *ctx, int argc, char **argv)
{
        return ctl_group_main(ctx, "sandbox", ctl_sandbox_cmds, ARRAY_SIZE(ctl_sandbox_cmds), argc,
                              argv);
}
