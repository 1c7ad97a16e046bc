/* ctl_approval.h — answers sandboxd's approval.request (protocol §6) by asking the person at the
 * controlling terminal (/dev/tty). Blocking; single-threaded. */
#ifndef SANDBOXCTL_CTL_APPROVAL_H
#define SANDBOXCTL_CTL_APPROVAL_H

#include <jansson.h>

/* Shows the request (params borrowed, may be NULL) on /dev/tty and reads the decision; returns
 * the JSON-RPC result {decision, reason?} (new). Without a terminal, on end of input, on
 * expiry or after repeated invalid answers the decision is "deny". */
json_t *ctl_approval_answer(json_t *params);

#endif
