/* core/metrics: the text exposition as Prometheus reads it. */
#include "check.h"
#include "core/metrics.h"

static const mx_family FAM[] = {
    {"t_requests_total", MX_COUNTER, "Requests, by path\\code.", "path,code"},
    {"t_latency_seconds", MX_HISTOGRAM, "Latency.\nSecond line.", "phase"},
    {"t_up", MX_GAUGE, "Up.", NULL},
};

static void test_samples(void)
{
    mx_out *o = mx_out_new();
    const char *v1[] = {"/a \"b\"\\c\nd", "200"};
    const char *v2[] = {"/b", "500"};

    mx_family_begin(o, &FAM[0]);
    mx_sample(o, &FAM[0], v1, 3);
    mx_sample(o, &FAM[0], v2, 0.5);
    mx_single(o, &FAM[2], 1);
    CHECK_STR(mx_out_text(o, NULL),
              "# HELP t_requests_total Requests, by path\\\\code.\n"
              "# TYPE t_requests_total counter\n"
              "t_requests_total{path=\"/a \\\"b\\\"\\\\c\\nd\",code=\"200\"} 3\n"
              "t_requests_total{path=\"/b\",code=\"500\"} 0.5\n"
              "# HELP t_up Up.\n# TYPE t_up gauge\nt_up 1\n");
    mx_out_free(o);
}

static void test_histogram(void)
{
    static const double b[] = {0.1, 1, 10};
    mx_hist h;
    mx_out *o = mx_out_new();
    const char *v[] = {"feed"};

    mx_hist_init(&h, b, 3);
    mx_hist_observe(&h, 0.05);
    mx_hist_observe(&h, 0.1); /* on a bound: that bucket (le) */
    mx_hist_observe(&h, 5);
    mx_hist_observe(&h, 50);
    mx_family_begin(o, &FAM[1]);
    mx_hist_write(o, &FAM[1], v, &h);
    CHECK_STR(mx_out_text(o, NULL),
              "# HELP t_latency_seconds Latency.\\nSecond line.\n"
              "# TYPE t_latency_seconds histogram\n"
              "t_latency_seconds_bucket{phase=\"feed\",le=\"0.1\"} 2\n"
              "t_latency_seconds_bucket{phase=\"feed\",le=\"1\"} 2\n"
              "t_latency_seconds_bucket{phase=\"feed\",le=\"10\"} 3\n"
              "t_latency_seconds_bucket{phase=\"feed\",le=\"+Inf\"} 4\n"
              "t_latency_seconds_sum{phase=\"feed\"} 55.15\n"
              "t_latency_seconds_count{phase=\"feed\"} 4\n");
    mx_out_free(o);
}

/* The buffer grows past its first size without losing a byte. */
static void test_growth(void)
{
    mx_out *o = mx_out_new();
    size_t len;

    mx_family_begin(o, &FAM[2]);
    for (int i = 0; i < 2000; i++)
        mx_sample(o, &FAM[2], NULL, i);
    mx_out_text(o, &len);
    CHECK(len > 4096 * 4);
    CHECK(strstr(mx_out_text(o, NULL), "\nt_up 1999\n") != NULL);
    mx_out_free(o);
}

int main(void)
{
    test_samples();
    test_histogram();
    test_growth();
    return check_report();
}
