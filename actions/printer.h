/* Dry-run executor: reads action requests from cascade.actions and prints
 * what it would do, acting on nothing. The first executor; the guarded
 * real ones replace it playbook by playbook. */
#ifndef CS_PRINTER_H
#define CS_PRINTER_H

#include <event2/event.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"

typedef struct act_printer act_printer;

/* fetch_wait_ms: kafka.fetch_wait_ms, as the correlator's consumer;
 * props: kafka.properties (NULL: none). Group KFK_GROUP_DRY_RUN. */
act_printer *act_printer_start(struct event_base *base, const char *brokers,
                               const cfg_kprops *props, int fetch_wait_ms,
                               FILE *out, cs_err *err);
unsigned long act_printer_count(const act_printer *p);
void act_printer_free(act_printer *p);

#endif
