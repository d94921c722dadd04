/* The read-only JSON document: it accepts what jansson accepts (with
 * repeated keys refused), reads the same values, writes them as jansson
 * and jmp_pack do, and names where a text is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/jdoc.h"
#include "core/jmp.h"

/* Whether jd_parse and jansson agree on accepting text (len bytes). */
static void agree_len(const char *text, size_t len, int accept)
{
    cs_err err = {{0}};
    json_t *a = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    jdoc *d = jd_parse(text, len, &err);

    CHECK_INT(a != NULL, accept);
    CHECK_INT(d != NULL, accept);
    if (!d && !err.msg[0])
        CHECK(!"a refusal names its reason");
    if (a && d) {
        json_t *b = jd_json(jd_root(d));
        CHECK(json_equal(a, b));
        json_decref(b);
    }
    json_decref(a);
    jd_free(d);
}

static void agree(const char *text, int accept)
{
    agree_len(text, strlen(text), accept);
}

static void grammar(void)
{
    static const char *const ok[] = {
        "{}", "[]", " \t\r\n[ 1 , 2 ]\n", "[-0]", "[-0.0]", "[0.5e-3]",
        "[1E+5]", "[1e-400]", "[9223372036854775807]",
        "[-9223372036854775808]", "[\"\\u00e9\\ud83d\\ude00\\/\\b\\f\"]",
        "[\"caf\xc3\xa9 \x7f\"]", "{\"a\":{\"a\":1}}", "[true,false,null]",
        "{\"\":0}",
    };
    static const char *const bad[] = {
        "", " ", "1", "\"s\"", "null", "[01]", "[-]", "[1.]", "[.5]",
        "[1e]", "[1e+]", "[+1]", "[9223372036854775808]",
        "[-9223372036854775809]", "[1e400]", "[-1e400]", "[1,]",
        "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{a:1}", "[\"\\u0000\"]",
        "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\u0041\"]",
        "[\"\\u12\"]", "[\"\\x\"]", "[\"tab\there\"]", "[\"\xc3\"]",
        "[\"\xc0\xaf\"]", "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]",
        "[tru]", "[truex]", "[True]", "[1] x", "[1][2]", "[\"open",
        "{\"a\":1,\"b\":2,\"a\":3}", "[\xef\xbb\xbf]", "\xef\xbb\xbf[]",
        "[nul]", "{\"a\"}", "{\"a\":}", "[,1]", "[\"\\",
    };

    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        agree(ok[i], 1);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        agree(bad[i], 0);
    agree_len("[1,\0]", 5, 0);
    agree_len("[\"a\0b\"]", 7, 0);
    /* jansson's reader drops a NUL byte after a number or a word (it
     * reads "[1\0]" as [1]); jdoc refuses it */
    CHECK(jd_parse("[1\0]", 4, NULL) == NULL);
    CHECK(jd_parse("[true\0]", 7, NULL) == NULL);
}

/* jansson's limit of 2048 levels, counted over every value. */
static void depth(void)
{
    char *t = malloc(2 * 2049 + 2);

    for (int levels = 2046; levels <= 2049; levels++) {
        size_t n = 0;
        for (int i = 0; i < levels; i++)
            t[n++] = '[';
        for (int i = 0; i < levels; i++)
            t[n++] = ']';
        t[n] = '\0';
        agree(t, levels <= 2048);
        /* the same arrays around one number: a level deeper */
        memmove(t + levels + 1, t + levels, (size_t)levels + 1);
        t[levels] = '7';
        agree(t, levels + 1 <= 2048);
    }
    free(t);
}

/* Repeated keys found by pairs in small objects and by sorting in large
 * ones; the error names the key. */
static void duplicates(void)
{
    char big[4096];
    size_t n = 0;
    cs_err err = {{0}};
    jdoc *d;

    n += (size_t)snprintf(big + n, sizeof big - n, "{");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%d\":%d",
                              i ? "," : "", i, i);
    snprintf(big + n, sizeof big - n, "}");
    agree(big, 1);
    snprintf(big + n, sizeof big - n, ",\"k17\":0}");
    agree(big, 0);
    d = jd_parse(big, strlen(big), &err);
    REQUIRE(d == NULL);
    CHECK(strstr(err.msg, "duplicate object key \"k17\"") != NULL);
    /* the same key at two levels is no repeat */
    agree("{\"a\":{\"a\":{\"a\":0}},\"b\":[{\"a\":1},{\"a\":2}]}", 1);
}

static void positions(void)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"{\"a\":1,\n \"b\":}", "line 2 column 6: "},
        {"[1,\n\n  2 3]", "line 3 column 5: ']' expected"},
        {"{\"caf\xc3\xa9\":x}", "line 1 column 9: invalid token"},
        {"[1] [", "line 1 column 5: end of file expected"},
        {"", "line 1 column 1: '[' or '{' expected"},
        {"[\"a", "premature end of input"},
        {"[99999999999999999999]", "too big integer"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cs_err err = {{0}};
        jdoc *d = jd_parse(cases[i].text, strlen(cases[i].text), &err);
        CHECK(d == NULL);
        if (!strstr(err.msg, cases[i].msg))
            fprintf(stderr, "case %zu: got \"%s\"\n", i, err.msg);
        CHECK(strstr(err.msg, cases[i].msg) != NULL);
    }
}

