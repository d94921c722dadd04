/* Test helper: the scenarios of an engine's incidents, in opening order,
 * space-separated ("" for none). */
#ifndef CS_TEST_INCIDENTS_H
#define CS_TEST_INCIDENTS_H

#include <stdio.h>

#include "engine/engine.h"

static inline const char *incident_scenarios(engine *e, char *buf, size_t len)
{
    json_t *all = eng_incidents(e), *inc;
    size_t i, off = 0;

    buf[0] = '\0';
    json_array_foreach(all, i, inc)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "",
                                json_string_value(json_object_get(inc, "scenario")));
    json_decref(all);
    return buf;
}

#endif
