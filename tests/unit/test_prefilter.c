/* The Hyperscan prefilter changes how fast the classifier answers, never
 * what it answers: every scenario stream and every signature example gives
 * the same facts with the prefilter on and off. It must also filter (a
 * noise line has no candidate), the build's precompiled databases must be
 * the ones the built-in rules use, and a rule set that differs is compiled
 * when loaded, with patterns Hyperscan refuses kept as candidates.
 *
 *   test_prefilter SCENARIO_DIR */

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "check.h"
#include "rules/classify.h"
#include "rules/litx.h"
#include "rules/playbooks.h"
#include "rules/prefilter.h"

static long compared;

/* One signal through both classifiers; the facts must be the same bytes
 * (fact_init zeroes each fact whole, padding included). */
static void same(classifier *on, classifier *off, const sig *s,
                 const char *where)
{
    fact a[CLS_MAX_FACTS], b[CLS_MAX_FACTS];
    int na = cls_classify(on, s, a), nb = cls_classify(off, s, b);

    compared++;
    if (na != nb || (na > 0 && memcmp(a, b, (size_t)na * sizeof *a))) {
        CHECK(!"prefilter on and off differ");
        fprintf(stderr, "  %s: %d facts against %d\n", where, na, nb);
    }
}

static void streams(const pb_catalog *cat, const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort), files = 0;
    cs_err err;

    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        char path[4096], *line = NULL;
        size_t len = 0, l = strlen(names[i]->d_name);
        ssize_t got;
        FILE *f;
        classifier *on, *off;

        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        free(names[i]);
        if (l < 7 || strcmp(path + strlen(path) - 6, ".jsonl") ||
            strstr(path, ".expected") || !(f = fopen(path, "r")))
            continue;
        on = cls_new(cat, &err);
        off = cls_new(cat, &err);
        CHECK(on && off);
        if (!on || !off)
            return;
        cls_prefilter(off, 0);
        files++;
        while ((got = getline(&line, &len, f)) > 0) {
            sig s;
            if (sig_parse_json(&s, line, (size_t)got, &err) == 0) {
                same(on, off, &s, path);
                sig_free(&s);
            }
        }
        free(line);
        fclose(f);
        cls_free(on);
        cls_free(off);
    }
    free(names);
    CHECK(files > 10);
}

/* Each signature's examples, as the source they are written for. */
static void examples(const pb_catalog *cat, long least)
{
    static const char *const src[SRC__COUNT] = {
        [SRC_KERNEL] = "kernel", [SRC_APP] = "app", [SRC_RAY] = "ray",
        [SRC_SLURM] = "slurm"};
    size_t n;
    const pb_signature *g = pb_signatures(cat, &n);
    cs_err err;
    classifier *on = cls_new(cat, &err), *off = cls_new(cat, &err);
    long before = compared;

    CHECK(on && off);
    if (!on || !off)
        return;
    cls_prefilter(off, 0);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < g[i].nexamples; k++) {
            const pb_example *x = &g[i].examples[k];
            json_t *o;
            sig s;

            if (x->source < 0 || x->source >= SRC__COUNT || !src[x->source])
                continue;
            o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts",
                          "2026-03-02T08:00:00Z", "source", src[x->source],
                          "host", "g1", "job", "1", "line", x->text);
            if (o && sig_from_json(&s, o, &err) == 0) {
                same(on, off, &s, g[i].id);
                sig_free(&s);
            }
            json_decref(o);
        }
    CHECK(compared - before >= least);
    cls_free(on);
    cls_free(off);
}

static void print_problem(void *arg, const char *where, const char *msg)
{
    (void)arg;
    fprintf(stderr, "  %s: %s\n", where, msg);
}

static void rewrite(void)
{
    char b[256];

    CHECK_STR(pfl_rewrite("(?J)a(?<x>b)|(?<x>c)", b, sizeof b), "a(b)|(c)");
    CHECK_STR(pfl_rewrite("(?P<n_1>x)(?'m'y)", b, sizeof b), "(x)(y)");
    /* lookbehinds, escaped parentheses and classes are not names */
    CHECK_STR(pfl_rewrite("(?<=a)(?<!b)", b, sizeof b), "(?<=a)(?<!b)");
    CHECK_STR(pfl_rewrite("\\(?<x>", b, sizeof b), "\\(?<x>");
    CHECK_STR(pfl_rewrite("[(?<x>]", b, sizeof b), "[(?<x>]");
    CHECK_STR(pfl_rewrite("[]a](?<x>.)", b, sizeof b), "[]a](.)");
    CHECK_STR(pfl_rewrite("\\Q(?<x>\\E(?<y>z)", b, sizeof b),
              "\\Q(?<x>\\E(z)");
    CHECK(pfl_rewrite("(?<long_name>abcdef)", b, 4) == NULL);
    /* a back-reference by name may match anything */
    CHECK_STR(pfl_rewrite("(?<d>x)/\\k<d>,\\k{d}(?P=d)\\g{d}\\g{1}", b, sizeof b),
              "(x)/(?s:.*),(?s:.*)(?s:.*)(?s:.*)\\g{1}");
}

