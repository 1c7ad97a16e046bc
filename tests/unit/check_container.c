/* check_container.c — the container-spec checks (policy/container*.c): every HostConfig field
 * of the table, every mount form, the spellings that reach host root, an unprivileged caller,
 * the operator's additions, and docker/podman argv with the CLI's flag grammar.
 *
 * JSON in the tables is written with ' for " (j() swaps them) to stay readable. */
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/hostpath.h"
#include "policy/policy.h"
#include "protocol/util.h"
#include "tests/unit/helper_policy.h"

#define D POLICY_DENY
#define Q POLICY_ASK
#define A POLICY_ALLOW

static const char *const prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};
static struct policy *pol;
static json_t *facts;

enum who {
        ROOT,   /* root or the daemon's owner */
        UNPRIV, /* uid 1000 against a root daemon */
        RUNSC,  /* root, with [backend.docker] runtime = runsc */
        EXTRA,  /* root, with unchecked_host_config_fields = Foo and volume_drivers = rexray */
        LIM,    /* root, with the [backend.docker] maxima of lim (the host: 4 CPUs, 8 GiB) */
        ULIM,   /* uid 1000, with the maxima and images of lim */
        UNONE,  /* uid 1000, with the maxima of lim and no images listed */
};

#define HEXA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DIGA "sha256:" HEXA
static const struct policy_host host = {.cpus = 4, .mem = INT64_C(8) << 30, .pid_max = 32768};
static struct policy_docker_limits lim, lim_none;
static json_t *lim_sec; /* lim's strings are borrowed from it */

static json_t *
j(const char *s)
{
        char *d = xstrdup(s);
        json_error_t e;

        for (char *c = d; *c; c++)
                if (*c == '\'')
                        *c = '"';
        json_t *v = json_loads(d, JSON_DECODE_ANY, &e);
        ck_assert_msg(v != NULL, "bad fixture %s: %s", s, e.text);
        free(d);
        return v;
}

static struct policy_ctx
ctx_for(enum who w)
{
        struct policy_ctx c = {.backend = "docker",
                               .cwd = "/home/user/project",
                               .home = "/home/user",
                               .protected_paths = prot,
                               .workspace = "/home/user/project"};

        c.unprivileged = w == UNPRIV;
        c.caller_uid = w == UNPRIV ? 1000 : 0;
        c.runtime = w == RUNSC ? "runsc" : NULL;
        c.unchecked_fields = w == EXTRA ? "Foo, Bar" : NULL;
        c.volume_drivers = w == EXTRA ? "rexray" : NULL;
        c.unprivileged |= w == ULIM || w == UNONE;
        c.caller_uid = c.unprivileged ? 1000 : 0;
        c.docker_limits = w == LIM || w == ULIM ? &lim : w == UNONE ? &lim_none : NULL;
        return c;
}

static void
setup(void)
{
        struct sbx_error err = {0};

        lim_sec = j("{'images':'sandboxd-test:busybox, alpine:*, ghcr.io/org/tool@" DIGA "'}");
        ck_assert_int_eq(policy_docker_limits_parse(lim_sec, &host, &lim, &err), 0);
        ck_assert_int_eq(policy_docker_limits_parse(NULL, &host, &lim_none, &err), 0);
        pol = policy_new_default();
        facts = j("{'volumes':{"
                  "'evil':{'Driver':'local','Options':{'type':'none','o':'bind','device':'/etc'}},"
                  "'rootvol':{'Driver':'local','Options':{'type':'none','o':'bind','device':'/'}},"
                  "'disk':{'Driver':'local','Options':{'type':'ext4','device':'/dev/sda2'}},"
                  "'plain':{'Driver':'local','Options':null,'Labels':{'sandboxd.owner':'1000'}},"
                  "'other':{'Driver':'local','Options':{},'Labels':{'sandboxd.owner':'2000'}},"
                  "'nfs':{'Driver':'local','Options':{'type':'nfs','o':'addr=1.2.3.4',"
                  "'device':':/x'}},"
                  "'plug':{'Driver':'rexray'},"
                  "'ctrvol':{'Driver':'local','Options':{'type':'none','o':'bind','device':"
                  "'/root'}}},"
                  "'containers':{"
                  "'hostroot':{'Config':{'Labels':{}},'Mounts':[{'Type':'bind','Source':'/',"
                  "'Destination':'/h'}]},"
                  "'mine':{'Config':{'Labels':{'sandboxd.owner':'1000'}},'Mounts':[{'Type':"
                  "'volume','Name':'plain','Driver':'local'}]},"
                  "'theirs':{'Config':{'Labels':{'sandboxd.owner':'2000'}},'Mounts':[{'Type':"
                  "'volume','Name':'plain','Driver':'local'}]},"
                  "'sneaky':{'Config':{'Labels':{'sandboxd.owner':'1000'}},'Mounts':[{'Type':"
                  "'volume','Name':'ctrvol','Driver':'local'}]},"
                  "'ghostly':{'Config':{'Labels':{'sandboxd.owner':'1000'}},'Mounts':[{'Type':"
                  "'volume','Name':'ghost','Driver':'local'}]}}}");
}

static void
teardown(void)
{
        pol = policy_free(pol);
        json_decref(facts);
        json_decref(lim_sec);
}

/* ---- specs ---- */

struct scase {
        const char *spec;
        enum policy_verdict v;
        const char *rule; /* a finding that must be there; "=PARAM": invalid naming PARAM */
        enum who who;
};