static void reading(void)
{
    const char *t = "{\"labels\":{\"node\":\"gpu-1\",\"n\":3},\"v\":[1.5,\"x\","
                    "null],\"esc\":\"a\\\"b\"}";
    cs_err err = {{0}};
    jdoc *d = jd_parse(t, strlen(t), &err);
    const jd_val *r, *l, *v, *e;
    size_t len = 0;

    REQUIRE(d != NULL);
    r = jd_root(d);
    CHECK_INT(jd_typeof(r), JD_OBJ);
    CHECK_INT(jd_size(r), 3);
    l = jd_get(r, "labels");
    REQUIRE(l != NULL);
    CHECK_STR(jd_str(jd_get(l, "node"), &len), "gpu-1");
    CHECK_INT(len, 5);
    CHECK_INT(jd_int(jd_get(l, "n")), 3);
    CHECK(jd_get(l, "missing") == NULL);
    CHECK(jd_get(jd_get(l, "node"), "x") == NULL); /* not an object */
    CHECK(jd_str(l, NULL) == NULL);
    v = jd_get(r, "v");
    REQUIRE(v && jd_size(v) == 3);
    e = jd_first(v);
    CHECK(jd_real(e) == 1.5);
    CHECK(jd_key(e, NULL) == NULL);
    e = jd_next(e);
    CHECK_STR(jd_str(e, NULL), "x");
    CHECK_INT(jd_typeof(jd_next(e)), JD_NULL);
    /* members in document order, after a nested object */
    e = jd_first(r);
    CHECK_STR(jd_key(e, &len), "labels");
    CHECK_STR(jd_key(jd_next(e), NULL), "v");
    CHECK_STR(jd_key(jd_next(jd_next(e)), NULL), "esc");
    CHECK_STR(jd_str(jd_get(r, "esc"), NULL), "a\"b");
    CHECK(jd_first(jd_get(l, "n")) == NULL);
    jd_free(d);
}

/* The canonical dump and the msgpack, byte for byte jansson's. */
static void writing(void)
{
    static const char *const texts[] = {
        "{\"b\":{\"z\":1,\"a\":[2,{\"y\":null,\"x\":\"\xc3\xa9\"}]},\"a\":\"\"}",
        "[0.1,-0.0,1e300,5e-324,123456789012345678,1.0,100000000000000000000.0]",
        "{\"s\":\"\\u001f\\u2028 / \\\"\",\"t\":true,\"f\":false}",
    };

    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        json_t *a = json_loads(texts[i], JSON_REJECT_DUPLICATES, NULL);
        jdoc *d = jd_parse(texts[i], strlen(texts[i]), NULL);
        char *want = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
        msgpack_sbuffer x, y;
        msgpack_packer px, py;
        const char *text;
        size_t len;
        jw w;

        REQUIRE(a && d && want);
        jw_init(&w);
        jd_canon(&w, jd_root(d));
        text = jw_text(&w, &len);
        CHECK(len == strlen(want) && memcmp(text, want, len) == 0);
        msgpack_sbuffer_init(&x);
        msgpack_sbuffer_init(&y);
        msgpack_packer_init(&px, &x, msgpack_sbuffer_write);
        msgpack_packer_init(&py, &y, msgpack_sbuffer_write);
        jmp_pack(&px, a);
        jd_pack(&py, jd_root(d));
        CHECK(x.size == y.size && memcmp(x.data, y.data, x.size) == 0);
        msgpack_sbuffer_destroy(&x);
        msgpack_sbuffer_destroy(&y);
        free(jw_take(&w));
        free(want);
        json_decref(a);
        jd_free(d);
    }
}

/* jd_canon against json_dumps(COMPACT | SORT_KEYS): the text the webhook
 * hashes to name an alert, so the ids stay what they were. */
static void canon_same(const char *doc)
{
    json_error_t e;
    json_t *v = json_loads(doc, 0, &e);
    jdoc *d = jd_parse(doc, strlen(doc), NULL);
    char *want;
    const char *got;
    size_t len;
    jw w;

    REQUIRE(v != NULL && d != NULL);
    want = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    REQUIRE(want != NULL);
    jw_init(&w);
    jw_str(&w, "left behind"); /* the writer is reused: cleared first */
    jw_clear(&w);
    jd_canon(&w, jd_root(d));
    got = jw_text(&w, &len);
    CHECK_INT(len, strlen(want));
    CHECK(len == strlen(want) && !memcmp(got, want, len));
    free(jw_take(&w));
    free(want);
    json_decref(v);
    jd_free(d);
}

static void canonical(void)
{
    char big[4096];
    size_t n = 0;

    canon_same("{\"labels\":{\"z\":\"1\",\"a\":\"2\",\"Hostname\":\"g\"},"
               "\"status\":\"firing\",\"annotations\":{}}");
    canon_same("[1,-2,3.5,1e300,-0.0,0.1,true,false,null,[],{}]");
    canon_same("{\"b\":[{\"y\":1,\"x\":{\"q\":[\"\\n\\t\\u0001\\\"\\\\/\"]}}],"
               "\"a\":\"caf\u00e9 \\u30b8 \\ud83d\\ude00\"}");
    canon_same("{\"\\u0007k\":1,\"k\\\"\":2,\"\u00e9\":3,\"K\":4,\"\":5}");
    canon_same("[\"plain\"]");
    canon_same("[9223372036854775807]");
    /* more keys than the stack holds */
    n += (size_t)snprintf(big + n, sizeof big - n, "{");
    for (int i = 99; i >= 0; i--)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%02d\":%d",
                              i == 99 ? "" : ",", i, i);
    snprintf(big + n, sizeof big - n, "}");
    canon_same(big);
}

int main(void)
{
    grammar();
    depth();
    duplicates();
    positions();
    reading();
    writing();
    canonical();
    return check_report();
}
