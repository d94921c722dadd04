/* Incident -> docs/FORMATS.md JSON, and the actions each proposes
 * (engine/render.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "core/ts.h"
#include "engine/render.h"
#include "engine/state.h"

static json_t *ts_json(int64_t ts)
{
    char buf[32];
    ts_format(ts, buf, sizeof buf);
    return json_string(buf);
}

/* An object's member by a key of ours (a literal: no UTF-8 check), in
 * the order set. Not json_pack: its format parse cost as much again as
 * the members themselves, ten times an incident, and a storm opens
 * thousands in a second. */
static void set_o(json_t *o, const char *key, json_t *v)
{
    json_object_set_new_nocheck(o, key, v);
}

static void set_s(json_t *o, const char *key, const char *v)
{
    json_object_set_new_nocheck(o, key, json_string(v));
}

/* {"key": "v"} */
static json_t *obj_s(const char *key, const char *v)
{
    json_t *o = json_object();
    set_s(o, key, v);
    return o;
}

static int is_canary(engine *e, const incident *inc)
{
    node_info *ni = eng_node_info(e, inc->cluster, inc->node);
    return ni && ni->canary;
}

/* Largest power of two <= v (v >= 1). */
static json_int_t pow2_floor(double v)
{
    json_int_t p = 1;
    while (p * 2 <= v)
        p *= 2;
    return p;
}

/* Batch size for an OOM in the forward pass: scale by how much memory the
 * step needed against what the GPU has (with 10% headroom), and at least
 * halve it, since a guess that fails again costs a whole queue wait. */
static void fix_batch(json_t *params, const incident *inc, const job *j)
{
    json_t *bs = j && j->config ? json_object_get(j->config, "batch_size") : NULL;
    const fact *f = &inc->cause;

    if (json_is_integer(bs) && json_integer_value(bs) > 1) {
        double cur = (double)json_integer_value(bs), target = cur / 2;
        if (f->capacity > 0 && f->free_b >= 0 && f->tried > 0) {
            double need = f->capacity - f->free_b + f->tried;
            double scaled = floor(cur * (0.9 * f->capacity) / need);
            if (scaled < target)
                target = scaled;
        }
        json_object_set_new(params, "batch_size",
                            json_integer(pow2_floor(target < 1 ? 1 : target)));
    }
    json_object_set_new(params, "gradient_checkpointing", json_true());
}

static void fix_activation(json_t *params, const job *j)
{
    const char *prec = j && j->config
        ? json_string_value(json_object_get(j->config, "precision")) : NULL;

    json_object_set_new(params, "gradient_checkpointing", json_true());
    /* Already in half precision: checkpointing is the remaining lever. */
    if (!prec || (strcmp(prec, "fp16") && strcmp(prec, "bf16")))
        json_object_set_new(params, "fp16", json_true());
}

