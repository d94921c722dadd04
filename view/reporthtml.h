/* A report's numbers (view/report.h) as one self-contained HTML page:
 * every chart an inline SVG (stacked bars of incidents per day, time to
 * detect and to resolve per scenario, the nodes that fail most, idle
 * GPU-hours and their cost per team, each team's peak-demand hours as a
 * heatmap, the executor's outcomes), no script, nothing loaded from
 * elsewhere: it opens from a file, a mail, an air-gapped laptop. */
#ifndef CS_VW_REPORTHTML_H
#define CS_VW_REPORTHTML_H

#include <jansson.h>
#include <stdio.h>

void vw_report_html(FILE *f, const json_t *stats);

#endif
