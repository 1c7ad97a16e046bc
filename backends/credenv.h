/* credenv.h — credentials the daemon was given in its environment, kept in its own memory only.
 *
 * At start the daemon moves every credential variable (a table of the names the backends read,
 * plus any name holding TOKEN, SECRET, PASSWORD, …) out of its environment: the value is copied
 * here, zeroed where it was — also in the initial environment block that /proc/PID/environ
 * shows, which unsetenv() alone leaves in place — and the variable is unset. Backends read
 * such variables with credenv_get(), never getenv(). Loop thread only (start-up, then reads).
 */
#ifndef SANDBOXD_CREDENV_H
#define SANDBOXD_CREDENV_H

#include <stdbool.h>

/* Whether NAME (up to '=' or the end) names a credential variable. */
bool credenv_is_credential(const char *name);
/* Moves the credential variables out of the environment; returns how many. Call once, early. */
int credenv_capture(void);
/* A credential variable's value (borrowed, valid until credenv_clear), else getenv(name). */
const char *credenv_get(const char *name);
/* Forgets the captured values (their memory is zeroed). */
void credenv_clear(void);

#endif