static json_int_t config_int(const job *j, const char *key)
{
    json_t *v = j && j->config ? json_object_get(j->config, key) : NULL;
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Host OOM in data loading: each worker holds a copy of the dataset
 * state, so halving them halves that memory. */
static void fix_workers(json_t *p, const job *j)
{
    json_int_t cur = config_int(j, "num_workers");

    json_object_set_new(p, "num_workers",
                        json_integer(cur > 1 ? cur / 2 : cur == 1 ? 0 : 2));
}

/* /dev/shm is 64 MiB by default in a container; DataLoader workers pass
 * whole batches through it. Double what the job had, and give at least
 * 1 GiB per worker and 8 GiB in all. */
/* Input-bound: more loader processes (twice as many, at least 8), the
 * shared memory they need, and data staged on local NVMe. */
static void fix_input_bound(json_t *p, const job *j)
{
    json_int_t cur = config_int(j, "num_workers");
    json_int_t w = cur >= 4 ? cur * 2 : 8;

    json_object_set_new(p, "num_workers", json_integer(w));
    json_object_set_new(p, "shm_size", json_integer(w * 1073741824LL));
    json_object_set_new(p, "config", json_pack("{s:b}", "stage_to_local_nvme", 1));
}

/* params.config = {flag: true}, and the memory the launch config names
 * under mem_key doubled (nothing when it names none). */
static void fix_flag_and_memory(json_t *p, const job *j, const char *flag,
                                const char *mem_key)
{
    json_int_t gb = config_int(j, mem_key);
    json_t *c = json_pack("{s:b}", flag, 1);

    if (gb > 0)
        json_object_set_new(c, mem_key, json_integer(gb * 2));
    json_object_set_new(p, "config", c);
}

/* Twice the memory the job's config asked for; none named: the config
 * stays the job's, the resubmission's approver sets the figure. */
static void fix_memory(json_t *p, const job *j, const char *mem_key)
{
    json_int_t gb = config_int(j, mem_key);

    if (gb > 0)
        json_object_set_new(p, "config", json_pack("{s:I}", mem_key, gb * 2));
}

static void fix_shm(json_t *p, const job *j)
{
    const json_int_t gib = 1073741824;
    json_int_t cur = config_int(j, "shm_size"), w = config_int(j, "num_workers");
    json_int_t size = 8 * gib;

    if (cur > 0 && 2 * cur > size)
        size = 2 * cur;
    if (w > 0 && w * gib > size)
        size = w * gib;
    json_object_set_new(p, "shm_size", json_integer(size));
}

/* The taint the scheduler named ("key: value", value may be empty). No
 * effect given: a toleration without one matches every effect. */
static void fix_tolerations(json_t *p, const incident *inc)
{
    char key[96];
    const char *colon;
    json_t *t;

    str_copy(key, sizeof key, inc->cause.detail);
    colon = strchr(key, ':');
    if (!key[0] || key[0] == ':') {
        json_object_set_new(p, "tolerations", json_array());
        return;
    }
    if (colon) {
        const char *val = colon + 1;
        while (*val == ' ')
            val++;
        key[colon - key] = '\0';
        t = *val ? json_pack("{s:s, s:s, s:s}", "key", key, "operator", "Equal",
                             "value", val)
                 : json_pack("{s:s, s:s}", "key", key, "operator", "Exists");
    } else {
        t = json_pack("{s:s, s:s}", "key", key, "operator", "Exists");
    }
    json_object_set_new(p, "tolerations", json_pack("[o]", t));
}

/* NCCL's exclusion syntax works on any cluster: everything but loopback
 * and container bridges. NCCL_DEBUG=INFO shows the choice next time. */
static void fix_socket_ifname(json_t *p)
{
    json_object_set_new(p, "env", json_pack("{s:s, s:s}", "NCCL_SOCKET_IFNAME",
                                            "^lo,docker", "NCCL_DEBUG", "INFO"));
}

static void fix_worker_memory(json_t *p, const job *j)
{
    json_int_t gb = config_int(j, "worker_memory_gb");

    if (gb > 0)
        json_object_set_new(p, "config", json_pack("{s:I}", "worker_memory_gb",
                                                   (json_int_t)(gb * 2)));
    else
        json_object_set_new(p, "gradient_checkpointing", json_true());
}

/* Whether the Ray job's GCS survives its head: KubeRay's GCS fault
 * tolerance (an external Redis: RAY_REDIS_ADDRESS in its env, or the
 * config says gcs_ft). */
static int gcs_ft(const job *j)
{
    json_t *c = j ? j->config : NULL;
    json_t *env = c ? json_object_get(c, "env") : NULL;

    return json_is_true(json_object_get(c, "gcs_ft")) ||
           json_object_get(env, "RAY_REDIS_ADDRESS") != NULL;
}

/* The cause's detail "H,H,.../DAYS" (marks.c eng_peak_hit): the hours of
 * day (UTC) a team's jobs kept waiting, and on how many of seven days. */
static void fix_peak_hours(json_t *p, const incident *inc)
{
    const char *d = inc->cause.detail, *slash = strchr(d, '/');
    json_t *hours = json_array();
    char *end;

    while (*d && *d != '/') {
        long h = strtol(d, &end, 10);
        if (end == d)
            break;
        if (h >= 0 && h < 24)
            json_array_append_new(hours, json_integer(h));
        d = *end == ',' ? end + 1 : end;
    }
    json_object_set_new(p, "peak_hours_utc", hours);
    if (slash)
        json_object_set_new(p, "days_seen", json_integer(atoi(slash + 1)));
    json_object_set_new(p, "window_days", json_integer(7));
}

/* The idle GPUs (the cause's detail, metrics.c idle_check) priced at the
 * rule's gpu_hour_usd: what a day of this costs. Without a price, the
 * count alone. */
static void fix_idle_cost(json_t *p, const pb_step *st, const incident *inc)
{
    json_t *price = st->params ? json_object_get(st->params, "gpu_hour_usd")
                               : NULL;
    int gpus = atoi(inc->cause.detail);

    if (gpus <= 0)
        return;
    json_object_set_new(p, "idle_gpus", json_integer(gpus));
    if (json_is_number(price) && json_number_value(price) > 0)
        json_object_set_new(p, "cost_per_day_usd",
                            json_real(round(gpus * 24 *
                                            json_number_value(price) * 100) /
                                      100));
}

/* The whole pipeline, top first: the failed root job, then the jobs it
 * blocked in the order they stopped. */
static void fix_pipeline(json_t *p, const incident *inc)
{
    json_t *jobs = json_array();

    if (inc->root_job[0])
        json_array_append_new(jobs, json_string(inc->root_job));
    for (size_t i = 0; i < inc->nchildren; i++)
        if (strcmp(inc->children[i].job, inc->root_job))
            json_array_append_new(jobs, json_string(inc->children[i].job));
    json_object_set_new(p, "pipeline", jobs);
}

/* The nodes a resubmit must avoid: the incident's, or a storm's. */
static json_t *exclude_nodes(const incident *inc)
{
    json_t *a = json_array();

    for (size_t i = 0; i < inc->nmembers; i++)
        json_array_append_new(a, json_string(inc->members[i].node));
    if (!inc->nmembers)
        json_array_append_new(a, json_string(inc->node));
    return a;
}

static json_t *step_params(const pb_step *st, const incident *inc, const job *j)
{
    json_t *p = json_object();

    switch (st->fix) {
    case PB_FIX_EXCLUDE_NODE:
        json_object_set_new(p, "exclude_nodes", exclude_nodes(inc));
        break;
    case PB_FIX_BATCH:
        fix_batch(p, inc, j);
        break;
    case PB_FIX_ACTIVATION:
        fix_activation(p, j);
        break;
    case PB_FIX_ALLOC_CONF:
        json_object_set_new(p, "env", json_pack("{s:s}", "PYTORCH_CUDA_ALLOC_CONF",
                                                "expandable_segments:True"));
        break;
    case PB_FIX_TICKET:
        json_object_set_new(p, "category", json_string(st->category));
        /* What the cause's own text named: the divergent collectives of a
         * desync report, the NIC, the rank. */
        if (inc->cause.detail[0])
            json_object_set_new(p, "detail", json_string(inc->cause.detail));
        break;
    case PB_FIX_WORKERS:
        fix_workers(p, j);
        break;
    case PB_FIX_SHM:
        fix_shm(p, j);
        break;
    case PB_FIX_TOLERATIONS:
        fix_tolerations(p, inc);
        break;
    case PB_FIX_SOCKET_IFNAME:
        fix_socket_ifname(p);
        break;
    case PB_FIX_WORKER_MEMORY:
        fix_worker_memory(p, j);
        break;
    case PB_FIX_SAME_CONFIG:
        json_object_set_new(p, "config", j && j->config ? json_deep_copy(j->config)
                                                        : json_object());
        break;
    case PB_FIX_INPUT_BOUND:
        fix_input_bound(p, j);
        break;
    case PB_FIX_CHECKPOINT_MEMORY:
        /* A host OOM while saving a checkpoint: save in the background
         * (no second full copy in host RAM at once), more host memory. */
        fix_flag_and_memory(p, j, "async_checkpointing", "host_memory_gb");
        break;
    case PB_FIX_GCS_FT:
        /* A GCS crash without fault tolerance: turn it on (KubeRay's
         * ft-enabled, an external Redis) and give the head more memory. */
        fix_flag_and_memory(p, j, "gcs_ft", "head_memory_gb");
        break;
    case PB_FIX_PEAK_HOURS:
        fix_peak_hours(p, inc);
        break;
    case PB_FIX_IDLE_COST:
        fix_idle_cost(p, st, inc);
        break;
    case PB_FIX_PIPELINE:
        fix_pipeline(p, inc);
        break;
    case PB_FIX_HOST_MEMORY:
        /* The host's OOM killer ended it, nothing saying why: twice the
         * host memory it asked for, when it said. */
        fix_memory(p, j, "host_memory_gb");
        break;
    case PB_FIX_NONE:
        break;
    }
    if (st->params)
        json_object_update_missing(p, st->params);
    return p;
}

static json_t *action(engine *e, const pb_step *st, const incident *inc,
                      const job *j, json_t *target)
{
    pb_approval a = st->approval;

    /* A storm's blast radius is the rack: no canary stands for it. */
    if (a == APPR_CANARY)
        a = !eng_is_storm(inc) && is_canary(e, inc) ? APPR_AUTO
                                                           : APPR_HITL;
    json_t *o = json_object();

    set_s(o, "playbook", st->playbook);
    set_s(o, "approval", pb_approval_name(a));
    set_o(o, "target", target);
    set_o(o, "params", step_params(st, inc, j));
    set_s(o, "state", "proposed");
    return o;
}

/* A rack incident's rack (its key is "rack:<name>", or a storm's), or "". */
static const char *rack_of(const incident *inc)
{
    if (inc->rack[0])
        return inc->rack;
    return strncmp(inc->key, "rack:", 5) == 0 ? inc->key + 5 : "";
}

static json_t *job_target(const job *j, const char *id)
{
    json_t *t = obj_s("job", id);
    if (j && j->name[0])
        json_object_set_new(t, "job_name", json_string(j->name));
    return t;
}

/* Whether a step's `when` holds for this incident and its job. */
static int step_applies(engine *e, const pb_step *st, const incident *inc)
{
    const job *j = eng_job_of(e, inc->cluster, inc->job);
    int reserved = j && strcmp(j->priority, "reserved") == 0;

    switch (st->when) {
    case PB_WHEN_RESERVED:
        return reserved;
    case PB_WHEN_ELASTIC:
        return !reserved;
    case PB_WHEN_REPEATED:
        return eng_failed_children(inc) >= 2;
    case PB_WHEN_GCS_FT:
        return gcs_ft(j);
    case PB_WHEN_NO_GCS_FT:
        return !gcs_ft(j);
    case PB_WHEN_THERMAL:
        return strncmp(inc->root_scenario, "thermal.", 8) == 0;
    case PB_WHEN_NOT_THERMAL:
        return strncmp(inc->root_scenario, "thermal.", 8) != 0;
    case PB_WHEN_ALWAYS:
        break;
    }
    return 1;
}

/* On the incident's node, or on each node of a storm. */
static void node_actions(engine *e, const pb_step *st, const incident *inc,
                         json_t *out)
{
    json_t *t;

    /* one ticket for the rack, not one per node */
    if (eng_is_storm(inc) && !strcmp(st->playbook, "ticket.create")) {
        json_array_append_new(out, action(e, st, inc, NULL,
                                          obj_s(eng_group_kind(inc),
                                                inc->rack)));
        return;
    }
    for (size_t k = 0; k < inc->nmembers; k++)
        json_array_append_new(out, action(e, st, inc, NULL,
                                          obj_s("node",
                                                inc->members[k].node)));
    if (eng_is_storm(inc))
        return;
    t = obj_s("node", inc->node);
    if (inc->gpu[0] && strcmp(st->playbook, "gpu.reset") == 0)
        json_object_set_new(t, "gpu", json_string(inc->gpu));
    json_array_append_new(out, action(e, st, inc, NULL, t));
}

/* A storm whose scenario opens no ticket gets one for its rack: what
 * many nodes share there (power, cooling, a switch) is the facilities'. */
static void storm_ticket(const incident *inc, json_t *out)
{
    size_t i;
    json_t *a;

    json_array_foreach(out, i, a)
        if (!strcmp(json_string_value(json_object_get(a, "playbook")),
                    "ticket.create"))
            return;
    json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:s}",
                                         "playbook", "ticket.create",
                                         "approval", "auto", "target",
                                         eng_group_kind(inc), inc->rack,
                                         "params", "category",
                                         "facilities", "state", "proposed"));
}