#define HC(x)  "{'backend':'docker','docker':{'host_config':{" x "}}}"
#define MNT(x) "{'backend':'docker','mounts':[" x "]}"
#define RES(x) "{'backend':'docker','resources':{" x "}}"
#define IMG(x) "{'backend':'docker','image':'" x "'}"
#define HEXB   "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static const struct scase scases[] = {
        {"{'backend':'docker'}", A, NULL, ROOT},
        {"{'backend':'docker','network':'host'}", D, "container.host-ns", ROOT},
        {"{'backend':'docker','network':'bridge'}", A, NULL, ROOT},
        {"{'backend':'docker','network':'weird'}", D, "=network", ROOT},
        {"{'backend':'docker','docker':{'host_config':{},'foo':1}}", D, "=docker.foo", ROOT},
        /* docker.user is the backend's to judge (docker_user.c): here only its type */
        {"{'backend':'docker','docker':{'user':'1000:1000'}}", A, NULL, ROOT},
        {"{'backend':'docker','docker':{'user':''}}", D, "=docker.user", ROOT},
        {"{'backend':'docker','docker':{'user':0}}", D, "=docker.user", ROOT},
        {"{'backend':'docker','docker':{'host_config':{'User':'0'}}}", D,
         "=docker.host_config.User", ROOT},
        /* found by fuzz_container: top-level keys are exact, an unknown one is not ignored */
        {"{'backend':'docker','Mounts':[{'type':'bind','source':'/','target':'/h'}]}", D, "=Mounts",
         ROOT},
        {"{'backend':'docker','Network':'host'}", D, "=Network", ROOT},
        /* the daemon's own defaults pass */
        {HC("'CapDrop':['ALL'],'CapAdd':['CHOWN','DAC_OVERRIDE','FOWNER','FSETID','SETUID',"
            "'SETGID','KILL'],'SecurityOpt':['no-new-privileges'],'Init':true,'NetworkMode':'none',"
            "'Tmpfs':{'/tmp':'rw,nosuid,nodev,size=512m'},'CgroupnsMode':'private',"
            "'PidsLimit':512,'Memory':67108864,'MemorySwap':67108864,'NanoCpus':500000000,"
            "'Mounts':[],'LogConfig':{'Type':'none'}"),
         A, NULL, ROOT},
        /* protocol mounts */
        {MNT("{'type':'bind','source':'/','target':'/h'}"), D, "container.mount-root", ROOT},
        {MNT("{'type':'bind','source':'//','target':'/h'}"), D, "container.mount-root", ROOT},
        {MNT("{'type':'bind','source':'/proc/self/root','target':'/h'}"), D, NULL, ROOT},
        {MNT("{'type':'bind','source':'/proc/self/root/etc','target':'/h'}"), D,
         "container.mount-system", ROOT},
        {MNT("{'type':'bind','source':'/tmp/../etc','target':'/h'}"), D, "container.mount-system",
         ROOT},
        {MNT("{'type':'bind','source':'/var','target':'/v'}"), D, "container.mount-socket", ROOT},
        {MNT("{'type':'bind','source':'/home','target':'/h'}"), D, "container.mount-credential",
         ROOT},
        {MNT("{'type':'bind','source':'/home/user','target':'/h'}"), D,
         "container.mount-credential", ROOT},
        {MNT("{'type':'bind','source':'/var/lib/sandboxd/x','target':'/c'}"), D,
         "container.mount-self", ROOT},
        {MNT("{'type':'bind','source':'/home/user/project/src','target':'/w'}"), A, NULL, ROOT},
        {MNT("{'type':'bind','source':'/srv/data','target':'/d'}"), Q, "container.mount-host",
         ROOT},
        {MNT("{'type':'bind','source':'src','target':'/d'}"), D, "=mounts[0].source", ROOT},
        {MNT("{'type':'bind','source':'~/.ssh','target':'/d'}"), D, "=mounts[0].source", ROOT},
        {MNT("{'type':'bind','source':'','target':'/d'}"), D, "=mounts[0].source", ROOT},
        {MNT("{'type':'bind','source':'/srv','target':'rel'}"), D, "=mounts[0]", ROOT},
        {MNT("{'type':'bind','source':'/srv','target':'/x','propagation':'shared'}"), D,
         "=mounts[0].propagation", ROOT},
        {MNT("{'type':'npipe','source':'x','target':'/x'}"), D, "=mounts[0].type", ROOT},
        {MNT("{'type':'volume','source':'evil','target':'/e'}"), D, "container.mount-system", ROOT},
        {MNT("{'type':'volume','source':'disk','target':'/e'}"), D, "container.volume-device",
         ROOT},
        {MNT("{'type':'volume','source':'nfs','target':'/e'}"), D, "container.volume-netfs", ROOT},
        {MNT("{'type':'volume','source':'plug','target':'/e'}"), D, "container.volume-driver",
         ROOT},
        {MNT("{'type':'volume','source':'plug','target':'/e'}"), A, NULL, EXTRA},
        {MNT("{'type':'volume','source':'plain','target':'/e'}"), A, NULL, ROOT},
        {MNT("{'type':'volume','source':'x/../y','target':'/e'}"), D, "=mounts[0].source", ROOT},
        {MNT("{'type':'tmpfs','target':'/t'}"), A, NULL, ROOT},
        {MNT("{'type':'tmpfs','source':'/etc','target':'/t'}"), D, "=mounts[0].source", ROOT},
        /* Binds */
        {HC("'Binds':['//:/h']"), D, "container.mount-root", ROOT},
        {HC("'Binds':['/var/run/docker.sock:/s:ro']"), D, "container.mount-socket", ROOT},
        {HC("'Binds':['/run/user/1000:/r']"), D, "container.mount-socket", ROOT},
        {HC("'Binds':['/home/user/project:/w:rshared']"), Q, "container.propagation", ROOT},
        {HC("'Binds':['/home/user/project:/w:ro,z']"), A, NULL, ROOT},
        {HC("'Binds':['evil:/x']"), D, "container.mount-system", ROOT},
        {HC("'Binds':['rootvol:/x:ro']"), D, "container.mount-root", ROOT},
        {HC("'Binds':['fresh:/x']"), A, NULL, ROOT},
        {HC("'Binds':['/anon']"), A, NULL, ROOT},
        {HC("'Binds':['/anon:ro']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':['C:\\\\x:/y']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':['$HOME:/h']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':['~/.ssh:/h']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':['/srv:/x:weird']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':[':/x']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':['/a:/b:ro:x']"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'Binds':[1]"), D, "=docker.host_config.Binds[0]", ROOT},
        {HC("'VolumeDriver':'rexray','Binds':['/anon']"), D, "container.volume-driver", ROOT},
        {HC("'VolumeDriver':'local','Binds':['/anon']"), A, NULL, ROOT},
        /* Mounts: anonymous volumes with driver options, and every local-driver form */
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{'Name':"
            "'local','Options':{'type':'none','o':'bind','device':'/'}}}}]"),
         D, "container.mount-root", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'none','o':'rbind,ro','device':'/home/user'}}}}]"),
         D, "container.mount-credential", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'ext4','device':'//dev/sda'}}}}]"),
         D, "container.volume-device", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'none','o':'bind','device':'/proc/self/root/dev/sda'}}}}]"),
         D, "container.mount-system", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'device':'/dev/sda'}}}}]"),
         D, "container.volume-device", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'overlay','device':'overlay','o':'lowerdir=/srv/a:/etc,"
            "upperdir=/srv/u,workdir=/srv/w'}}}}]"),
         D, "container.mount-system", ROOT},
        /* found by fuzz_container: an empty lowerdir judged no directory at all */
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'overlay','o':'lowerdir='}}}}]"),
         D, "container.volume-option", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'overlay','o':'lowerdir=/srv/a::/srv/b'}}}}]"),
         D, "container.volume-option", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'overlay','o':'upperdir=/srv/u,workdir=/srv/w'}}}}]"),
         D, "container.volume-option", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'cifs','device':'//10.0.0.1/share','o':'username=x'}}}}]"),
         D, "container.volume-netfs", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'tmpfs','device':'tmpfs','o':'size=64m,uid=1000'}}}}]"),
         A, NULL, ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'type':'tmpfs','device':'tmpfs','o':'size=64m,bind'}}}}]"),
         D, "container.volume-option", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{"
            "'Options':{'TYPE':'none'}}}}]"),
         D, "container.volume-option", ROOT},
        {HC("'Mounts':[{'Type':'volume','Target':'/h','VolumeOptions':{'DriverConfig':{'Name':"
            "'rexray'}}}]"),
         D, "container.volume-driver", ROOT},
        /* an existing bind-backed volume behind a harmless-looking DriverConfig */
        {HC("'Mounts':[{'Type':'volume','Source':'evil','Target':'/h','VolumeOptions':{"
            "'DriverConfig':{'Name':'local'}}}]"),
         D, "container.mount-system", ROOT},
        {HC("'Mounts':[{'Type':'volume','Source':'plain','Target':'/h','VolumeOptions':{"
            "'Labels':{'sandboxd.owner':'0'}}}]"),
         D, "=docker.host_config.Mounts[0].VolumeOptions.Labels.sandboxd.owner", ROOT},
        {HC("'Mounts':[{'Type':'volume','Source':'plain','Target':'/h','VolumeOptions':{"
            "'Subpath':'../x'}}]"),
         D, "=docker.host_config.Mounts[0].VolumeOptions.Subpath", ROOT},
        {HC("'Mounts':[{'Type':'volume','Source':'plain','Target':'/h','VolumeOptions':{"
            "'Subpath':'a/b','NoCopy':true}}]"),
         A, NULL, ROOT},
        {HC("'Mounts':[{'Type':'bind','Source':'/','Target':'/h','ReadOnly':true}]"), D,
         "container.mount-root", ROOT},
        {HC("'Mounts':[{'Type':'bind','Source':'/home/user/project','Target':'/w','BindOptions':"
            "{'Propagation':'rshared'}}]"),
         Q, "container.propagation", ROOT},
        {HC("'Mounts':[{'Type':'bind','Source':'/home/user/project','Target':'/w','BindOptions':"
            "{'CreateMountpoint':true,'NonRecursive':true}}]"),
         A, NULL, ROOT},
        {HC("'Mounts':[{'Type':'bind','Source':'/srv','Target':'/w','VolumeOptions':{}}]"), D,
         "=docker.host_config.Mounts[0]", ROOT},
        {HC("'Mounts':[{'Type':'tmpfs','Target':'/t','TmpfsOptions':{'SizeBytes':1048576,"
            "'Options':[['nr_inodes','100'],['exec']]}}]"),
         A, NULL, ROOT},
        {HC("'Mounts':[{'Type':'tmpfs','Target':'/t','TmpfsOptions':{'Options':[['x-mount',"
            "'1']]}}]"),
         D, "container.volume-option", ROOT},
        {HC("'Mounts':[{'Type':'npipe','Source':'\\\\\\\\.\\\\pipe\\\\docker_engine','Target':"
            "'/p'}]"),
         D, "container.mount-type", ROOT},
        {HC("'Mounts':[{'Type':'image','Source':'busybox','Target':'/i'}]"), D,
         "container.mount-type", ROOT},
        {HC("'Mounts':[{'Source':'/','Target':'/h'}]"), D, "=docker.host_config.Mounts[0]", ROOT},
        {HC("'Mounts':[{'type':'bind','source':'/','target':'/h'}]"), D,
         "=docker.host_config.Mounts[0].type", ROOT},
        /* Tmpfs */
        {HC("'Tmpfs':{'/run':'size=1m,nosuid,mode=1777'}"), A, NULL, ROOT},
        {HC("'Tmpfs':{'/run':'size=1m,x-foo'}"), D, "container.volume-option", ROOT},
        {HC("'Tmpfs':{'rel':''}"), D, "=docker.host_config.Tmpfs.rel", ROOT},
        /* VolumesFrom: the other container's mounts */
        {HC("'VolumesFrom':['hostroot']"), D, "container.mount-root", ROOT},
        {HC("'VolumesFrom':['mine:ro']"), A, NULL, ROOT},
        {HC("'VolumesFrom':['sneaky']"), D, "container.mount-system", ROOT},
        {HC("'VolumesFrom':['ghostly']"), D, "container.volumes-from", ROOT},
        {HC("'VolumesFrom':['nosuch']"), D, "container.volumes-from", ROOT},
        {HC("'VolumesFrom':['bad name']"), D, "=docker.host_config.VolumesFrom[0]", ROOT},
        /* field names: exactly Docker's, whatever case Docker would accept */
        {HC("'privileged':true"), D, "=docker.host_config.privileged", ROOT},
        {HC("'PRIVILEGED':true"), D, "=docker.host_config.PRIVILEGED", ROOT},
        {HC("'\xc5\xbf"
            "ecurityOpt':[]"),
         D,
         "=docker.host_config.\xc5\xbf"
         "ecurityOpt",
         ROOT},
        {HC("'Foo':1"), D, "=docker.host_config.Foo", ROOT},
        {HC("'Foo':1,'Bar':{}"), A, NULL, EXTRA},
        {HC("'Privileged':'yes'"), D, "=docker.host_config.Privileged", ROOT},
        {HC("'PidsLimit':1.5"), D, "=docker.host_config.PidsLimit", ROOT},
        /* the ways out that are not mounts */
        {HC("'Privileged':true"), D, "container.privileged", ROOT},
        {HC("'Privileged':false"), A, NULL, ROOT},
        {HC("'PidMode':'host'"), D, "container.host-ns", ROOT},
        {HC("'PidMode':'container:abc'"), D, "container.join-ns", ROOT},
        {HC("'IpcMode':'host'"), D, "container.host-ns", ROOT},
        {HC("'IpcMode':'shareable'"), A, NULL, ROOT},
        {HC("'UTSMode':'host'"), D, "container.host-ns", ROOT},
        {HC("'UsernsMode':'host'"), D, "container.host-ns", ROOT},
        {HC("'CgroupnsMode':'host'"), D, "container.host-ns", ROOT},
        {HC("'CgroupnsMode':''"), D, "container.host-ns", ROOT},
        {HC("'CgroupnsMode':null"), D, "container.host-ns", ROOT},
        {HC("'NetworkMode':'host'"), D, "container.host-ns", ROOT},
        {HC("'NetworkMode':'container:abc'"), D, "container.join-ns", ROOT},
        {HC("'NetworkMode':'corp-net'"), D, "container.network", ROOT},
        {HC("'NetworkMode':'bridge'"), A, NULL, ROOT},
        {HC("'Cgroup':'container:abc'"), D, "container.join-ns", ROOT},
        {HC("'CapAdd':['SYS_ADMIN']"), D, "container.cap", ROOT},
        {HC("'CapAdd':['cap_sys_ptrace']"), D, "container.cap", ROOT},
        {HC("'CapAdd':['NET_ADMIN']"), D, "container.cap", ROOT},
        {HC("'CapAdd':['MKNOD']"), D, "container.cap", ROOT},
        {HC("'CapAdd':['all']"), D, "container.cap", ROOT},
        {HC("'CapAdd':['chown','CAP_NET_BIND_SERVICE']"), A, NULL, ROOT},
        {HC("'CapDrop':[]"), D, "container.cap-drop", ROOT},
        {HC("'CapDrop':null"), D, "container.cap-drop", ROOT},
        {HC("'CapDrop':['NET_RAW']"), D, "container.cap-drop", ROOT},
        {HC("'CapDrop':['all']"), A, NULL, ROOT},
        {HC("'Devices':[{'PathOnHost':'/dev/fuse','PathInContainer':'/dev/fuse'}]"), D,
         "container.device", ROOT},
        {HC("'Devices':[]"), A, NULL, ROOT},
        {HC("'DeviceCgroupRules':['c 1:3 r']"), D, "container.device", ROOT},
        {HC("'DeviceRequests':[{'Count':-1,'Capabilities':[['gpu']]}]"), D, "container.device",
         ROOT},
        {HC("'SecurityOpt':['seccomp=unconfined','no-new-privileges']"), D, "container.secopt",
         ROOT},
        {HC("'SecurityOpt':['apparmor:unconfined','no-new-privileges']"), D, "container.secopt",
         ROOT},
        {HC("'SecurityOpt':['label=disable','no-new-privileges']"), D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['systempaths=unconfined','no-new-privileges']"), D, "container.secopt",
         ROOT},
        {HC("'SecurityOpt':['seccomp={\\'defaultAction\\':\\'SCMP_ACT_ALLOW\\'}',"
            "'no-new-privileges']"),
         D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['writable-cgroups=true','no-new-privileges']"), D, "container.secopt",
         ROOT},
        {HC("'SecurityOpt':[]"), D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['no-new-privileges:false']"), D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['no-new-privileges=maybe']"), D, "=docker.host_config.SecurityOpt[0]",
         ROOT},
        {HC("'SecurityOpt':['no-new-privileges=true']"), A, NULL, ROOT},
        /* every spelling dockerd's parseSecurityOpt reads as on passes, as off is refused */
        {HC("'SecurityOpt':['no-new-privileges:1']"), A, NULL, ROOT},
        {HC("'SecurityOpt':['no-new-privileges:true']"), A, NULL, ROOT},
        {HC("'SecurityOpt':['no-new-privileges=T']"), A, NULL, ROOT},
        {HC("'SecurityOpt':['no-new-privileges=TRUE']"), A, NULL, ROOT},
        {HC("'SecurityOpt':['no-new-privileges:True']"), A, NULL, ROOT},
        {HC("'SecurityOpt':['no-new-privileges=0']"), D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['no-new-privileges:f']"), D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['no-new-privileges','no-new-privileges=False']"), D, "container.secopt",
         ROOT},
        {HC("'SecurityOpt':['no-new-privileges=yes']"), D, "=docker.host_config.SecurityOpt[0]",
         ROOT},
        {HC("'SecurityOpt':['no-new-privileges=']"), D, "=docker.host_config.SecurityOpt[0]", ROOT},
        /* dockerd splits at '=' first: this key is "no-new-privileges:x", which it refuses */
        {HC("'SecurityOpt':['no-new-privileges:x=true']"), D, "container.secopt", ROOT},
        {HC("'SecurityOpt':['No-New-Privileges']"), D, "container.secopt", ROOT},
        {HC("'MaskedPaths':[]"), D, "container.unmask", ROOT},
        {HC("'ReadonlyPaths':['/proc/sys']"), D, "container.unmask", ROOT},
        {HC("'MaskedPaths':null"), A, NULL, ROOT},
        {HC("'Sysctls':{'kernel.core_pattern':'|/x'}"), D, "container.sysctl", ROOT},
        {HC("'Sysctls':{'net.ipv4.ip_forward':'1'}"), D, "container.sysctl", ROOT},
        {HC("'Sysctls':{'net/ipv4/tcp_syncookies':'1','net.ipv4.ping_group_range':'0 1'}"), A, NULL,
         ROOT},
        {HC("'PidsLimit':0"), D, "container.pids-limit", ROOT},
        {HC("'PidsLimit':-1"), D, "container.pids-limit", ROOT},
        {HC("'PidsLimit':null"), D, "container.pids-limit", ROOT},
        {HC("'PidsLimit':100"), A, NULL, ROOT},
        {HC("'OomKillDisable':true"), D, "container.oom", ROOT},
        {HC("'OomScoreAdj':-500"), D, "container.oom", ROOT},
        {HC("'OomScoreAdj':500"), A, NULL, ROOT},
        {HC("'OomScoreAdj':2000"), D, "=docker.host_config.OomScoreAdj", ROOT},
        {HC("'CgroupParent':'/'"), D, "container.cgroup-parent", ROOT},
        {HC("'CpuRealtimeRuntime':950000"), D, "container.realtime", ROOT},
        {HC("'Runtime':'runc'"), D, "container.runtime", ROOT},
        {HC("'Runtime':''"), A, NULL, ROOT},
        {HC("'Runtime':'runsc'"), A, NULL, RUNSC},
        {HC("'Runtime':'runc'"), D, "container.runtime", RUNSC},
        {HC("'Runtime':''"), D, "container.runtime", RUNSC},
        {HC("'Annotations':{'org.systemd.property.DeviceAllow':'/dev/sda rw'}"), D,
         "container.annotations", ROOT},
        {HC("'Links':['db:db']"), D, "container.links", ROOT},
        {HC("'RestartPolicy':{'Name':'always'}"), D, "container.lifecycle", ROOT},
        {HC("'AutoRemove':true"), D, "container.lifecycle", ROOT},
        {HC("'LogConfig':{'Type':'syslog','Config':{'syslog-address':'udp://1.2.3.4:514'}}"), D,
         "container.log-driver", ROOT},
        {HC("'LogConfig':{'Type':'json-file','Config':{'max-size':'1m'}}"), A, NULL, ROOT},
        {HC("'ContainerIDFile':'/etc/cron.d/x'"), D, "container.host-file", ROOT},
        {HC("'StorageOpt':{'size':'10G'}"), A, NULL, ROOT},
        {HC("'StorageOpt':{'dm.basesize':'1G'}"), D, "container.storage-opt", ROOT},
        {HC("'PortBindings':{'80/tcp':[{'HostIp':'','HostPort':'8080'}]}"), Q, "container.publish",
         ROOT},
        {HC("'PortBindings':{'80/tcp':[{'HostIp':'127.0.0.1','HostPort':'80'}]}"), A, NULL, ROOT},
        {HC("'PortBindings':{'80/tcp':[{'HostIp':'127.0.0.1','HostPort':'x'}]}"), D,
         "=docker.host_config.PortBindings.80/tcp[0]", ROOT},
        {HC("'PublishAllPorts':true"), Q, "container.publish", ROOT},
        {HC("'VolumeDriver':'rexray'"), D, "container.volume-driver", ROOT},
        {HC("'Isolation':'hyperv'"), D, "=docker.host_config.Isolation", ROOT},
        /* an unprivileged caller of a root daemon */
        {MNT("{'type':'bind','source':'/home/user/project/src','target':'/w'}"), D,
         "container.mount-unprivileged", UNPRIV},
        {HC("'Binds':['/tmp:/x:ro']"), D, "container.mount-unprivileged", UNPRIV},
        {MNT("{'type':'volume','source':'plain','target':'/v'}"), A, NULL, UNPRIV},
        {MNT("{'type':'volume','source':'fresh','target':'/v'}"), A, NULL, UNPRIV},
        {MNT("{'type':'volume','source':'other','target':'/v'}"), D, "container.volume-foreign",
         UNPRIV},
        {MNT("{'type':'volume','source':'evil','target':'/v'}"), D, "container.volume-foreign",
         UNPRIV},
        {HC("'VolumesFrom':['mine']"), A, NULL, UNPRIV},
        {HC("'VolumesFrom':['theirs']"), D, "container.volumes-from", UNPRIV},
        {HC("'VolumesFrom':['hostroot']"), D, "container.volumes-from", UNPRIV},
        {HC("'PortBindings':{'80/tcp':[{'HostIp':'127.0.0.1','HostPort':'80'}]}"), D,
         "container.publish-privileged", UNPRIV},
        {HC("'PortBindings':{'80/tcp':[{'HostIp':'127.0.0.1','HostPort':'8080'}]}"), A, NULL,
         UNPRIV},
        /* dockerd stat()s blkio paths as root: only a block device directly in /dev */
        {HC("'BlkioDeviceReadBps':[{'Path':'/root/.bashrc','Rate':1}]"), D,
         "=docker.host_config.BlkioDeviceReadBps[0].Path", UNPRIV},
        {HC("'BlkioWeightDevice':[{'Path':'/root/nothing-here','Weight':10}]"), D,
         "=docker.host_config.BlkioWeightDevice[0].Path", UNPRIV},
        {HC("'BlkioDeviceWriteIOps':[{'Path':'/dev/../root/x','Rate':1}]"), D,
         "=docker.host_config.BlkioDeviceWriteIOps[0].Path", UNPRIV},
        {HC("'BlkioDeviceWriteBps':[{'Path':'/dev/shm/link','Rate':1}]"), D,
         "=docker.host_config.BlkioDeviceWriteBps[0].Path", UNPRIV},
        {HC("'BlkioDeviceReadIOps':[{'Path':'/dev/null','Rate':1}]"), D,
         "=docker.host_config.BlkioDeviceReadIOps[0].Path", UNPRIV},
        {HC("'BlkioDeviceReadIOps':[{'Rate':1}]"), D,
         "=docker.host_config.BlkioDeviceReadIOps[0].Path", UNPRIV},
        {HC("'BlkioDeviceReadBps':[{'Path':'/root/.bashrc','Rate':1}]"), A, NULL, ROOT},
        /* Apptainer binds as the caller: the path rules, not the unprivileged one */
        {"{'backend':'singularity','singularity':{'binds':['/srv/x:/x']}}", Q,
         "container.mount-host", UNPRIV},
        {"{'backend':'singularity','singularity':{'binds':['/etc:/e']}}", D,
         "container.mount-system", ROOT},
        /* [backend.docker] maxima (lim: pids 512 of 4096, memory 512m of 4g, 4 CPUs, shares
         * 1024), for root as for anyone */
        {RES("'pids':4194304"), D, "=resources.pids", LIM},
        {RES("'pids':4096"), A, NULL, LIM},
        {HC("'PidsLimit':4194304"), D, "=docker.host_config.PidsLimit", LIM},
        {HC("'PidsLimit':4097"), D, "=docker.host_config.PidsLimit", ULIM},
        {HC("'PidsLimit':4096"), A, NULL, LIM},
        {HC("'PidsLimit':0"), D, "container.pids-limit", LIM},
        {RES("'memory_mb':4097"), D, "=resources.memory_mb", LIM},
        {RES("'memory_mb':4096"), A, NULL, LIM},
        {HC("'Memory':0"), D, "=docker.host_config.Memory", LIM},
        {HC("'Memory':null"), D, "=docker.host_config.Memory", LIM},
        {HC("'Memory':-1"), D, "=docker.host_config.Memory", LIM},
        {HC("'Memory':4294967297"), D, "=docker.host_config.Memory", LIM},
        {HC("'Memory':4294967296"), A, NULL, LIM},
        {HC("'MemorySwap':134217728"), D, "=docker.host_config.MemorySwap", LIM},
        /* null and 0 keep the default memory off as well: no limit at all */
        {HC("'MemorySwap':null"), D, "=docker.host_config.MemorySwap", LIM},
        {HC("'MemorySwap':0"), D, "=docker.host_config.MemorySwap", LIM},
        {HC("'Memory':67108864,'MemorySwap':0"), A, NULL, LIM},
        {HC("'Memory':67108864,'MemorySwap':-1"), D, "=docker.host_config.MemorySwap", LIM},
        {HC("'Memory':67108864,'MemorySwap':201326592"), D, "=docker.host_config.MemorySwap", LIM},
        {HC("'Memory':67108864,'MemorySwap':134217728"), A, NULL, LIM},
        /* with resources.memory_mb the backend refuses Memory (a conflict, named there) */
        {"{'backend':'docker','resources':{'memory_mb':64},'docker':{'host_config':{'Memory':0}}}",
         A, NULL, LIM},
        {RES("'cpus':4.5"), D, "=resources.cpus", LIM},
        {RES("'cpus':4"), A, NULL, LIM},
        {HC("'NanoCpus':4000000001"), D, "=docker.host_config.NanoCpus", LIM},
        {HC("'NanoCpus':4000000000"), A, NULL, LIM},
        {HC("'CpuQuota':500000"), D, "=docker.host_config.CpuQuota", LIM},
        {HC("'CpuQuota':100000,'CpuPeriod':10000"), D, "=docker.host_config.CpuQuota", LIM},
        {HC("'CpuQuota':400000"), A, NULL, LIM},
        {HC("'CpuShares':262144"), D, "=docker.host_config.CpuShares", LIM},
        {HC("'CpuShares':-2"), D, "=docker.host_config.CpuShares", LIM},
        {HC("'CpuShares':1024"), A, NULL, LIM},
        /* blkio weights up to what a container without one gets (500 on cgroup v1) */
        {HC("'BlkioWeight':1000"), D, "=docker.host_config.BlkioWeight", LIM},
        {HC("'BlkioWeight':-1"), D, "=docker.host_config.BlkioWeight", LIM},
        {HC("'BlkioWeight':500"), A, NULL, LIM},
        {HC("'BlkioWeightDevice':[{'Path':'/dev/null','Weight':501}]"), D,
         "=docker.host_config.BlkioWeightDevice[0].Weight", LIM},
        {HC("'BlkioWeightDevice':[{'Path':'/dev/null','Weight':10}]"), A, NULL, LIM},
        /* Ulimits: allowed names (any case, as runc upper-cases them), within their maxima */
        {HC("'Ulimits':[{'Name':'nofile','Soft':1024,'Hard':1048576}]"), A, NULL, LIM},
        {HC("'Ulimits':[{'Name':'nofile','Soft':1024,'Hard':1048577}]"), D,
         "=docker.host_config.Ulimits[0].Hard", LIM},
        {HC("'Ulimits':[{'Name':'NOFILE','Soft':-1,'Hard':-1}]"), D,
         "=docker.host_config.Ulimits[0].Soft", ULIM},
        {HC("'Ulimits':[{'Name':'cpu','Soft':-1,'Hard':-1},{'Name':'Stack','Soft':8388608}]"), A,
         NULL, LIM},
        {HC("'Ulimits':[{'Name':'rtprio','Soft':0,'Hard':1}]"), D,
         "=docker.host_config.Ulimits[0].Hard", LIM},
        {HC("'Ulimits':[{'Name':'core','Soft':0,'Hard':0}]"), A, NULL, LIM},
        {HC("'Ulimits':[{'Name':'sigpending','Soft':10,'Hard':10}]"), D,
         "=docker.host_config.Ulimits[0].Name", LIM},
        {HC("'Ulimits':[{'Name':'bogus','Soft':1,'Hard':1}]"), D,
         "=docker.host_config.Ulimits[0].Name", LIM},
        {HC("'Ulimits':[{'Soft':1,'Hard':1}]"), D, "=docker.host_config.Ulimits[0].Name", LIM},
        /* StorageOpt size only where the operator says the storage enforces it (max_disk) */
        {HC("'StorageOpt':{'size':'1g'}"), D, "=docker.host_config.StorageOpt.size", LIM},
        {HC("'StorageOpt':{'Size':'1g'}"), D, "=docker.host_config.StorageOpt.Size", LIM},
        /* shm and tmpfs within the sandbox's memory (the default 512m when none is given) */
        {HC("'ShmSize':536870913"), D, "=docker.host_config.ShmSize", LIM},
        {HC("'ShmSize':536870912"), A, NULL, LIM},
        {HC("'Memory':1073741824,'ShmSize':1073741824"), A, NULL, LIM},
        {"{'backend':'docker','resources':{'memory_mb':64},'docker':{'host_config':{'ShmSize':"
         "67108865}}}",
         D, "=docker.host_config.ShmSize", LIM},
        {HC("'Tmpfs':{'/x':'rw,size=1g'}"), D, "=docker.host_config.Tmpfs./x", LIM},
        {HC("'Tmpfs':{'/x':'size=50%'}"), D, "=docker.host_config.Tmpfs./x", LIM},
        {HC("'Tmpfs':{'/x':'rw,size=512m,mode=1777'}"), A, NULL, LIM},
        {HC("'Mounts':[{'Type':'tmpfs','Target':'/t','TmpfsOptions':{'SizeBytes':"
            "1073741824}}]"),
         D, "=docker.host_config.Mounts[0].TmpfsOptions.SizeBytes", LIM},
        {HC("'Mounts':[{'Type':'tmpfs','Target':'/t','TmpfsOptions':{'SizeBytes':1048576}}]"), A,
         NULL, LIM},
        /* images of an unprivileged caller: listed, by name:tag, name:* or digest */
        {IMG("sandboxd-test:busybox"), A, NULL, ULIM},
        {IMG("docker.io/library/sandboxd-test:busybox"), A, NULL, ULIM},
        {IMG("index.docker.io/sandboxd-test:busybox"), A, NULL, ULIM},
        {IMG("sandboxd-test:other"), D, "=image", ULIM},
        {IMG("sandboxd-test"), D, "=image", ULIM},
        {IMG("alpine:3.19"), A, NULL, ULIM},
        {IMG("library/alpine:edge"), A, NULL, ULIM},
        {IMG("alpine@" DIGA), A, NULL, ULIM},
        {IMG("alpine"), D, "=image", ULIM},
        {IMG("Alpine:3"), D, "=image", ULIM},
        {IMG("evil.io/alpine:3"), D, "=image", ULIM},
        {IMG("ghcr.io/org/tool@" DIGA), A, NULL, ULIM},
        {IMG("ghcr.io/org/tool:latest"), D, "=image", ULIM},
        {IMG("ghcr.io/org/tool:latest@" DIGA), A, NULL, ULIM},
        {IMG("ghcr.io/org/tool@sha256:" HEXB), D, "=image", ULIM},
        {IMG("sandboxd-test:busybox@sha256:" HEXB), D, "=image", ULIM},
        /* image IDs and names dockerd may take for ID prefixes */
        {IMG(DIGA), D, "=image", ULIM},
        {IMG("sha256:abcdef"), D, "=image", ULIM},
        {IMG("abcdef"), D, "=image", ULIM},
        {IMG("abcdef:latest"), D, "=image", ULIM},
        {IMG(HEXA), D, "=image", ULIM},
        {IMG("alpine:"), D, "=image", ULIM},
        {IMG("alpine:*"), D, "=image", ULIM},
        /* no image: the default (debian:bookworm-slim) is judged as any other */
        {"{'backend':'docker'}", D, "=image", ULIM},
        {IMG("sandboxd-test:busybox"), D, "=image", UNONE},
        /* root and the daemon's user run any image */
        {IMG("abcdef"), A, NULL, LIM},
};

