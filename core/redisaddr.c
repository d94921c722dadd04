#include "core/redisaddr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *unix_path(const char *addr)
{
    if (strncmp(addr, "unix:", 5) == 0)
        return addr + 5;
    return addr[0] == '/' ? addr : NULL;
}

static int tcp_addr(const char *addr, char *host, size_t len)
{
    const char *colon = strrchr(addr, ':');

    snprintf(host, len, "%.*s", colon ? (int)(colon - addr) : (int)strlen(addr),
             addr);
    return colon ? atoi(colon + 1) : 6379;
}

redisAsyncContext *raddr_connect_async(const char *addr)
{
    const char *path = unix_path(addr);
    char host[256];
    int port;

    if (path)
        return redisAsyncConnectUnix(path);
    port = tcp_addr(addr, host, sizeof host);
    return redisAsyncConnect(host, port);
}

redisContext *raddr_connect(const char *addr)
{
    const char *path = unix_path(addr);
    char host[256];
    int port;

    if (path)
        return redisConnectUnix(path);
    port = tcp_addr(addr, host, sizeof host);
    return redisConnect(host, port);
}