static void steps_actions(engine *e, const incident *inc, json_t *out)
{
    for (int i = 0; i < inc->sc->nsteps; i++) {
        const pb_step *st = &inc->sc->steps[i];
        if (!step_applies(e, st, inc))
            continue;
        switch (st->target) {
        case PB_TARGET_NODE:
            node_actions(e, st, inc, out);
            break;
        case PB_TARGET_JOB: {
            const job *j = eng_job_of(e, inc->cluster, inc->job);
            json_array_append_new(out, action(e, st, inc, j,
                                              job_target(j, inc->job)));
            break;
        }
        case PB_TARGET_EACH_JOB:
        case PB_TARGET_EACH_AFFECTED:
            for (size_t k = 0; k < inc->nchildren; k++) {
                const child *c = &inc->children[k];
                const job *j = eng_job_of(e, inc->cluster, c->job);
                if (!c->state[0] && st->target == PB_TARGET_EACH_JOB)
                    continue; /* only the jobs that actually failed */
                json_array_append_new(out, action(e, st, inc, j,
                                                  job_target(j, c->job)));
            }
            break;
        case PB_TARGET_NONE:
            json_array_append_new(out, action(e, st, inc, NULL, json_object()));
            break;
        case PB_TARGET_RACK:
            json_array_append_new(out, action(e, st, inc, NULL,
                                              obj_s("rack", rack_of(inc))));
            break;
        case PB_TARGET_TEAM:
            json_array_append_new(out, action(e, st, inc, NULL,
                                              obj_s("team", inc->team)));
            break;
        }
    }
    if (eng_is_storm(inc))
        storm_ticket(inc, out);
}