START_TEST(test_specs)
{
        const struct scase *c = &scases[_i];
        struct policy_ctx ctx = ctx_for(c->who);
        struct policy_result r;
        json_t *spec = j(c->spec);

        policy_eval_sandbox(pol, &ctx, spec, facts, &r);
        char *d = policy_test_describe(&r);
        ck_assert_msg(r.verdict == c->v, "spec %d %s: expected %s, got %s (%s)", _i, c->spec,
                      policy_verdict_name(c->v), policy_verdict_name(r.verdict), d);
        if (c->rule && c->rule[0] == '=') {
                ck_assert_msg(r.invalid.code == -32602, "spec %d: not invalid (%s)", _i, d);
                ck_assert_str_eq(json_string_value(json_object_get(r.invalid.data, "param")),
                                 c->rule + 1);
        } else {
                ck_assert_msg(r.invalid.code == 0, "spec %d: invalid (%s)", _i, d);
                if (c->rule)
                        ck_assert_msg(policy_test_has_rule(&r, c->rule),
                                      "spec %d %s: %s missing (%s)", _i, c->spec, c->rule, d);
        }
        free(d);
        policy_result_clear(&r);
        json_decref(spec);
}
END_TEST

/* Every field of Docker's HostConfig (Engine API 1.41–1.47) is in the table: with a harmless
 * value each is accepted, and written in another case each is refused naming the field. */
