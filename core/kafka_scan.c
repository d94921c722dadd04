/* A topic read once to its end (core/kafka_scan.h). */
#include "core/kafka_scan.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/kafka.h"
#include "core/mem.h"
#include "core/ts.h"

static int64_t now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* What is left to read of each partition (indexed by partition id). */
typedef struct part {
    int64_t end;  /* the high watermark when the scan began */
    int pending;  /* 1 until read to end */
} part;

typedef struct scan {
    const kfk_scan_opts *o;
    rd_kafka_t *rk;
    part *p;
    int32_t np;
    int left;
} scan;

static void done_with(scan *s, int32_t id)
{
    if (id >= 0 && id < s->np && s->p[id].pending) {
        s->p[id].pending = 0;
        s->left--;
    }
}

/* Whether the broker says where a time starts: asked for time 0, a real
 * Kafka answers the log's start (>= 0), the embedded broker -1. */
static int can_seek(scan *s, const rd_kafka_topic_partition_list_t *l,
                    int timeout_ms)
{
    rd_kafka_topic_partition_list_t *probe = rd_kafka_topic_partition_list_new(1);
    int ok;

    rd_kafka_topic_partition_list_add(probe, s->o->topic, l->elems[0].partition)
        ->offset = 0;
    ok = !rd_kafka_offsets_for_times(s->rk, probe, timeout_ms) &&
         !probe->elems[0].err && probe->elems[0].offset >= 0;
    rd_kafka_topic_partition_list_destroy(probe);
    return ok;
}

/* Each partition from where since_ms starts; one with nothing at or
 * after it is done at once. Left from the start when the broker cannot
 * say. */
static void seek_to_time(scan *s, rd_kafka_topic_partition_list_t *l,
                         int timeout_ms)
{
    rd_kafka_topic_partition_list_t *t;

    if (!can_seek(s, l, timeout_ms))
        return;
    t = rd_kafka_topic_partition_list_copy(l);
    for (int i = 0; i < t->cnt; i++)
        t->elems[i].offset = s->o->since_ms;
    if (!rd_kafka_offsets_for_times(s->rk, t, timeout_ms))
        for (int i = 0; i < t->cnt; i++) {
            if (t->elems[i].err)
                continue; /* that one from the start */
            if (t->elems[i].offset < 0)
                done_with(s, t->elems[i].partition);
            l->elems[i].offset = t->elems[i].offset < 0 ? RD_KAFKA_OFFSET_END
                                                        : t->elems[i].offset;
        }
    rd_kafka_topic_partition_list_destroy(t);
}

/* A partition's watermarks. A partition whose leader is being elected
 * (a topic just made, a broker restarting) answers "not leader" for a
 * moment: asked again until timeout_ms, as a consumer would. This is a
 * command's one-shot read, not an event loop: it may wait. */