static json_t *eng_actions(engine *e, const incident *inc)
{
    json_t *out = json_array();
    const pb_scenario *root = pb_find(e->cat, inc->root_scenario);

    /* The root cause's own response first, on the root's job or node: a
     * dependency chain still renews the expired credential. */
    if (inc->sc->root_actions && root && root != inc->sc) {
        incident r = *inc;
        r.sc = root;
        str_copy(r.job, sizeof r.job, inc->root_job);
        if (inc->root_node[0])
            str_copy(r.node, sizeof r.node, inc->root_node);
        steps_actions(e, &r, out);
    }
    steps_actions(e, inc, out);
    return out;
}

static json_t *scope_json(engine *e, const incident *inc)
{
    json_t *s = obj_s("cluster", inc->cluster);
    node_info *ni = eng_node_info(e, inc->cluster, inc->node);
    const job *j = eng_job_of(e, inc->cluster, inc->job);

    if (inc->node[0])
        json_object_set_new(s, "node", json_string(inc->node));
    if (inc->gpu[0])
        json_object_set_new(s, "gpu", json_string(inc->gpu));
    if (eng_is_storm(inc) && strcmp(eng_group_kind(inc), "rack"))
        json_object_set_new(s, eng_group_kind(inc), json_string(inc->rack));
    else if (ni && ni->rack[0] && inc->sc->node_level)
        json_object_set_new(s, "rack", json_string(ni->rack));
    else if (*rack_of(inc))
        json_object_set_new(s, "rack", json_string(rack_of(inc)));
    if (inc->job[0])
        json_object_set_new(s, "job", json_string(inc->job));
    if (j && j->name[0])
        json_object_set_new(s, "job_name", json_string(j->name));
    else if (strncmp(inc->key, "name:", 5) == 0)
        json_object_set_new(s, "job_name", json_string(eng_name_of(inc->key)));
    if (j && j->team[0])
        json_object_set_new(s, "team", json_string(j->team));
    else if (inc->team[0])
        json_object_set_new(s, "team", json_string(inc->team));
    return s;
}