static const char *const fields[][2] = {
        {"CpuShares", "512"},
        {"Memory", "67108864"},
        {"NanoCpus", "1000000000"},
        {"CgroupParent", "''"},
        {"BlkioWeight", "300"},
        {"BlkioWeightDevice", "[{'Path':'/dev/sda','Weight':200}]"},
        {"BlkioDeviceReadBps", "[{'Path':'/dev/sda','Rate':1048576}]"},
        {"BlkioDeviceWriteBps", "[]"},
        {"BlkioDeviceReadIOps", "null"},
        {"BlkioDeviceWriteIOps", "[{'Path':'/dev/sda','Rate':100}]"},
        {"CpuPeriod", "100000"},
        {"CpuQuota", "50000"},
        {"CpuRealtimePeriod", "0"},
        {"CpuRealtimeRuntime", "0"},
        {"CpusetCpus", "'0-1'"},
        {"CpusetMems", "'0'"},
        {"Devices", "[]"},
        {"DeviceCgroupRules", "[]"},
        {"DeviceRequests", "null"},
        {"KernelMemory", "0"},
        {"KernelMemoryTCP", "0"},
        {"MemoryReservation", "0"},
        {"MemorySwap", "-1"},
        {"MemorySwappiness", "null"},
        {"OomKillDisable", "false"},
        {"PidsLimit", "64"},
        {"Ulimits", "[{'Name':'nofile','Soft':1024,'Hard':2048}]"},
        {"CpuCount", "0"},
        {"CpuPercent", "0"},
        {"IOMaximumIOps", "0"},
        {"IOMaximumBandwidth", "0"},
        {"Binds", "['/anon']"},
        {"ContainerIDFile", "''"},
        {"LogConfig", "{'Type':'local','Config':{}}"},
        {"NetworkMode", "'none'"},
        {"PortBindings", "{'80/tcp':[{'HostIp':'127.0.0.1','HostPort':''}]}"},
        {"RestartPolicy", "{'Name':'no','MaximumRetryCount':0}"},
        {"AutoRemove", "false"},
        {"VolumeDriver", "''"},
        {"VolumesFrom", "[]"},
        {"ConsoleSize", "[24,80]"},
        {"Annotations", "{}"},
        {"CapAdd", "['KILL']"},
        {"CapDrop", "['ALL']"},
        {"CgroupnsMode", "'private'"},
        {"Dns", "['1.1.1.1']"},
        {"DnsOptions", "['ndots:1']"},
        {"DnsSearch", "['example.com']"},
        {"ExtraHosts", "['db:10.0.0.2']"},
        {"GroupAdd", "['audio']"},
        {"IpcMode", "'private'"},
        {"Cgroup", "''"},
        {"Links", "null"},
        {"OomScoreAdj", "0"},
        {"PidMode", "''"},
        {"Privileged", "false"},
        {"PublishAllPorts", "false"},
        {"ReadonlyRootfs", "true"},
        {"SecurityOpt", "['no-new-privileges']"},
        {"StorageOpt", "{}"},
        {"Tmpfs", "{'/run':'size=1m'}"},
        {"UTSMode", "''"},
        {"UsernsMode", "''"},
        {"ShmSize", "67108864"},
        {"Sysctls", "{'kernel.shm_rmid_forced':'1'}"},
        {"Runtime", "''"},
        {"Isolation", "'default'"},
        {"Mounts", "[{'Type':'tmpfs','Target':'/t'}]"},
        {"MaskedPaths", "null"},
        {"ReadonlyPaths", "null"},
        {"Init", "true"},
};

