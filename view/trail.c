/* An incident's audit trail (view/trail.h). */
#include "view/trail.h"

#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"

struct vw_trail {
    char incident[64]; /* "" for every incident */
    json_t *records;
};

vw_trail *vw_trail_new(const char *incident)
{
    vw_trail *t = xcalloc(1, sizeof *t);

    str_copy(t->incident, sizeof t->incident, incident ? incident : "");
    t->records = json_array();
    return t;
}

void vw_trail_free(vw_trail *t)
{
    if (!t)
        return;
    json_decref(t->records);
    free(t);
}

int vw_trail_add(vw_trail *t, const char *json, size_t len)
{
    json_t *r = json_loadb(json, len, 0, NULL);
    const char *inc = json_string_value(json_object_get(r, "incident"));

    if (!json_is_string(json_object_get(r, "action")) ||
        !json_is_string(json_object_get(r, "event"))) {
        json_decref(r);
        return -1;
    }
    if (t->incident[0] && (!inc || strcmp(inc, t->incident))) {
        json_decref(r);
        return 0;
    }
    json_array_append_new(t->records, r);
    return 0;
}

const json_t *vw_trail_records(const vw_trail *t)
{
    return t->records;
}

const char *vw_event_state(const char *event)
{
    static const char *const map[][2] = {
        {"request", "requested"}, {"waiting", "waiting"},
        {"approved", "approved"}, {"started", "running"},
        {"resumed", "running"},   {"step_started", "running"},
        {"done", "done"},         {"failed", "failed"},
        {"refused", "refused"},   {"denied", "denied"},
        {"expired", "expired"},   {"proposed", "proposed"}};

    for (size_t i = 0; event && i < sizeof map / sizeof *map; i++)
        if (!strcmp(event, map[i][0]))
            return map[i][1];
    return NULL;
}

const char *vw_action_state(const vw_trail *t, const char *action,
                            const char **who)
{
    const char *state = NULL;
    size_t i;
    json_t *r;

    json_array_foreach(t->records, i, r) {
        const char *s;
        if (strcmp(json_string_value(json_object_get(r, "action")), action))
            continue;
        if ((s = vw_event_state(json_string_value(json_object_get(r, "event"))))) {
            state = s;
            if (who)
                *who = json_string_value(json_object_get(r, "who"));
        }
    }
    return state;
}
