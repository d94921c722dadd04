/* The engine's bottom layer: cluster state (event-time clocks, windows,
 * inventory, jobs, signals seen), the incident record and its lifecycle.
 * Everything above reads and changes state through these; nothing here
 * calls up (what a lower layer must tell a higher one goes through the
 * detector table, engine/detect.h). Private to engine/. */
#ifndef CS_ENGINE_STATE_H
#define CS_ENGINE_STATE_H

#include "core/idset.h"
#include "core/nodeaddr.h"
#include "core/strmap.h"
#include "core/ts.h"
#include "engine/detect.h"
#include "engine/engine.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

/* Windows (event time). Seed 000: a node crash takes several jobs down
 * "within minutes"; ten minutes of look-back catches the slow scheduler
 * reports without joining unrelated failures of the same node. */
#define CRASH_WINDOW (30 * TS_MIN)
/* An incident keeps absorbing related signals this long after its last. */
#define FOLD_WINDOW (30 * TS_MIN)
/* Faults that follow a logical job (spot reclaims, one program faulting
 * GPU after GPU) or one GPU (faulting under job after job) are one
 * incident within this (SCENARIOS.md: "within a day"). Windows named
 * "hist:<host>/<gpu>" keep their entries this long. */
#define NAME_WINDOW (24 * TS_HOUR)
/* A team's queue-limit hits by hour of day ("peak:TEAM" windows), kept for
 * a week to find the hours they recur (capacity.peak_demand). */
#define PEAK_HISTORY (7 * 24 * TS_HOUR)
/* A node's faults, for its time between failures (lemon.c). */
#define LEMON_HISTORY (30 * 24 * TS_HOUR)
/* A resolved incident takes a related signal this long after it was
 * resolved, and is open again (a node that flaps, a fix that did not
 * hold) instead of a new incident opening. */
#define REOPEN_GRACE TS_HOUR
/* How long window entries and seen ids are kept, in memory and in Redis. */
#define HORIZON (2 * TS_HOUR)
/* eng_tick: how far behind the wall clock the stream may be for the wall
 * clock to drive timers. */
#define LIVE_SKEW TS_MIN
typedef struct entry {
    int64_t ts;
    uint64_t sig;
    fact_kind kind;
    sig_source source;
    char job[64];
    const char *scenario; /* static catalog string or NULL */
    const char *sig_id;   /* the signature that matched (catalog) or NULL */
} entry;

/* A window's entries, v[0..n), sorted by time (in arrival order among
 * equal times), so that the horizon trims a prefix: v moves up over the
 * trimmed entries instead of the window being copied down on every
 * addition (that copy and a scan for the same signal made each addition
 * cost the window's size: at 100 signals/s on a host, a minute in, more
 * than the correlator could keep up with at 100k/s). */
typedef struct node_win {
    entry *v;
    size_t n;
    entry *mem;    /* the allocation; v - mem entries before v are trimmed */
    size_t memcap;
} node_win;

typedef struct node_info {
    char rack[64];
    char nvlink[64]; /* its NVLink domain (an NVL72 rack, ...), or "" */
    int canary;
    /* A planned-maintenance window (maint.c), or maint_end 0. */
    int64_t maint_start, maint_end;
    char maint_id[64], maint_reason[128];
    /* The other names it is known by (SLURM's NodeAddr, the Kubernetes
     * node's InternalIP), blank-separated, "" when none: a line that
     * names the node by one (Ray's GCS names nodes by IP) finds it. */
    char addrs[NA_ADDRS_MAX * NA_ADDR_MAX];
} node_info;

typedef struct job {
    char id[64];
    char cluster[64];
    char name[128];
    char team[64];
    char state[16];
    char priority[16]; /* reserved or elastic (docs/FORMATS.md) */
    json_t *nodes;  /* array of host names */
    json_t *config; /* launch parameters */
    json_t *depends_on; /* job ids it waits for, or NULL */
    char error[64];     /* the signature of its latest error line */
    /* The first NCCL watchdog timeout of the job: its SeqNum, collective,
     * rank and host. Another rank timing out on the same SeqNum in
     * another collective is a desync (wd_op "": none yet). */
    long wd_seq;
    int wd_rank;
    char wd_op[24];
    char wd_host[64];
    char incident[24]; /* the incident that explains its failure */
    int64_t updated;   /* event time of its last state change */
    /* Training progress (metrics.c): the last step number seen, when it
     * last changed, the latest sample that repeated it, and when the stall
     * rule looks at the job next (0: at progress + STALL_AFTER). */
    double step;
    int64_t progress_ts, stale_ts, stall_check;
} job;