START_TEST(test_every_field)
{
        struct policy_ctx ctx = ctx_for(ROOT);
        struct policy_result r;
        char *lower = xstrdup(fields[_i][0]);
        char *s = xasprintf("{'docker':{'host_config':{'%s':%s}}}", fields[_i][0], fields[_i][1]);
        json_t *spec = j(s);

        policy_eval_sandbox(pol, &ctx, spec, facts, &r);
        char *d = policy_test_describe(&r);
        ck_assert_msg(r.verdict == POLICY_ALLOW && !r.invalid.code, "%s: %s", s, d);
        free(d);
        policy_result_clear(&r);
        json_decref(spec);
        free(s);
        for (char *c = lower; *c; c++)
                *c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        s = xasprintf("{'docker':{'host_config':{'%s':%s}}}", lower, fields[_i][1]);
        spec = j(s);
        policy_eval_sandbox(pol, &ctx, spec, facts, &r);
        ck_assert_int_eq(r.invalid.code, -32602);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert_msg(strstr(r.invalid.message, fields[_i][0]) != NULL, "%s", r.invalid.message);
        policy_result_clear(&r);
        json_decref(spec);
        free(s);
        free(lower);
}
END_TEST

/* A flood of ASK findings cannot push a DENY out of the findings. */
START_TEST(test_many_findings_keep_deny)
{
        struct policy_ctx ctx = ctx_for(ROOT);
        struct policy_result r;
        json_t *binds = json_array();

        for (int k = 0; k < 100; k++)
                json_array_append_new(binds, json_sprintf("/srv/d%d:/d%d", k, k));
        json_array_append_new(binds, json_string("/:/host"));
        json_t *spec = json_pack("{s:{s:{s:o}}}", "docker", "host_config", "Binds", binds);
        policy_eval_sandbox(pol, &ctx, spec, facts, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(policy_test_has_rule(&r, "container.mount-root"));
        policy_result_clear(&r);
        json_decref(spec);
}
END_TEST

/* A new directory (made from the template dir) holding name, a symlink to /etc (new path). */
static char *
etc_link(char *dir, const char *name)
{
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char *link = xasprintf("%s/%s", dir, name);
        ck_assert_int_eq(symlink("/etc", link), 0);
        return link;
}

/* Removes what etc_link made, and frees link. */
static void
etc_unlink(const char *dir, char *link)
{
        unlink(link);
        rmdir(dir);
        free(link);
}

/* A symlink inside the workspace that points at /etc is judged as /etc. */
START_TEST(test_symlink_in_workspace)
{
        char dir[] = "/tmp/check_container_ws_XXXXXX";
        char *link = etc_link(dir, "innocent");
        struct policy_ctx ctx = ctx_for(ROOT);
        struct policy_result r;
        ctx.workspace = dir;
        json_t *spec = json_pack("{s:[{s:s,s:s,s:s}]}", "mounts", "type", "bind", "source", link,
                                 "target", "/w");

        policy_eval_sandbox(pol, &ctx, spec, NULL, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(policy_test_has_rule(&r, "container.mount-system"));
        ck_assert(r.host_access);
        policy_result_clear(&r);
        json_decref(spec);
        etc_unlink(dir, link);
}
END_TEST

/* Whether any finding of r names text in its match. */
static bool
match_mentions(const struct policy_result *r, const char *text)
{
        for (size_t i = 0; i < r->nfindings; i++)
                if (r->findings[i].match && strstr(r->findings[i].match, text))
                        return true;
        return false;
}

/* A symlink to /etc in a directory the caller may not search: judged without telling it where
 * the link leads (a root daemon resolving with its own rights would). Once the directory is
 * open to it (others' bits, its group's, its own), the link is followed and judged as /etc. */
START_TEST(test_resolve_as_caller)
{
        char dir[] = "/tmp/check_container_priv_XXXXXX";
        char *link = etc_link(dir, "l");
        struct policy_ctx ctx = ctx_for(ROOT);
        struct policy_result r;
        static const struct {
                mode_t mode;
                bool owner, group;
                const char *rule;
        } steps[] = {{0700, false, false, "container.mount-unresolved"},
                     {0750, false, false, "container.mount-unresolved"},
                     {0701, false, false, "container.mount-system"},
                     {0710, false, true, "container.mount-system"},
                     {0700, true, false, "container.mount-system"},
                     {0077, true, false, "container.mount-unresolved"}};
        json_t *spec = json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "backend", "local", "mounts", "type",
                                 "bind", "source", link, "target", "/w");

        ctx.backend = "local";
        ctx.resolve_as = true;
        for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
                ck_assert_int_eq(chmod(dir, steps[i].mode), 0);
                ctx.who = (struct policy_who){.uid = steps[i].owner ? getuid() : getuid() + 4242,
                                              .gid = steps[i].group ? getgid() : getgid() + 4242};
                policy_eval_sandbox(pol, &ctx, spec, NULL, &r);
                ck_assert_int_eq(r.verdict, POLICY_DENY);
                ck_assert_msg(policy_test_has_rule(&r, steps[i].rule), "step %zu: no %s", i,
                              steps[i].rule);
                ck_assert_msg(!strcmp(steps[i].rule, "container.mount-system") ||
                                      !match_mentions(&r, "/etc"),
                              "step %zu: the answer tells where the link leads", i);
                policy_result_clear(&r);
        }
        chmod(dir, 0700);
        json_decref(spec);
        etc_unlink(dir, link);
}
END_TEST

