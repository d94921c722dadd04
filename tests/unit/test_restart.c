/* Restart equivalence: an engine killed after any flushed signal and
 * rebuilt from its state records alone, then fed the rest of the stream
 * (plus a few signals again, as Kafka redelivers what was not committed),
 * must end with the same incidents as one uninterrupted run.
 *
 * The records are kept by the store ops in memory here; that the same
 * records survive a real redis-server and a killed process is the job of
 * tests/integration/restart_live.sh.
 *
 * A crash can also come while a batch's pipeline is on its way to Redis,
 * none of its offsets committed. The store sends each batch as one
 * transaction (MULTI ... EXEC, correlate/store.c; unit.store checks a
 * batch cut short leaves nothing), so Redis holds all of the batch or
 * none of it; from either, fed again from the batch's first signal, the
 * engine must end as an uninterrupted run does. (A part of a batch would
 * not: with the commands that had arrived applied, in the engine's order
 * or gathered by hash, this test found thermal_straggler's incident
 * counting 85 or 86 signals of 87, the seen ids written and the counts
 * not.) */
#include <dirent.h>
#include <stdlib.h>

#include "check.h"
#include "core/strmap.h"
#include "engine/engine.h"
#include "rules/playbooks.h"

/* --rules DIR: the rule set every engine of the run starts on (set once
 * from the command line; NULL: the built-in set). */
static const char *rules_dir;

/* key "\x1f" field -> value; key "\x1f" member -> score, as text. While
 * dropping, writes are lost (a batch whose transaction never reached
 * EXEC). */
typedef struct mem {
    strmap *hash, *zset;
    int dropping;
} mem;

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s\x1f%s", a, b);
    return s;
}

static void m_zadd(void *ctx, const char *key, int64_t ts, const char *member)
{
    mem *m = ctx;
    char *k;
    int64_t *v;

    if (m->dropping)
        return;
    k = join(key, member);
    v = malloc(sizeof *v);
    *v = ts;
    free(strmap_put(m->zset, k, v));
    free(k);
}

static void m_trim(void *ctx, const char *key, int64_t before)
{
    mem *m = ctx;
    size_t pos = 0, n = 0, klen = strlen(key);
    const char *k;
    void *v;
    char **old = NULL;

    if (m->dropping)
        return;
    while (strmap_next(m->zset, &pos, &k, &v))
        if (!strncmp(k, key, klen) && k[klen] == '\x1f' && *(int64_t *)v < before) {
            old = realloc(old, (n + 1) * sizeof *old);
            old[n++] = strdup(k);
        }
    for (size_t i = 0; i < n; i++) {
        free(strmap_del(m->zset, old[i]));
        free(old[i]);
    }
    free(old);
}

static void m_hset(void *ctx, const char *key, const char *f, const char *v)
{
    mem *m = ctx;
    char *k;

    if (m->dropping)
        return;
    k = join(key, f);
    free(strmap_put(m->hash, k, strdup(v)));
    free(k);
}

static void m_hdel(void *ctx, const char *key, const char *f)
{
    mem *m = ctx;
    char *k;

    if (m->dropping)
        return;
    k = join(key, f);
    free(strmap_del(m->hash, k));
    free(k);
}

static const eng_store_ops mem_ops = {m_zadd, m_trim, m_hset, m_hdel};

/* Every engine of the run reads one built-in catalog, loaded once:
 * thousands of engines each parsing and compiling the rules would be
 * most of the test's time. A --rules folder (a few correlations, not a
 * whole catalog) replaces it per engine, as the correlator does. */
static pb_catalog *cat;

static engine *new_engine(mem *m)
{
    cs_err err;
    engine *e;
    pb_catalog *c;

    if (!cat)
        cat = pb_catalog_embedded();
    e = eng_new_shared(&mem_ops, m, cat, &err);
    CHECK(e != NULL);
    if (!rules_dir || !e)
        return e;
    c = pb_catalog_new();
    CHECK_INT(pb_catalog_load_dir(c, rules_dir, NULL, NULL), 0);
    CHECK_INT(eng_set_catalog(e, c, &err), 0);
    return e;
}