typedef struct child {
    char job[64];
    char state[16];
    char scenario[48];
    int64_t ts;
} child;

/* A node incident merged into a storm (storms.c). */
typedef struct storm_member {
    char node[128];
    char id[24];
    char scenario[48];
    int64_t ts;
    int64_t recovered; /* when the node was back, or 0 */
} storm_member;

typedef struct incident {
    char id[24];
    int job_scope; /* opened for a job (else for a node) */
    char key[192];  /* its key in open_job: the job id, or "name:C|<job_name>"
                     * for faults that follow a logical job (spot) */
    const pb_scenario *sc;
    char cluster[64], node[128], gpu[16], job[64];
    const char *root_scenario;
    char escalated_from[64]; /* the node scenario it was opened as, if it
                              * escalated (faults.c) */
    char root_node[128], root_job[64];
    char team[64]; /* a team's incident (capacity.peak_demand) */
    int64_t root_ts, opened, updated, first, last;
    int count;
    unsigned sources;
    child *children;
    size_t nchildren;
    storm_member *members; /* a storm's node incidents */
    size_t nmembers;
    char merged[24]; /* merged into this storm: published once, then gone */
    char rack[80];   /* a storm's rack */
    fact cause;      /* the fact that opened it (sizes for OOM fixes) */
    /* Lifecycle. A recovery signal after its last one resolves it (when,
     * and what said so); so does quiet for its fold window, for what is
     * not a node's fault (a node's fault stays open until the node is
     * back). A related signal after that reopens it. */
    int64_t recovered;
    char resolution[160];
    int reopened;
    int pub_resolved; /* the status last published: 1 resolved */
    int shown;        /* published at least once */
    int dirty;        /* changed since published: in its engine's list */
    size_t seq;       /* its place in incs: the order flushes publish in */
    struct engine *eng;
    json_t *published; /* actions already sent */
} incident;

/* One cluster's state in memory, as in Redis: every SLURM controller
 * counts job ids from 1, and host names repeat across clusters, so a
 * correlator that owns several clusters keeps each apart. */
typedef struct cstate {
    const char *name;  /* the cluster (the clusters map's key) */
    int64_t clock;     /* newest event time (0 before the first signal) */
    int live;          /* its stream caught up with the wall clock once:
                        * its timers run on the wall clock (eng_tick) */
    strmap *nodes;     /* window -> node_win: a host's, or "hist:", "job:",
                        * "peak:", "rack:" windows */
    strmap *inventory; /* host -> node_info */
    /* an address -> the host it is (a copy), or "" when two hosts claim
     * it (a container's 127.0.0.1): a name that says nothing */
    strmap *addr_host;
    strmap *jobs;      /* job id -> job */
    strmap *open_node; /* host or own key -> incident (node-level) */
    strmap *open_job;  /* job id or "name:" key -> incident (job-level) */
    idset *seen;       /* signal id -> its event time */
    int seen_warned;   /* the seen limit's first eviction was logged */
    strmap *corr;      /* "SCENARIO/KIND|KEY" -> a correlation's state */
    int64_t corr_pruned; /* event time the last prune of corr started */
    size_t corr_pos;     /* where the prune under way walks corr next */
    size_t corr_slice;   /* states it looks at per signal; 0: none under way */
    size_t corr_fed;     /* signals since the last prune started */
} cstate;

/* Walks every cluster's jobs; start with a zeroed iterator. A walk that
 * jobs are added or deleted under is safe, but may miss or see twice a
 * few (strmap_next). */
typedef struct eng_iter {
    size_t cpos, pos;
    cstate *cs;      /* the cluster of the job last returned */
    const char *key; /* and its key */
} eng_iter;

