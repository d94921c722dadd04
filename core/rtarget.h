/* A Redis target: more than an address. Where Redis is (an address, or
 * the master a set of Sentinels names), who cascade is to it (an ACL user
 * and its password, or a password alone), which database, when a write
 * counts as acknowledged (once N replicas confirmed it), and whether a
 * Redis that may lose state is refused at start.
 *
 * The `redis:` block of the process config and of the executor's config
 * (one reader for both):
 *   address            host:port, host (port 6379), /path or unix:/path
 *   user               ACL user: AUTH user password (none: AUTH password)
 *   password           SECRET: file:PATH or env:NAME (core/secret.h)
 *   db                 SELECT db (0: none sent)
 *   sentinels          [host:port, ...]: asked in turn for the master
 *   master             the master's name at the Sentinels
 *   sentinel_password  SECRET: AUTH to the Sentinels (none: no AUTH)
 *   wait_replicas      N: a write is acknowledged once WAIT N says N
 *                      replicas have it (0: once the master has it)
 *   wait_timeout_ms    how long one WAIT waits for them (1000)
 *   require_durable    refuse a Redis that evicts keys or does not
 *                      persist (true)
 * address and sentinels exclude each other; sentinels need master.
 *
 * Pure: nothing here connects (core/rconn.h and core/rlink.h do). The
 * secrets are read when the block is, and never printed: rt_print and
 * rt_describe leave them out. */
#ifndef CS_RTARGET_H
#define CS_RTARGET_H

#include <stddef.h>
#include <stdio.h>
#include <yaml.h>

#include "core/err.h"

struct yd_doc;

#define RT_MAX_SENTINELS 8
#define RT_PORT 6379

typedef struct rtarget {
    char addr[256];     /* "" with Sentinels, or when none is configured */
    char user[128];     /* "" = AUTH with the password alone */
    char password[256]; /* the secret's value; "" = no AUTH */
    int db;
    char sentinels[RT_MAX_SENTINELS][128];
    int nsentinels;
    char master[128];
    char sentinel_password[256];
    int wait_replicas;
    int wait_timeout_ms;
    int require_durable;
} rtarget;

/* No address, no credentials, db 0, no WAIT, durability required. */
void rt_init(rtarget *t);
/* The address alone (the --redis flag): it replaces the address and any
 * Sentinels; credentials, db and the rest stay. -1 (err names it) when
 * it is not one rt_addr_parse reads. */
int rt_set_addr(rtarget *t, const char *addr, cs_err *err);
/* Whether it names a Redis: an address or Sentinels. */
int rt_configured(const rtarget *t);
/* Whether two targets name the same Redis the same way. */
int rt_same(const rtarget *a, const rtarget *b);
/* Zeroes the secrets. */
void rt_wipe(rtarget *t);

/* "host:port" -> host and port (RT_PORT when none); "/path" or
 * "unix:/path" -> the path in host, port 0. 1: a unix socket, 0: TCP,
 * -1: neither (an empty host, a port that is not 1..65535, too long). */
int rt_addr_parse(const char *addr, char *host, size_t len, int *port);

/* For messages: "ADDR (user U, db N)", where ADDR is addr when given (the
 * master reached), else the target's address or "master 'M' via
 * sentinels". Never a secret. */
void rt_describe(const rtarget *t, const char *addr, char *buf, size_t len);

/* Reads a `redis:` block into t over what it holds; every problem is
 * reported at its FILE:LINE:COL with prefix ("redis.") before the key.
 * Returns the problems found. */
int rt_read_yaml(struct yd_doc *d, yaml_node_t *map, const char *prefix,
                 rtarget *t);
/* The block as YAML under "redis:", the secrets as "<set>"; unset says
 * what an empty address means to the caller ("" for nothing). */
void rt_print(const rtarget *t, FILE *f, const char *unset);

/* The redis section's reference (docs/CONFIG.md), from its key table. */
void rt_reference(void *stdio_file);

#endif
