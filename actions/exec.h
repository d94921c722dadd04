/* What every executor (SLURM, the HTTP vendors, Kubernetes) calls back
 * with when one playbook call ends: ok 1 done, 0 failed (detail says why,
 * never with a secret in it); out is what the call made ({"job": ID},
 * {"issue": KEY}) or NULL. Called once, from the loop. */
#ifndef CS_EXEC_H
#define CS_EXEC_H

#include <jansson.h>

typedef void (*exec_done_fn)(void *arg, int ok, const char *detail,
                             json_t *out);

#endif