/* The built-in set: every database from the build, and a noise line of a
 * source with a database leaves no candidate. */
static void embedded(const pb_catalog *cat)
{
    const pfl *p = pb_prefilter(cat);
    pfl_ctx *x;
    cs_err err;
    size_t n;
    int any = 0;
    const unsigned char *may;
    const char *noise = "Started session-51840.scope - Session 89727 of User "
                        "erin (slice user-1317.slice).";

    pb_signatures(cat, &n);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(pfl_databases(p) >= 4);
    CHECK_INT(pfl_reused(p), pfl_databases(p));
    CHECK(pfl_always(p) < n / 4);
    CHECK((x = pfl_ctx_new(p, &err)) != NULL);
    if (!x)
        return;
    may = pfl_scan(x, SRC_APP, noise, strlen(noise));
    for (size_t i = 0; i < n; i++)
        any |= may[i];
    CHECK_INT(any, 0);
    pfl_ctx_free(x);
}

/* A rule set of its own: compiled when linked. \K, which Hyperscan
 * refuses, leaves its pattern a candidate for every line (its literals,
 * "ze" and "foo", too short to scan for instead); a back-reference
 * by name and a repeated name (?J) are taken. */
static void compiled(void)
{
    static const char rules[] =
        "family: t\n"
        "signatures:\n"
        "  - {id: t.a, source: app, fact: app_error, match: 'alpha [0-9]+ "
        "down', examples: [{line: 'alpha 7 down', fact: app_error}]}\n"
        "  - {id: t.b, source: app, fact: app_error, match: 'ze\\Kfoo', "
        "examples: [{line: 'zefoo', fact: app_error}]}\n"
        "  - {id: t.c, source: app, fact: app_error, match: '(?J)(?<detail>"
        "beta)|(?<detail>gamma)=\\k<detail>', examples: [{line: 'gamma=gamma', "
        "fact: app_error}]}\n"
        "  - {id: t.d, source: app, fact: app_error, match: 'delta', "
        "examples: [{line: 'delta', fact: app_error}]}\n"
        "  - {id: t.e, source: app, fact: app_error, match: 'epsilon', "
        "examples: [{line: 'epsilon', fact: app_error}]}\n";
    pb_catalog *cat = pb_catalog_new();
    const pfl *p;
    pfl_ctx *x;
    cs_err err;
    size_t n;
    const unsigned char *may;

    CHECK_INT(pb_catalog_add(cat, "t.yaml", rules, sizeof rules - 1,
                             print_problem, NULL), 0);
    CHECK_INT(pb_catalog_link(cat, print_problem, NULL), 0);
    pb_signatures(cat, &n);
    CHECK_INT(n, 5);
    p = pb_prefilter(cat);
    CHECK(p != NULL);
    if (!p || n != 5)
        goto out;
    /* the app patterns' database, and Ray's and SLURM's, which hold the
     * app patterns too (their lines are read with them) */
    CHECK_INT(pfl_databases(p), 3);
    CHECK_INT(pfl_reused(p), 0);
    CHECK_INT(pfl_always(p), 1);
    x = pfl_ctx_new(p, &err);
    CHECK(x != NULL);
    if (!x)
        goto out;
    may = pfl_scan(x, SRC_APP, "gamma=gamma", 11);
    CHECK_INT(may[0], 0);
    CHECK_INT(may[1], 1); /* always */
    CHECK_INT(may[2], 1);
    CHECK_INT(may[3], 0);
    may = pfl_scan(x, SRC_APP, "alpha 12 down", 13);
    CHECK_INT(may[0], 1);
    CHECK_INT(may[2], 0);
    may = pfl_scan(x, SRC_KERNEL, "alpha 12 down", 13);
    CHECK_INT(may[0], 0); /* not a kernel pattern */
    pfl_ctx_free(x);
    examples(cat, 5);
out:
    pb_catalog_free(cat);
}

/* The required literals of patterns of every construct the rule files
 * use: what each must give, "" for none. */