static rd_kafka_resp_err_t watermarks(scan *s, int32_t id, int64_t *lo,
                                      int64_t *hi, int timeout_ms)
{
    int64_t until = ts_mono() + (int64_t)timeout_ms * 1000;
    rd_kafka_resp_err_t e;

    for (;;) {
        e = rd_kafka_query_watermark_offsets(s->rk, s->o->topic, id, lo, hi,
                                             timeout_ms);
        if ((e != RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION &&
             e != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE &&
             e != RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH &&
             e != RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH) ||
            ts_mono() >= until)
            return e;
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
}

/* The partitions, each with where to start; NULL with err. */
static rd_kafka_topic_partition_list_t *plan(scan *s, int timeout_ms,
                                             cs_err *err)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(s->rk, s->o->topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_resp_err_t e = t ? rd_kafka_metadata(s->rk, 0, t, &md, timeout_ms)
                              : rd_kafka_last_error();

    if (e || md->topic_cnt != 1 || md->topics[0].err) {
        e = e ? e : md->topic_cnt != 1 ? RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC
                                       : md->topics[0].err;
        if (e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT)
            cs_err_set(err, "Kafka at %s does not answer (%s)", s->o->brokers,
                       rd_kafka_err2str(e));
        else
            cs_err_set(err, "topic %s: %s%s", s->o->topic, rd_kafka_err2str(e),
                       e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
                       e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                           ? " (cascade kafka init makes it)" : "");
        goto out;
    }
    const rd_kafka_metadata_topic_t *mt = &md->topics[0];
    for (int i = 0; i < mt->partition_cnt; i++)
        if (mt->partitions[i].id >= s->np)
            s->np = mt->partitions[i].id + 1;
    s->p = xcalloc((size_t)s->np + 1, sizeof *s->p);
    l = rd_kafka_topic_partition_list_new(mt->partition_cnt);
    for (int i = 0; i < mt->partition_cnt; i++) {
        int32_t id = mt->partitions[i].id;
        int64_t lo, hi;
        e = watermarks(s, id, &lo, &hi, timeout_ms);
        if (e) {
            cs_err_set(err, "topic %s [%d]: %s", s->o->topic, id,
                       rd_kafka_err2str(e));
            rd_kafka_topic_partition_list_destroy(l);
            l = NULL;
            goto out;
        }
        if (hi <= lo)
            continue; /* empty */
        s->p[id] = (part){hi, 1};
        s->left++;
        /* From the start, since_ms judged here: the embedded broker
         * cannot say where a time starts (its ListOffsets answers -1 to
         * any timestamp), and a wrong answer would hide incidents. */
        rd_kafka_topic_partition_list_add(l, s->o->topic, id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    }
    if (s->o->seek && s->o->since_ms > 0 && l->cnt)
        seek_to_time(s, l, timeout_ms);
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    if (t)
        rd_kafka_topic_destroy(t);
    return l;
}

/* One message or event: 1 to stop (fn asked), -1 on an error, else 0. */
static int take(scan *s, rd_kafka_message_t *m, unsigned long *n, cs_err *err)
{
    rd_kafka_timestamp_type_t tt;
    int64_t ts;
    int32_t id = m->partition;

    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        done_with(s, id);
        return 0;
    }
    if (m->err) {
        if (m->err == RD_KAFKA_RESP_ERR__TRANSPORT ||
            m->err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
            return 0; /* librdkafka retries; the deadline judges */
        cs_err_set(err, "topic %s: %s", s->o->topic, rd_kafka_message_errstr(m));
        return -1;
    }
    if (id >= 0 && id < s->np && m->offset >= s->p[id].end - 1)
        done_with(s, id); /* what came after the scan began is not waited for */
    ts = rd_kafka_message_timestamp(m, &tt);
    if (s->o->since_ms > 0 && ts >= 0 && ts < s->o->since_ms)
        return 0;
    (*n)++;
    return s->o->fn(s->o->arg, m) ? 1 : 0;
}

int kfk_scan(const kfk_scan_opts *o, unsigned long *count, cs_err *err)
{
    const char *const kv[] = {"bootstrap.servers", o->brokers,
                              "client.id", "cascade-view",
                              /* assign() only: the group is never joined
                               * and nothing is committed */
                              "group.id", "cascade-view",
                              "enable.auto.commit", "false",
                              "enable.auto.offset.store", "false",
                              "enable.partition.eof", "true", NULL};
    scan s = {.o = o};
    rd_kafka_conf_t *conf = kfk_conf_new(kv, o->props, err);
    rd_kafka_topic_partition_list_t *l = NULL;
    int64_t deadline = now_ms() + o->timeout_ms;
    unsigned long n = 0;
    int rc = -1, r = 0;

    if (!conf || !(s.rk = kfk_client_new(RD_KAFKA_CONSUMER, conf, err)))
        goto out;
    if (!(l = plan(&s, o->timeout_ms, err)))
        goto out;
    if (s.left && rd_kafka_assign(s.rk, l)) {
        cs_err_set(err, "topic %s: cannot assign its partitions", o->topic);
        goto out;
    }
    while (s.left > 0 && r == 0) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(s.rk, 100);
        if (!m) {
            if (now_ms() > deadline) {
                cs_err_set(err, "topic %s: not read to its end within %d ms "
                           "(%d partition(s) left)", o->topic, o->timeout_ms,
                           s.left);
                r = -1;
            }
            continue;
        }
        r = take(&s, m, &n, err);
        rd_kafka_message_destroy(m);
    }
    rc = r < 0 ? -1 : 0;
out:
    if (count)
        *count = n;
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    if (s.rk) {
        rd_kafka_consumer_close(s.rk);
        rd_kafka_destroy(s.rk);
    }
    free(s.p);
    return rc;
}
