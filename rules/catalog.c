/* The catalog (rules/playbooks.h): the scenarios, signatures, Xid maps,
 * playbooks and correlation rules read from the rule files; the queries on
 * them, linking (responses to playbooks, correlations to signatures, the
 * signatures' prefilter) and freeing. Reading is load.c and playbook.c. */
#include "rules/playbooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/hash.h"
#include "core/jw.h"
#include "core/mem.h"
#include "rules/catalog_priv.h"

void cat_free_correlation(pb_correlation *k)
{
    free((char *)k->scenario);
    for (int i = 0; i < k->nevents; i++)
        free((char *)k->events[i]);
}

pb_catalog *pb_catalog_new(void)
{
    pb_catalog *c = xcalloc(1, sizeof *c);
    return c;
}

void cat_free_scenario(pb_scenario *s)
{
    for (int i = 0; i < s->nsteps; i++) {
        free((char *)s->steps[i].playbook);
        free((char *)s->steps[i].category);
        json_decref(s->steps[i].params);
    }
    free((pb_step *)s->steps);
    for (int i = 0; i < s->nescalates; i++)
        free((char *)s->escalates[i]);
    free((char **)s->escalates);
    free((char *)s->id);
    free((char *)s->what);
    free((char *)s->todo);
}

void cat_free_signature(pb_signature *g)
{
    for (int i = 0; i < g->nexamples; i++) {
        free((char *)g->examples[i].text);
        free((char *)g->examples[i].scenario);
        free((char *)g->examples[i].fact);
        free((char *)g->examples[i].detail);
    }
    free(g->examples);
    pcre2_code_free(g->re);
    free((char *)g->id);
    free((char *)g->fact);
    free((char *)g->scenario);
    free((char *)g->match);
    free((char *)g->file);
}

void pb_catalog_free(pb_catalog *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        cat_free_scenario(&c->v[i]);
    for (size_t i = 0; i < c->nsigs; i++)
        cat_free_signature(&c->sigs[i]);
    for (size_t i = 0; i < c->nxids; i++)
        free((char *)c->xids[i].scenario);
    for (size_t i = 0; i < c->ncorrs; i++)
        cat_free_correlation(&c->corrs[i]);
    free(c->corrs);
    pfl_free(c->pf);
    free(c->v);
    free(c->sigs);
    free(c->xids);
    free(c->same_gpu);
    free(c->same_job);
    for (size_t i = 0; i < c->nplays; i++)
        cat_free_playbook(&c->plays[i]);
    free(c->plays);
    free(c);
}

int pb_xid_tracked(const pb_catalog *c, int code, const char **same_gpu,
                   const char **same_job)
{
    for (int i = 0; i < c->ntracked; i++)
        if (c->tracked[i] == code) {
            *same_gpu = c->same_gpu;
            *same_job = c->same_job;
            return 1;
        }
    return 0;
}

const pb_signature *pb_signatures(const pb_catalog *c, size_t *n)
{
    *n = c->nsigs;
    return c->sigs;
}

const pb_correlation *pb_correlations(const pb_catalog *c, size_t *n)
{
    *n = c->ncorrs;
    return c->corrs;
}

const char *const cat_corr_kinds[3] = {"threshold", "sequence", "group"};
const char *const cat_corr_bys[2] = {"host", "job"};

const char *pb_corr_kind_name(pb_corr_kind k)
{
    return (unsigned)k < 3 ? cat_corr_kinds[k] : "?";
}

const pb_signature *pb_signature_find(const pb_catalog *c, const char *id)
{
    for (size_t i = 0; id && i < c->nsigs; i++)
        if (!strcmp(c->sigs[i].id, id))
            return &c->sigs[i];
    return NULL;
}

const char *pb_xid_scenario(const pb_catalog *c, int code)
{
    for (size_t i = 0; i < c->nxids; i++)
        if (c->xids[i].code == code)
            return pb_find(c, c->xids[i].scenario) ? c->xids[i].scenario : NULL;
    return NULL;
}

