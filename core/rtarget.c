/* A Redis target (core/rtarget.h): its keyword table and checks. */
#include "core/rtarget.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/secret.h"
#include "core/str.h"
#include "core/ydoc.h"

void rt_init(rtarget *t)
{
    memset(t, 0, sizeof *t);
    t->wait_timeout_ms = 1000;
    t->require_durable = 1;
}

int rt_addr_parse(const char *addr, char *host, size_t len, int *port)
{
    const char *colon, *path = !strncmp(addr, "unix:", 5) ? addr + 5
                               : addr[0] == '/'          ? addr
                                                         : NULL;
    char *end;
    long p = RT_PORT;
    size_t n;

    if (path) {
        if (!*path || strlen(path) >= len)
            return -1;
        str_copy(host, len, path);
        *port = 0;
        return 1;
    }
    colon = strrchr(addr, ':');
    if (colon) {
        errno = 0;
        p = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || p < 1 || p > 65535)
            return -1;
    }
    n = colon ? (size_t)(colon - addr) : strlen(addr);
    if (n == 0 || n >= len)
        return -1;
    memcpy(host, addr, n);
    host[n] = '\0';
    *port = (int)p;
    return 0;
}

static int addr_ok(const char *addr)
{
    char host[256];
    int port;

    return rt_addr_parse(addr, host, sizeof host, &port) >= 0;
}

int rt_set_addr(rtarget *t, const char *addr, cs_err *err)
{
    if (!addr_ok(addr) || strlen(addr) >= sizeof t->addr) {
        cs_err_set(err, "redis address '%.200s' is not host:port, host, a "
                   "socket path or unix:PATH", addr);
        return -1;
    }
    str_copy(t->addr, sizeof t->addr, addr);
    t->nsentinels = 0;
    t->master[0] = '\0';
    return 0;
}

int rt_configured(const rtarget *t)
{
    return t->addr[0] || t->nsentinels > 0;
}

int rt_same(const rtarget *a, const rtarget *b)
{
    if (strcmp(a->addr, b->addr) || strcmp(a->user, b->user) ||
        strcmp(a->password, b->password) || a->db != b->db ||
        a->nsentinels != b->nsentinels || strcmp(a->master, b->master) ||
        strcmp(a->sentinel_password, b->sentinel_password) ||
        a->wait_replicas != b->wait_replicas ||
        a->wait_timeout_ms != b->wait_timeout_ms ||
        a->require_durable != b->require_durable)
        return 0;
    for (int i = 0; i < a->nsentinels; i++)
        if (strcmp(a->sentinels[i], b->sentinels[i]))
            return 0;
    return 1;
}

void rt_wipe(rtarget *t)
{
    explicit_bzero(t->password, sizeof t->password);
    explicit_bzero(t->sentinel_password, sizeof t->sentinel_password);
}

void rt_describe(const rtarget *t, const char *addr, char *buf, size_t len)
{
    char where[300], who[200] = "", db[32] = "";

    if (addr && *addr)
        snprintf(where, sizeof where, "%s", addr);
    else if (t->nsentinels)
        snprintf(where, sizeof where, "master '%s' via sentinels", t->master);
    else
        snprintf(where, sizeof where, "%s", t->addr);
    if (t->user[0])
        snprintf(who, sizeof who, "user %s", t->user);
    if (t->db)
        snprintf(db, sizeof db, "%sdb %d", who[0] ? ", " : "", t->db);
    if (who[0] || db[0])
        snprintf(buf, len, "%s (%s%s)", where, who, db);
    else
        snprintf(buf, len, "%s", where);
}

/* ---- the `redis:` block ---- */

/* What the setters need besides the target: the prefix of messages. */
typedef struct reading {
    rtarget t;
    const char *prefix;
} reading;

#define F(f) offsetof(reading, t.f)
#define SZ(f) (long long)sizeof(((reading *)0)->t.f)

/* "" is no secret at all: what `cascade config` prints when none is set,
 * so that its output loads again. */
static int secret_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    reading *r = obj;
    cs_err e;

    if (!*yd_scalar(v)) {
        *((char *)obj + k->off) = '\0';
        return 0;
    }
    if (secret_read(yd_scalar(v), (char *)obj + k->off, (size_t)k->max, &e)) {
        yd_problem(d, v, "%s%s: %s", r->prefix, k->name, e.msg);
        return -1;
    }
    return 0;
}

static int addr_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    reading *r = obj;
    const char *s = yd_scalar(v);

    if (*s && !addr_ok(s)) {
        yd_problem(d, v, "%s%s: '%.200s' is not host:port, host, a socket "
                   "path or unix:PATH", r->prefix, k->name, s);
        return -1;
    }
    str_copy((char *)obj + k->off, (size_t)k->max, s);
    return 0;
}

/* A Sentinel is always TCP (host:port; the port is not implied: 26379
 * is Sentinel's, 6379 Redis's, and a mix-up would be silent). */
