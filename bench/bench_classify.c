/* Classifier throughput against the whole built-in catalog: how many log
 * lines (kernel, app, ray, slurm, Kubernetes events, alerts) per second
 * one core turns into facts. Signals are parsed once, outside the timing;
 * each run classifies every line with a fresh classifier (no traceback
 * state carried over) and the median of the runs is reported.
 *
 *   bench_classify [--runs N] [--repeat K] [--no-prefilter] [--rules DIR]
 *                  FILE.jsonl...
 *
 * --no-prefilter tries every signature in turn (the Hyperscan prefilter
 * off), to show what it is worth. --rules DIR classifies with that
 * folder's rules instead of the built-in ones (bench/rules_scaled writes
 * the built-in set grown N times, for the cost of a larger catalog).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/benchutil.h"
#include "core/signal.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static int has_text(const sig *s)
{
    return s->source == SRC_KERNEL || s->source == SRC_APP ||
           s->source == SRC_RAY || s->source == SRC_SLURM ||
           s->source == SRC_K8S || s->source == SRC_ALERTMANAGER;
}

static int load(const char *path, sig **v, size_t *n, size_t *cap)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t len = 0;
    ssize_t got;
    cs_err err;

    if (!f) {
        perror(path);
        return -1;
    }
    while ((got = getline(&line, &len, f)) > 0) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 4096;
            *v = realloc(*v, *cap * sizeof **v);
            if (!*v)
                abort();
        }
        if (sig_parse_json(&(*v)[*n], line, (size_t)got, &err) == 0) {
            if (has_text(&(*v)[*n]))
                (*n)++;
            else
                sig_free(&(*v)[*n]);
        }
    }
    free(line);
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 7, repeat = 20, first = 1, prefilter = 1;
    sig *v = NULL;
    size_t n = 0, cap = 0, nsig, facts = 0;
    double t[64];
    pb_catalog *cat = NULL;
    const char *dir = NULL;
    cs_err err;

    for (; first < argc && argv[first][0] == '-'; first++) {
        if (!strcmp(argv[first], "--runs") && first + 1 < argc)
            runs = atoi(argv[++first]);
        else if (!strcmp(argv[first], "--repeat") && first + 1 < argc)
            repeat = atoi(argv[++first]);
        else if (!strcmp(argv[first], "--no-prefilter"))
            prefilter = 0;
        else if (!strcmp(argv[first], "--rules") && first + 1 < argc)
            dir = argv[++first];
        else {
            fprintf(stderr, "usage: bench_classify [--runs N] [--repeat K] [--no-prefilter] "
                            "[--rules DIR] FILE.jsonl...\n");
            return strcmp(argv[first], "--help") ? 2 : 0;
        }
    }
    if (first == argc || runs < 1 || runs > 64 || repeat < 1) {
        fprintf(stderr, "usage: bench_classify [--runs N<=64] [--repeat K] [--no-prefilter] "
                        "[--rules DIR] FILE.jsonl...\n");
        return 2;
    }
    cat = dir ? pb_catalog_new() : pb_catalog_embedded();
    if (dir && pb_catalog_load_dir(cat, dir, NULL, NULL) != 0) {
        fprintf(stderr, "bench_classify: %s: the rules do not load; run "
                        "`cascade rules check %s`\n", dir, dir);
        pb_catalog_free(cat);
        return 2;
    }
    for (int i = first; i < argc; i++)
        if (load(argv[i], &v, &n, &cap))
            return 2;
    pb_signatures(cat, &nsig);
    for (int r = 0; r < runs; r++) {
        classifier *c = cls_new(cat, &err);
        fact out[CLS_MAX_FACTS];
        if (!c) {
            fprintf(stderr, "bench_classify: %s\n", err.msg);
            return 1;
        }
        cls_prefilter(c, prefilter);
        double t0 = bench_now();
        facts = 0;
        for (int k = 0; k < repeat; k++)
            for (size_t i = 0; i < n; i++)
                facts += (size_t)cls_classify(c, &v[i], out);
        t[r] = bench_now() - t0;
        cls_free(c);
    }
    qsort(t, (size_t)runs, sizeof *t, bench_cmp_double);
    double lines = (double)n * repeat;
    printf("catalog: %zu scenarios, %zu signatures\n", pb_catalog_count(cat),
           nsig);
    printf("input: %zu text lines x %d repeats per run, %zu facts per run\n",
           n, repeat, facts);
    printf("lines/s: median %.0f (min %.0f, max %.0f) over %d runs\n",
           lines / t[runs / 2], lines / t[runs - 1], lines / t[0], runs);
    for (size_t i = 0; i < n; i++)
        sig_free(&v[i]);
    free(v);
    pb_catalog_free(cat);
    return 0;
}
