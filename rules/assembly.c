/* The open multi-line assemblies (rules/assembly.h). */
#include "rules/assembly.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/strmap.h"
#include "rules/lines.h"

struct assemblies {
    strmap *tracebacks; /* "cluster|host|job|rank" -> struct traceback */
    strmap *tb_gone;    /* keys ended since the last asb_changes */
    int reports;        /* 0: no open report (a hint, recounted lazily) */
    /* Open assemblies per hash of their host (OPEN_SLOTS counters), and
     * those whose key did not say its host: a line whose host has none
     * (the usual case, even with assemblies open elsewhere) needs no key
     * built and looked up. A counter never misses an open one. */
    uint32_t *open_hosts;
    size_t unslotted;
};

#define OPEN_SLOTS 4096

/* printf into a new buffer; -1 when out of memory. */
static int asprintf_like(char **out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int64_t max_age(const struct traceback *tb)
{
    switch (tb->kind) {
    case TB_KMSG:
        return KMSG_MAX_AGE;
    case TB_REPORT: /* ended by the classifier (cls_report_next), never by age */
        return INT64_MAX;
    case TB_REPORTED:
        return REPORT_KEEP;
    case TB_TRACE:
        break;
    }
    return TB_MAX_AGE;
}

static void tb_free(void *p)
{
    struct traceback *tb = p;

    if (tb)
        json_decref(tb->head);
    free(tb);
}

static int host_slot(const char *host)
{
    const char *h = host ? host : "";

    return (int)(hash_fnv1a(HASH_FNV_SEED, h, strlen(h)) % OPEN_SLOTS);
}

/* The slot of the host in a stored key ("CLUSTER|HOST|JOB|RANK" or
 * "CLUSTER|HOST|kernel"), for an assembly read back at start-up. -1 when
 * the host is not certain: a '|' inside a part, or a key that may have
 * been cut at the key buffer's size. Such an assembly is looked up on
 * every line. */
static int key_slot(const char *key)
{
    const char *a = strchr(key, '|'), *b = a ? strchr(a + 1, '|') : NULL;
    const char *c = b ? strchr(b + 1, '|') : NULL;
    size_t n = strlen(key);
    int kernel = n >= 7 && !strcmp(key + n - 7, "|kernel");
    char host[256];

    if (!b || n >= TB_KEY_LEN - 1 ||
        (kernel ? b != key + n - 7 : !c || strchr(c + 1, '|')) ||
        (size_t)(b - a - 1) >= sizeof host)
        return -1;
    memcpy(host, a + 1, (size_t)(b - a - 1));
    host[b - a - 1] = '\0';
    return host_slot(host);
}

static void slot_count(assemblies *c, const struct traceback *tb, int d)
{
    if (tb->slot < 0)
        c->unslotted += (size_t)d;
    else
        c->open_hosts[tb->slot] += (uint32_t)d;
}

/* Whether a line of host may continue an open assembly. */
int asb_may_be_open(const assemblies *c, const char *host)
{
    return strmap_len(c->tracebacks) &&
           (c->unslotted || c->open_hosts[host_slot(host)]);
}

/* Every change to the assembly map goes through these two, which keep the
 * counters. slot: host_slot of the line's host, or key_slot. */
static void tb_insert(assemblies *c, const char *key, struct traceback *tb,
                      int slot)
{
    struct traceback *old;

    tb->slot = slot;
    slot_count(c, tb, 1);
    if ((old = strmap_put(c->tracebacks, key, tb))) {
        slot_count(c, old, -1);
        tb_free(old);
    }
}

static void tb_remove(assemblies *c, const char *key)
{
    struct traceback *tb = strmap_del(c->tracebacks, key);

    if (tb) {
        slot_count(c, tb, -1);
        tb_free(tb);
    }
}

/* Forgets an assembly and remembers to delete its stored copy. */
void asb_end(assemblies *c, const char *key)
{
    tb_remove(c, key);
    strmap_put(c->tb_gone, key, (void *)1);
}

/* Starts (or restarts) the assembly under key at ts, empty and due to be
 * stored. */
struct traceback *asb_open(assemblies *c, const char *key,
                           const char *host, int64_t ts)
{
    struct traceback *tb = strmap_get(c->tracebacks, key);
    int slot;

    if (!tb) {
        tb = xcalloc(1, sizeof *tb);
        tb_insert(c, key, tb, host_slot(host));
    }
    slot = tb->slot;
    json_decref(tb->head);
    memset(tb, 0, sizeof *tb);
    tb->slot = slot;
    tb->started = ts;
    tb->dirty = 1;
    strmap_del(c->tb_gone, key);
    return tb;
}

static int asprintf_like(char **out, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(*out = malloc((size_t)n + 1)))
        return -1;
    va_start(ap, fmt);
    vsnprintf(*out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return n;
}

/* The stored form of an assembly (cls_tb_restore reads it back); NULL
 * when there is nothing worth keeping. malloc'd. */
static char *tb_value(const struct traceback *tb)
{
    char *head = NULL, *out = NULL;
    int n = -1;

    switch (tb->kind) {
    case TB_TRACE:
        n = asprintf_like(&out, "%lld %d %d", (long long)tb->started,
                          tb->forward, tb->backward);
        break;
    case TB_KMSG:
        n = asprintf_like(&out, "%lld K %d %s", (long long)tb->started,
                          tb->lines, tb->text);
        break;
    case TB_REPORT:
        if (!(head = json_dumps(tb->head, JSON_COMPACT)))
            return NULL;
        n = asprintf_like(&out, "%lld R %lld %d %s\t%s",
                          (long long)tb->started, (long long)tb->last,
                          tb->lines, tb->text, head);
        free(head);
        break;
    case TB_REPORTED:
        n = asprintf_like(&out, "%lld Z %s", (long long)tb->started,
                          tb->text);
        break;
    }
    return n < 0 ? NULL : out;
}

/* The event time of the cluster an assembly key ("CLUSTER|...") is in. */
static int64_t key_clock(const char *key, asb_clock_fn now_of, void *arg)
{
    char cluster[128];
    const char *bar = strchr(key, '|');

    if (!now_of || !bar)
        return INT64_MIN;
    snprintf(cluster, sizeof cluster, "%.*s", (int)(bar - key), key);
    return now_of(arg, cluster);
}

void asb_changes(assemblies *c, asb_clock_fn now_of, asb_change_fn fn,
                 void *arg)
{
    size_t pos = 0, nold = 0;
    const char *k;
    void *v;
    char **old = NULL;

    while (strmap_next(c->tracebacks, &pos, &k, &v)) {
        struct traceback *tb = v;
        int64_t now = tb->kind == TB_REPORT ? INT64_MIN
                                            : key_clock(k, now_of, arg);
        if (now != INT64_MIN && now - tb->started > max_age(tb)) {
            old = xrealloc(old, (nold + 1) * sizeof *old);
            old[nold++] = xstrdup(k);
        } else if (tb->dirty) {
            char *val = tb_value(tb);
            tb->dirty = 0;
            if (val)
                fn(arg, k, val);
            free(val);
        }
    }
    for (size_t i = 0; i < nold; i++) {
        asb_end(c, old[i]);
        free(old[i]);
    }
    free(old);
    pos = 0;
    while (strmap_next(c->tb_gone, &pos, &k, &v))
        fn(arg, k, NULL);
    strmap_free(c->tb_gone, NULL);
    c->tb_gone = strmap_new();
}

/* "R" and "Z": a report open ("STARTED R LAST LINES TEXT<tab>SIGNAL") or
 * finished ("STARTED Z TEXT"). */
static int report_restore(struct traceback *tb, const char *value)
{
    long long started, last;
    const char *tab;
    int at = 0;

    if (sscanf(value, "%lld Z %n", &started, &at) == 1 && at) {
        tb->kind = TB_REPORTED;
        tb->started = started;
        str_copy(tb->text, sizeof tb->text, value + at);
        return 0;
    }
    at = 0;
    if (sscanf(value, "%lld R %lld %d %n", &started, &last, &tb->lines,
               &at) != 3 || !at || !(tab = strchr(value + at, '\t')))
        return -1;
    tb->kind = TB_REPORT;
    tb->started = started;
    tb->last = last;
    snprintf(tb->text, sizeof tb->text, "%.*s", (int)(tab - value - at),
             value + at);
    tb->head = json_loads(tab + 1, 0, NULL);
    return json_is_object(tb->head) ? 0 : -1;
}

int asb_restore(assemblies *c, const char *key, const char *value)
{
    long long started;
    int f, b, at = 0;
    char mark = 0;
    struct traceback *tb;

    if (!strchr(key, '|'))
        return -1;
    tb = xcalloc(1, sizeof *tb);
    if (sscanf(value, "%lld %c", &started, &mark) == 2 &&
        (mark == 'R' || mark == 'Z')) {
        if (report_restore(tb, value)) {
            tb_free(tb);
            return -1;
        }
        if (tb->kind == TB_REPORT)
            c->reports++;
        tb_insert(c, key, tb, key_slot(key));
        return 0;
    }
    if (sscanf(value, "%lld K %d %n", &started, &tb->lines, &at) == 2 && at &&
        value[at]) {
        tb->kind = TB_KMSG;
        str_copy(tb->text, sizeof tb->text, value + at);
    } else if (sscanf(value, "%lld %d %d", &started, &f, &b) == 3) {
        tb->forward = f != 0;
        tb->backward = b != 0;
    } else {
        free(tb);
        return -1;
    }
    tb->started = started;
    tb_insert(c, key, tb, key_slot(key));
    return 0;
}

assemblies *asb_new(void)
{
    assemblies *a = xcalloc(1, sizeof *a);

    a->tracebacks = strmap_new();
    a->tb_gone = strmap_new();
    a->open_hosts = xcalloc(OPEN_SLOTS, sizeof *a->open_hosts);
    return a;
}

void asb_free(assemblies *a)
{
    if (!a)
        return;
    strmap_free(a->tracebacks, tb_free);
    strmap_free(a->tb_gone, NULL);
    free(a->open_hosts);
    free(a);
}

struct traceback *asb_get(const assemblies *a, const char *key)
{
    return strmap_get(a->tracebacks, key);
}

int asb_next(const assemblies *a, size_t *pos, const char **key,
             struct traceback **tb)
{
    void *v;

    if (!strmap_next(a->tracebacks, pos, key, &v))
        return 0;
    *tb = v;
    return 1;
}

int asb_reports(const assemblies *a)
{
    return a->reports;
}

void asb_set_reports(assemblies *a, int n)
{
    a->reports = n;
}

/* Appends src to key[*at..len), truncating; keeps key terminated. */
static void key_put(char *key, size_t len, size_t *at, const char *src)
{
    size_t n = strlen(src);

    if (*at + n >= len)
        n = len - 1 - *at;
    memcpy(key + *at, src, n);
    *at += n;
    key[*at] = '\0';
}

/* Built on every app line that may touch an assembly, so by hand rather
 * than through snprintf. */
void asb_key_app(const char *cluster, const char *host, const char *job,
                 int rank, char *key, size_t len)
{
    char num[16], *p = num + sizeof num;
    unsigned v = rank < 0 ? 0u - (unsigned)rank : (unsigned)rank;
    size_t at = 0;

    *--p = '\0';
    do
        *--p = (char)('0' + v % 10);
    while ((v /= 10) && p > num + 1);
    if (rank < 0)
        *--p = '-';
    key[0] = '\0';
    key_put(key, len, &at, cluster);
    key_put(key, len, &at, "|");
    key_put(key, len, &at, host ? host : "");
    key_put(key, len, &at, "|");
    key_put(key, len, &at, job ? job : "");
    key_put(key, len, &at, "|");
    key_put(key, len, &at, p);
}

void asb_key_kernel(const char *cluster, const char *host, char *key,
                    size_t len)
{
    size_t at = 0;

    key[0] = '\0';
    key_put(key, len, &at, cluster);
    key_put(key, len, &at, "|");
    key_put(key, len, &at, host);
    key_put(key, len, &at, "|kernel");
}

/* A traceback's frame: which pass (forward, backward) it shows. */
void asb_frame_pass(struct traceback *tb, const char *l)
{
    if (ln_backward_frame(l))
        tb->backward = 1;
    else if (strstr(l, "in forward") || strstr(l, "_call_impl") ||
             strstr(l, "model(") || strstr(l, "forward("))
        tb->forward = 1;
}

/* Whether line (already stripped of its rank prefix) continues the report:
 * indented, not before it, and while it is still being printed. A
 * traceback's head continues it too: Chainer's trainer prints the error
 * first and the traceback that raised it after. */
int asb_report_continues(const struct traceback *tb, const char *line,
                            int64_t ts)
{
    return (ln_is_frame(line) || ln_trace_head(line)) && ts >= tb->started &&
           ts - tb->last <= REPORT_QUIET && tb->lines < REPORT_MAX_LINES;
}

/* Adds a line to the detail: a line ending in ':' is a title for the next
 * one; others are separated by "; ". A line already read is not added
 * again (a redelivery after a restart repeats lines). */
void asb_report_add(struct traceback *tb, const char *line, int64_t ts)
{
    const char *piece = ln_report_piece(line);
    size_t len = strlen(tb->text);

    tb->last = ts;
    tb->lines++;
    tb->dirty = 1;
    if (ln_trace_head(line))
        return; /* says nothing of the fault */
    /* frames printed after the error name the pass it was in */
    asb_frame_pass(tb, line);
    if (!*piece || strstr(tb->text, piece))
        return;
    snprintf(tb->text + len, sizeof tb->text - len, "%s%s",
             !len ? "" : ln_ends_with_colon(tb->text) ? " " : "; ", piece);
    for (char *t = tb->text + len; *t; t++)
        if (*t == '\t') /* the stored form separates fields with tabs */
            *t = ' ';
}