static int sentinels_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    reading *r = obj;
    size_t n = yd_len(v);

    if (n > RT_MAX_SENTINELS) {
        yd_problem(d, v, "%s%s: at most %d", r->prefix, k->name,
                   RT_MAX_SENTINELS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yd_item(d, v, i);
        const char *s = yd_scalar(item);
        char host[128];
        int port;
        if (!s || !strchr(s, ':') ||
            rt_addr_parse(s, host, sizeof host, &port) != 0 ||
            strlen(s) >= sizeof r->t.sentinels[0]) {
            yd_problem(d, item ? item : v, "%s%s: '%.200s' is not host:port",
                       r->prefix, k->name, s ? s : "");
            return -1;
        }
        str_copy(r->t.sentinels[i], sizeof r->t.sentinels[i], s);
    }
    r->t.nsentinels = (int)n;
    return 0;
}

static const yd_key keys[] = {
    {"address", YD_BUF, 0, F(addr), 0, SZ(addr), 0, 0, 0, addr_to},
    {"user", YD_BUF, 0, F(user), 0, SZ(user), 0, 0, 0, 0},
    {"password", YD_SCALAR, 0, F(password), 0, SZ(password), 0, 0, 0,
     secret_to},
    {"db", YD_INT, 0, F(db), 0, 65535, 0, 0, 0, 0},
    {"sentinels", YD_LIST, 0, 0, 0, 0, 0, 0, 0, sentinels_to},
    {"master", YD_BUF, 0, F(master), 0, SZ(master), 0, 0, 0, 0},
    {"sentinel_password", YD_SCALAR, 0, F(sentinel_password), 0,
     SZ(sentinel_password), 0, 0, 0, secret_to},
    {"wait_replicas", YD_INT, 0, F(wait_replicas), 0, 64, 0, 0, 0, 0},
    {"wait_timeout_ms", YD_INT, 0, F(wait_timeout_ms), 1, 60000, 0, 0, 0, 0},
    {"require_durable", YD_BOOL, 0, F(require_durable), 0, 0, 0, 0, 0, 0},
};
static const yd_table table = YD_TABLE("'redis'", keys);

/* What the keys mean together, told at the key that is too many or
 * alone. */
static int whole(yd_doc *d, yaml_node_t *map, const reading *r)
{
    const rtarget *t = &r->t;
    yaml_node_t *at;

    if (t->addr[0] && t->nsentinels) {
        at = yd_or(yd_get(d, map, "sentinels"), yd_get(d, map, "address"));
        yd_problem(d, yd_or(at, map), "%saddress and %ssentinels: give one "
                   "(the Sentinels name the master's address)", r->prefix,
                   r->prefix);
        return -1;
    }
    if (t->nsentinels && !t->master[0]) {
        at = yd_or(yd_get(d, map, "sentinels"), map);
        yd_problem(d, at, "%ssentinels needs %smaster (the name the "
                   "Sentinels know it by)", r->prefix, r->prefix);
        return -1;
    }
    if (!t->nsentinels && (t->master[0] || t->sentinel_password[0])) {
        at = yd_or(yd_get(d, map, "master"),
                   yd_get(d, map, "sentinel_password"));
        yd_problem(d, yd_or(at, map), "%s%s without %ssentinels", r->prefix,
                   t->master[0] ? "master" : "sentinel_password", r->prefix);
        return -1;
    }
    if (t->user[0] && !t->password[0]) {
        yd_problem(d, yd_or(yd_get(d, map, "user"), map), "%suser needs "
                   "%spassword (AUTH user password)", r->prefix, r->prefix);
        return -1;
    }
    return 0;
}

int rt_read_yaml(yd_doc *d, yaml_node_t *map, const char *prefix, rtarget *t)
{
    reading r = {.t = *t, .prefix = prefix ? prefix : ""};
    int n = yd_read(d, map, &table, prefix, &r);

    if (n == 0 && whole(d, map, &r) == 0)
        *t = r.t;
    else
        n += n == 0;
    rt_wipe(&r.t);
    return n;
}

void rt_print(const rtarget *t, FILE *f, const char *unset)
{
    const char *note = !rt_configured(t) && unset && *unset ? unset : NULL;

    fprintf(f, "redis:\n  address: \"%s\"%s%s\n", t->addr, note ? "   # " : "",
            note ? note : "");
    fprintf(f, "  user: \"%s\"\n  password: \"%s\"\n  db: %d\n", t->user,
            t->password[0] ? "<set>" : "", t->db);
    fprintf(f, "  sentinels: [");
    for (int i = 0; i < t->nsentinels; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", t->sentinels[i]);
    fprintf(f, "]\n  master: \"%s\"\n  sentinel_password: \"%s\"\n",
            t->master, t->sentinel_password[0] ? "<set>" : "");
    fprintf(f, "  wait_replicas: %d\n  wait_timeout_ms: %d\n"
               "  require_durable: %s\n", t->wait_replicas, t->wait_timeout_ms,
            t->require_durable ? "true" : "false");
}

void rt_reference(void *stdio_file)
{
    reading r = {.prefix = "redis."};

    rt_init(&r.t);
    yd_reference(stdio_file, &table, "`redis`", &r);
}