/* Rebuilds an engine from the records, as the correlator does at start. */
static engine *restart(mem *m)
{
    cs_err err;
    engine *e = new_engine(m);
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(m->zset, &pos, &k, &v)) {
        const char *sep = strchr(k, '\x1f');
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)(sep - k), k);
        CHECK_INT(eng_restore_window(e, key, *(int64_t *)v, sep + 1), 0);
    }
    pos = 0;
    while (strmap_next(m->hash, &pos, &k, &v)) {
        const char *sep = strchr(k, '\x1f');
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)(sep - k), k);
        if (!eng_restore_wants(key))
            continue;
        if (eng_restore_hash(e, key, sep + 1, v, &err)) {
            fprintf(stderr, "restore: %s\n", err.msg);
            CHECK(0);
        }
    }
    eng_restore_done(e);
    return e;
}

/* Signals [from, to) of n as one batch: fed, then flushed once, as the
 * correlator does with a consumed batch. */
static void feed_batch(engine *e, char **lines, size_t n, size_t from,
                       size_t to)
{
    for (size_t i = from; i < to && i < n; i++) {
        sig s;
        cs_err err;
        if (sig_parse_json(&s, lines[i], strlen(lines[i]), &err))
            continue; /* the stream's deliberately bad lines */
        eng_feed(e, &s);
        sig_free(&s);
    }
    eng_flush(e, NULL, NULL);
}

static void feed(engine *e, char *line)
{
    feed_batch(e, &line, 1, 0, 1);
}

/* The incidents a correlator keeps at the end: after the flush, the
 * retention walk a restart also runs (restore drops what is past its
 * fold window), so a stream longer than the horizon compares the same
 * set both ways. */
static char *dump(engine *e)
{
    json_t *all;

    eng_drain(e);
    eng_flush(e, NULL, NULL);
    eng_prune(e);
    all = eng_incidents(e);
    char *txt = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    return txt;
}

static size_t read_lines(const char *path, char ***out)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, n = 0;
    ssize_t len;

    *out = NULL;
    if (!f)
        return 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[len - 1] = '\0';
        *out = realloc(*out, (n + 1) * sizeof **out);
        (*out)[n++] = strdup(line);
    }
    free(line);
    fclose(f);
    return n;
}

static void free_mem(mem *m)
{
    strmap_free(m->hash, free);
    strmap_free(m->zset, free);
}

/* Kills the engine after `cut` signals, restarts it, redelivers `redo`. */
static int run_with_restart(char **lines, size_t n, size_t cut, size_t redo,
                            const char *want, const char *name)
{
    mem m = {strmap_new(), strmap_new(), 0};
    engine *e = new_engine(&m);
    char *got;
    int same;

    for (size_t i = 0; i < cut; i++)
        feed(e, lines[i]);
    eng_free(e);
    e = restart(&m);
    for (size_t i = cut > redo ? cut - redo : 0; i < n; i++)
        feed(e, lines[i]);
    got = dump(e);
    same = strcmp(got, want) == 0;
    if (!same)
        fprintf(stderr, "%s: restart after %zu of %zu signals differs\n"
                        "  want %s\n  got  %s\n", name, cut, n, want, got);
    free(got);
    eng_free(e);
    free_mem(&m);
    return same;
}

#define BATCH 4

/* Batches of BATCH signals; a crash while batch k was on its way (Redis
 * has all of it or none), the process restarted, and every signal from
 * batch k's first fed again (its offsets were never committed). Returns
 * 1 when it ends as `want`, the same batches uninterrupted. */
