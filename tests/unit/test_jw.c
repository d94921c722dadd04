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

int main(void)
{
    strings();
    invalid_utf8();
    reals();
    structure();
    return check_report();
}
