/* builtin.c — the table of built-in rules: id, verdict, flags and the sentence shown to people.
 * Rule functions in analyze.c and container.c refer to rules by id. */
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

#define FL POLICY_F_FLOOR
#define NA POLICY_F_NO_ALWAYS
#define D  POLICY_DENY
#define A  POLICY_ASK

static const struct builtin_rule rules[] = {
        {"floor.rm-root", D, FL, "recursive delete of the root filesystem"},
        {"floor.rm-system", D, FL, "recursive delete of a system directory"},
        {"floor.rm-home", D, FL, "recursive delete of the home directory"},
        {"floor.perm-root", D, FL,
         "recursive permission or owner change of /, a system directory or home"},
        {"floor.mkfs", D, FL, "formats a filesystem"},
        {"floor.wipe-dev", D, FL, "wipes a block device"},
        {"floor.write-dev", D, FL, "raw write to a block device"},
        {"floor.forkbomb", D, FL, "fork bomb: a function that calls itself in a pipe or twice"},
        {"floor.kill-all", D, FL, "kill -1 signals every process the caller may signal"},
        {"floor.power", D, FL, "shuts down, reboots or halts the machine"},
        {"floor.self-protect", D, FL,
         "changes or deletes the daemon's own configuration, state or audit log"},
        {"floor.kill-init", D, FL, "signals init (pid 1): the system or the container stops"},
        {"floor.kill-daemon", D, FL, "signals, stops or debugs the sandboxd daemon itself"},
        {"parse.error", A, NA, "the command could not be parsed, so it cannot be judged"},
        {"parse.limit", A, NA, "the command exceeds a parser limit, so it cannot be judged"},
        {"exec.opaque-cmd", A, NA, "the program to run is only known at run time"},
        {"exec.opaque-payload", A, NA, "code handed to a shell or eval is only known at run time"},
        {"exec.arith-opaque", A, NA,
         "an arithmetic expression or variable name holds a value only known at run time; a "
         "subscript in it (a[$(…)]) would run commands"},
        {"exec.alias", A, NA, "aliases, hash -p or enable -f change what a name runs"},
        {"exec.stdin-code", A, NA, "a shell or interpreter reads code from a stream"},
        {"exec.remote-code", A, NA, "downloaded code is executed"},
        {"exec.decode-run", A, NA, "decoded data is executed as code"},
        {"exec.inline-code", A, NA, "an interpreter runs inline code"},
        {"exec.embedded", A, NA, "a tool option runs another program"},
        {"exec.write-then-run", A, NA, "runs a file written earlier in the same command"},
        {"exec.nonascii", A, NA, "non-ASCII characters in a command name"},
        {"exec.remote", A, 0, "runs a command on another host or container"},
        {"exec.scheduled", A, NA,
         "schedules a command to run later, outside this sandbox's control (at, systemd-run)"},
        {"proc.ptrace", A, 0, "attaches a debugger or tracer to a running process"},
        {"delete.recursive", A, 0, "recursive delete"},
        {"home.unknown", A, NA,
         "deletes or changes a path that may be the sandbox's home, which is not known yet"},
        {"delete.force", A, 0, "forced delete"},
        {"delete.find", A, 0, "find deletes the files it matches"},
        {"delete.xargs", A, 0, "deletes files whose names come from input"},
        {"perm.chmod", A, 0, "weakens permissions (recursive, world-writable or set-id)"},
        {"perm.chown", A, 0, "changes file ownership"},
        {"write.credential", A, 0, "writes a credential file"},
        {"write.startup", A, 0, "writes a login, startup or scheduled-job file"},
        {"write.system", A, 0, "writes or deletes a system file"},
        {"write.hardlink", A, 0,
         "writes a file that has other names (hard links), which are not judged"},
        {"read.credential", A, 0, "reads a credential, key or secret file"},
        {"write.device", A, 0, "writes a device file"},
        {"write.unknown", A, 0, "writes a file whose name is only known at run time"},
        {"disk.file", A, 0, "formats or wipes a file outside the workspace"},
        {"sys.admin", A, 0,
         "changes the system's administration (mounts, users, kernel, firewall, network)"},
        {"net.secret-exfil", A, NA, "sends a key or credential file over the network"},
        {"net.metadata", A, 0, "contacts a cloud metadata service (credential theft)"},
        {"net.dev-tcp", A, 0, "opens a network connection through /dev/tcp or /dev/udp"},
        {"env.inject", A, 0, "sets a variable that injects code into programs"},
        {"env.path", A, 0, "puts directories in front of PATH"},
        {"docker.daemon-redirect", A, 0, "talks to another container daemon or context"},
        {"git.reset-hard", A, 0,
         "discards uncommitted work (reset --hard, checkout PATHS, stash drop)"},
        {"git.push-force", A, 0, "rewrites remote history (forced push)"},
        {"git.clean", A, 0, "deletes untracked files (git clean -f)"},
        {"git.branch-delete", A, 0, "force-deletes a branch"},
        {"git.history", A, 0, "rewrites repository history"},
        {"service.control", A, 0, "stops, restarts or disables a system service"},
        {"proc.kill", A, 0, "kills processes by name or with SIGKILL"},
        {"priv.sudo-stdin", A, NA, "sudo reads a password from a stream"},
        {"pkg.remove", A, 0, "uninstalls packages"},
        {"infra.destroy", A, 0,
         "deletes infrastructure or data through a service (containers, cluster, cloud, database)"},
        {"sql.destructive", A, 0, "destructive SQL (DROP, TRUNCATE, DELETE without WHERE)"},
        {"container.invalid", D, 0, "the spec cannot be judged (see the error naming the field)"},
        {"container.cli-unknown", A, NA,
         "a docker/podman option or value the container checks cannot judge (unknown, or only "
         "known at run time)"},
        {"container.privileged", D, 0, "privileged container: every capability and device"},
        {"container.host-ns", D, 0,
         "shares a namespace of the host (pid, ipc, network, uts, user or cgroup)"},
        {"container.join-ns", D, 0, "joins the namespaces or cgroup of another container"},
        {"container.network", D, 0, "joins a Docker network other than none or bridge"},
        {"container.cap", D, 0, "adds a capability outside the allowlist"},
        {"container.cap-drop", D, 0,
         "a CapDrop without ALL brings back the capabilities sandboxd drops"},
        {"container.device", D, 0,
         "exposes host devices (Devices, DeviceCgroupRules, DeviceRequests)"},
        {"container.secopt", D, 0,
         "replaces or weakens a security default (seccomp, AppArmor, SELinux, "
         "no-new-privileges)"},
        {"container.unmask", D, 0, "overrides the masked and read-only paths of /proc and /sys"},
        {"container.sysctl", D, 0, "sets a sysctl outside the namespaced safe set"},
        {"container.cgroup-parent", D, 0,
         "places the container in a host cgroup of the client's choosing"},
        {"container.pids-limit", D, 0, "removes the process limit (PidsLimit <= 0 or null)"},
        {"container.oom", D, 0,
         "disables the OOM killer or makes host processes die first (OomKillDisable, negative "
         "OomScoreAdj)"},
        {"container.realtime", D, 0, "reserves real-time CPU time, which can starve the host"},
        {"container.runtime", D, 0, "uses an OCI runtime other than the configured one"},
        {"container.annotations", D, 0, "passes annotations the OCI runtime may act on"},
        {"container.links", D, 0,
         "legacy links copy another container's environment and join its network"},
        {"container.lifecycle", D, 0,
         "restarts or removes the container behind sandboxd's back (RestartPolicy, AutoRemove)"},
        {"container.log-driver", D, 0,
         "sends the container's output to a log driver outside the container"},
        {"container.host-file", D, 0, "names a host file for dockerd to write (ContainerIDFile)"},
        {"container.storage-opt", D, 0, "a storage driver option other than size"},
        {"container.hooks", D, 0, "OCI hooks run programs on the host as root"},
        {"container.mount-root", D, 0, "mounts the host's root filesystem"},
        {"container.mount-system", D, 0, "mounts a host system directory (or one containing it)"},
        {"container.mount-socket", D, 0, "mounts a container runtime socket (host control)"},
        {"container.mount-credential", D, 0,
         "mounts host credentials (or a directory holding them)"},
        {"container.mount-self", D, 0, "mounts the daemon's own configuration or state"},
        {"container.mount-unresolved", D, 0,
         "mounts a host path that cannot be resolved (~user, a relative or Windows path, or "
         "one through a directory the caller may not search): it may be any path, / included"},
        {"container.mount-unprivileged", D, 0,
         "a caller that is not root (or the daemon's owner) may not mount host paths: Docker "
         "mounts them with root's rights"},
        {"container.mount-type", D, 0, "a mount type other than bind, volume or tmpfs"},
        {"container.mount-host", A, 0, "mounts a host directory outside the workspace"},
        {"container.volume-device", D, 0,
         "a volume mounts a host block device or file as a filesystem"},
        {"container.volume-netfs", D, 0,
         "a volume mounts a network filesystem from the host's network position"},
        {"container.volume-driver", D, 0, "a volume driver the operator has not accepted"},
        {"container.volume-option", D, 0, "a local-driver or tmpfs option the checks do not know"},
        {"container.volume-foreign", D, 0,
         "mounts a volume that belongs to another user (no sandboxd.owner label of the "
         "caller)"},
        {"container.volumes-from", D, 0,
         "inherits the mounts of a container that could not be inspected or belongs to another "
         "user"},
        {"container.propagation", A, 0, "shared mount propagation with the host"},
        {"container.publish", A, 0, "publishes ports on all host interfaces"},
        {"container.publish-privileged", D, 0,
         "publishes a privileged host port (below 1024) for a caller that could not bind it"},
};

/* The rule with this id, or NULL. */
const struct builtin_rule *
builtin_find(const char *id)
{
        for (size_t k = 0; k < ARRAY_SIZE(rules); k++)
                if (strcmp(rules[k].id, id) == 0)
                        return &rules[k];
        return NULL;
}

/* Number of built-in rules. */
size_t
builtin_count(void)
{
        return ARRAY_SIZE(rules);
}

/* The i-th built-in rule. */
const struct builtin_rule *
builtin_at(size_t i)
{
        return i < ARRAY_SIZE(rules) ? &rules[i] : NULL;
}
