/* credenv.c — credential variables moved out of the environment into memory (see credenv.h). */
#include "backends/credenv.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

extern char **environ;

/* Read by the backends (docker: host and TLS material; modal: tokens, profile, config path,
 * gateway token) or by the backends to come (Daytona, ssh agents, registries). */
static const char *const credenv_names[] = {
        "DOCKER_HOST",
        "DOCKER_CERT_PATH",
        "DOCKER_TLS_VERIFY",
        "DOCKER_CONFIG",
        "DOCKER_AUTH_CONFIG",
        "MODAL_TOKEN_ID",
        "MODAL_TOKEN_SECRET",
        "MODAL_PROFILE",
        "MODAL_CONFIG_PATH",
        "DAYTONA_API_KEY",
        "DAYTONA_API_URL",
        "DAYTONA_TARGET",
        "DAYTONA_ORGANIZATION_ID",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "APPTAINER_DOCKER_PASSWORD",
        "SINGULARITY_DOCKER_PASSWORD",
};
/* Any other name holding one of these words counts too... */
static const char *const credenv_words[] = {"TOKEN",      "SECRET", "PASSWORD",   "PASSWD",
                                            "API_KEY",    "APIKEY", "ACCESS_KEY", "PRIVATE_KEY",
                                            "CREDENTIAL", "_AUTH"};
/* ...except these, which are no secret (systemd's LoadCredential= directory). */
static const char *const credenv_exceptions[] = {"CREDENTIALS_DIRECTORY"};

struct credenv_var {
        char *name;
        char *value;
};

static struct credenv_var *credenv_vars;
static size_t credenv_n;

static bool
credenv_in(const char *name, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(name, list[i]))
                        return true;
        return false;
}

/* Whether the variable named by s (NAME or NAME=value) is a credential. */
bool
credenv_is_credential(const char *s)
{
        size_t n = strcspn(s, "=");
        char name[256];

        if (n == 0 || n >= sizeof(name))
                return n > 0; /* absurdly long names: take them out rather than leave them */
        memcpy(name, s, n);
        name[n] = '\0';
        if (credenv_in(name, credenv_names, ARRAY_SIZE(credenv_names)))
                return true;
        if (credenv_in(name, credenv_exceptions, ARRAY_SIZE(credenv_exceptions)))
                return false;
        for (size_t i = 0; i < n; i++)
                name[i] = (char) (name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
        for (size_t i = 0; i < ARRAY_SIZE(credenv_words); i++)
                if (strstr(name, credenv_words[i]))
                        return true;
        return false;
}

static struct credenv_var *
credenv_find(const char *name, size_t len)
{
        for (size_t i = 0; i < credenv_n; i++)
                if (strlen(credenv_vars[i].name) == len &&
                    !strncmp(credenv_vars[i].name, name, len))
                        return &credenv_vars[i];
        return NULL;
}

/* Moves the credential variables into memory. */
int
credenv_capture(void)
{
        size_t first = credenv_n;

        for (char **e = environ; e && *e; e++) {
                char *eq = strchr(*e, '=');
                if (!eq || !credenv_is_credential(*e))
                        continue;
                if (!credenv_find(*e, (size_t) (eq - *e))) {
                        credenv_vars =
                                xrealloc(credenv_vars, (credenv_n + 1) * sizeof(*credenv_vars));
                        credenv_vars[credenv_n].name = xstrndup(*e, (size_t) (eq - *e));
                        credenv_vars[credenv_n].value = xstrdup(eq + 1);
                        credenv_n++;
                }
                /* In place: the initial environment block is what /proc/PID/environ reads. */
                memset(eq + 1, 0, strlen(eq + 1));
        }
        for (size_t i = first; i < credenv_n; i++)
                unsetenv(credenv_vars[i].name);
        return (int) (credenv_n - first);
}

/* A captured value, or the environment's. */
const char *
credenv_get(const char *name)
{
        struct credenv_var *v = credenv_find(name, strlen(name));

        return v ? v->value : getenv(name);
}

/* Forgets the captured values. */
void
credenv_clear(void)
{
        for (size_t i = 0; i < credenv_n; i++) {
                memset(credenv_vars[i].value, 0, strlen(credenv_vars[i].value));
                free(credenv_vars[i].value);
                free(credenv_vars[i].name);
        }
        free(credenv_vars);
        credenv_vars = NULL;
        credenv_n = 0;
}