static int run_cut_batch(char **lines, size_t n, size_t k, int applied,
                         const char *want, const char *name)
{
    mem m = {strmap_new(), strmap_new(), 0};
    engine *e = new_engine(&m);
    char *got;
    int same;

    for (size_t b = 0; b < k; b++)
        feed_batch(e, lines, n, b * BATCH, (b + 1) * BATCH);
    m.dropping = !applied;
    feed_batch(e, lines, n, k * BATCH, (k + 1) * BATCH);
    m.dropping = 0;
    eng_free(e);
    e = restart(&m);
    for (size_t b = k; b * BATCH < n; b++)
        feed_batch(e, lines, n, b * BATCH, (b + 1) * BATCH);
    got = dump(e);
    same = strcmp(got, want) == 0;
    if (!same)
        fprintf(stderr, "%s: a crash while batch %zu was on its way (Redis "
                "with %s of it) differs\n  want %s\n  got  %s\n", name, k,
                applied ? "all" : "none", want, got);
    free(got);
    eng_free(e);
    free_mem(&m);
    return same;
}

/* Up to 40 batches of the stream, each cut both ways. */
static int check_cut_batches(char **lines, size_t n, const char *name)
{
    mem m = {strmap_new(), strmap_new(), 0};
    engine *e = new_engine(&m);
    size_t batches = (n + BATCH - 1) / BATCH, step = batches / 40 + 1;
    char *want;
    int bad = 0;

    for (size_t b = 0; b < batches; b++)
        feed_batch(e, lines, n, b * BATCH, (b + 1) * BATCH);
    want = dump(e);
    eng_free(e);
    free_mem(&m);
    for (size_t k = 0; k < batches && bad < 3; k += step) {
        bad += !run_cut_batch(lines, n, k, 0, want, name);
        bad += !run_cut_batch(lines, n, k, 1, want, name);
    }
    free(want);
    return bad;
}

static void check_stream(const char *dir, const char *name)
{
    char path[1024], **lines;
    size_t n;
    mem m = {strmap_new(), strmap_new(), 0};
    engine *e;
    char *want;
    int bad = 0;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    n = read_lines(path, &lines);
    CHECK(n > 0);
    e = new_engine(&m);
    for (size_t i = 0; i < n; i++)
        feed(e, lines[i]);
    want = dump(e);
    eng_free(e);
    free_mem(&m);
    /* Up to 40 cut points per stream (every one in short streams), with no
     * redelivery and with five signals again. */
    size_t step = n / 40 + 1;
    for (size_t cut = 1; cut < n && bad < 3; cut += step) {
        bad += !run_with_restart(lines, n, cut, 0, want, name);
        bad += !run_with_restart(lines, n, cut, 5, want, name);
    }
    CHECK_INT(bad, 0);
    CHECK_INT(check_cut_batches(lines, n, name), 0);
    free(want);
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* A folder's streams, in the order readdir gives them. */
static int check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int streams = 0;

    if (!d) {
        fprintf(stderr, "cannot open %s\n", dir);
        return -1;
    }
    while ((de = readdir(d))) {
        if (has_suffix(de->d_name, ".jsonl")) {
            check_stream(dir, de->d_name);
            streams++;
        }
    }
    closedir(d);
    return streams;
}

/* usage: test_restart [--rules DIR] (FOLDER | STREAM.jsonl)... */
int main(int argc, char **argv)
{
    int streams = 0, min = 5;

    if (argc > 3 && !strcmp(argv[1], "--rules")) {
        rules_dir = argv[2];
        argv += 2;
        argc -= 2;
        min = 1;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test_restart [--rules DIR] (FOLDER | STREAM.jsonl)...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (has_suffix(argv[i], ".jsonl")) {
            char dir[1024];
            const char *slash = strrchr(argv[i], '/');
            int len = slash ? (int)(slash - argv[i]) : 1;

            snprintf(dir, sizeof dir, "%.*s", len, slash ? argv[i] : ".");
            check_stream(dir, slash ? slash + 1 : argv[i]);
            streams++;
        } else {
            int n = check_dir(argv[i]);

            if (n < 0)
                return 1;
            streams += n;
        }
    }
    CHECK(streams >= min);
    printf("%d streams, each restarted at up to 40 points\n", streams);
    pb_catalog_free(cat);
    return check_report();
}