static json_t *evidence_json(const incident *inc)
{
    json_t *src = json_array();

    for (int i = 0; i < SRC__COUNT; i++)
        if (inc->sources & (1u << i))
            json_array_append_new(src, json_string(sig_source_name((sig_source)i)));
    json_t *o = json_object();

    set_o(o, "count", json_integer(inc->count));
    set_o(o, "sources", src);
    set_o(o, "first", ts_json(inc->first));
    set_o(o, "last", ts_json(inc->last));
    return o;
}

static json_t *children_json(const incident *inc)
{
    json_t *a = json_array();

    for (size_t i = 0; i < inc->nmembers; i++) { /* a storm's nodes */
        const storm_member *m = &inc->members[i];
        json_t *o = obj_s("node", m->node);
        set_s(o, "scenario", m->scenario);
        set_o(o, "ts", ts_json(m->ts));
        if (m->id[0]) /* a maintenance's nodes had no incident */
            json_object_set_new(o, "incident", json_string(m->id));
        json_array_append_new(a, o);
    }

    for (size_t i = 0; i < inc->nchildren; i++) {
        const child *c = &inc->children[i];
        if (!c->state[0])
            continue; /* jobs only seen erroring are evidence, not children */
        json_t *o = obj_s("job", c->job);
        set_s(o, "state", c->state);
        set_o(o, "ts", ts_json(c->ts));
        json_array_append_new(a, o);
    }
    return a;
}

