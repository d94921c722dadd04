/* cascade's topic and group names, and what each topic should be
 * (core/topics.h). */
#include "core/topics.h"

#include <stdio.h>
#include <string.h>

#include "core/str.h"

#define NAME_MAX_LEN (TOPIC_PREFIX_MAX + 32)

/* In the order of enum topic_id and enum topic_group. */
#define PLAIN_TOPICS "cascade.signals", "cascade.incidents", "cascade.actions", \
                     "cascade.deadletter", "cascade.audit"
#define PLAIN_GROUPS "cascade-correlate", "cascade-act", "cascade-actions-dry-run"

static const char *const plain_topics[TOPIC_COUNT] = {PLAIN_TOPICS};
static const char *const plain_groups[GROUP_COUNT] = {PLAIN_GROUPS};

/* Process config, set once at start (topic_set_prefix): the names with
 * the prefix; until then the plain ones. */
static char prefix_now[TOPIC_PREFIX_MAX + 1];
static char topics_now[TOPIC_COUNT][NAME_MAX_LEN] = {PLAIN_TOPICS};
static char groups_now[GROUP_COUNT][NAME_MAX_LEN] = {PLAIN_GROUPS};

int topic_prefix_check(const char *prefix, cs_err *err)
{
    size_t n = strlen(prefix);

    if (n > TOPIC_PREFIX_MAX) {
        cs_err_set(err, "longer than %d bytes (a Kafka topic name has at "
                   "most 249)", TOPIC_PREFIX_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)prefix[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-')
            continue;
        cs_err_set(err, "'%s': character %zu is not one a Kafka topic name "
                   "may hold (ASCII letters, digits, '.', '_', '-')",
                   prefix, i + 1);
        return -1;
    }
    return 0;
}

int topic_set_prefix(const char *prefix, cs_err *err)
{
    if (topic_prefix_check(prefix, err))
        return -1;
    str_copy(prefix_now, sizeof prefix_now, prefix);
    for (int i = 0; i < TOPIC_COUNT; i++)
        snprintf(topics_now[i], NAME_MAX_LEN, "%s%s", prefix, plain_topics[i]);
    for (int i = 0; i < GROUP_COUNT; i++)
        snprintf(groups_now[i], NAME_MAX_LEN, "%s%s", prefix, plain_groups[i]);
    return 0;
}

const char *topic_prefix(void)
{
    return prefix_now;
}

const char *topic_name(enum topic_id t)
{
    return t >= 0 && t < TOPIC_COUNT ? topics_now[t] : "";
}

const char *topic_group(enum topic_group g)
{
    return g >= 0 && g < GROUP_COUNT ? groups_now[g] : "";
}

/* How long each topic keeps a message. Signals: a week, to replay or
 * backfill after an outage of the correlators (their state in Redis is
 * what matters past that). Incidents, action requests and dead letters:
 * a month, for the people who read them after the fact. The audit trail:
 * three months; keep it longer where it is mirrored (a SIEM). */
static const long long retention_days[TOPIC_COUNT] = {
    [TOPIC_SIGNALS] = 7, [TOPIC_INCIDENTS] = 30, [TOPIC_ACTIONS] = 30,
    [TOPIC_DEADLETTER] = 30, [TOPIC_AUDIT] = 90};

void topic_plans(topic_plan out[TOPIC_COUNT], int partitions, int replication)
{
    /* With 3 replicas, 2 in sync: a write survives one broker lost, and
     * one broker down does not stop writes. Fewer replicas cannot ask
     * for 2 without stopping at the first broker down. */
    int min_isr = replication >= 3 ? 2 : 1;

    for (int i = 0; i < TOPIC_COUNT; i++) {
        topic_plan *p = &out[i];
        memset(p, 0, sizeof *p);
        p->name = topic_name((enum topic_id)i);
        p->partitions = partitions;
        p->replication = replication;
        p->configs[0].key = "retention.ms";
        snprintf(p->configs[0].value, sizeof p->configs[0].value, "%lld",
                 retention_days[i] * 86400000LL);
        p->configs[1].key = "min.insync.replicas";
        snprintf(p->configs[1].value, sizeof p->configs[1].value, "%d",
                 min_isr);
        /* delete, never compact: the consumers count a hole in a
         * partition's offsets as messages lost (core/kafka_consumer.c),
         * and a compacted topic has holes by design. */
        p->configs[2].key = "cleanup.policy";
        str_copy(p->configs[2].value, sizeof p->configs[2].value, "delete");
    }
}
