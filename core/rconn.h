/* Connecting to a Redis target (core/rtarget.h): the handshake every
 * connection makes before it carries anything, the Sentinel lookup, the
 * start-up check that Redis keeps what it is given, and the blocking
 * connection of start-up and the command line. The asynchronous link on
 * the event loop (core/rlink.h) is made of the same parts.
 *
 * The handshake, in order: AUTH [user] password (when there is one),
 * SELECT db (when not 0), then ROLE with Sentinel (the master it named may
 * have been demoted since) or PING without: the connection carries
 * commands once the last answered as it should. Error messages name the
 * address and the user, never a password. */
#ifndef CS_RCONN_H
#define CS_RCONN_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/err.h"
#include "core/rtarget.h"

/* One command in argv form; argv may point into buf and into the target
 * it was made from (fill it in place: a copy's argv points into the
 * original). */
typedef struct rconn_cmd {
    int argc;
    const char *argv[4];
    char buf[2][24];
} rconn_cmd;

#define RCONN_HELLO_MAX 3

/* The handshake's commands for t, in order: how many (1 to 3). */
int rconn_hello(const rtarget *t, rconn_cmd out[RCONN_HELLO_MAX]);
/* Judges the reply r (NULL: none came) to the handshake command c sent to
 * addr: 0, or -1 with err ("redis ADDR (user U): AUTH refused: ..."). */
int rconn_hello_ok(const rtarget *t, const char *addr, const rconn_cmd *c,
                   const redisReply *r, cs_err *err);

/* The questions to a Sentinel: AUTH when t has a sentinel_password, then
 * SENTINEL get-master-addr-by-name. How many (1 or 2). */
int rconn_ask(const rtarget *t, rconn_cmd out[2]);
/* Judges the reply to the question c the Sentinel at sentinel answered:
 * 0 (the master's "ip:port" in addr when c was the lookup, else addr
 * untouched), or -1 with err ("sentinel S: does not know master 'M'"). */
int rconn_answer(const rtarget *t, const char *sentinel, const rconn_cmd *c,
                 const redisReply *r, char *addr, size_t len, cs_err *err);

/* Whether an error reply says the connection no longer reaches a master
 * that takes writes (READONLY, MASTERDOWN, LOADING): the master is to be
 * looked up again. */
int rconn_moved(const redisReply *r);

/* WAIT wait_replicas wait_timeout_ms into out: 0 when t waits for no
 * replica (nothing to send), 1 when out holds it. */
int rconn_wait(const rtarget *t, rconn_cmd *out);
/* Whether the reply to that WAIT says enough replicas confirmed; when
 * not, err says how many did. */
int rconn_waited(const rtarget *t, const redisReply *r, cs_err *err);

/* A connection to an address as rt_addr_parse reads it, no handshake;
 * the caller frees it (it may have err set, or be NULL). */
redisAsyncContext *rconn_async(const char *addr);
redisContext *rconn_sync(const char *addr, int timeout_ms);

/* Blocking (start-up, the command line): the master's address from the
 * Sentinels, each asked in turn, or t's address. */
int rconn_resolve(const rtarget *t, char *addr, size_t len, cs_err *err);
/* Blocking: resolve, connect, handshake. addr (may be NULL) gets the
 * address reached. NULL with err. */
redisContext *rconn_open(const rtarget *t, char *addr, size_t len,
                         cs_err *err);
/* Blocking: whether the server keeps what it is given: it evicts no key
 * (maxmemory-policy noeviction) and persists (appendonly yes, or a save
 * schedule). CONFIG GET says so; where CONFIG is refused (renamed, an ACL,
 * a managed Redis), INFO, which shows the append-only file but not a save
 * schedule. -1 with err saying what is wrong and how to mend it. */
int rconn_durable(redisContext *c, const rtarget *t, const char *addr,
                  cs_err *err);
/* Blocking (start-up): open, handshake, and rconn_durable where t
 * requires it; the connection is closed again. 0, or -1 with err. */
int rconn_check(const rtarget *t, cs_err *err);

#endif
