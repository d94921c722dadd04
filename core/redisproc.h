/* A private redis-server for embedded defaults and tests: started on a
 * unix socket in a fresh temporary folder, with no persistence, stopped
 * (and the folder removed) by rproc_stop. */
#ifndef CS_REDISPROC_H
#define CS_REDISPROC_H

#include "core/err.h"
#include "core/rtarget.h"

typedef struct rproc rproc;

/* Waits until the server answers PING (at most 10 s). */
rproc *rproc_start(cs_err *err);
/* The socket path, usable as a Redis address ("unix:PATH" not needed). */
const char *rproc_socket(const rproc *r);
/* The server as a target: its socket, nothing to authenticate, and not
 * asked to be durable (it is a throwaway one: no persistence). */
void rproc_target(const rproc *r, rtarget *t);
void rproc_stop(rproc *r);

#endif
