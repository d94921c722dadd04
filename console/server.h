/* The console's HTTP server, on the event loop (core/hlisten.h):
 *
 *   GET  /, /app.js, /app.css     the page (embedded in the binary: no
 *                                 CDN, works offline)
 *   GET  /api/whoami              who the token is
 *   GET  /api/incidents           {seq, ready, incidents} (filters as
 *                                 cascade incidents list: status,
 *                                 scenario, cluster, node, job)
 *   GET  /api/incidents/ID        {incident, actions, audit}
 *   GET  /api/approvals           the executor's waiting actions
 *   POST /api/actions/ID/approve  the executor's decision routes, with
 *   POST /api/actions/ID/deny     the person's own token: the executor
 *                                 checks it and audits their name
 *   GET  /api/health              each watched process's /readyz and a
 *                                 few of its metrics
 *   GET  /api/report?since=7d     cascade report's page of the live view
 *
 * Every /api route needs a bearer token of the approvers file (the same
 * people, the same tokens as the executor's approvals API). */
#ifndef CS_CN_SERVER_H
#define CS_CN_SERVER_H

#include "actions/approvals.h"
#include "console/live.h"
#include "core/err.h"

struct event_base;

typedef struct cn_opts {
    const char *listen;      /* default 127.0.0.1 */
    int port;                /* 0: any free port (cn_port) */
    const char *act_url;     /* the executor's approvals API, or NULL */
    const char *const *watch; /* metrics endpoints' base URLs, NULL-ended */
} cn_opts;

typedef struct cn_server cn_server;

/* Takes p; live must outlive the server. NULL with err. */
cn_server *cn_start(struct event_base *base, cn_live *live, approvers *p,
                    const cn_opts *o, cs_err *err);
int cn_port(const cn_server *s);
void cn_free(cn_server *s);

#endif
