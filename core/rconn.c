/* Connecting to a Redis target (core/rconn.h). */
#include "core/rconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

/* A blocking command waits this long for its answer at most: a Redis or
 * a Sentinel that accepts and never answers must not hang a start. */
#define SYNC_TIMEOUT_MS 5000
/* Each Sentinel gets this long to connect, and to answer: one that is
 * down or cut off costs its share, not a TCP timeout. */
#define SENTINEL_MS 1000

static void cmd_set(rconn_cmd *c, int argc, const char *a0, const char *a1,
                    const char *a2, const char *a3)
{
    c->argc = argc;
    c->argv[0] = a0;
    c->argv[1] = a1;
    c->argv[2] = a2;
    c->argv[3] = a3;
}

int rconn_hello(const rtarget *t, rconn_cmd out[RCONN_HELLO_MAX])
{
    int n = 0;

    if (t->password[0] && t->user[0])
        cmd_set(&out[n++], 3, "AUTH", t->user, t->password, NULL);
    else if (t->password[0])
        cmd_set(&out[n++], 2, "AUTH", t->password, NULL, NULL);
    if (t->db) {
        snprintf(out[n].buf[0], sizeof out[n].buf[0], "%d", t->db);
        cmd_set(&out[n], 2, "SELECT", out[n].buf[0], NULL, NULL);
        n++;
    }
    if (t->nsentinels)
        cmd_set(&out[n++], 1, "ROLE", NULL, NULL, NULL);
    else
        cmd_set(&out[n++], 1, "PING", NULL, NULL, NULL);
    return n;
}

static const char *hint(const rtarget *t, const rconn_cmd *c,
                        const redisReply *r)
{
    if (!strncmp(r->str, "NOAUTH", 6) && !t->password[0])
        return " (it wants a password: set redis.password)";
    if (!strncmp(r->str, "NOPERM", 6) && !strcmp(c->argv[0], "ROLE"))
        return " (with Sentinel the user needs +role, to check that it "
               "reached the master)";
    if (!strcmp(c->argv[0], "SELECT") && strstr(r->str, "out of range"))
        return " (see its 'databases' setting)";
    return "";
}

int rconn_hello_ok(const rtarget *t, const char *addr, const rconn_cmd *c,
                   const redisReply *r, cs_err *err)
{
    char who[512];
    int shown = !strcmp(c->argv[0], "SELECT"); /* AUTH's never are */

    rt_describe(t, addr, who, sizeof who);
    if (!r) {
        cs_err_set(err, "redis %s: no answer to %s", who, c->argv[0]);
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        cs_err_set(err, "redis %s: %s%s%s refused: %s%s", who, c->argv[0],
                   shown ? " " : "", shown ? c->argv[1] : "", r->str,
                   hint(t, c, r));
        return -1;
    }
    if (strcmp(c->argv[0], "ROLE"))
        return 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        cs_err_set(err, "redis %s: ROLE gave no role", who);
        return -1;
    }
    if (strcmp(r->element[0]->str, "master")) {
        cs_err_set(err, "redis %s: a %s, not the master the Sentinels named "
                   "(a failover is under way, or they are out of date)", who,
                   r->element[0]->str);
        return -1;
    }
    return 0;
}

int rconn_ask(const rtarget *t, rconn_cmd out[2])
{
    int n = 0;

    if (t->sentinel_password[0])
        cmd_set(&out[n++], 2, "AUTH", t->sentinel_password, NULL, NULL);
    cmd_set(&out[n++], 3, "SENTINEL", "get-master-addr-by-name", t->master,
            NULL);
    return n;
}

int rconn_answer(const rtarget *t, const char *sentinel, const rconn_cmd *c,
                 const redisReply *r, char *addr, size_t len, cs_err *err)
{
    if (!r) {
        cs_err_set(err, "sentinel %s: no answer", sentinel);
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        cs_err_set(err, "sentinel %s: %s refused: %s", sentinel, c->argv[0],
                   r->str);
        return -1;
    }
    if (!strcmp(c->argv[0], "AUTH"))
        return 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING) {
        cs_err_set(err, "sentinel %s: does not know master '%s'", sentinel,
                   t->master);
        return -1;
    }
    snprintf(addr, len, "%s:%s", r->element[0]->str, r->element[1]->str);
    return 0;
}

int rconn_moved(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str &&
           (!strncmp(r->str, "READONLY", 8) ||
            !strncmp(r->str, "MASTERDOWN", 10) ||
            !strncmp(r->str, "LOADING", 7));
}

int rconn_wait(const rtarget *t, rconn_cmd *out)
{
    if (t->wait_replicas <= 0)
        return 0;
    snprintf(out->buf[0], sizeof out->buf[0], "%d", t->wait_replicas);
    snprintf(out->buf[1], sizeof out->buf[1], "%d", t->wait_timeout_ms);
    cmd_set(out, 3, "WAIT", out->buf[0], out->buf[1], NULL);
    return 1;
}

