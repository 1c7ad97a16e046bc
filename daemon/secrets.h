/* secrets.h — keeping the daemon's own secrets (backend credentials) from its children and from
 * other processes of its uid: the process is made non-dumpable (no ptrace, no /proc/PID/mem,
 * environ, fd, maps for anyone but root), and credential variables are moved out of its
 * environment into memory at start (backends/credenv.h). Process-wide; call from main only. */
#ifndef SANDBOXD_SECRETS_H
#define SANDBOXD_SECRETS_H

/* prctl(PR_SET_DUMPABLE, 0), then credenv_capture(); negative errno when the process cannot
 * be made non-dumpable (the credentials are moved anyway). Children that exec become dumpable
 * again (the kernel resets it), so this guards the daemon and its forks only. Sets *moved to
 * the number of credential variables taken out of the environment. */
int secrets_protect_process(int *moved);

#endif
