/* Rendering: an incident as the JSON of docs/FORMATS.md, with the actions
 * its scenario's response proposes here and now (incident_json.c). Reads
 * the state and changes nothing. Private to engine/. */
#ifndef CS_ENGINE_RENDER_H
#define CS_ENGINE_RENDER_H

#include <jansson.h>

#include "engine/state.h"

json_t *eng_incident_json(engine *e, const incident *inc);

#endif