int rconn_waited(const rtarget *t, const redisReply *r, cs_err *err)
{
    if (r->type != REDIS_REPLY_INTEGER) {
        cs_err_set(err, "WAIT answered %s",
                   r->type == REDIS_REPLY_ERROR ? r->str : "no count");
        return 0;
    }
    if (r->integer >= t->wait_replicas)
        return 1;
    cs_err_set(err, "%lld of the %d replicas wanted confirmed the writes "
               "within %d ms", r->integer, t->wait_replicas,
               t->wait_timeout_ms);
    return 0;
}

redisAsyncContext *rconn_async(const char *addr)
{
    char host[256];
    int port, kind = rt_addr_parse(addr, host, sizeof host, &port);

    if (kind < 0)
        return NULL;
    return kind ? redisAsyncConnectUnix(host) : redisAsyncConnect(host, port);
}

redisContext *rconn_sync(const char *addr, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    struct timeval cmd = {SYNC_TIMEOUT_MS / 1000, 0};
    char host[256];
    int port, kind = rt_addr_parse(addr, host, sizeof host, &port);
    redisContext *c;

    if (kind < 0)
        return NULL;
    c = kind ? redisConnectUnixWithTimeout(host, tv)
             : redisConnectWithTimeout(host, port, tv);
    if (c && !c->err)
        redisSetTimeout(c, cmd);
    return c;
}

static redisReply *run(redisContext *c, const rconn_cmd *cmd)
{
    return redisCommandArgv(c, cmd->argc, (const char **)cmd->argv, NULL);
}

/* One Sentinel's answer: 0 and the master in addr, or -1 (err). */
static int ask_one(const rtarget *t, const char *sentinel, char *addr,
                   size_t len, cs_err *err)
{
    redisContext *c = rconn_sync(sentinel, SENTINEL_MS);
    struct timeval tv = {SENTINEL_MS / 1000, (SENTINEL_MS % 1000) * 1000};
    rconn_cmd q[2];
    int n = rconn_ask(t, q), rc = 0;

    if (!c || c->err) {
        cs_err_set(err, "sentinel %s: %s", sentinel,
                   c ? c->errstr : "not host:port");
        if (c)
            redisFree(c);
        return -1;
    }
    redisSetTimeout(c, tv);
    for (int i = 0; i < n && rc == 0; i++) {
        redisReply *r = run(c, &q[i]);
        if (!r)
            cs_err_set(err, "sentinel %s: %s", sentinel, c->errstr);
        rc = r ? rconn_answer(t, sentinel, &q[i], r, addr, len, err) : -1;
        freeReplyObject(r);
    }
    redisFree(c);
    return rc;
}

int rconn_resolve(const rtarget *t, char *addr, size_t len, cs_err *err)
{
    char why[512] = "";
    cs_err one;

    if (!t->nsentinels) {
        str_copy(addr, len, t->addr);
        return 0;
    }
    for (int i = 0; i < t->nsentinels; i++) {
        if (ask_one(t, t->sentinels[i], addr, len, &one) == 0)
            return 0;
        snprintf(why + strlen(why), sizeof why - strlen(why), "%s%.160s",
                 i ? "; " : "", one.msg);
    }
    cs_err_set(err, "no sentinel named the master '%s': %s", t->master, why);
    return -1;
}

