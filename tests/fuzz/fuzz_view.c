/* What a reader of cascade.incidents and cascade.audit makes of any
 * message on them (anyone with write access to a topic can put one
 * there): the incident and audit parsers, a selection with every filter,
 * the table, and one incident shown whole with its trail. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "view/incidents.h"
#include "view/render.h"
#include "view/report.h"
#include "view/reporthtml.h"
#include "view/trail.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    vw_incidents *v = vw_incidents_new();
    vw_trail *t = vw_trail_new(NULL);
    vw_filter f = {.status = "open", .scenario = "hw.", .cluster = "c1",
                   .node = "gpu-1", .job = "1", .since_us = 1};
    FILE *null = fopen("/dev/null", "w");
    const json_t **sel;
    size_t n;

    vw_incidents_add(v, (const char *)data, size);
    vw_trail_add(t, (const char *)data, size);
    sel = vw_select(v, &(vw_filter){0}, &n);
    vw_table(null, sel, n, 80);
    for (size_t i = 0; i < n; i++) {
        vw_match(sel[i], &f);
        vw_show(null, sel[i], t);
    }
    free(sel);
    json_t *st = vw_report(&(vw_report_in){.incs = v, .trail = t,
                                           .since_us = 0, .until_us = INT64_MAX});
    vw_report_html(null, st);
    json_decref(st);
    fclose(null);
    vw_trail_free(t);
    vw_incidents_free(v);
    return 0;
}