size_t pb_catalog_count(const pb_catalog *c)
{
    return c->n;
}

int pb_escalates(const pb_scenario *to, const char *from)
{
    for (int i = 0; from && i < to->nescalates; i++)
        if (!strcmp(to->escalates[i], from))
            return 1;
    return 0;
}

/* Each scenario an `escalates:` names is a node scenario of the catalog,
 * and not the one naming it. */
static int link_escalates(const pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char msg[300];

    for (size_t i = 0; i < c->n; i++)
        for (int k = 0; k < c->v[i].nescalates; k++) {
            const char *id = c->v[i].escalates[k];
            const pb_scenario *from = pb_find(c, id);

            if (from && from != &c->v[i] && from->node_level &&
                c->v[i].node_level)
                continue;
            snprintf(msg, sizeof msg, "scenario %s: escalates '%s', %s",
                     c->v[i].id, id,
                     !from ? "which is not in the catalog"
                     : from == &c->v[i] ? "itself"
                     : "but both must be node_level scenarios");
            errors++;
            if (fn)
                fn(arg, c->v[i].escalates_where, msg);
        }
    return errors;
}

const pb_scenario *pb_find(const pb_catalog *c, const char *scenario)
{
    if (!scenario)
        return NULL;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].id, scenario) == 0)
            return &c->v[i];
    return NULL;
}

const char *pb_approval_name(pb_approval a)
{
    return a == APPR_AUTO ? "auto" : a == APPR_HITL ? "hitl" : "canary";
}

const char *const cat_approvals[3] = {"auto", "hitl", "canary"};


/* Field names a signature may capture; the classifier fills the fact's
 * field of the same name. */

void cat_push_signature(pb_catalog *c, const pb_signature *g)
{
    if (c->nsigs == c->capsigs) {
        c->capsigs = c->capsigs ? c->capsigs * 2 : 32;
        c->sigs = xrealloc(c->sigs, c->capsigs * sizeof *c->sigs);
    }
    c->sigs[c->nsigs++] = *g;
}

const char *const cat_classes[6] = {"read_only", "notify",   "job",
                                      "change",    "recovery", "destructive"};
const char *const cat_modes[3] = {"shadow", "canary", "on"};
const char *pb_class_name(pb_class k)
{
    return (unsigned)k < (unsigned)N(cat_classes) ? cat_classes[k] : "?";
}

const char *pb_mode_name(pb_mode m)
{
    return (unsigned)m < (unsigned)N(cat_modes) ? cat_modes[m] : "?";
}

void pb_action_id(const char *incident, const json_t *action, char *buf,
                  size_t len)
{
    char *txt = jw_dumps(action, 1);
    uint64_t h = hash_fnv1a(HASH_FNV_SEED, incident, strlen(incident));

    h = hash_fnv1a(h, "\n", 1);
    if (txt)
        h = hash_fnv1a(h, txt, strlen(txt));
    free(txt);
    snprintf(buf, len, "act-%016llx", (unsigned long long)h);
}

const pb_playbook *pb_playbook_find(const pb_catalog *c, const char *id)
{
    for (size_t i = 0; id && i < c->nplays; i++)
        if (!strcmp(c->plays[i].id, id))
            return &c->plays[i];
    return NULL;
}

const pb_playbook *pb_playbooks(const pb_catalog *c, size_t *n)
{
    *n = c->nplays;
    return c->plays;
}

const pb_calls *pb_calls_for(const pb_calls set[PB_ON__COUNT], pb_backend b)
{
    if ((unsigned)b < PB_ON__COUNT && set[b].n)
        return &set[b];
    return set[PB_ON_ANY].n ? &set[PB_ON_ANY] : NULL;
}

