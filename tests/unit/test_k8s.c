/* The Kubernetes collector's pure parts: the watch framer, what each
 * object version tells (ingest/k8sobj.h), the kubeconfig and in-cluster
 * config, and the collect.k8s config section. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/signal.h"
#include "core/ts.h"
#include "ingest/colcfg.h"
#include "ingest/k8sframe.h"
#include "ingest/k8sobj.h"
#include "ingest/jsonscan.h"
#include "ingest/kubecfg.h"

/* ---- the framer ---------------------------------------------------------- */

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b \\\"}\\n\",\"resourceVersion\":\"11\"}}}\n"
    "\r\n  {\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\n";

/* Feeds s in pieces cut at a and b; the documents' types, joined. */
static void frame_cut(const char *s, size_t n, size_t a, size_t b, char *out,
                      size_t cap)
{
    kf_framer *f = kf_new();
    size_t cuts[] = {0, a, b, n};
    cs_err err;
    json_t *doc;
    int rc;

    out[0] = 0;
    for (int i = 0; i < 3; i++) {
        REQUIRE(kf_feed(f, s + cuts[i], cuts[i + 1] - cuts[i], &err) == 0);
        while ((rc = kf_next(f, &doc, &err)) == 1) {
            strncat(out, json_string_value(json_object_get(doc, "type")),
                    cap - strlen(out) - 2);
            strcat(out, ",");
            json_decref(doc);
        }
        if (rc)
            fprintf(stderr, "cut %zu %zu: %s\n", a, b, err.msg);
        REQUIRE(rc == 0);
    }
    kf_free(f);
}

static void test_framer(void)
{
    size_t n = strlen(stream);
    char got[256];
    int bad = 0;

    /* every pair of cut points: documents split anywhere, several in a
     * chunk, whitespace between */
    for (size_t a = 0; a <= n; a++)
        for (size_t b = a; b <= n; b += 7) {
            frame_cut(stream, n, a, b, got, sizeof got);
            bad += strcmp(got, "ADDED,MODIFIED,BOOKMARK,") != 0;
        }
    CHECK_INT(bad, 0);

    /* not JSON: an error with the stream's byte */
    kf_framer *f = kf_new();
    cs_err err;
    json_t *doc;
    REQUIRE(kf_feed(f, "{\"type\":\"ADDED\"}\n{\"type\" 1}\n", 28, &err) == 0);
    CHECK_INT(kf_next(f, &doc, &err), 1);
    json_decref(doc);
    CHECK_INT(kf_next(f, &doc, &err), -1);
    CHECK(strstr(err.msg, "watch stream byte 2") != NULL);
    kf_free(f);

    /* a document past the limit */
    f = kf_new();
    char *big = malloc(KF_MAX_DOC);
    memset(big, ' ', KF_MAX_DOC);
    big[0] = '{';
    CHECK_INT(kf_feed(f, big, KF_MAX_DOC, &err), 0);
    CHECK_INT(kf_next(f, &doc, &err), 0);
    CHECK_INT(kf_feed(f, "}", 1, &err), -1);
    CHECK(strstr(err.msg, "over") != NULL);
    free(big);
    kf_free(f);
}

/* ---- the scanner ---------------------------------------------------------- */

