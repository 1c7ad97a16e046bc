/* docker_info.c — what dockerd's GET /info says about it: whether it remaps users (root in a
 * container is then not host root), and its CPUs and memory, which are the host's defaults of
 * the docker maxima when dockerd runs on another host (tcp://). Kept from the last answer (the
 * start-up probe, each backend.list, each create that asks). */
#include <string.h>

#include "backends/docker/docker.h"
#include "backends/docker/docker_int.h"
#include "policy/policy.h"

static struct {
        int remaps; /* 1, 0; -1 before any answer */
        long ncpu;
        int64_t mem_total;
        bool cgroup2;
} info = {-1, 0, 0, false};

/* Whether info (a GET /info body, borrowed) names user-namespace remapping or rootless mode. */
bool
docker_info_remaps(json_t *body)
{
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(body, "SecurityOptions"), i, e)
        {
                const char *s = json_string_value(e);
                if (s && (!strcmp(s, "name=userns") || !strcmp(s, "name=rootless")))
                        return true;
        }
        return false;
}

/* Keeps what body (a 200 GET /info, borrowed) says; returns whether dockerd remaps users. */
bool
docker_info_note(json_t *body)
{
        json_int_t ncpu = json_integer_value(json_object_get(body, "NCPU"));
        json_int_t mem = json_integer_value(json_object_get(body, "MemTotal"));
        const char *cg = json_string_value(json_object_get(body, "CgroupVersion"));

        info.remaps = docker_info_remaps(body);
        info.ncpu = ncpu > 0 ? (long) ncpu : 0;
        info.mem_total = mem > 0 ? (int64_t) mem : 0;
        info.cgroup2 = cg && !strcmp(cg, "2");
        return info.remaps == 1;
}

/* Whether dockerd remaps users, as it last said: 1, 0, -1 before any answer. */
int
docker_info_remapped(void)
{
        return info.remaps;
}

/* Adds userns_remap (null: not known yet), ncpu and mem_total to backend.list's details. */
void
docker_info_details(json_t *d)
{
        json_object_set_new(d, "userns_remap",
                            info.remaps < 0 ? json_null() : json_boolean(info.remaps == 1));
        if (info.ncpu)
                json_object_set_new(d, "ncpu", json_integer(info.ncpu));
        if (info.mem_total)
                json_object_set_new(d, "mem_total", json_integer(info.mem_total));
}

/* For a dockerd on another host (tcp://): its CPUs, memory and cgroup version as GET /info
 * last said into h (0 CPUs and memory while it has not answered); false for a local socket,
 * whose host is the daemon's. */
bool
docker_remote_host(struct policy_host *h)
{
        if (!docker.initialised || !docker.tcp_host)
                return false;
        h->cpus = info.ncpu;
        h->mem = info.mem_total;
        h->cgroup2 = info.cgroup2;
        return true;
}

/* Whether dockerd remapped users, for the details of sb's sandbox.get. */
void
docker_info_sandbox(const struct backend_sandbox *sb, json_t *d)
{
        json_object_set_new(d, "userns_remap",
                            sb->remaps < 0 ? json_null() : json_boolean(sb->remaps == 1));
}