struct engine {
    const eng_store_ops *ops;
    void *ctx;
    classifier *cls;
    pb_catalog *cat;   /* responses per scenario (the rule files) */
    int cat_shared;    /* cat belongs to the caller (eng_new_shared) */
    strmap *clusters;  /* cluster -> cstate */
    cstate *cs_last;   /* the last one asked for: a batch is mostly one */
    incident **incs;
    size_t ninc, capinc;
    /* What the next flush publishes: the incidents changed since the
     * last (eng_dirty), and every one once the earliest quiet resolve is
     * due (quiet_due; 0: not known, walk them all). A walk of thousands
     * of open incidents for each batch cost more than the batch. */
    incident **dirty;
    size_t ndirty, capdirty, next_seq;
    int64_t quiet_due;
    int flush_kind; /* eng_flush_kind: the incident being flushed */
    /* Event time is per cluster: each cluster's signals come in order on
     * their own partition, but partitions interleave at random. `now` is
     * the clock of the cluster being worked on (eng_enter), `high` the
     * newest of all. */
    int64_t now;
    int64_t high;
    strmap *series;     /* "cluster|host|name|dev" -> series (metrics.c) */
    int64_t next_check; /* earliest stall check due (0: none) */
    int64_t live_clock; /* wall clock, once a cluster is live (eng_tick) */
    int64_t wall;       /* the wall clock, bounding event times (0: none) */
    size_t max_clusters; /* signals of more clusters are refused */
    size_t max_seen;     /* a cluster's seen ids (0: no limit) */
    int64_t next_gap;   /* when the silent-host scan runs next */
    pb_catalog **old_cats; /* replaced rule sets, still referenced */
    size_t nold;
    void *slot[ENG_MAX_DETECTORS]; /* each detector's own (eng_slot) */
    /* The prune of finished jobs under way (eng_prune_begin), in slices. */
    eng_iter prune_it;
    int pruning;
};

/* Window entry kinds as one letter, indexed by fact_kind. */
extern const char eng_kind_code[];
/* A cluster's event-time clock (0 before its first signal); advance
 * moves it forward only. eng_enter makes it `now` and returns the `now`
 * it replaced (for eng_leave). */
int64_t eng_clock(const engine *e, const char *cluster);
void eng_clock_advance(engine *e, const char *cluster, int64_t ts);
int64_t eng_enter(engine *e, const char *cluster);
void eng_leave(engine *e, int64_t saved);
/* A logical job's key in open_job, "name:CLUSTER|NAME"; eng_name_of
 * gives back NAME. */
void eng_name_key(char *key, size_t len, const char *cluster, const char *name);
const char *eng_name_of(const char *key);
/* A cluster's state, created on first use. */
cstate *eng_cs(engine *e, const char *cluster);
int eng_next_job(engine *e, eng_iter *it, job **j);
/* A window of the cluster: created (win_of) or NULL when absent. */
node_win *eng_win_of(engine *e, const char *cluster, const char *win);
node_win *eng_win_find(engine *e, const char *cluster, const char *win);
node_info *eng_node_info(engine *e, const char *cluster, const char *host);
/* The inventory's name of the node `name` stands for: name itself when
 * the inventory knows it, the host one of its addresses belongs to, else
 * NULL. */
const char *eng_node_named(engine *e, const char *cluster, const char *name);
/* The host's inventory record, created on first use, set from an
 * inventory object (a signal's, or one read back after a restart). */
node_info *eng_inventory_set(engine *e, const char *cluster, const char *host,
                             json_t *o);
/* The record to store for the host (a new reference): the inventory
 * object with what the node keeps that it left out (rack, NVLink
 * domain, canary, window). */
json_t *eng_inventory_record(const node_info *ni, json_t *o);
/* A new entry of time ts in its sorted place (the caller fills it). */
entry *eng_win_insert(node_win *w, int64_t ts);
/* Drops the entries before `before`. */
void eng_win_trim(node_win *w, int64_t before);
/* Whether w holds signal id's fact of this kind (and jobid, unless NULL):
 * only the entries of its time are read. */
int eng_win_has(const node_win *w, int64_t ts, uint64_t id, fact_kind kind,
                const char *jobid);
void eng_key(char *buf, size_t len, const char *cluster, const char *kind,
             const char *name);