static void free_calls(pb_calls *cs)
{
    for (int i = 0; i < cs->n; i++) {
        free((char *)cs->v[i].op);
        json_decref(cs->v[i].args);
    }
    free(cs->v);
}

static void free_checks(pb_check *v, int n)
{
    for (int i = 0; i < n; i++) {
        free((char *)v[i].field);
        json_decref(v[i].value);
    }
    free(v);
}

void cat_free_playbook(pb_playbook *p)
{
    for (int b = 0; b < PB_ON__COUNT; b++) {
        free_calls(&p->steps[b]);
        free_calls(&p->rollback[b]);
    }
    free_checks(p->pre, p->npre);
    free_checks(p->verify, p->nverify);
    free(p->budgets);
    free((char *)p->id);
    free((char *)p->version);
    free((char *)p->what);
    free((char *)p->file);
}

void cat_push_playbook(pb_catalog *c, const pb_playbook *p)
{
    if (c->nplays == c->capplays) {
        c->capplays = c->capplays ? c->capplays * 2 : 16;
        c->plays = xrealloc(c->plays, c->capplays * sizeof *c->plays);
    }
    c->plays[c->nplays++] = *p;
}

/* How strong an approval is: auto < canary < hitl. */
static int approval_rank(pb_approval a)
{
    return a == APPR_AUTO ? 0 : a == APPR_CANARY ? 1 : 2;
}

/* Every playbook a scenario proposes is defined, and the scenario asks
 * for no less approval than the playbook's least. */
static int link_playbooks(pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char msg[300];

    for (size_t i = 0; i < c->n; i++) {
        const pb_scenario *s = &c->v[i];
        for (int k = 0; k < s->nsteps; k++) {
            const pb_step *st = &s->steps[k];
            const pb_playbook *p = pb_playbook_find(c, st->playbook);
            if (p && approval_rank(st->approval) >= approval_rank(p->approval))
                continue;
            if (p)
                snprintf(msg, sizeof msg, "scenario %s: %s asks for approval "
                         "%s; playbook %s %s (%s) needs at least %s", s->id,
                         st->playbook, pb_approval_name(st->approval), p->id,
                         p->version, pb_class_name(p->cls),
                         pb_approval_name(p->approval));
            else
                snprintf(msg, sizeof msg, "scenario %s: playbook '%s' is not "
                         "in the catalog (rules/playbooks.yaml)", s->id,
                         st->playbook);
            errors++;
            if (fn)
                fn(arg, st->where, msg);
        }
    }
    return errors;
}

/* A correlation's scenario and events exist once every file is read. */
static int link_correlations(pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char msg[300];

    for (size_t i = 0; i < c->ncorrs; i++) {
        const pb_correlation *k = &c->corrs[i];
        if (!pb_find(c, k->scenario)) {
            snprintf(msg, sizeof msg, "correlation: scenario '%s' is not in "
                     "the catalog", k->scenario);
            errors++;
            if (fn)
                fn(arg, k->where, msg);
        }
        for (int j = 0; j < k->nevents; j++) {
            if (pb_signature_find(c, k->events[j]))
                continue;
            snprintf(msg, sizeof msg, "correlation %s: event '%s' is not a "
                     "signature of the catalog", k->scenario, k->events[j]);
            errors++;
            if (fn)
                fn(arg, k->where, msg);
        }
    }
    return errors;
}

/* Checks what crosses files: every scenario a signature, an example or an
 * Xid code names must exist once all files are read. */
/* The signatures' Hyperscan prefilter (rules/prefilter.h): taken from
 * the build's precompiled databases where the patterns are the built-in
 * ones, compiled otherwise. */
