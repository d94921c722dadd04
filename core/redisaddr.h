/* A Redis address as the config and the flags write it: "host:port",
 * "host" (port 6379), a socket path, or "unix:PATH". */
#ifndef CS_REDISADDR_H
#define CS_REDISADDR_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

/* Both may return a context with err set (or NULL): the caller frees. */
redisAsyncContext *raddr_connect_async(const char *addr);
redisContext *raddr_connect(const char *addr);

#endif