void eng_mark_seen(engine *e, const char *cluster, uint64_t id, int64_t ts);
incident *eng_incident_new(engine *e);
void eng_job_free(void *p);
void eng_win_free(void *p);
/* The incident of that id, or NULL. */
incident *eng_incident_by_id(engine *e, const char *id);
/* A scheduler state that is a failure (FAILED, NODE_FAIL). */
int eng_is_failure(const char *state);
/* Whether host is one of the job's nodes. */
int eng_ran_on(const job *j, const char *host);
/* A fact a rule decided (not read from a line): kind, scenario, where. */
void eng_rule_fact(fact *f, fact_kind kind, const char *scenario,
                   const char *host, const char *jobid);
void eng_add_child(incident *inc, const char *jobid, const char *state,
                   int64_t ts);
/* storms.c: one fault on many nodes of a rack is one incident. */
int eng_is_storm(const incident *inc);
/* What a storm's rack field names: "rack", or "nvlink_domain" for a
 * storm of an NVLink domain (its scope key and its ticket's target). */
const char *eng_group_kind(const incident *inc);
job *eng_job_on(engine *e, const char *cluster, const char *host);
/* The cluster's job with this id, or NULL (also for NULL or ""). */
job *eng_job_of(engine *e, const char *cluster, const char *id);
incident *eng_open_incident(engine *e, const sig *s, const char *scenario,
                            const char *scope_kind, const char *scope_key);
void eng_touch(incident *inc, const sig *s);
int eng_fresh(const engine *e, const incident *inc);
void eng_win_add(engine *e, const sig *s, const char *host, fact_kind kind,
                 const char *jobid, const char *scenario, const char *sig_id);
void eng_incident_free(incident *inc);
/* inc changed: the next flush publishes it. */
void eng_dirty(incident *inc);
/* When the incident was resolved as of `now` (its cluster's time), or 0
 * while it is open. */
int64_t eng_resolved_at(const incident *inc, int64_t now);
/* The time timers and lifecycle decisions in a cluster go by: its event
 * time, or the wall clock once the stream has caught up. */
int64_t eng_cluster_now(const engine *e, const char *cluster);
/* A recovery signal resolves inc (nothing when it is resolved already). */
void eng_resolve(incident *inc, const sig *s, const char *why);
/* Children that failed (not only seen erroring). */
size_t eng_failed_children(const incident *inc);
/* How long an incident keeps absorbing related signals after its last. */
int64_t eng_fold_window(const incident *inc);
/* Whether a node-scoped incident sits under its own key in open_node (a
 * rack's, or an advisory's: "ghost:", "gap:", "driver:") rather than
 * under its host. */
int eng_own_key(const char *key);
/* Whether an incident under the own key "KIND:ID" is open and fresh. */
int eng_advisory_open(engine *e, const char *cluster, const char *kind,
                      const char *id, int node);

/* The cluster's clock, set to ts when it has none yet; eng_clock_move
 * moves it (and the newest of all) forward to ts. One lookup a signal. */
int64_t *eng_clock_slot(engine *e, const char *cluster, int64_t ts);
void eng_clock_move(engine *e, int64_t *t, int64_t ts);
/* Whether the cluster saw signal s before; if not, it has now. */
int eng_seen_before(engine *e, const sig *s);

/* ---- records (record.c) ---------------------------------------------- */

/* Writes the record of a job, its training progress, an incident's
 * internal state, and the classifier's open multi-line assemblies. */
void eng_persist_job(engine *e, const job *j);
void eng_persist_progress(engine *e, const job *j);
void eng_persist_incident(engine *e, const incident *inc);
void eng_persist_tracebacks(engine *e);
/* "cascade:{C}:KIND[:NAME]" -> the cluster and what follows "}:". */
int eng_split_key(const char *key, char *cluster, size_t len,
                  const char **kind);
/* One record read back (the hash field and its value): 0, or -1 with
 * err set. The incident's goes into the engine's list unlinked. */
int eng_record_job(engine *e, const char *cluster, const char *field,
                   json_t *o, cs_err *err);
int eng_record_progress(engine *e, const char *cluster, const char *field,
                        const char *value, cs_err *err);
int eng_record_inventory(engine *e, const char *cluster, const char *host,
                         json_t *o);
int eng_record_incident(engine *e, const char *field, json_t *o,
                        cs_err *err);

#endif