static void test_scanner(void)
{
    const char doc[] =
        "{\"type\": \"ADDED\", \"object\": {\"metadata\": {\"name\": \"a}\\\"\", "
        "\"resourceVersion\": \"42\", \"labels\": {\"x\": [1, {\"y\": \"]\"}]}}, "
        "\"count\": 3, \"reason\": \"Pulled\", "
        "\"message\": \"image \\\"nvcr.io/x\\\" caf\\u00e9 \\ud83d\\ude00\\n\"}}";
    static const char *const type[] = {"type", NULL};
    static const char *const rv[] = {"object", "metadata", "resourceVersion", NULL};
    static const char *const msg[] = {"object", "message", NULL};
    static const char *const count[] = {"object", "count", NULL};
    static const char *const none[] = {"object", "note", NULL};
    static const char *const deep[] = {"type", "x", NULL};
    const char *v;
    size_t n, bad;
    char out[64];

    CHECK_INT(jsc_object_end(doc, strlen(doc), &bad), (long)strlen(doc));
    CHECK_INT(jsc_object_end(doc, strlen(doc) - 1, &bad), 0);
    CHECK_INT(jsc_object_end("[1]", 3, &bad), -1);
    CHECK_INT(jsc_object_end("{\"a\\\\\":1}", 9, &bad), 9);
    CHECK_INT(jsc_object_end("{\"a\\\":1}", 8, &bad), 0);
    CHECK_INT(jsc_get(doc, strlen(doc), type, &v, &n), 1);
    CHECK(n == 5 && !memcmp(v, "ADDED", 5));
    CHECK_INT(jsc_get(doc, strlen(doc), rv, &v, &n), 1);
    CHECK(n == 2 && !memcmp(v, "42", 2));
    CHECK_INT(jsc_get(doc, strlen(doc), count, &v, &n), 2);
    CHECK(n == 1 && v[0] == '3');
    CHECK_INT(jsc_get(doc, strlen(doc), none, &v, &n), 0);
    CHECK_INT(jsc_get(doc, strlen(doc), deep, &v, &n), 0);
    REQUIRE(jsc_get(doc, strlen(doc), msg, &v, &n) == 1);
    CHECK_INT(jsc_unescape(v, n, out, sizeof out), 0);
    CHECK_STR(out, "image \"nvcr.io/x\" caf\xc3\xa9 \xf0\x9f\x98\x80\n");
    /* cut at a character's boundary, never inside */
    CHECK_INT(jsc_unescape(v, n, out, 23), 0);
    CHECK_STR(out, "image \"nvcr.io/x\" caf");
    CHECK_INT(jsc_unescape("a\\q", 3, out, sizeof out), -1);
    CHECK_INT(jsc_unescape("\\udc00", 6, out, sizeof out), -1);
    CHECK_INT(jsc_get("{\"a\" 1}", 7, type, &v, &n), -1);
}

/* ---- objects -------------------------------------------------------------- */

#define NOW 1788000000 /* 2026-08-29T10:40:00Z */

typedef struct sink {
    json_t *all;
    int refuse; /* refuse this many more, then take */
} sink;

static int take(void *arg, json_t *signal)
{
    sink *s = arg;

    if (s->refuse > 0) {
        s->refuse--;
        json_decref(signal);
        return -1;
    }
    json_array_append_new(s->all, signal);
    return 0;
}

static json_t *obj(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);

    if (!o)
        fprintf(stderr, "bad test JSON: %s at %d\n", je.text, je.position);
    REQUIRE(o != NULL);
    return o;
}

static int apply(ko_index *x, ko_kind k, const char *type, const char *text,
                 sink *s)
{
    json_t *o = obj(text);
    int rc = ko_apply(x, k, type, o, NOW, take, s);

    json_decref(o);
    return rc;
}

static const char *field(sink *s, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(s->all, i), key));
}

static int keep_reasons(void *arg, const char *text)
{
    (void)arg;
    return strncmp(text, "Scheduled:", 10) != 0;
}

