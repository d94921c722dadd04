/* Incidents as text (view/render.h). */
#include "view/render.h"

#include <stdlib.h>
#include <string.h>

#include "rules/playbooks.h"
#include "view/incidents.h"

static const char *str_of(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* "2026-03-02T08:00:05.000Z" -> "2026-03-02 08:00:05" */
static const char *when(const char *ts, char *buf, size_t len)
{
    snprintf(buf, len, "%.10s %.8s", ts, strlen(ts) > 11 ? ts + 11 : "");
    return buf;
}

/* What the incident is about, most specific first: "node gpu-031". */
static const char *where(const json_t *inc, char *buf, size_t len)
{
    static const char *const keys[] = {"node", "job", "rack", "team",
                                       "job_name"};
    const json_t *scope = json_object_get(inc, "scope");

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (*str_of(scope, keys[i])) {
            snprintf(buf, len, "%s %s", keys[i], str_of(scope, keys[i]));
            return buf;
        }
    snprintf(buf, len, "cluster");
    return buf;
}

/* At most max bytes of s, never cutting a UTF-8 sequence, "..." when cut. */
static void cut(FILE *f, const char *s, int max)
{
    size_t n = strlen(s);

    if (max <= 0 || n <= (size_t)max) {
        fputs(s, f);
        return;
    }
    n = max > 3 ? (size_t)max - 3 : 0;
    while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    fprintf(f, "%.*s...", (int)n, s);
}

void vw_table(FILE *f, const json_t *const *incs, size_t n, int width)
{
    char a[40], b[80];
    /* the fixed columns take 125 bytes; the summary what is left */
    int room = width > 0 ? (width - 125 > 20 ? width - 125 : 20) : 0;

    fprintf(f, "%-20s  %-8s  %-28s  %-10s  %-20s  %-19s  %7s  %s\n", "ID",
            "STATUS", "SCENARIO", "CLUSTER", "WHERE", "OPENED", "ACTIONS",
            "SUMMARY");
    for (size_t i = 0; i < n; i++) {
        const json_t *inc = incs[i];
        const char *cluster = str_of(json_object_get(inc, "scope"), "cluster");
        fprintf(f, "%-20s  %-8s  %-28s  %-10s  %-20s  %-19s  %7zu  ",
                str_of(inc, "id"), vw_status(inc), str_of(inc, "scenario"),
                *cluster ? cluster : "default", where(inc, b, sizeof b),
                when(str_of(inc, "opened"), a, sizeof a),
                json_array_size(json_object_get(inc, "actions")));
        cut(f, str_of(inc, "summary"), room);
        fputc('\n', f);
    }
}

json_t *vw_actions(const json_t *inc, const vw_trail *t)
{
    json_t *out = json_deep_copy(json_object_get(inc, "actions")), *a;
    size_t i;

    if (!json_is_array(out)) {
        json_decref(out);
        return json_array();
    }
    json_array_foreach(out, i, a) {
        char id[32];
        const char *state, *who = NULL;
        /* the id is made from the proposal as the correlator sent it */
        json_t *sent = json_deep_copy(a);
        json_object_set_new(sent, "state", json_string("proposed"));
        pb_action_id(str_of(inc, "id"), sent, id, sizeof id);
        json_decref(sent);
        json_object_set_new(a, "id", json_string(id));
        if (t && (state = vw_action_state(t, id, &who))) {
            json_object_set_new(a, "state", json_string(state));
            if (who)
                json_object_set_new(a, "by", json_string(who));
        }
    }
    return out;
}

static void show_chain(FILE *f, const json_t *inc)
{
    char a[40];
    size_t i;
    json_t *e;

    fprintf(f, "\nchain (root -> effects -> symptoms):\n");
    json_array_foreach(json_object_get(inc, "chain"), i, e) {
        const char *role = str_of(e, "role");
        fprintf(f, "  %-8s %s", role, when(str_of(e, "ts"), a, sizeof a));
        if (*str_of(e, "scenario"))
            fprintf(f, "  %s", str_of(e, "scenario"));
        if (*str_of(e, "node"))
            fprintf(f, "  node %s", str_of(e, "node"));
        if (*str_of(e, "job"))
            fprintf(f, "  job %s", str_of(e, "job"));
        if (*str_of(e, "state"))
            fprintf(f, "  %s", str_of(e, "state"));
        fputc('\n', f);
        if (*str_of(e, "signal"))
            fprintf(f, "           | %s\n", str_of(e, "signal"));
    }
}

static void show_actions(FILE *f, const json_t *inc, const vw_trail *t)
{
    json_t *acts = vw_actions(inc, t), *a;
    size_t i;

    fprintf(f, "\nactions (%zu):\n", json_array_size(acts));
    json_array_foreach(acts, i, a) {
        char *target = json_dumps(json_object_get(a, "target"), JSON_COMPACT);
        fprintf(f, "  %s  %-16s %-6s %-10s %s%s%s\n", str_of(a, "id"),
                str_of(a, "playbook"), str_of(a, "approval"), str_of(a, "state"),
                target ? target : "", *str_of(a, "by") ? "  by " : "",
                str_of(a, "by"));
        free(target);
    }
    json_decref(acts);
}

static void show_trail(FILE *f, const vw_trail *t)
{
    const json_t *recs = vw_trail_records(t);
    size_t i;
    json_t *r;

    fprintf(f, "\naudit (%zu records):\n", json_array_size(recs));
    json_array_foreach(recs, i, r)
        fprintf(f, "  %.23s  %s  %-16s %-14s %s\n", str_of(r, "ts"),
                str_of(r, "action"), str_of(r, "event"), str_of(r, "who"),
                str_of(r, "detail"));
}

void vw_show(FILE *f, const json_t *inc, const vw_trail *t)
{
    const json_t *ev = json_object_get(inc, "evidence");
    const json_t *scope = json_object_get(inc, "scope");
    char a[40], b[40], *scope_txt = json_dumps(scope, JSON_COMPACT);
    size_t i;
    json_t *s;

    fprintf(f, "%s  %s  %s\n", str_of(inc, "id"), str_of(inc, "scenario"),
            vw_status(inc));
    fprintf(f, "scope: %s\n", scope_txt ? scope_txt : "{}");
    free(scope_txt);
    fprintf(f, "opened %s, updated %s", when(str_of(inc, "opened"), a, sizeof a),
            when(str_of(inc, "updated"), b, sizeof b));
    if (*str_of(inc, "resolved"))
        fprintf(f, ", resolved %s (%s)", when(str_of(inc, "resolved"), a, sizeof a),
                str_of(inc, "resolution"));
    if (*str_of(inc, "merged_into"))
        fprintf(f, ", merged into %s", str_of(inc, "merged_into"));
    fprintf(f, "\nevidence: %lld signals from ",
            (long long)json_integer_value(json_object_get(ev, "count")));
    json_array_foreach(json_object_get(ev, "sources"), i, s)
        fprintf(f, "%s%s", i ? ", " : "", json_string_value(s));
    fprintf(f, ", %s to %s\n", when(str_of(ev, "first"), a, sizeof a),
            when(str_of(ev, "last"), b, sizeof b));
    fprintf(f, "\n%s\n", str_of(inc, "summary"));
    show_chain(f, inc);
    if (json_array_size(json_object_get(inc, "children")))
        fprintf(f, "  (%zu folded in: see --json's children)\n",
                json_array_size(json_object_get(inc, "children")));
    show_actions(f, inc, t);
    if (t)
        show_trail(f, t);
}