/* The root cause as a chain: the root with the line that showed it, then
 * its effects (jobs that failed, were cancelled or blocked) and symptoms
 * (jobs that only logged errors), each when it showed. */
static json_t *chain_json(const incident *inc)
{
    json_t *a = json_array();
    json_t *root = obj_s("role", "root");

    set_s(root, "scenario", inc->root_scenario);
    set_o(root, "ts", ts_json(inc->root_ts));
    if (inc->root_node[0])
        json_object_set_new(root, "node", json_string(inc->root_node));
    if (inc->root_job[0])
        json_object_set_new(root, "job", json_string(inc->root_job));
    if (inc->cause.excerpt[0] && inc->cause.scenario &&
        strcmp(inc->cause.scenario, inc->root_scenario) == 0)
        json_object_set_new(root, "signal", json_string(inc->cause.excerpt));
    json_array_append_new(a, root);
    for (size_t i = 0; i < inc->nchildren; i++) {
        const child *c = &inc->children[i];
        json_t *o = obj_s("role", c->state[0] ? "effect" : "symptom");
        set_s(o, "job", c->job);
        set_o(o, "ts", ts_json(c->ts));
        if (c->state[0])
            json_object_set_new(o, "state", json_string(c->state));
        json_array_append_new(a, o);
    }
    return a;
}

/* "rack-3: the scheduler lost the node on 4 nodes at once (gpu-1, ...)" */
static void summary_storm(const incident *inc, char *buf, size_t len)
{
    size_t off, jobs = eng_failed_children(inc);

    off = (size_t)snprintf(buf, len, "%s: %s on %zu nodes at once (", inc->rack,
                           inc->sc->what, inc->nmembers);
    for (size_t i = 0; i < inc->nmembers && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                                inc->members[i].node);
    if (off < len)
        off += (size_t)snprintf(buf + off, len - off,
                                "), first on %s: one cause for the %s more "
                                "likely than %zu faults", inc->root_node,
                                strcmp(eng_group_kind(inc), "rack")
                                    ? "NVLink domain" : "rack",
                                inc->nmembers);
    if (jobs && off < len)
        off += (size_t)snprintf(buf + off, len - off, "; %zu job%s failed",
                                jobs, jobs == 1 ? "" : "s");
    if (off < len)
        snprintf(buf + off, len - off, "; %s.", inc->sc->todo);
}

/* "Planned maintenance CHG-1 (firmware) on gpu-1, gpu-2: 4 signals ..." */
static void summary_maint(const incident *inc, char *buf, size_t len)
{
    size_t off, jobs = eng_failed_children(inc);

    off = (size_t)snprintf(buf, len, "Planned maintenance %s on ",
                           inc->cause.excerpt);
    for (size_t i = 0; i < inc->nmembers && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                                inc->members[i].node);
    if (off < len)
        off += (size_t)snprintf(buf + off, len - off,
                                ": %d signal%s taken as its work", inc->count,
                                inc->count == 1 ? "" : "s");
    if (jobs && off < len)
        off += (size_t)snprintf(buf + off, len - off, "; %zu job%s failed",
                                jobs, jobs == 1 ? "" : "s");
    if (off < len)
        snprintf(buf + off, len - off, "; %s.", inc->sc->todo);
    str_utf8_trim(buf);
}