static void test_events(void)
{
    ko_opts o = {.keep = keep_reasons};
    ko_index *x = ko_new(&o);
    sink s = {json_array(), 0};
    json_t *ev;

    /* the Pod index first: a Job's pod on gpu-012 */
    apply(x, KO_PODS, "ADDED",
          "{\"metadata\":{\"name\":\"t-0\",\"namespace\":\"ml\",\"uid\":\"p1\","
          "\"labels\":{\"batch.kubernetes.io/job-name\":\"t\"}},"
          "\"spec\":{\"nodeName\":\"gpu-012\"},\"status\":{\"phase\":\"Running\"}}", &s);
    CHECK_INT(json_array_size(s.all), 0);
    CHECK_INT(ko_pods(x), 1);

    /* legacy shape: lastTimestamp wins over firstTimestamp; managedFields
     * dropped; host and job from the Pod */
    const char *legacy =
        "{\"kind\":\"Event\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"e1\",\"uid\":\"u1\","
        "\"managedFields\":[{}],\"creationTimestamp\":\"2026-08-29T10:00:00Z\"},"
        "\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"ml\",\"name\":\"t-0\"},"
        "\"reason\":\"FailedScheduling\",\"message\":\"m\",\"source\":{\"component\":\"x\"},"
        "\"firstTimestamp\":\"2026-08-29T10:01:00Z\",\"lastTimestamp\":\"2026-08-29T10:02:00Z\","
        "\"count\":2,\"eventTime\":null,\"type\":\"Warning\"}";
    apply(x, KO_EVENTS, "ADDED", legacy, &s);
    REQUIRE(json_array_size(s.all) == 1);
    CHECK_STR(field(&s, 0, "source"), "k8s");
    CHECK_STR(field(&s, 0, "ts"), "2026-08-29T10:02:00Z");
    CHECK_STR(field(&s, 0, "host"), "gpu-012");
    CHECK_STR(field(&s, 0, "job"), "t");
    CHECK_INT(strlen(field(&s, 0, "id")), 16);
    ev = json_object_get(json_array_get(s.all, 0), "event");
    CHECK(json_object_get(json_object_get(ev, "metadata"), "managedFields") == NULL);

    /* the same version again (a relist): a repeat; a new count: told */
    apply(x, KO_EVENTS, "MODIFIED", legacy, &s);
    CHECK_INT(json_array_size(s.all), 1);
    ko_stats st;
    ko_get_stats(x, &st);
    CHECK_INT(st.repeats, 1);

    /* new-API recorder read through core/v1: series.lastObservedTime
     * first, eventTime (MicroTime) next; a Node it regards is the host */
    apply(x, KO_EVENTS, "ADDED",
          "{\"metadata\":{\"name\":\"e2\",\"uid\":\"u2\"},\"involvedObject\":{\"kind\":\"Node\",\"name\":\"gpu-009\"},"
          "\"reason\":\"NodeNotReady\",\"message\":\"Node gpu-009 status is now: NodeNotReady\","
          "\"firstTimestamp\":null,\"lastTimestamp\":null,\"eventTime\":\"2026-08-29T10:03:00.123456Z\","
          "\"series\":{\"count\":3,\"lastObservedTime\":\"2026-08-29T10:04:00.000001Z\"}}", &s);
    REQUIRE(json_array_size(s.all) == 2);
    CHECK_STR(field(&s, 1, "ts"), "2026-08-29T10:04:00.000001Z");
    CHECK_STR(field(&s, 1, "host"), "gpu-009");
    /* events.k8s.io shape: regarding, note, deprecatedSource */
    apply(x, KO_EVENTS, "ADDED",
          "{\"metadata\":{\"name\":\"e3\",\"uid\":\"u3\"},\"regarding\":{\"kind\":\"Job\",\"name\":\"t\"},"
          "\"reason\":\"BackoffLimitExceeded\",\"note\":\"Job has reached the specified backoff limit\","
          "\"deprecatedSource\":{\"host\":\"gpu-001\"},\"eventTime\":\"2026-08-29T10:05:00.000000Z\"}", &s);
    REQUIRE(json_array_size(s.all) == 3);
    CHECK_STR(field(&s, 2, "job"), "t");
    CHECK_STR(field(&s, 2, "host"), "gpu-001");
    /* the edge filter, max age, DELETED and no reason tell nothing */
    apply(x, KO_EVENTS, "ADDED",
          "{\"metadata\":{\"uid\":\"u4\"},\"reason\":\"Scheduled\",\"message\":\"ok\","
          "\"eventTime\":\"2026-08-29T10:05:00.000000Z\"}", &s);
    apply(x, KO_EVENTS, "ADDED",
          "{\"metadata\":{\"uid\":\"u5\"},\"reason\":\"FailedMount\",\"message\":\"x\","
          "\"lastTimestamp\":\"2026-08-29T07:00:00Z\"}", &s);
    apply(x, KO_EVENTS, "DELETED", legacy, &s);
    apply(x, KO_EVENTS, "ADDED", "{\"metadata\":{\"uid\":\"u6\"}}", &s);
    /* an empty reason, which the filter would keep (found by fuzzing: the
     * signal was one cascade's format refuses) */
    apply(x, KO_EVENTS, "ADDED",
          "{\"metadata\":{\"uid\":\"u8\"},\"reason\":\"\",\"message\":\"x\","
          "\"eventTime\":\"2026-08-29T10:05:00.000000Z\"}", &s);
    CHECK_INT(json_array_size(s.all), 3);
    ko_get_stats(x, &st);
    CHECK_INT(st.filtered, 1);
    CHECK_INT(st.old, 1);

    /* a Pod told from its bytes alone (ko_pod_seen) indexes as well */
    CHECK_INT(ko_pod_seen(x, "MODIFIED", "ml", "t-9", "t9", "gpu-019", NOW), 0);
    apply(x, KO_EVENTS, "ADDED",
          "{\"metadata\":{\"uid\":\"u7\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"ml\","
          "\"name\":\"t-9\"},\"reason\":\"FailedMount\",\"message\":\"x\","
          "\"lastTimestamp\":\"2026-08-29T10:06:00Z\"}", &s);
    REQUIRE(json_array_size(s.all) == 4);
    CHECK_STR(field(&s, 3, "host"), "gpu-019");
    CHECK_STR(field(&s, 3, "job"), "t9");
    /* the edge filter asked before an Event is built */
    CHECK_INT(ko_keep_event(x, "Scheduled", "ok"), 0);
    CHECK_INT(ko_keep_event(x, "FailedMount", "x"), 1);

    /* ids are derived: a fresh index (a restart) gives the same */
    ko_index *y = ko_new(&o);
    sink s2 = {json_array(), 0};
    apply(y, KO_EVENTS, "ADDED", legacy, &s2);
    CHECK_STR(field(&s2, 0, "id"), field(&s, 0, "id"));
    ko_free(y);
    json_decref(s2.all);

    /* refused by Kafka: -1, and told when it comes again */
    sink s3 = {json_array(), 1};
    y = ko_new(&o);
    CHECK_INT(apply(y, KO_EVENTS, "ADDED", legacy, &s3), -1);
    CHECK_INT(apply(y, KO_EVENTS, "ADDED", legacy, &s3), 0);
    CHECK_INT(json_array_size(s3.all), 1);
    ko_free(y);
    json_decref(s3.all);

    ko_free(x);
    json_decref(s.all);
}

