/* A batch's outputs and their outbox records: an incident's record reads
 * back as the same output, in the same place, under the field it was
 * written with; a dead letter has no record; a record that is not one
 * (no key line, another topic, a key that is no outbox) is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/mem.h"
#include "core/topics.h"
#include "correlate/outq.h"

static int32_t part_of(void *arg, const char *topic, const char *cluster)
{
    (void)arg;
    return !strcmp(topic, KFK_TOPIC_INCIDENTS) && !strcmp(cluster, "c-1") ? 7
                                                                           : -1;
}

static void test_round_trip(void)
{
    outq q = {0}, back = {0};
    pending *p = outq_push(&q, KFK_TOPIC_INCIDENTS, 7, "inc-1",
                           xstrdup("{\"id\":\"inc-1\",\"n\":\"a\\nb\"}"), "c-1");
    char *rec = outq_record(p);

    CHECK_STR(p->outbox, "cascade:{c-1}:outbox");
    CHECK_INT(strlen(p->field), 16);
    REQUIRE(outq_restore(&back, p->outbox, "0123456789abcdef", rec, part_of,
                         NULL) == 0);
    REQUIRE(back.n == 1);
    CHECK(back.v[0].topic == p->topic);
    CHECK_INT(back.v[0].part, 7);
    CHECK_STR(back.v[0].key, "inc-1");
    CHECK_STR(back.v[0].value, p->value);
    CHECK_STR(back.v[0].outbox, p->outbox);
    CHECK_STR(back.v[0].field, "0123456789abcdef"); /* the field of record */
    /* the same output twice has the same field: its content's hash */
    pending *again = outq_push(&q, KFK_TOPIC_INCIDENTS, 7, "inc-1",
                               xstrdup(p->value), "c-1");
    CHECK_STR(again->field, q.v[0].field);
    free(rec);
    outq_free(&q);
    outq_free(&back);
}

static void test_dead_letter(void)
{
    outq q = {0};
    pending *p = outq_push(&q, KFK_TOPIC_DEADLETTER, -1, NULL,
                           xstrdup("{}"), NULL);

    CHECK(p->outbox == NULL);
    CHECK_STR(p->key, "");
    outq_clear(&q);
    CHECK_INT(q.n, 0);
    outq_free(&q);
}

static void test_refused(void)
{
    outq q = {0};
    char rec[256];

    snprintf(rec, sizeof rec, "%s", KFK_TOPIC_INCIDENTS); /* no key line */
    CHECK_INT(outq_restore(&q, "cascade:{c}:outbox", "f", rec, part_of, NULL),
              -1);
    snprintf(rec, sizeof rec, "%s\nk\nv", KFK_TOPIC_SIGNALS);
    CHECK_INT(outq_restore(&q, "cascade:{c}:outbox", "f", rec, part_of, NULL),
              -1);
    snprintf(rec, sizeof rec, "%s\nk\nv", KFK_TOPIC_INCIDENTS);
    CHECK_INT(outq_restore(&q, "cascade:{c}:jobs", "f", rec, part_of, NULL), -1);
    CHECK_INT(outq_restore(&q, "cascade:{c}:outbox", "f", rec, part_of, NULL),
              0);
    CHECK(outq_is_outbox("cascade:{c}:outbox"));
    CHECK(!outq_is_outbox("cascade:{}:outbo"));
    CHECK_INT(q.n, 1);
    outq_free(&q);
}

int main(void)
{
    test_round_trip();
    test_dead_letter();
    test_refused();
    return check_report();
}