static void summary_open(const incident *inc, char *buf, size_t len)
{
    size_t n = 0, off;
    const char *where = inc->node[0] ? inc->node
                        : *rack_of(inc) ? rack_of(inc) : "?";

    if (eng_is_storm(inc)) {
        summary_storm(inc, buf, len);
        return;
    }
    if (strncmp(inc->key, "maint:", 6) == 0) {
        summary_maint(inc, buf, len);
        return;
    }

    if (inc->team[0] && !inc->job[0]) { /* about a team, not a job */
        snprintf(buf, len, "Team %.*s: %s (%s); %s.",
                 str_utf8_max(inc->team, 64), inc->team, inc->sc->what,
                 inc->cause.excerpt, inc->sc->todo);
        str_utf8_trim(buf);
        return;
    }
    if (!inc->sc->node_level && inc->job[0]) {
        char root[160] = "";
        if (strcmp(inc->root_scenario, inc->sc->id) && inc->root_job[0])
            snprintf(root, sizeof root, " (root cause %s of job %.*s)",
                     inc->root_scenario, str_utf8_max(inc->root_job, 64),
                     inc->root_job);
        else if (strcmp(inc->root_scenario, inc->sc->id))
            snprintf(root, sizeof root, " (root cause %s on %.*s)",
                     inc->root_scenario, str_utf8_max(inc->root_node, 64),
                     inc->root_node);
        if (inc->node[0] || *rack_of(inc))
            snprintf(buf, len, "Job %s on %s: %s%s; %s.", inc->job, where,
                     inc->sc->what, root, inc->sc->todo);
        else
            snprintf(buf, len, "Job %s: %s%s; %s.", inc->job, inc->sc->what,
                     root, inc->sc->todo);
        return;
    }
    for (size_t i = 0; i < inc->nchildren; i++)
        n += inc->children[i].state[0] != 0;
    off = (size_t)snprintf(buf, len, "%s: %s", where, inc->sc->what);
    if (strcmp(inc->root_scenario, inc->sc->id) && off < len)
        off += (size_t)snprintf(buf + off, len - off, " (root cause %s)",
                                inc->root_scenario);
    if (n && off < len)
        off += (size_t)snprintf(buf + off, len - off, "; %zu job%s failed", n,
                                n == 1 ? "" : "s");
    if (off < len)
        snprintf(buf + off, len - off, "; %s.", inc->sc->todo);
}

/* What resolved it: a storm that took it, the recovery signal, or quiet. */
static void resolution(const incident *inc, char *buf, size_t len)
{
    if (inc->merged[0])
        snprintf(buf, len, "merged into %s, which explains it", inc->merged);
    else if (inc->recovered && inc->recovered >= inc->updated)
        snprintf(buf, len, "%s", inc->resolution);
    else
        snprintf(buf, len, "nothing new for %lld min",
                 (long long)(eng_fold_window(inc) / TS_MIN));
}

static void summary(const incident *inc, int64_t resolved, char *buf,
                    size_t len)
{
    char why[200];
    size_t off;

    summary_open(inc, buf, len);
    off = strlen(buf);
    if (resolved && off < len) {
        resolution(inc, why, sizeof why);
        snprintf(buf + off, len - off, " Resolved: %s.", why);
    }
}

/* status, and when resolved: since when and why; how often it reopened. */
static void lifecycle_json(json_t *js, const incident *inc, int64_t resolved)
{
    char why[200];

    if (resolved) {
        resolution(inc, why, sizeof why);
        json_object_set_new(js, "resolved", ts_json(resolved));
        json_object_set_new(js, "resolution", json_string(why));
    }
    if (inc->merged[0]) {
        json_object_set_new(js, "merged_into", json_string(inc->merged));
        json_object_set_new(js, "actions", json_array()); /* the storm's now */
    }
    if (inc->reopened)
        json_object_set_new(js, "reopened", json_integer(inc->reopened));
}

json_t *eng_incident_json(engine *e, const incident *inc)
{
    char sum[768];
    int64_t resolved = inc->merged[0] ? inc->updated
                                      : eng_resolved_at(inc, eng_cluster_now(e, inc->cluster));
    json_t *js = json_object(), *root = obj_s("scenario", inc->root_scenario);

    set_o(root, "ts", ts_json(inc->root_ts));
    if (inc->root_node[0])
        json_object_set_new(root, "node", json_string(inc->root_node));
    if (inc->root_job[0])
        json_object_set_new(root, "job", json_string(inc->root_job));
    if (inc->escalated_from[0]) /* the scenario it was opened as */
        json_object_set_new(root, "escalated_from",
                            json_string(inc->escalated_from));
    summary(inc, resolved, sum, sizeof sum);
    set_s(js, "id", inc->id);
    set_s(js, "scenario", inc->sc->id);
    set_s(js, "status", resolved ? "resolved" : "open");
    set_o(js, "scope", scope_json(e, inc));
    set_o(js, "root_cause", root);
    set_o(js, "opened", ts_json(inc->opened));
    set_o(js, "updated", ts_json(inc->updated));
    set_o(js, "evidence", evidence_json(inc));
    set_o(js, "children", children_json(inc));
    set_o(js, "chain", chain_json(inc));
    set_o(js, "actions", eng_actions(e, inc));
    set_s(js, "summary", sum);
    lifecycle_json(js, inc, resolved);
    return js;
}