static const char *job_json(const char *status)
{
    static char buf[2048];

    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"t\",\"namespace\":\"ml\",\"uid\":\"j1\","
             "\"creationTimestamp\":\"2026-08-29T10:00:00Z\",\"labels\":{\"team\":\"llm\"}},"
             "\"spec\":{\"parallelism\":2,\"template\":{\"spec\":{\"priorityClassName\":\"gold\","
             "\"containers\":[{\"name\":\"c\",\"command\":[\"python\",\"train.py\",\"--batch-size=32\"],"
             "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":\"API_TOKEN\",\"value\":\"s\"}],"
             "\"resources\":{\"limits\":{\"nvidia.com/gpu\":4}}}]}}},\"status\":%s}",
             status);
    return buf;
}

static void test_jobs(void)
{
    const char *gold[] = {"gold"};
    ko_opts o = {.team_label = "team", .reserved = gold, .nreserved = 1};
    ko_index *x = ko_new(&o);
    sink s = {json_array(), 0};
    json_t *j;

    apply(x, KO_PODS, "ADDED",
          "{\"metadata\":{\"name\":\"t-1\",\"namespace\":\"ml\",\"uid\":\"p2\","
          "\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"t\"}]},\"spec\":{\"nodeName\":\"gpu-002\"}}", &s);
    apply(x, KO_PODS, "ADDED",
          "{\"metadata\":{\"name\":\"t-0\",\"namespace\":\"ml\",\"uid\":\"p1\","
          "\"labels\":{\"job-name\":\"t\"}},\"spec\":{\"nodeName\":\"gpu-001\"}}", &s);
    apply(x, KO_JOBS, "ADDED", job_json("{\"startTime\":\"2026-08-29T10:00:05Z\",\"active\":2}"), &s);
    REQUIRE(json_array_size(s.all) == 2);
    CHECK_STR(field(&s, 0, "state"), "PENDING");
    CHECK_STR(field(&s, 0, "ts"), "2026-08-29T10:00:00Z");
    CHECK_STR(field(&s, 1, "state"), "RUNNING");
    j = json_array_get(s.all, 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(j, "nodes"), 0)), "gpu-001");
    CHECK_STR(json_string_value(json_array_get(json_object_get(j, "nodes"), 1)), "gpu-002");
    CHECK_INT(json_integer_value(json_object_get(j, "gpus")), 8);
    CHECK_STR(field(&s, 1, "team"), "llm");
    CHECK_STR(field(&s, 1, "job_name"), "t");
    CHECK_STR(field(&s, 1, "priority"), "reserved");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "config"), "batch_size")), 32);
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(j, "config"), "env"),
                                                "NCCL_DEBUG")), "WARN");
    CHECK(json_object_get(json_object_get(json_object_get(j, "config"), "env"), "API_TOKEN") == NULL);

    /* DeadlineExceeded is TIMEOUT, at the Failed condition's time */
    apply(x, KO_JOBS, "MODIFIED",
          job_json("{\"startTime\":\"2026-08-29T10:00:05Z\",\"conditions\":["
                   "{\"type\":\"Failed\",\"status\":\"True\",\"reason\":\"DeadlineExceeded\","
                   "\"lastTransitionTime\":\"2026-08-29T10:30:00Z\"}]}"), &s);
    REQUIRE(json_array_size(s.all) == 3);
    CHECK_STR(field(&s, 2, "state"), "TIMEOUT");
    CHECK_STR(field(&s, 2, "ts"), "2026-08-29T10:30:00Z");
    /* deleted after its end: nothing more */
    apply(x, KO_JOBS, "DELETED",
          job_json("{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\",\"reason\":\"DeadlineExceeded\","
                   "\"lastTransitionTime\":\"2026-08-29T10:30:00Z\"}]}"), &s);
    CHECK_INT(json_array_size(s.all), 3);
    ko_free(x);
    json_decref(s.all);

    /* a Job deleted while running: CANCELLED at its deletionTimestamp;
     * Complete: COMPLETED; FailureTarget alone: FAILED */
    x = ko_new(&o);
    s.all = json_array();
    char del[2600];
    const char *src = job_json("{\"startTime\":\"2026-08-29T10:00:05Z\"}");
    const char *at = strstr(src, "\"creationTimestamp\"");
    snprintf(del, sizeof del, "%.*s\"deletionTimestamp\":\"2026-08-29T10:20:00Z\",%s",
             (int)(at - src), src, at);
    apply(x, KO_JOBS, "DELETED", del, &s);
    REQUIRE(json_array_size(s.all) == 3);
    CHECK_STR(field(&s, 2, "state"), "CANCELLED");
    CHECK_STR(field(&s, 2, "ts"), "2026-08-29T10:20:00Z");
    ko_free(x);
    x = ko_new(&o);
    apply(x, KO_JOBS, "ADDED",
          job_json("{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\","
                   "\"lastTransitionTime\":\"2026-08-29T10:40:00Z\"}]}"), &s);
    CHECK_STR(field(&s, json_array_size(s.all) - 1, "state"), "COMPLETED");
    ko_free(x);
    x = ko_new(&o);
    apply(x, KO_JOBS, "ADDED",
          job_json("{\"conditions\":[{\"type\":\"FailureTarget\",\"status\":\"True\",\"reason\":"
                   "\"BackoffLimitExceeded\",\"lastTransitionTime\":\"2026-08-29T10:39:00Z\"}]}"), &s);
    CHECK_STR(field(&s, json_array_size(s.all) - 1, "state"), "FAILED");
    ko_free(x);
    json_decref(s.all);
}

