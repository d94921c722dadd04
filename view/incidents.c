/* The incidents an operator looks up (view/incidents.h). */
#include "view/incidents.h"

#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/strmap.h"
#include "core/ts.h"

struct vw_incidents {
    strmap *byid; /* id -> json_t (owned) */
};

vw_incidents *vw_incidents_new(void)
{
    vw_incidents *v = xcalloc(1, sizeof *v);

    v->byid = strmap_new();
    return v;
}

static void drop(void *p)
{
    json_decref(p);
}

void vw_incidents_free(vw_incidents *v)
{
    if (!v)
        return;
    strmap_free(v->byid, drop);
    free(v);
}

const char *vw_incidents_take(vw_incidents *v, const char *json, size_t len)
{
    json_t *inc = json_loadb(json, len, 0, NULL);
    const char *id = json_string_value(json_object_get(inc, "id"));

    if (!id || strncmp(id, "inc-", 4) ||
        !json_is_string(json_object_get(inc, "scenario"))) {
        json_decref(inc);
        return NULL;
    }
    json_decref(strmap_put(v->byid, id, inc));
    return id;
}

int vw_incidents_add(vw_incidents *v, const char *json, size_t len)
{
    return vw_incidents_take(v, json, len) ? 0 : -1;
}

size_t vw_incidents_count(const vw_incidents *v)
{
    return strmap_len(v->byid);
}

const json_t *vw_incidents_get(const vw_incidents *v, const char *id)
{
    return strmap_get(v->byid, id);
}

static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

const char *vw_status(const json_t *inc)
{
    const char *s = str_of(inc, "status");

    if (str_of(inc, "merged_into"))
        return "merged";
    return s ? s : "open";
}

json_t *vw_summary(const json_t *inc)
{
    return json_pack("{s:O, s:O, s:s, s:O, s:O, s:O, s:O, s:I}", "id",
                     json_object_get(inc, "id"), "scenario",
                     json_object_get(inc, "scenario"), "status", vw_status(inc),
                     "scope", json_object_get(inc, "scope"), "opened",
                     json_object_get(inc, "opened"), "updated",
                     json_object_get(inc, "updated"), "summary",
                     json_object_get(inc, "summary"), "actions",
                     (json_int_t)json_array_size(json_object_get(inc, "actions")));
}

static int same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* Whether field k of the scope, the root cause, or any chain or children
 * entry is v. */
static int mentions(const json_t *inc, const char *k, const char *v)
{
    static const char *const lists[] = {"chain", "children"};
    size_t i;
    json_t *e;

    if (same(str_of(json_object_get(inc, "scope"), k), v) ||
        same(str_of(json_object_get(inc, "root_cause"), k), v))
        return 1;
    for (int l = 0; l < 2; l++)
        json_array_foreach(json_object_get(inc, lists[l]), i, e)
            if (same(str_of(e, k), v))
                return 1;
    return 0;
}

static int scenario_ok(const char *have, const char *want)
{
    size_t n = strlen(want);

    if (!have)
        return 0;
    if (n && want[n - 1] == '.')
        return !strncmp(have, want, n);
    return !strcmp(have, want);
}

int vw_match(const json_t *inc, const vw_filter *f)
{
    const char *cluster = str_of(json_object_get(inc, "scope"), "cluster");
    int64_t updated;

    if (f->status && strcmp(vw_status(inc), f->status))
        return 0;
    if (f->scenario && !scenario_ok(str_of(inc, "scenario"), f->scenario))
        return 0;
    if (f->cluster && strcmp(cluster ? cluster : "default", f->cluster))
        return 0;
    if (f->node && !mentions(inc, "node", f->node))
        return 0;
    if (f->job && !mentions(inc, "job", f->job))
        return 0;
    if (f->since_us &&
        (!str_of(inc, "updated") ||
         ts_parse_rfc3339(str_of(inc, "updated"), &updated) ||
         updated < f->since_us))
        return 0;
    return 1;
}

/* Newest opened first (RFC 3339 of one form sorts as text), then id. */
static int newest_first(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    const char *ox = str_of(x, "opened"), *oy = str_of(y, "opened");
    int c = strcmp(oy ? oy : "", ox ? ox : "");

    return c ? c : strcmp(str_of(x, "id"), str_of(y, "id"));
}

const json_t **vw_select(const vw_incidents *v, const vw_filter *f, size_t *n)
{
    const json_t **out = xcalloc(strmap_len(v->byid) + 1, sizeof *out);
    size_t pos = 0, k = 0;
    const char *key;
    void *val;

    while (strmap_next(v->byid, &pos, &key, &val))
        if (vw_match(val, f))
            out[k++] = val;
    qsort(out, k, sizeof *out, newest_first);
    *n = k;
    return out;
}

int vw_since(const char *s, int64_t now_us, int64_t *out)
{
    char *end;
    long long n = strtoll(s, &end, 10);
    static const struct {
        char unit;
        int64_t us;
    } units[] = {{'s', TS_SEC}, {'m', 60 * TS_SEC}, {'h', 3600 * TS_SEC},
                 {'d', 86400 * TS_SEC}};

    if (end != s && n >= 0 && end[0] && !end[1])
        for (size_t i = 0; i < sizeof units / sizeof *units; i++)
            if (*end == units[i].unit && n <= 3650LL * 86400) {
                *out = now_us - (int64_t)n * units[i].us;
                return 0;
            }
    return ts_parse_rfc3339(s, out) ? -1 : 0;
}
