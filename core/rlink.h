/* A reconnecting asynchronous Redis connection on the event loop: the
 * store's and the journal's link to Redis. It owns the connection only:
 * the target, the hiredis contexts, the Sentinel lookup, the handshake,
 * the timers and the back-off, the up/down state. Commands and what to
 * send again are the owner's.
 *
 * Contract:
 * - Every connection makes the handshake of core/rconn.h (AUTH, SELECT,
 *   ROLE or PING) before it carries anything: the link is up, and takes
 *   commands, only once that answered as it should. A refusal (a wrong
 *   password, a replica where a master was wanted) is logged with the
 *   address and the user, and the link tries again after the back-off.
 * - With Sentinel, every connection begins with the master's address,
 *   asked of the Sentinels in turn without blocking the loop: one that
 *   does not answer within 1 s is passed over. A master that changed is
 *   logged ("master of 'M' is now ADDR (was ADDR)").
 * - Commands are preformatted (Redis's protocol) and go out in the order
 *   given: at most 256 KiB of them unanswered on the connection, the rest
 *   held in the link until answers make room (core/cmdq.h says why).
 *   Their replies come back in that order, one per command, to
 *   hooks.reply. A command sent on a connection that is lost gets no reply
 *   at all (its reply, if one still came, is dropped here): after
 *   hooks.down the owner counts it as not sent.
 * - An error reply that says the connection no longer reaches a master
 *   that takes writes (READONLY, MASTERDOWN, LOADING: a failover) never
 *   reaches the owner: the connection is dropped as lost, and made again
 *   (through the Sentinels) after the back-off.
 * - hooks.ready says the owner may send what is pending: a connection
 *   came through its handshake, or a retry the owner asked for fell due
 *   on a live one.
 * - Lost or refused, the link tries again after a back-off that doubles
 *   from 100 ms to 5 s, logging a warning under `who` each time; the
 *   back-off starts again from 100 ms only when the owner says Redis did
 *   what was asked (rlink_settle).
 * - No hook runs from rlink_new or rlink_free. */
#ifndef CS_RLINK_H
#define CS_RLINK_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/rtarget.h"

struct event_base;

typedef struct rlink rlink;

typedef struct rlink_hooks {
    /* Required. reply is never NULL; hiredis frees it on return. */
    void (*ready)(void *arg);
    void (*reply)(void *arg, redisReply *reply);
    /* Optional: a connection came through its handshake. */
    void (*up)(void *arg);
    /* Optional: a connection that was up was lost. */
    void (*down)(void *arg);
} rlink_hooks;

/* t is copied; who: the log subsystem ("store"). Connects in the
 * background; hooks and arg are the owner's. */
rlink *rlink_new(struct event_base *base, const rtarget *t, const char *who,
                 const rlink_hooks *hooks, void *arg);
/* Replies still pending are dropped, none reaches the owner. */
void rlink_free(rlink *l);

/* Queues one command: 0, or -1 when no connection is up to take it (the
 * owner keeps it and sends it on ready). */
int rlink_send(rlink *l, const char *buf, size_t len);
/* Whether a connection is up. */
int rlink_up(const rlink *l);
/* Redis refused what was sent: ready runs again after the back-off. */
void rlink_retry(rlink *l);
/* Redis did what was asked: the next back-off is the shortest. */
void rlink_settle(rlink *l);
/* Drops the connection as lost (down runs before this returns; replies
 * still due never come) and makes a new one after the back-off, through
 * the Sentinels: why is logged. Safe from hooks.reply. */
void rlink_reconnect(rlink *l, const char *why);

/* Replicas a write waits for (redis.wait_replicas; 0: none). */
int rlink_waits(const rlink *l);
/* Queues WAIT for what was sent before it: 1, 0 when the target waits for
 * no replica (nothing sent), -1 when no connection is up. Its reply comes
 * to hooks.reply like any other. */
int rlink_send_wait(rlink *l);
/* Whether the reply to that WAIT confirms the writes before it; when not,
 * says so in the log. */
int rlink_waited(rlink *l, const redisReply *reply);

#endif