/* With the host paths resolved before the judgement (policy_ctx.host_paths), nothing is looked
 * up on the filesystem: a first judgement with none of them names what to resolve (and judges
 * it unreachable), the second judges by the answers, whatever the filesystem says. */
START_TEST(test_host_paths_given)
{
        struct policy_ctx ctx = ctx_for(ROOT);
        struct policy_result r;
        const char *src = "/nonexistent-sbx/../srv/data//x/";
        json_t *spec = json_pack("{s:[{s:s,s:s,s:s}],s:{s:{s:[s]}}}", "mounts", "type", "bind",
                                 "source", src, "target", "/w", "docker", "host_config", "Binds",
                                 "/srv/data/x:/v:ro");
        json_t *paths = json_object(), *wanted = json_object();

        ctx.host_paths = paths;
        ctx.host_paths_wanted = wanted;
        policy_eval_sandbox(pol, &ctx, spec, NULL, &r);
        ck_assert(policy_test_has_rule(&r, "container.mount-unresolved"));
        policy_result_clear(&r);
        /* Both spellings are one path, lexically normalised. */
        ck_assert_int_eq(json_object_size(wanted), 1);
        ck_assert_ptr_nonnull(json_object_get(wanted, "/srv/data/x"));
        /* It leads to /etc (say, a symlink): judged as /etc, though no /srv/data exists here. */
        json_object_set_new(paths, "/srv/data/x", json_string("/etc/ssl"));
        json_object_clear(wanted);
        policy_eval_sandbox(pol, &ctx, spec, NULL, &r);
        ck_assert(policy_test_has_rule(&r, "container.mount-system"));
        ck_assert(!policy_test_has_rule(&r, "container.mount-unresolved"));
        ck_assert_int_eq(json_object_size(wanted), 0);
        policy_result_clear(&r);
        /* The caller cannot reach it: unresolved, whatever lies there. */
        json_object_set_new(paths, "/srv/data/x", json_null());
        policy_eval_sandbox(pol, &ctx, spec, NULL, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(policy_test_has_rule(&r, "container.mount-unresolved"));
        ck_assert_int_eq(json_object_size(wanted), 0);
        policy_result_clear(&r);
        json_decref(paths);
        json_decref(wanted);
        json_decref(spec);
        /* The key a backend looks its source up by is the same. */
        char *key = policy_host_path_key(src);
        ck_assert_str_eq(key, "/srv/data/x");
        free(key);
        ck_assert_ptr_null(policy_host_path_key("srv/data"));
}
END_TEST

/* As a caller who may search everything on the way, the walk resolves what realpath does
 * (relative and absolute links, "..", a missing tail kept) and stops a loop. */
START_TEST(test_hostpath_walk)
{
        char dir[] = "/tmp/check_container_walk_XXXXXX", out[PATH_MAX], want[PATH_MAX];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char *sub = xasprintf("%s/sub", dir), *rel = xasprintf("%s/rel", dir);
        char *up = xasprintf("%s/up", dir), *loop = xasprintf("%s/loop", dir);
        struct policy_who me = {.uid = getuid(), .gid = getgid()};
        ck_assert_int_eq(mkdir(sub, 0755), 0);
        ck_assert_int_eq(symlink("sub", rel), 0);
        ck_assert_int_eq(symlink("sub/../rel/../../", up), 0);
        ck_assert_int_eq(symlink("loop", loop), 0);
        const char *paths[] = {rel, up, "/etc/ssl/certs", sub, "/proc/sys/kernel"};

        for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
                ck_assert_int_eq(hostpath_resolve_as(&me, paths[i], out, sizeof(out)), 0);
                ck_assert_ptr_nonnull(realpath(paths[i], want));
                ck_assert_str_eq(out, want);
        }
        char *missing = xasprintf("%s/rel/a/b", dir);
        ck_assert_int_eq(hostpath_resolve_as(&me, missing, out, sizeof(out)), 0);
        ck_assert_ptr_nonnull(realpath(sub, want));
        ck_assert_int_lt(strlen(want) + 4, sizeof(want));
        strcat(want, "/a/b");
        ck_assert_str_eq(out, want);
        ck_assert_int_eq(hostpath_resolve_as(&me, loop, out, sizeof(out)), -ELOOP);
        /* /proc's links tell of the daemon (or of processes only their ptracer may look at) */
        const char *magic[] = {"/proc/self/root/etc", "/proc/1/cwd/x", "/dev/fd/0",
                               "/proc/thread-self/root"};
        for (size_t i = 0; i < ARRAY_SIZE(magic); i++)
                ck_assert_int_eq(hostpath_resolve_as(&me, magic[i], out, sizeof(out)), -EACCES);
        unlink(loop);
        unlink(up);
        unlink(rel);
        rmdir(sub);
        rmdir(dir);
        free(missing);
        free(sub);
        free(rel);
        free(up);
        free(loop);
}
END_TEST

/* A block device directly in /dev is a blkio path an unprivileged caller may name: one made
 * for the test as root, else the first one /dev has. */
START_TEST(test_blkio_device_ok)
{
        char made[64] = "", *dev = NULL;
        DIR *d;
        struct dirent *e;

        snprintf(made, sizeof(made), "/dev/check-container-%d", (int) getpid());
        if (geteuid() == 0 && mknod(made, S_IFBLK | 0600, makedev(7, 250)) == 0) {
                dev = xstrdup(made);
        } else {
                made[0] = '\0';
                ck_assert_ptr_nonnull(d = opendir("/dev"));
                while (!dev && (e = readdir(d))) {
                        char *p = xasprintf("/dev/%s", e->d_name);
                        struct stat st;
                        if (lstat(p, &st) == 0 && S_ISBLK(st.st_mode))
                                dev = p;
                        else
                                free(p);
                }
                closedir(d);
                ck_assert_msg(dev != NULL, "no block device in /dev to test with (run as root)");
        }
        struct policy_ctx ctx = ctx_for(UNPRIV);
        struct policy_result r;
        json_t *spec = json_pack("{s:s,s:{s:{s:[{s:s,s:i}]}}}", "backend", "docker", "docker",
                                 "host_config", "BlkioDeviceReadBps", "Path", dev, "Rate", 1024);

        policy_eval_sandbox(pol, &ctx, spec, NULL, &r);
        ck_assert_msg(r.verdict == POLICY_ALLOW, "%s refused: %s", dev,
                      r.invalid.message ? r.invalid.message : "");
        policy_result_clear(&r);
        json_decref(spec);
        if (made[0])
                unlink(made);
        free(dev);
}
END_TEST

/* The operator's lists: names only, never a field the table checks (in any case). */
START_TEST(test_config_check)
{
        struct sbx_error err = {0};

        ck_assert_int_eq(policy_container_config_check("Foo, Bar", "rexray convoy", &err), 0);
        ck_assert_int_eq(policy_container_config_check(NULL, NULL, &err), 0);
        ck_assert_int_lt(policy_container_config_check("Privileged", NULL, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, "Privileged"));
        sbx_error_clear(&err);
        ck_assert_int_lt(policy_container_config_check("Foo,privileged", NULL, &err), 0);
        sbx_error_clear(&err);
        ck_assert_int_lt(policy_container_config_check("foo", NULL, &err), 0);
        sbx_error_clear(&err);
        ck_assert_int_lt(policy_container_config_check(NULL, "local", &err), 0);
        sbx_error_clear(&err);
        ck_assert_int_lt(policy_container_config_check(NULL, "a b;c", &err), 0);
        sbx_error_clear(&err);
}
END_TEST

/* ---- [backend.docker] maxima and images ---- */

/* A refusal says what was refused, the maximum (or the list) and how to allow it. */
static const struct {
        const char *spec;
        enum who who;
        const char *says[4];
} limit_msgs[] = {
        {HC("'PidsLimit':4194304"), LIM, {"PidsLimit", "4194304", "4096", "max_pids"}},
        {RES("'memory_mb':8192"),
         LIM,
         {"resources.memory_mb", "8192 MiB", "4096 MiB", "max_memory"}},
        {HC("'CpuShares':262144"), LIM, {"CpuShares", "262144", "1024", "max_cpu_shares"}},
        {HC("'BlkioWeight':1000"), LIM, {"BlkioWeight", "1000", "500", "max_blkio_weight"}},
        {HC("'Ulimits':[{'Name':'nofile','Soft':1,'Hard':-1}]"),
         LIM,
         {"Ulimits[0].Hard", "-1 (unlimited)", "1048576 of nofile", "max_ulimits (nofile=MAX)"}},
        {HC("'Ulimits':[{'Name':'rtprio','Soft':1,'Hard':1}]"), LIM, {"0 of rtprio", NULL}},
        {HC("'StorageOpt':{'size':'1g'}"), LIM, {"not enforced", "pquota", "max_disk", NULL}},
        {RES("'cpus':16"), LIM, {"resources.cpus", "16", "4", "max_cpus"}},
        {HC("'Memory':0"), LIM, {"Memory", "no limit", "max_memory", NULL}},
        {IMG("busybox:latest"),
         ULIM,
         {"'busybox:latest'", "[backend.docker] images", "busybox:*", NULL}},
        {IMG("busybox:latest"),
         UNONE,
         {"'busybox:latest'", "images is empty", "images = busybox:latest", NULL}},
        {IMG("busybox"), ULIM, {"'busybox'", "neither a tag nor a digest", "busybox:latest", NULL}},
        {IMG("abcdef:1"), ULIM, {"image ID", NULL, NULL, NULL}},
        {IMG("Busybox:1"), ULIM, {"lower-case", NULL, NULL, NULL}},
        {IMG("busybox@sha256:abc"), ULIM, {"64 lower-case hex", NULL, NULL, NULL}},
        {IMG("bad:host/busybox:1"), ULIM, {"HOST[:PORT]", NULL, NULL, NULL}},
};