redisContext *rconn_open(const rtarget *t, char *addr, size_t len,
                         cs_err *err)
{
    char where[256], who[512];
    rconn_cmd hello[RCONN_HELLO_MAX];
    int n = rconn_hello(t, hello);
    redisContext *c;

    if (rconn_resolve(t, where, sizeof where, err))
        return NULL;
    if (addr)
        str_copy(addr, len, where);
    c = rconn_sync(where, SYNC_TIMEOUT_MS);
    if (!c || c->err) {
        rt_describe(t, where, who, sizeof who);
        cs_err_set(err, "cannot reach redis at %s: %s", who,
                   c ? c->errstr : "not an address");
        if (c)
            redisFree(c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        redisReply *r = run(c, &hello[i]);
        int bad = rconn_hello_ok(t, where, &hello[i], r, err);
        if (!r)
            snprintf(err->msg + strlen(err->msg),
                     sizeof err->msg - strlen(err->msg), ": %s", c->errstr);
        freeReplyObject(r);
        if (bad) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

/* ---- durability ---- */

/* CONFIG GET name into out: 0, or -1 with CONFIG's refusal in why. */
static int config_get(redisContext *c, const char *name, char *out,
                      size_t len, char *why, size_t wlen)
{
    redisReply *r = redisCommand(c, "CONFIG GET %s", name);
    int rc = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        str_copy(out, len, r->element[1]->str);
        rc = 0;
    } else {
        snprintf(why, wlen, "%s", !r ? c->errstr
                                  : r->type == REDIS_REPLY_ERROR ? r->str
                                                                 : "no value");
    }
    freeReplyObject(r);
    return rc;
}

/* The value of field in INFO's text, or "" when absent. */
static void info_field(const char *info, const char *field, char *out,
                       size_t len)
{
    size_t fl = strlen(field);

    out[0] = '\0';
    for (const char *p = info; p && *p; p = strchr(p, '\n'), p += p != NULL) {
        if (!strncmp(p, field, fl) && p[fl] == ':') {
            size_t n = strcspn(p + fl + 1, "\r\n");
            snprintf(out, len, "%.*s", (int)n, p + fl + 1);
            return;
        }
    }
}

/* What a durable Redis shows: the eviction policy and whether it
 * persists, with the words that say so and what would mend it. */
typedef struct keeps {
    char policy[64];
    int persists;
    char how[200];
    const char *fix;
} keeps;

static int by_config(redisContext *c, keeps *k, char *why, size_t wlen)
{
    char aof[16], save[96];

    if (config_get(c, "maxmemory-policy", k->policy, sizeof k->policy, why,
                   wlen) ||
        config_get(c, "appendonly", aof, sizeof aof, why, wlen) ||
        config_get(c, "save", save, sizeof save, why, wlen))
        return -1;
    k->persists = !strcmp(aof, "yes") || save[0];
    snprintf(k->how, sizeof k->how, "appendonly %s, save \"%s\"", aof, save);
    k->fix = "appendonly yes (or a save schedule)";
    return 0;
}

/* INFO shows the append-only file, not a save schedule: without CONFIG,
 * only the append-only file counts (a snapshot taken since the start may
 * have been a replica's sync, not a schedule). */
static int by_info(redisContext *c, keeps *k, const char *cfg_why, char *why,
                   size_t wlen)
{
    redisReply *r = redisCommand(c, "INFO");
    char aof[16];

    if (!r || r->type != REDIS_REPLY_STRING) {
        snprintf(why, wlen, "%s", !r ? c->errstr
                                  : r->type == REDIS_REPLY_ERROR ? r->str
                                                                 : "no text");
        freeReplyObject(r);
        return -1;
    }
    info_field(r->str, "maxmemory_policy", k->policy, sizeof k->policy);
    info_field(r->str, "aof_enabled", aof, sizeof aof);
    freeReplyObject(r);
    k->persists = !strcmp(aof, "1");
    snprintf(k->how, sizeof k->how, "INFO: aof_enabled:%s; a save schedule "
             "shows only to CONFIG GET, refused: %.100s", aof[0] ? aof : "?",
             cfg_why);
    k->fix = "appendonly yes (or allow the user +config|get to see a save "
             "schedule)";
    return 0;
}

/* Appends text to buf (of len), " and " between. */
static void add(char *buf, size_t len, const char *text)
{
    size_t n = strlen(buf);

    snprintf(buf + n, len - n, "%s%s", n ? " and " : "", text);
}

int rconn_durable(redisContext *c, const rtarget *t, const char *addr,
                  cs_err *err)
{
    keeps k = {{0}, 0, {0}, NULL};
    char who[512], cfg_why[160], info_why[160], what[400] = "", fix[200] = "";

    rt_describe(t, addr, who, sizeof who);
    if (by_config(c, &k, cfg_why, sizeof cfg_why) &&
        by_info(c, &k, cfg_why, info_why, sizeof info_why)) {
        cs_err_set(err, "redis %s: cannot tell whether it keeps cascade's "
                   "state: CONFIG GET refused (%s) and INFO refused (%s); "
                   "allow the user +info, or set redis.require_durable: "
                   "false", who, cfg_why, info_why);
        return -1;
    }
    if (strcmp(k.policy, "noeviction")) {
        char e[128];
        snprintf(e, sizeof e, "evicts keys (maxmemory-policy %s)",
                 k.policy[0] ? k.policy : "not shown");
        add(what, sizeof what, e);
        add(fix, sizeof fix, "maxmemory-policy noeviction");
    }
    if (!k.persists) {
        char p[256];
        snprintf(p, sizeof p, "does not persist (%s)", k.how);
        add(what, sizeof what, p);
        add(fix, sizeof fix, k.fix);
    }
    if (!what[0])
        return 0;
    cs_err_set(err, "redis %s %s: cascade's state and journal could be lost; "
               "set %s in its configuration, or redis.require_durable: false "
               "for a throwaway Redis", who, what, fix);
    return -1;
}

int rconn_check(const rtarget *t, cs_err *err)
{
    char addr[256];
    redisContext *c = rconn_open(t, addr, sizeof addr, err);
    int rc = 0;

    if (!c)
        return -1;
    if (t->require_durable)
        rc = rconn_durable(c, t, addr, err);
    redisFree(c);
    return rc;
}