static int link_prefilter(pb_catalog *c)
{
    const char **pats = calloc(c->nsigs + 1, sizeof *pats);
    unsigned *sources = calloc(c->nsigs + 1, sizeof *sources);
    cs_err err;
    int rc = -1;

    if (!pats || !sources)
        goto out;
    for (size_t i = 0; i < c->nsigs; i++) {
        pats[i] = c->sigs[i].match;
        sources[i] = c->sigs[i].sources;
        /* Ray's and SLURM's lines are read with the app patterns too
         * (classify.c): their databases hold them, so that one scan of
         * such a line answers for both. */
        if (sources[i] & (1u << SRC_APP))
            sources[i] |= (1u << SRC_RAY) | (1u << SRC_SLURM);
    }
    pfl_free(c->pf);
    c->pf = pfl_new(pats, sources, c->nsigs, pfl_embedded(), &err);
    rc = c->pf ? 0 : -1;
out:
    free(pats);
    free(sources);
    return rc;
}

const pfl *pb_prefilter(const pb_catalog *c)
{
    return c->pf;
}

int pb_catalog_link(pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char where[600], msg[300];

    for (size_t i = 0; i < c->nsigs; i++) {
        const pb_signature *g = &c->sigs[i];
        if (g->scenario && !pb_find(c, g->scenario)) {
            snprintf(where, sizeof where, "%s:%d:1", g->file, g->line);
            snprintf(msg, sizeof msg, "signature %s: scenario '%s' is not in "
                     "the catalog", g->id, g->scenario);
            errors++;
            if (fn)
                fn(arg, where, msg);
        }
        for (int k = 0; k < g->nexamples; k++) {
            const char *sc = g->examples[k].scenario;
            if (sc && strcmp(sc, "none") && !pb_find(c, sc)) {
                snprintf(where, sizeof where, "%s:%d:1", g->file,
                         g->examples[k].line);
                snprintf(msg, sizeof msg, "example of %s: scenario '%s' is not "
                         "in the catalog", g->id, sc);
                errors++;
                if (fn)
                    fn(arg, where, msg);
            }
        }
    }
    errors += link_playbooks(c, fn, arg);
    errors += link_correlations(c, fn, arg);
    errors += link_escalates(c, fn, arg);
    if (c->same_gpu && (!pb_find(c, c->same_gpu) || !pb_find(c, c->same_job))) {
        snprintf(msg, sizeof msg, "xid_tracked: scenario '%s' or '%s' is not "
                 "in the catalog", c->same_gpu, c->same_job);
        errors++;
        if (fn)
            fn(arg, c->tracked_where, msg);
    }
    for (size_t i = 0; i < c->nxids; i++)
        if (!pb_find(c, c->xids[i].scenario)) {
            snprintf(msg, sizeof msg, "xid_codes: scenario '%s' is not in the "
                     "catalog", c->xids[i].scenario);
            errors++;
            if (fn)
                fn(arg, c->xids[i].where, msg);
        }
    if (!errors && link_prefilter(c)) {
        errors++;
        if (fn)
            fn(arg, "rules", "out of memory building the prefilter");
    }
    return errors;
}

/* Playbook ids: "family.name", or one word for the generic ones
 * (notify, recommend). */
int cat_id_ok(const char *v)
{
    if (!v || !*v || *v == '.')
        return 0;
    for (const char *p = v; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || *p == '_' || *p == '.' ||
              (*p >= '0' && *p <= '9')))
            return 0;
    return v[strlen(v) - 1] != '.';
}

/* "MAJOR.MINOR.PATCH", numbers only. */
int cat_version_ok(const char *v)
{
    int dots = 0, digits = 0;

    for (const char *p = v; p && *p; p++) {
        if (*p == '.') {
            if (!digits)
                return 0;
            dots++;
            digits = 0;
        } else if (*p >= '0' && *p <= '9') {
            digits++;
        } else {
            return 0;
        }
    }
    return v && dots == 2 && digits;
}

void cat_prefix(yd_doc *d, yaml_node_t *n, const char *what, const char *key,
                char *buf, size_t len)
{
    const char *id = yd_scalar(yd_get(d, n, key));

    snprintf(buf, len, "%s %s: ", what, id ? id : "?");
}