START_TEST(test_limit_messages)
{
        struct policy_ctx ctx = ctx_for(limit_msgs[_i].who);
        struct policy_result r;
        json_t *spec = j(limit_msgs[_i].spec);

        policy_eval_sandbox(pol, &ctx, spec, facts, &r);
        ck_assert_int_eq(r.invalid.code, -32602);
        for (int k = 0; k < 4 && limit_msgs[_i].says[k]; k++)
                ck_assert_msg(strstr(r.invalid.message, limit_msgs[_i].says[k]), "'%s' not in: %s",
                              limit_msgs[_i].says[k], r.invalid.message);
        policy_result_clear(&r);
        json_decref(spec);
}
END_TEST

/* The shipped defaults follow the host: pid_max / 4 per uid, half its memory per sandbox,
 * its CPUs; the defaults of a spec are below the maxima. */
START_TEST(test_limits_defaults)
{
        ck_assert_int_eq(lim.max_pids_user, 8192);
        ck_assert_int_eq(lim.max_pids, 4096);
        ck_assert_int_eq(lim.pids, 512);
        ck_assert_int_eq(lim.max_memory_user, INT64_C(8) << 30);
        ck_assert_int_eq(lim.max_memory, INT64_C(4) << 30);
        ck_assert_int_eq(lim.memory, 512 << 20);
        ck_assert_int_eq(lim.max_nano_cpus, INT64_C(4000000000));
        ck_assert_int_eq(lim.max_cpu_shares, 1024);
        ck_assert_int_eq(lim.max_blkio_weight, 500);
        ck_assert_int_eq(lim.max_disk, 0);
        ck_assert_int_eq(lim.ulimit_max[9], 1048576);                /* nofile */
        ck_assert_int_eq(lim.ulimit_max[14], POLICY_ULIMIT_REFUSED); /* sigpending */
        ck_assert_str_eq(lim.image, POLICY_DOCKER_IMAGE);
        ck_assert(!lim.allow_pull);
        ck_assert_ptr_null(lim_none.images);
}
END_TEST

/* Keys of [backend.docker]: a bad value or an order that cannot hold names the key. */
static const struct {
        const char *sec;
        const char *param; /* NULL: accepted */
} lim_configs[] = {
        {"{'pids_limit':'0'}", "pids_limit"},
        {"{'pids_limit':'5000'}", "pids_limit"},
        {"{'pids_limit':5000,'max_pids':5000}", NULL},
        {"{'max_pids':'lots'}", "max_pids"},
        {"{'max_pids':'9000'}", "max_pids"},
        {"{'max_pids_per_user':'100'}", NULL}, /* max_pids and pids_limit follow it down */
        {"{'max_pids_per_user':'100','max_pids':'200'}", "max_pids"},
        {"{'memory':'2g','max_memory':'1g'}", "memory"},
        {"{'max_memory':'16g'}", "max_memory"},
        {"{'memory':'1x'}", "memory"},
        {"{'memory':'1m'}", "memory"},
        {"{'memory':'64M','max_memory':'1G','max_memory_per_user':'2G'}", NULL},
        {"{'max_cpus':'0.5'}", NULL},
        {"{'max_cpus':'many'}", "max_cpus"},
        {"{'max_cpus':0}", "max_cpus"},
        {"{'max_cpu_shares':'1'}", "max_cpu_shares"},
        {"{'max_cpu_shares':'2048'}", NULL},
        {"{'max_blkio_weight':'5'}", "max_blkio_weight"},
        {"{'max_blkio_weight':'1000'}", NULL},
        {"{'max_disk':'10g'}", NULL},
        {"{'max_disk':'lots'}", "max_disk"},
        {"{'max_ulimits':'nofile=1024, cpu=unlimited'}", NULL},
        {"{'max_ulimits':''}", NULL},
        {"{'max_ulimits':'nofile'}", "max_ulimits"},
        {"{'max_ulimits':'files=10'}", "max_ulimits"},
        {"{'max_ulimits':'nofile=many'}", "max_ulimits"},
        {"{'max_ulimits':['nofile=1']}", "max_ulimits"},
        {"{'images':'busybox'}", "images"},
        {"{'images':'busybox:*, ghcr.io/a/b:1 x@" DIGA "'}", NULL},
        {"{'images':'abc123:*'}", "images"},
        {"{'images':['busybox:1']}", "images"},
        {"{'allow_pull':'maybe'}", "allow_pull"},
        {"{'allow_pull':'Yes'}", NULL},
};

START_TEST(test_limits_config)
{
        struct policy_docker_limits l;
        struct sbx_error err = {0};
        json_t *sec = j(lim_configs[_i].sec);
        int rc = policy_docker_limits_parse(sec, &host, &l, &err);

        if (!lim_configs[_i].param) {
                ck_assert_msg(rc == 0, "%s: %s", lim_configs[_i].sec, err.message);
        } else {
                ck_assert_msg(rc < 0, "%s accepted", lim_configs[_i].sec);
                ck_assert_str_eq(json_string_value(json_object_get(err.data, "param")),
                                 lim_configs[_i].param);
                ck_assert_ptr_nonnull(strstr(err.message, "[backend.docker]"));
                ck_assert_int_eq(l.max_pids, 0); /* all zeros: nothing passes */
        }
        sbx_error_clear(&err);
        json_decref(sec);
}
END_TEST

/* With max_disk (storage that enforces a size) StorageOpt size is bounded by it. */
START_TEST(test_limits_disk)
{
        static const struct {
                const char *size;
                const char *says; /* NULL: accepted */
        } sizes[] = {{"1g", NULL}, {"1073741825", "max_disk"}, {"2G", "max_disk"}, {"x", "size"}};
        struct policy_docker_limits l;
        struct sbx_error err = {0};
        json_t *sec = j("{'max_disk':'1g'}");
        struct policy_ctx ctx = ctx_for(LIM);

        ck_assert_int_eq(policy_docker_limits_parse(sec, &host, &l, &err), 0);
        ctx.docker_limits = &l;
        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
                char *t = xasprintf(HC("'StorageOpt':{'size':'%s'}"), sizes[i].size);
                json_t *spec = j(t);
                struct policy_result r;
                policy_eval_sandbox(pol, &ctx, spec, facts, &r);
                if (!sizes[i].says)
                        ck_assert_msg(r.invalid.code == 0, "%s: %s", t, r.invalid.message);
                else
                        ck_assert_msg(r.invalid.code == -32602 &&
                                              strstr(r.invalid.message, sizes[i].says),
                                      "%s: %s", t, r.invalid.message);
                policy_result_clear(&r);
                json_decref(spec);
                free(t);
        }
        json_decref(sec);
}
END_TEST

/* Values as an INI file gives them: sizes rounded up to MiB, CPUs in nanos, pulls allowed. */
START_TEST(test_limits_config_values)
{
        struct policy_docker_limits l;
        struct sbx_error err = {0};
        json_t *sec = j("{'memory':'100000000','max_pids':'100','max_cpus':'1.5','allow_pull':"
                        "'on'}");

        ck_assert_int_eq(policy_docker_limits_parse(sec, &host, &l, &err), 0);
        ck_assert_int_eq(l.memory, 96 << 20);
        ck_assert_int_eq(l.max_pids, 100);
        ck_assert_int_eq(l.pids, 100); /* the default follows a lower maximum */
        ck_assert_int_eq(l.max_nano_cpus, 1500000000);
        ck_assert(l.allow_pull);
        json_decref(sec);
}
END_TEST

/* The names dockerd lists an image under, to check that it resolved the one asked for. */
START_TEST(test_image_familiar)
{
        static const char *const f[][2] = {
                {"docker.io/library/busybox:1", "busybox:1"},
                {"index.docker.io/library/busybox:1", "busybox:1"},
                {"library/busybox:latest", "busybox:latest"},
                {"ghcr.io/a/b:2", "ghcr.io/a/b:2"},
                {"localhost:5000/a:x", "localhost:5000/a:x"},
                {"busybox:1@" DIGA, "busybox@" DIGA},
                {"busybox", NULL},
                {"7779002b4cce", NULL},
                {DIGA, NULL},
        };
        char out[512];

        for (size_t k = 0; k < ARRAY_SIZE(f); k++) {
                int rc = policy_image_familiar(f[k][0], out, sizeof(out));
                ck_assert_msg(f[k][1] ? rc == 0 : rc < 0, "%s: %d", f[k][0], rc);
                if (f[k][1])
                        ck_assert_str_eq(out, f[k][1]);
        }
}
END_TEST

/* What a spec counts against max_pids_per_user and max_memory_per_user. */
START_TEST(test_limits_usage)
{
        static const struct {
                const char *spec;
                int64_t pids, mem;
        } u[] = {
                {"{}", 512, 512 << 20},
                {"{'resources':{'pids':100,'memory_mb':64}}", 100, 64 << 20},
                {"{'docker':{'host_config':{'PidsLimit':7,'Memory':8388608}}}", 7, 8 << 20},
                /* no limit (refused by the judgement) counts as the maximum */
                {"{'docker':{'host_config':{'PidsLimit':0,'Memory':0}}}", 4096, INT64_C(4) << 30},
        };
        int64_t pids, mem;

        for (size_t k = 0; k < ARRAY_SIZE(u); k++) {
                json_t *spec = j(u[k].spec);
                policy_docker_usage(&lim, spec, &pids, &mem);
                ck_assert_int_eq(pids, u[k].pids);
                ck_assert_int_eq(mem, u[k].mem);
                json_decref(spec);
        }
}
END_TEST

/* ---- docker / podman argv ---- */

struct ccase {
        const char *cmd;
        enum policy_verdict v;
        const char *rule;
};

