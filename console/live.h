/* What the console shows, kept up to date on the event loop: every
 * incident (its last version) and every audit record, read from
 * cascade.incidents and cascade.audit from their start by consumers of a
 * group of the console's own that never commits (each console reads the
 * whole record, and a restart reads it again). A counter moves with each
 * change, so that a page can ask for what changed since it last looked. */
#ifndef CS_CN_LIVE_H
#define CS_CN_LIVE_H

#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "view/incidents.h"
#include "view/trail.h"

struct event_base;

typedef struct cn_live cn_live;

/* group: the consumers' group (unique to this console). NULL with err. */
cn_live *cn_live_start(struct event_base *base, const cs_config *cfg,
                       const char *group, cs_err *err);
const vw_incidents *cn_live_incidents(const cn_live *l);
/* Every audit record read (all incidents'). */
const vw_trail *cn_live_trail(const cn_live *l);
/* Moves on with every incident version and audit record read. */
uint64_t cn_live_seq(const cn_live *l);
/* The seq at which incident id last changed; 0 when never seen. */
uint64_t cn_live_changed(const cn_live *l, const char *id);
/* Whether both consumers hold their partitions (reading from there on):
 * until then a page says "loading". */
int cn_live_ready(cn_live *l);
void cn_live_free(cn_live *l);

#endif
