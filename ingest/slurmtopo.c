#include "ingest/slurmtopo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/hostlist.h"

#define STOPO_MAX_NODES 4096

typedef struct sw_line {
    char name[128];
    char nodes[4096];
    int level; /* -1: none given */
} sw_line;

static void copy_n(char *dst, size_t cap, const char *src, size_t n)
{
    snprintf(dst, cap, "%.*s", (int)(n < cap ? n : cap - 1), src);
}

/* One "KEY=VALUE KEY=VALUE ..." line into l; 0 when it names no switch
 * (a message such as "No switches found"), 1 when it does, -1 when its
 * Level is not a number. */
static int read_line(const char *p, const char *end, sw_line *l)
{
    memset(l, 0, sizeof *l);
    l->level = -1;
    while (p < end) {
        const char *w = p, *eq, *we;
        while (w < end && (*w == ' ' || *w == '\t'))
            w++;
        for (we = w; we < end && *we != ' ' && *we != '\t'; we++)
            ;
        p = we;
        if (we == w)
            break;
        if (!(eq = memchr(w, '=', (size_t)(we - w))))
            continue;
        size_t klen = (size_t)(eq - w), vlen = (size_t)(we - eq - 1);
        if (klen == 10 && !strncmp(w, "SwitchName", 10))
            copy_n(l->name, sizeof l->name, eq + 1, vlen);
        else if (klen == 5 && !strncmp(w, "Nodes", 5))
            copy_n(l->nodes, sizeof l->nodes, eq + 1, vlen);
        else if (klen == 5 && !strncmp(w, "Level", 5)) {
            char num[16];
            char *e;
            copy_n(num, sizeof num, eq + 1, vlen);
            l->level = (int)strtol(num, &e, 10);
            if (!num[0] || *e || l->level < 0)
                return -1;
        }
    }
    return l->name[0] != '\0';
}

int stopo_parse(const char *text, size_t len, stopo_fn fn, void *arg,
                cs_err *err)
{
    const char *p = text, *end = text + len;
    char (*names)[128] = NULL;
    int leaves = 0, lineno = 0, rc = -1;
    sw_line l;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        int k, got;

        lineno++;
        got = read_line(p, le, &l);
        p = nl ? nl + 1 : end;
        if (got < 0) {
            cs_err_set(err, "scontrol show topology, line %d: Level is not "
                       "a number", lineno);
            goto out;
        }
        if (!got || l.level != 0 || !l.nodes[0])
            continue; /* no switch, or not a leaf */
        if (!names && !(names = malloc(STOPO_MAX_NODES * sizeof *names))) {
            cs_err_set(err, "out of memory");
            goto out;
        }
        if ((k = hostlist_expand(l.nodes, names, STOPO_MAX_NODES)) < 0) {
            cs_err_set(err, "scontrol show topology, line %d: switch %s: "
                       "Nodes=%s is not a hostlist", lineno, l.name, l.nodes);
            goto out;
        }
        for (int i = 0; i < k; i++)
            fn(arg, names[i], l.name);
        leaves++;
    }
    rc = leaves;
out:
    free(names);
    return rc;
}

static void rack_put(void *arg, const char *node, const char *sw)
{
    char *v = strdup(sw);

    if (v)
        free(strmap_put(arg, node, v));
}

strmap *stopo_racks(const char *text, size_t len, cs_err *err)
{
    strmap *m = strmap_new();

    if (!m) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    if (stopo_parse(text, len, rack_put, m, err) < 0) {
        strmap_free(m, free);
        return NULL;
    }
    return m;
}

strmap *stopo_set(const char *hostlist, cs_err *err)
{
    char (*names)[128] = malloc(STOPO_MAX_NODES * sizeof *names);
    strmap *m = names ? strmap_new() : NULL;
    int k;

    if (!m) {
        free(names);
        cs_err_set(err, "out of memory");
        return NULL;
    }
    if ((k = hostlist_expand(hostlist, names, STOPO_MAX_NODES)) < 0) {
        cs_err_set(err, "'%s': not a hostlist (gpu-[001-004],gpu-010)",
                   hostlist);
        strmap_free(m, NULL);
        m = NULL;
    }
    for (int i = 0; m && i < k; i++)
        strmap_put(m, names[i], m);
    free(names);
    return m;
}
