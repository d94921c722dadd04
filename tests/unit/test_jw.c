/* The JSON text writer: its output reads back as the values written, and
 * for strings and reals it is what jansson's own dump writes, so records
 * written either way compare equal. */
#include <float.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/jw.h"

/* jansson's dump of the string s, as a value */
static char *jansson_str(const char *s)
{
    json_t *v = json_string(s);
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

    json_decref(v);
    return t;
}

static char *jw_of_str(const char *s)
{
    jw w;

    jw_init(&w);
    jw_str(&w, s);
    return jw_take(&w);
}

static void strings(void)
{
    static const char *const cases[] = {
        "", "plain", "quote \" and backslash \\ and slash /",
        "\b\f\n\r\t", "\x01\x02\x1f\x7f", "caf\xc3\xa9 \xe3\x82\xb8 \xf0\x9f\x98\x80",
        "\xef\xbf\xbd replacement itself", "tab\tin the middle\n",
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *a = jw_of_str(cases[i]), *b = jansson_str(cases[i]);
        CHECK_STR(a, b);
        free(a);
        free(b);
    }
}

/* Bytes that are not UTF-8 become U+FFFD, one each, and the rest stays:
 * the text always reads back. */
static void invalid_utf8(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\xc3", "\"a\xef\xbf\xbd\""},               /* cut short */
        {"\xc3(x", "\"\xef\xbf\xbd(x\""},             /* bad continuation */
        {"\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\""}, /* overlong */
        {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* surrogate */
        {"\xf4\x90\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
        {"\xff ok", "\"\xef\xbf\xbd ok\""},
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *a = jw_of_str(cases[i].in);
        json_error_t je;
        json_t *v = json_loads(a, JSON_DECODE_ANY, &je);
        CHECK_STR(a, cases[i].out);
        CHECK(v != NULL);
        json_decref(v);
        free(a);
    }
}

static void reals(void)
{
    static const double cases[] = {
        0.0, -1.0, 1.5, 84986665369.6, 2147483648.0, 1e20, 1e-5, -2.5e-300,
        DBL_MAX, DBL_MIN, 0.1, 123456789012345678.0, 1e16, 3.0e100, -0.0,
        -123.0, 999999999999999.0, 1e15, -1e15, 4503599627370497.0,
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *v = json_real(cases[i]);
        char *b = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT), *a;
        jw w;

        jw_init(&w);
        jw_real(&w, cases[i]);
        a = jw_take(&w);
        CHECK_STR(a, b);
        free(a);
        free(b);
        json_decref(v);
    }
}

/* Separators at every depth, keys, integers and raw values. */
static void structure(void)
{
    jw w;
    char *t;

    jw_init(&w);
    jw_obj(&w);
    jw_key(&w, "a");
    jw_arr(&w);
    jw_arr(&w);
    jw_str(&w, "x");
    jw_int(&w, -7);
    jw_end_arr(&w);
    jw_arr(&w);
    jw_end_arr(&w);
    jw_obj(&w);
    jw_end_obj(&w);
    jw_end_arr(&w);
    jw_key(&w, "b\"");
    jw_raw(&w, "{\"k\":[1,2]}");
    jw_key(&w, "c");
    jw_int(&w, 9223372036854775807LL);
    jw_key(&w, "d");
    jw_raw(&w, "null");
    jw_end_obj(&w);
    t = jw_take(&w);
    CHECK_STR(t, "{\"a\":[[\"x\",-7],[],{}],\"b\\\"\":{\"k\":[1,2]},"
                 "\"c\":9223372036854775807,\"d\":null}");
    free(t);
    /* the writer starts over after a take */
    jw_int(&w, 1);
    t = jw_take(&w);
    CHECK_STR(t, "1");
    free(t);
}


/* jansson's dumps of v, compact and sorted, against jw_dumps's. */
static void same_dump(json_t *v, const char *what)
{
    for (int sort = 0; sort <= 1; sort++) {
        char *want = json_dumps(v, JSON_COMPACT | (sort ? JSON_SORT_KEYS : 0));
        char *got = jw_dumps(v, sort);
        if (!want || !got || strcmp(got, want))
            fprintf(stderr, "  %s (sort %d)\n", what, sort);
        CHECK_STR(got, want);
        free(want);
        free(got);
    }
}

/* Whole values: the incident text and the state records are written by
 * jw_json where json_dumps wrote them; the bytes must not change. */
static void values(void)
{
    static const char *const texts[] = {
        "{}", "[]", "{\"b\":1,\"a\":[true,false,null],\"c\":{\"z\":-0.5,\"y\":\"\"}}",
        "[1,-9223372036854775808,9223372036854775807,1.5e300,0.1,[[]],{}]",
        "{\"ab\":1,\"a\":2,\"b\":3,\"A\":4,\"\\u00e9\":5,\"\\u0001\":6}",
        "{\"q\":\"quote \\\" back \\\\ nl \\n \\u0001 caf\\u00e9 \\ud83d\\ude00\"}",
        "{\"id\":\"inc-65a7c7d81d5be979\",\"scenario\":\"peer.nccl_timeout_burst\","
        "\"status\":\"resolved\",\"scope\":{\"cluster\":\"default\",\"job\":\"700258\"},"
        "\"evidence\":{\"count\":3,\"sources\":[\"app\"]},\"children\":[],"
        "\"actions\":[{\"playbook\":\"notify\",\"approval\":\"auto\",\"target\":"
        "{\"job\":\"700258\"},\"params\":{},\"state\":\"proposed\"}]}",
    };
    json_t *v, *o;
    char key[8];

    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        json_error_t je;
        v = json_loads(texts[i], 0, &je);
        CHECK(v != NULL);
        if (v)
            same_dump(v, texts[i]);
        json_decref(v);
    }
    /* NUL bytes in a string and in keys (json_stringn, json_object_setn),
     * keys one the prefix of another */
    v = json_object();
    json_object_set_new(v, "s", json_stringn("a\0b", 3));
    json_object_setn_new(v, "k\0z", 3, json_integer(1));
    json_object_setn_new(v, "k", 1, json_integer(2));
    json_object_setn_new(v, "k\0", 2, json_integer(3));
    same_dump(v, "NUL bytes");
    json_decref(v);
    /* more keys than the stack holds, added out of order */
    o = json_object();
    for (int i = 99; i >= 0; i--) {
        snprintf(key, sizeof key, "k%d", i * 37 % 100);
        json_object_set_new(o, key, json_integer(i));
    }
    v = json_pack("{s:o, s:[o]}", "big", json_deep_copy(o), "list", o);
    same_dump(v, "100 keys");
    json_decref(v);
}

int main(void)
{
    strings();
    invalid_utf8();
    reals();
    structure();
    values();
    return check_report();
}