static void literals(void)
{
    static const struct {
        const char *pat, *want;
        int caseless;
    } t[] = {
        {"alpha [0-9]+ down", "alpha ", 0},
        {"(?i)out of memory", "out of memory", 1},
        {"CUDA (?:error|failure): x", "CUDA ", 0},
        {"ab?cdef", "cdef", 0},
        {"(?:foo|bar)baz?", "foo|bar", 0},
        {"(?:foo|)barn", "barn", 0},
        {"x(?=abcdefg)y", "x", 0}, /* a lookahead requires nothing */
        {"\\QAB\\E", "", 0},
        {"a{2}bcd", "bcd", 0},
        {"a{2,}", "a", 0},
        {"ab{,3}cd", "cd", 0},  /* {,n}: a repeat from PCRE2 10.43 */
        {"ab{x}cd", "ab{x}cd", 0},
        {"abc\\g-1defg", "defg", 0},
        {"abc\\o{101}defg", "defg", 0},
        {"foo\\.bar", "foo.bar", 0},
        {"[abc\\]]defg", "defg", 0},
        {"[[:alpha:]]defg", "defg", 0},
        /* "[:" that names no POSIX class: the class ends at its "]",
         * and the alternatives after it are the pattern's own */
        {"abcd[2-9[:]x|y:]efgh", "abcd|y:]efgh", 0},
        {"a{99999999999}bcd", "bcd", 0}, /* a count past an int */
        {"(?<name>xyzw)+q", "xyzw", 0},
        {"(?<name>xyzw)*q", "q", 0},
        {"(?P<n>wxyz|abcd)?efg", "efg", 0},
        {"\\x41BCD\\x{45}", "ABCDE", 0},
        {"NVRM: Xid \\((?:PCI:)?(?<pci>[0-9a-f:.]+)\\): (?<xid>\\d+)",
         "NVRM: Xid (", 0},
        {"(?:(?i:Killed)|oom-kill) process", " process", 1},
        {"(?:(?i:Killed)|oom-kill) p", "Killed|oom-kill", 1},
        {"one|tw(?:o|elve)", "one|tw", 0},
        {"one|(?:two)?", "", 0},
        {"(?x) a b c", "", 0},
        {"abc)", "", 0},
    };

    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        lx_set ls;
        char got[LX_MAX_LITS * (LX_MAX_LEN + 1)] = "";
        size_t q = lx_required(t[i].pat, &ls);

        for (size_t k = 0; k < ls.n; k++) {
            if (k)
                strcat(got, "|");
            strcat(got, ls.lit[k]);
        }
        if (strcmp(got, t[i].want) || (q > 0) != (*t[i].want != '\0') ||
            (q && ls.caseless != t[i].caseless)) {
            CHECK(!"required literals");
            fprintf(stderr, "  %s: got \"%s\" (caseless %d), want \"%s\"\n",
                    t[i].pat, got, ls.caseless, t[i].want);
        }
    }
}

/* Every example line a built-in pattern matches holds one of the
 * literals the prefilter scans for in its place. */
static void literals_sound(const pb_catalog *cat)
{
    size_t n, checked = 0;
    const pb_signature *g = pb_signatures(cat, &n);
    pcre2_match_data *md = pcre2_match_data_create(64, NULL);

    for (size_t i = 0; i < n; i++) {
        lx_set ls;
        if (!g[i].re || lx_required(g[i].match, &ls) == 0)
            continue;
        for (int k = 0; k < g[i].nexamples; k++) {
            const char *line = g[i].examples[k].text;
            int found = 0;
            if (!line || pcre2_match(g[i].re, (PCRE2_SPTR)line, strlen(line),
                                     0, 0, md, NULL) < 0)
                continue;
            for (size_t j = 0; j < ls.n && !found; j++)
                found = (ls.caseless ? strcasestr(line, ls.lit[j])
                                     : strstr(line, ls.lit[j])) != NULL;
            checked++;
            if (!found) {
                CHECK(!"a matching line without the pattern's literals");
                fprintf(stderr, "  %s: \"%s\"\n", g[i].id, line);
            }
        }
    }
    CHECK(checked >= 400);
    pcre2_match_data_free(md);
}

int main(int argc, char **argv)
{
    pb_catalog *cat = pb_catalog_embedded();

    if (argc != 2) {
        fprintf(stderr, "usage: test_prefilter SCENARIO_DIR\n");
        return 2;
    }
    rewrite();
    literals();
    literals_sound(cat);
    embedded(cat);
    examples(cat, 50);
    streams(cat, argv[1]);
    compiled();
    printf("%ld signals compared\n", compared);
    pb_catalog_free(cat);
    return check_report();
}