static void test_pods_nodes(void)
{
    ko_opts o = {0};
    ko_index *x = ko_new(&o);
    sink s = {json_array(), 0};
    json_t *ev;

    apply(x, KO_PODS, "MODIFIED",
          "{\"metadata\":{\"name\":\"t-0\",\"namespace\":\"ml\",\"uid\":\"p1\","
          "\"labels\":{\"batch.kubernetes.io/job-name\":\"t\"}},\"spec\":{\"nodeName\":\"gpu-003\"},"
          "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"main\",\"restartCount\":1,"
          "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},"
          "\"lastState\":{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\","
          "\"finishedAt\":\"2026-08-29T10:10:00Z\"}}}]}}", &s);
    REQUIRE(json_array_size(s.all) == 1);
    ev = json_object_get(json_array_get(s.all, 0), "event");
    CHECK_STR(json_string_value(json_object_get(ev, "reason")), "OOMKilled");
    CHECK_STR(json_string_value(json_object_get(ev, "message")),
              "Container main in pod ml/t-0 was OOMKilled (exit code 137)");
    CHECK_STR(json_string_value(json_object_get(ev, "reportingComponent")), "cascade.io/k8s");
    CHECK_STR(field(&s, 0, "host"), "gpu-003");
    CHECK_STR(field(&s, 0, "job"), "t");
    CHECK_STR(field(&s, 0, "ts"), "2026-08-29T10:10:00Z");

    /* a node: inventory once (again only when it changes), and a Ready
     * transition in the node controller's words */
    const char *node =
        "{\"metadata\":{\"name\":\"gpu-003\",\"uid\":\"n3\",\"labels\":{\"cascade.io/rack\":\"r1\"}},"
        "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.4.0.3\"},"
        "{\"type\":\"Hostname\",\"address\":\"gpu-003\"},{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],"
        "\"allocatable\":{\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"Unknown\",\"reason\":\"NodeStatusUnknown\",\"lastTransitionTime\":\"2026-08-29T10:11:00Z\"}]}}";
    apply(x, KO_NODES, "ADDED", node, &s);
    apply(x, KO_NODES, "MODIFIED", node, &s);
    REQUIRE(json_array_size(s.all) == 3);
    CHECK_STR(field(&s, 1, "source"), "inventory");
    CHECK_STR(field(&s, 1, "rack"), "r1");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(s.all, 1), "gpus")), 8);
    CHECK(json_is_false(json_object_get(json_array_get(s.all, 1), "canary")));
    /* its addresses, but for its own name and loopback */
    json_t *addrs = json_object_get(json_array_get(s.all, 1), "addrs");
    CHECK_INT(json_array_size(addrs), 1);
    CHECK_STR(json_string_value(json_array_get(addrs, 0)), "10.4.0.3");
    ev = json_object_get(json_array_get(s.all, 2), "event");
    CHECK_STR(json_string_value(json_object_get(ev, "message")), "Node gpu-003 status is now: NodeNotReady");
    CHECK_STR(field(&s, 2, "host"), "gpu-003");

    /* a GPU count cascade would refuse (negative, past int64, not a
     * whole number) is unknown, 0, and the signal is one cascade takes */
    static const char *const odd[] = {"-1", "99999999999999999999999", "1k",
                                      "8.5"};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        sink t = {json_array(), 0};
        char doc[256];
        sig sg;
        cs_err err;
        snprintf(doc, sizeof doc,
                 "{\"metadata\":{\"name\":\"gpu-09%zu\",\"uid\":\"n9\"},"
                 "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%s\"}}}",
                 i, odd[i]);
        apply(x, KO_NODES, "ADDED", doc, &t);
        REQUIRE(json_array_size(t.all) == 1);
        json_t *inv = json_deep_copy(json_array_get(t.all, 0));
        CHECK_INT(json_integer_value(json_object_get(inv, "gpus")), 0);
        json_object_set_new(inv, "cluster", json_string("c"));
        CHECK_INT(sig_adopt_json(&sg, inv, &err), 0);
        sig_free(&sg);
        json_decref(t.all);
    }

    /* Kueue: evicted by a preemption -> PREEMPTED for the owner Job */
    apply(x, KO_WORKLOADS, "MODIFIED",
          "{\"metadata\":{\"name\":\"w\",\"uid\":\"w1\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"t9\"}]},"
          "\"status\":{\"conditions\":[{\"type\":\"Evicted\",\"status\":\"True\",\"reason\":\"Preempted\","
          "\"lastTransitionTime\":\"2026-08-29T10:12:00Z\"}]}}", &s);
    REQUIRE(json_array_size(s.all) == 4);
    CHECK_STR(field(&s, 3, "state"), "PREEMPTED");
    CHECK_STR(field(&s, 3, "job"), "t9");

    /* deleted pods leave the index 10 minutes later, however many */
    for (int i = 0; i < 500; i++) {
        char name[32];
        snprintf(name, sizeof name, "churn-%d", i);
        ko_pod_seen(x, "DELETED", "ml", name, "j", "gpu-001", NOW);
    }
    CHECK_INT(ko_pods(x), 501);
    ko_expire(x, NOW + 700);
    CHECK_INT(ko_pods(x), 1);
    /* a deleted pod leaves the index 10 minutes later */
    apply(x, KO_PODS, "DELETED", "{\"metadata\":{\"name\":\"t-0\",\"namespace\":\"ml\"}}", &s);
    ko_expire(x, NOW + 60);
    CHECK_INT(ko_pods(x), 1);
    ko_expire(x, NOW + 700);
    CHECK_INT(ko_pods(x), 0);
    ko_free(x);
    json_decref(s.all);
}