static const struct ccase ccases[] = {
        {"docker run -v=/:/h img", D, "container.mount-root"},
        {"docker run --volume=/:/h img", D, "container.mount-root"},
        {"docker run --volume /:/h img", D, "container.mount-root"},
        {"docker run -itv/:/h img", D, "container.mount-root"},
        {"docker run -dv=/etc:/e img", D, "container.mount-system"},
        {"docker run -v //:/h img", D, "container.mount-root"},
        {"docker run -v /home/user/project/src:/src img", A, NULL},
        {"docker run -v ./src:/src img", A, NULL},
        {"docker run -v ~/.ssh:/s img", D, "container.mount-credential"},
        {"docker run -v ~root/x:/s img", D, "container.mount-system"},
        {"docker run -v ~nosuchuser42/x:/s img", D, "container.mount-unresolved"},
        {"docker run -v x/y:/s img", D, "container.mount-unresolved"},
        {"docker run -v \"$X\":/h img", D, "container.mount-unresolved"},
        {"docker run -v $X/y:/h img", D, "container.mount-unresolved"},
        {"podman run --volume=\"$(cat f)\":/h img", D, "container.mount-unresolved"},
        {"docker run --mount type=bind,src=$S,dst=/h img", D, "container.mount-unresolved"},
        {"docker run -v \"$(pwd)/..\":/w img", D, "container.mount-credential"},
        {"docker run -v \"$(pwd)\":/w img", A, NULL},
        {"cd /tmp; docker run -v \"$(pwd)\":/w img", D, "container.mount-unresolved"},
        {"docker run -v 'C:\\x:/y' img", D, "container.mount-unresolved"},
        {"docker run -v C:/Users:/y img", D, "container.mount-unresolved"},
        {"docker run --mount type=volume,volume-opt=type=none,volume-opt=o=bind,"
         "volume-opt=device=/,dst=/h img",
         D, "container.mount-root"},
        {"docker run --mount 'type=volume,\"volume-opt=o=bind,ro\",volume-opt=type=none,"
         "volume-opt=device=/etc,dst=/h' img",
         D, "container.mount-system"},
        {"docker run --mount type=volume,volume-driver=rexray,dst=/h img", D,
         "container.volume-driver"},
        {"docker run --mount type=bind,src=/,dst=/h img", D, "container.mount-root"},
        {"docker run --mount type=tmpfs,dst=/t img", A, NULL},
        {"docker run --mount type=npipe,src=x,dst=/y img", D, "container.mount-type"},
        {"docker run --mount type=bind,src=/srv,dst=/s,bogus=1 img", Q, "container.cli-unknown"},
        {"docker run --privileged img", D, "container.privileged"},
        {"docker run --privileged=true img", D, "container.privileged"},
        {"docker run --privileged=yes img", D, "container.privileged"},
        {"docker run --privileged false", D, "container.privileged"},
        {"docker run --privileged=false img", A, NULL},
        {"docker run --security-opt seccomp=unconfined img", D, "container.secopt"},
        {"docker run --security-opt=apparmor:unconfined img", D, "container.secopt"},
        {"docker run --security-opt no-new-privileges img", A, NULL},
        {"podman run --security-opt unmask=ALL img", D, "container.unmask"},
        {"podman run --security-opt mask=/proc/x img", A, NULL},
        {"docker run --device=/dev/sda img", D, "container.device"},
        {"docker run --device /dev/fuse img", D, "container.device"},
        {"docker run --gpus all img", D, "container.device"},
        {"docker run --device-cgroup-rule 'b 8:* rwm' img", D, "container.device"},
        {"docker run --pid=host img", D, "container.host-ns"},
        {"docker run --pid host img", D, "container.host-ns"},
        {"docker run --net=host img", D, "container.host-ns"},
        {"docker run --network container:x img", D, "container.join-ns"},
        {"docker run --network corp-net img", A, NULL},
        {"docker run --userns=host img", D, "container.host-ns"},
        {"docker run --uts=host img", D, "container.host-ns"},
        {"docker run --ipc host img", D, "container.host-ns"},
        {"docker run --cgroupns=host img", D, "container.host-ns"},
        {"podman run --userns=keep-id img", A, NULL},
        {"podman run --pid=ns:/proc/1/ns/pid img", D, "container.host-ns"},
        {"podman run --network=slirp4netns img", A, NULL},
        {"docker run --cap-add SYS_ADMIN img", D, "container.cap"},
        {"docker run --cap-add=NET_ADMIN img", D, "container.cap"},
        {"docker run --cap-add MKNOD img", A, NULL},
        {"docker run --cap-drop NET_RAW img", A, NULL},
        {"docker run --sysctl kernel.panic=1 img", D, "container.sysctl"},
        {"docker run --sysctl net.ipv4.ping_group_range='0 1' img", A, NULL},
        {"docker run -p 8080:80 img", Q, "container.publish"},
        {"docker run -p 80 img", Q, "container.publish"},
        {"docker run -p 127.0.0.1:8080:80 img", A, NULL},
        {"docker run -p '[::1]:8080:80/udp' img", A, NULL},
        {"docker run -p [::1]:8080:80 img", Q, "container.cli-unknown"},
        {"docker run -P img", Q, "container.publish"},
        {"docker run -dP img", Q, "container.publish"},
        {"docker run --tmpfs /run:size=1m img", A, NULL},
        {"docker run --tmpfs /run:x-foo img", D, "container.volume-option"},
        {"docker run --volumes-from other img", Q, "container.cli-unknown"},
        {"docker run --pids-limit -1 img", D, "container.pids-limit"},
        {"docker run --pids-limit=100 img", A, NULL},
        {"docker run --oom-kill-disable img", D, "container.oom"},
        {"docker run --oom-score-adj=-1000 img", D, "container.oom"},
        {"docker run --cgroup-parent=/ img", D, "container.cgroup-parent"},
        {"docker run --runtime=nvidia img", D, "container.runtime"},
        {"docker run --use-api-socket img", D, "container.mount-socket"},
        {"docker run --annotation org.systemd.property.X=y img", D, "container.annotations"},
        {"podman run --rootfs / sh", D, "container.mount-root"},
        {"podman run --hooks-dir /tmp/h img", D, "container.hooks"},
        {"podman run --runtime-flag=debug img", D, "container.runtime"},
        {"podman run --init-path /etc/x img", D, "container.mount-system"},
        {"docker run --unknown-flag -v /:/h img", D, "container.mount-root"},
        {"docker run --unknown-flag img", Q, "container.cli-unknown"},
        {"docker run -Z img", Q, "container.cli-unknown"},
        {"docker run $OPTS img", Q, "container.cli-unknown"},
        {"docker run img -v /:/h", A, NULL},
        {"docker run -- img --privileged", A, NULL},
        {"docker run --rm -it --name x -e A=1 -w /w -u 1000 --log-driver syslog img sh", A, NULL},
        {"docker run --read-only --init -m 512m --cpus 2 --restart always img", A, NULL},
        {"docker create --privileged img", D, "container.privileged"},
        {"docker container run --privileged img", D, "container.privileged"},
        {"nerdctl run -v /:/h img", D, "container.mount-root"},
        {"docker exec --privileged c sh", D, "container.privileged"},
        {"docker volume create --opt type=none --opt o=bind --opt device=/etc v", D,
         "container.mount-system"},
        {"docker volume create -o type=ext4 -o device=/dev/sda2 v", D, "container.volume-device"},
        {"docker volume create -otype=none -oo=bind -odevice=/ v", D, "container.mount-root"},
        {"docker volume create --opt=type=nfs --opt=o=addr=1.2.3.4 v", D, "container.volume-netfs"},
        {"docker volume create -d rexray v", D, "container.volume-driver"},
        {"docker volume create v", A, NULL},
        {"docker volume create -o device=\"$D\" -o o=bind v", D, "container.mount-unresolved"},
        {"docker volume create -o \"$O\" v", Q, "container.cli-unknown"},
};

START_TEST(test_cli)
{
        const struct ccase *c = &ccases[_i];
        struct policy_ctx ctx = {.backend = "local",
                                 .host_access = true,
                                 .cwd = "/home/user/project",
                                 .home = "/home/user",
                                 .protected_paths = prot,
                                 .workspace = "/home/user/project"};
        struct policy_result r;

        policy_eval_command(pol, &ctx, c->cmd, &r);
        char *d = policy_test_describe(&r);
        ck_assert_msg(r.verdict == c->v, "case %d [%s]: expected %s, got %s (%s)", _i, c->cmd,
                      policy_verdict_name(c->v), policy_verdict_name(r.verdict), d);
        if (c->rule)
                ck_assert_msg(policy_test_has_rule(&r, c->rule), "case %d [%s]: %s missing (%s)",
                              _i, c->cmd, c->rule, d);
        ck_assert_int_eq(r.invalid.code, 0);
        free(d);
        policy_result_clear(&r);
}
END_TEST

static Suite *
suite(void)
{
        Suite *s = suite_create("container");
        TCase *tc = tcase_create("specs");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, test_specs, 0, (int) ARRAY_SIZE(scases));
        tcase_add_loop_test(tc, test_every_field, 0, (int) ARRAY_SIZE(fields));
        tcase_add_test(tc, test_many_findings_keep_deny);
        tcase_add_test(tc, test_symlink_in_workspace);
        tcase_add_test(tc, test_resolve_as_caller);
        tcase_add_test(tc, test_host_paths_given);
        tcase_add_test(tc, test_hostpath_walk);
        tcase_add_test(tc, test_blkio_device_ok);
        tcase_add_test(tc, test_config_check);
        suite_add_tcase(s, tc);
        tc = tcase_create("limits");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, test_limit_messages, 0, (int) ARRAY_SIZE(limit_msgs));
        tcase_add_test(tc, test_limits_defaults);
        tcase_add_test(tc, test_limits_disk);
        tcase_add_loop_test(tc, test_limits_config, 0, (int) ARRAY_SIZE(lim_configs));
        tcase_add_test(tc, test_limits_config_values);
        tcase_add_test(tc, test_limits_usage);
        tcase_add_test(tc, test_image_familiar);
        suite_add_tcase(s, tc);
        tc = tcase_create("cli");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, test_cli, 0, (int) ARRAY_SIZE(ccases));
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(suite());

        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
