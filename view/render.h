/* Incidents as text for people: a table of many, and one incident's
 * chain (root -> effects -> symptoms, with the line that showed the
 * root), its actions with their states, and its audit trail. */
#ifndef CS_VW_RENDER_H
#define CS_VW_RENDER_H

#include <jansson.h>
#include <stdio.h>

#include "view/trail.h"

/* "ID STATUS SCENARIO CLUSTER WHERE OPENED ACTIONS SUMMARY", one line an
 * incident; summaries cut to fit width columns (0: not cut). */
void vw_table(FILE *f, const json_t *const *incs, size_t n, int width);
/* Everything of one incident; t (may be NULL) gives its actions' states
 * and its audit records. */
void vw_show(FILE *f, const json_t *inc, const vw_trail *t);
/* The executor's id of each action of the incident (the correlator's
 * request id: rules/playbooks.h pb_action_id), as "id" in a copy of the
 * actions array, with "state" and "by" from t when it has them. */
json_t *vw_actions(const json_t *inc, const vw_trail *t);

#endif