/* ---- kubeconfig and in-cluster -------------------------------------------- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void test_kubecfg(const char *dir)
{
    char path[512], kc[2048];
    kc_conf c;
    cs_err err;
    size_t n;
    char *d = kc_base64("aGVsbG8g\nd29ybGQ=", &n);

    CHECK_STR(d, "hello world");
    CHECK_INT(n, 11);
    free(d);
    CHECK(kc_base64("no*base64", NULL) == NULL);

    snprintf(path, sizeof path, "%s/tok", dir);
    write_file(path, "abc123\n");
    snprintf(kc, sizeof kc,
             "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
             "clusters:\n- name: c1\n  cluster:\n    server: https://10.0.0.1:6443/\n"
             "    certificate-authority-data: LS0tLS1CRUdJTg==\n"
             "- name: c2\n  cluster:\n    server: https://k.example:443\n"
             "    certificate-authority: ca.pem\n    insecure-skip-tls-verify: true\n"
             "users:\n- name: u1\n  user:\n    tokenFile: tok\n"
             "- name: u2\n  user:\n    client-certificate: /etc/c.pem\n"
             "- name: u3\n  user:\n    auth-provider:\n      name: gcp\n"
             "contexts:\n- name: a\n  context: {cluster: c1, user: u1, namespace: ml}\n"
             "- name: b\n  context: {cluster: c2, user: u2}\n"
             "- name: g\n  context: {cluster: c2, user: u3}\n");
    snprintf(path, sizeof path, "%s/config", dir);
    write_file(path, kc);
    REQUIRE(kc_kubeconfig(&c, path, NULL, &err) == 0);
    CHECK_STR(c.server, "https://10.0.0.1:6443");
    CHECK_STR(c.ca_pem, "-----BEGIN");
    CHECK_STR(c.token, "abc123");
    CHECK_STR(c.ns, "ml");
    CHECK(strstr(c.token_file, "/tok") != NULL);
    /* the token file rotated */
    snprintf(kc, sizeof kc, "%s/tok", dir);
    write_file(kc, "def456");
    CHECK_INT(kc_reload(&c, &err), 1);
    CHECK_STR(c.token, "def456");
    CHECK_INT(kc_reload(&c, &err), 0);
    kc_free(&c);

    CHECK_INT(kc_kubeconfig(&c, path, "b", &err), -1);
    CHECK(strstr(err.msg, "client certificate without its key") != NULL);
    CHECK_INT(kc_kubeconfig(&c, path, "g", &err), -1);
    CHECK(strstr(err.msg, "auth-provider plugin") != NULL);
    CHECK_INT(kc_kubeconfig(&c, path, "nope", &err), -1);
    CHECK(strstr(err.msg, "no context named \"nope\"") != NULL);

    /* in-cluster: the environment and the account's folder */
    snprintf(path, sizeof path, "%s/token", dir);
    write_file(path, "sa-token\n");
    snprintf(path, sizeof path, "%s/namespace", dir);
    write_file(path, "batch");
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    REQUIRE(kc_in_cluster(&c, dir, &err) == 0);
    CHECK_STR(c.server, "https://[fd00::1]:443");
    CHECK_STR(c.token, "sa-token");
    CHECK_STR(c.ns, "batch");
    kc_free(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    CHECK_INT(kc_in_cluster(&c, dir, &err), -1);
    CHECK(strstr(err.msg, "not in a cluster") != NULL);
}

