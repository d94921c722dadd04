/* The executor's own config file (`cascade act --config FILE`): where the
 * HTTP executors send their calls, the secrets they use (named as
 * file:PATH or env:NAME, read at load, never logged) and the operator's
 * mode per playbook.
 *
 *   modes:      {PLAYBOOK: shadow|canary|on, ...}  (over --mode)
 *   http:       {timeout_s, ca_file}
 *   slack:      {url: SECRET, approval_url, ca_file, insecure}
 *   console_url: cascade console's address (Slack's button, tickets)
 *   jira:       {url, project, issue_type, auth: basic|bearer, user,
 *                token: SECRET, ca_file, insecure}
 *   pagerduty:  {url, routing_key: SECRET, ca_file, insecure}
 *   webhook:    {url, token: SECRET, ca_file, insecure}
 *   kubernetes: {api, token: SECRET, namespace, ca_file, insecure}
 *   slurmrestd: {url: http(s)://HOST:PORT or unix:PATH, user, token: SECRET
 *                (a JWT; none with rest_auth/local on a socket), ca_file}
 *   journal:    {key: SECRET} (the journal's seal, actions/seal.h)
 *
 * Errors name FILE:LINE:COL; nothing half-loaded is returned. */
#ifndef CS_EXCFG_H
#define CS_EXCFG_H

#include "core/err.h"
#include "rules/playbooks.h"

typedef struct ex_endpoint {
    int set;            /* the section is present */
    char url[1024];     /* Slack's webhook URL is itself a secret */
    char user[128];
    char token[1024];   /* bearer token, Jira password, PagerDuty key */
    char ca_file[512];  /* "" = the system store */
    int insecure;       /* TLS verification off: only when written here */
} ex_endpoint;

typedef struct ex_mode {
    const pb_playbook *pb;
    pb_mode mode;
} ex_mode;

typedef struct ex_conf {
    ex_endpoint slack, jira, pagerduty, webhook, k8s, slurmrestd;
    char approval_url[512]; /* the approvals API as people reach it */
    char console_url[512];  /* cascade console as people reach it: Slack's
                             * button and tickets link to the incident */
    char jira_project[64], jira_issue_type[64];
    int jira_bearer;        /* else basic (user + token) */
    char k8s_namespace[128];
    char journal_key[256];  /* the journal's seal key; "" = none given */
    long timeout_ms;
    ex_mode *modes;
    int nmodes;
} ex_conf;

void ex_conf_init(ex_conf *c);
/* rules: to check the playbooks named under modes. */
int ex_conf_load(ex_conf *c, const char *path, const pb_catalog *rules,
                 cs_err *err);
/* Wipes the secrets and frees the modes. */
void ex_conf_clear(ex_conf *c);
/* The operator's mode for pb: its entry under modes, else dflt. */
pb_mode ex_mode_for(const ex_conf *c, const pb_playbook *pb, pb_mode dflt);

/* The act section's reference (docs/CONFIG.md), from the key tables. */
void ex_conf_reference(void *stdio_file);

#endif
