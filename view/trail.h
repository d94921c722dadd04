/* An incident's actions as the executor carried them out: the records of
 * cascade.audit (docs/ACTIONS.md) of one incident, in order, and each
 * action's state now, from its last record. Fed the topic's messages by
 * the caller (core/kafka_scan.h). */
#ifndef CS_VW_TRAIL_H
#define CS_VW_TRAIL_H

#include <jansson.h>
#include <stddef.h>

typedef struct vw_trail vw_trail;

/* The trail of incident (NULL: of every incident). */
vw_trail *vw_trail_new(const char *incident);
void vw_trail_free(vw_trail *t);
/* One message of cascade.audit; records of other incidents are left
 * out. -1 when it is not an audit record. */
int vw_trail_add(vw_trail *t, const char *json, size_t len);
/* The records kept, in the order read (borrowed). */
const json_t *vw_trail_records(const vw_trail *t);
/* The state an audit event leaves its action in: waiting, approved,
 * running, done, failed, refused, denied, expired, proposed; NULL for an
 * event that does not change it (a notification sent, a check). */
const char *vw_event_state(const char *event);
/* The action's state now, from its last record that says one, and who
 * made it so: NULL when the trail has no record of it. */
const char *vw_action_state(const vw_trail *t, const char *action,
                            const char **who);

#endif