static void test_config(const char *dir)
{
    char path[512];
    ccf_conf c;
    cs_err err;

    snprintf(path, sizeof path, "%s/cascade.yaml", dir);
    write_file(path, "collect:\n  k8s:\n    kubeconfig: /etc/k\n    events_api: events\n"
                     "    reserved_classes: [gold, silver]\n    max_age: 30m\n"
                     "    workloads: false\n    rack_label: topology.kubernetes.io/zone\n");
    ccf_defaults(&c);
    REQUIRE(ccf_load(&c, path, &err) == 0);
    CHECK_STR(c.k8s.kubeconfig, "/etc/k");
    CHECK_INT(c.k8s.events_api_v1, 1);
    CHECK_INT(c.k8s.nreserved, 2);
    CHECK_STR(c.k8s.reserved[1], "silver");
    CHECK_INT(c.k8s.max_age_s, 1800);
    CHECK_INT(c.k8s.workloads, 0);
    CHECK_STR(c.k8s.rack_label, "topology.kubernetes.io/zone");
    ccf_free(&c);

    write_file(path, "collect:\n  k8s:\n    events_api: apps\n");
    ccf_defaults(&c);
    CHECK_INT(ccf_load(&c, path, &err), -1);
    CHECK(strstr(err.msg, "cascade.yaml:3:17: collect.k8s.events_api: core") != NULL);
    ccf_free(&c);
    write_file(path, "collect:\n  k8s:\n    namespce: ml\n");
    ccf_defaults(&c);
    CHECK_INT(ccf_load(&c, path, &err), -1);
    CHECK(strstr(err.msg, ":3:5:") != NULL && strstr(err.msg, "namespce") != NULL);
    ccf_free(&c);
}

int main(void)
{
    char dir[] = "/tmp/test_k8s.XXXXXX"; /* mkdtemp's template */

    REQUIRE(mkdtemp(dir) != NULL);
    test_framer();
    test_scanner();
    test_events();
    test_jobs();
    test_pods_nodes();
    test_kubecfg(dir);
    test_config(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_report();
}
