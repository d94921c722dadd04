/* Required literals of a regular expression (litx.h).
 *
 * A recursive descent over the pattern. A sequence keeps its current run
 * of plain characters that must follow each other, and the best set found
 * so far: a run, or a group's set (every alternative of the group
 * requires one of its strings). A repeat that may be zero drops its atom;
 * a repeat of one or more keeps the atom once and ends the run. The best
 * set is the one whose shortest string is longest (a long literal is rare
 * in noise), then the one with fewer strings. */
#include "rules/litx.h"

#include <string.h>

/* Groups nested deeper than this give no literals (each level keeps a
 * few sets on the stack). */
#define LX_MAX_DEPTH 24

typedef struct lx_state {
    const char *p;
    int caseless;
    int fail;
    int depth;
} lx_state;

/* A set's quality: its shortest string's length, 0 for none. */
static size_t quality(const lx_set *s)
{
    size_t q = (size_t)-1;

    for (size_t i = 0; i < s->n; i++) {
        size_t l = strlen(s->lit[i]);
        q = l < q ? l : q;
    }
    return s->n ? q : 0;
}

static void consider(lx_set *best, const lx_set *cand)
{
    size_t qb = quality(best), qc = quality(cand);

    if (qc > qb || (qc == qb && qc && cand->n < best->n))
        *best = *cand;
}

/* The run so far becomes a candidate; the run starts over. */
static void flush(lx_set *best, char *run, size_t *len)
{
    lx_set one;

    if (!*len)
        return;
    run[*len] = '\0';
    one.n = 1;
    one.caseless = 0;
    memcpy(one.lit[0], run, *len + 1);
    consider(best, &one);
    *len = 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int hex_val(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A repeat at p: its minimum (*min) and its length, 0 when none. */
static size_t repeat_at(const char *p, int *min)
{
    const char *q = p + 1;
    size_t n;

    if (*p == '*' || *p == '?') {
        *min = 0;
        n = 1;
    } else if (*p == '+') {
        *min = 1;
        n = 1;
    } else if (*p == '{' && (is_digit(*q) || (*q == ',' && is_digit(q[1])))) {
        /* "{,n}" is a repeat from PCRE2 10.43, text before: read as a
         * repeat that may be zero, it is right for both */
        *min = 0;
        /* PCRE2 caps a repeat at 65535; a larger count is refused when
         * the rule compiles, so capping it here changes no answer */
        while (is_digit(*q)) {
            *min = *min * 10 + (*q++ - '0') % 10;
            if (*min > 65535)
                *min = 65536;
        }
        if (*q == ',')
            for (q++; is_digit(*q);)
                q++;
        if (*q != '}')
            return 0; /* a literal brace */
        n = (size_t)(q + 1 - p);
    } else {
        return 0;
    }
    if (p[n] == '?' || p[n] == '+') /* lazy, possessive */
        n++;
    return n;
}

/* An escape at st->p (after the backslash): the literal byte it stands
 * for, or -1 for a class, an assertion or a reference. */
static int escape(lx_state *st)
{
    char c = *st->p++;
    int v = 0, d;

    switch (c) {
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'a': return 7;
    case 'e': return 27;
    case 'x':
        if (*st->p == '{') {
            for (st->p++; (d = hex_val(*st->p)) >= 0; st->p++)
                v = (v << 4 | d) & 0xffff;
            if (*st->p == '}')
                st->p++;
        } else {
            for (int k = 0; k < 2 && (d = hex_val(*st->p)) >= 0; k++, st->p++)
                v = v << 4 | d;
        }
        return v > 0 && v < 0x80 ? v : -1;
    case 'g':
        if (*st->p == '-' || *st->p == '+' || is_digit(*st->p)) {
            for (st->p++; is_digit(*st->p);) /* \g1, \g-1, \g+1 */
                st->p++;
            return -1;
        }
        /* \g{..}, \g<..>, \g'..': as below */
        __attribute__((fallthrough));
    case 'p':
    case 'P':
    case 'k':
    case 'o':
        if (*st->p == '{' || *st->p == '<' || *st->p == '\'') {
            char close = *st->p == '{' ? '}' : *st->p == '<' ? '>' : '\'';
            while (*st->p && *st->p != close)
                st->p++;
            if (*st->p)
                st->p++;
        } else if (*st->p) {
            st->p++;
        }
        return -1;
    case 'Q':
    case 'E': /* ignored by PCRE2, so a repeat after it is the atom's */
    case 'c':
    case '\0':
        st->fail = 1; /* quoting, control characters: not read here */
        if (!c)
            st->p--;
        return -1;
    default:
        if (is_digit(c)) { /* a back-reference or an octal escape */
            while (is_digit(*st->p))
                st->p++;
            return -1;
        }
        return is_alnum(c) ? -1 : (unsigned char)c;
    }
}

/* Where a POSIX class that opens at p ("[:", "[.", "[=") ends (past its
 * "]"), or NULL when PCRE2 does not read one there: its rule
 * (check_posix_syntax), so that "[2-9[:]" is a class of 2-9, '[' and ':'
 * and not the start of a name running on to a later ":]". */
static const char *posix_end(const char *p)
{
    char t = p[1];

    for (p += 2; p[0] && p[1]; p++) {
        if (p[0] == '\\' && (p[1] == ']' || p[1] == '\\'))
            p++;
        else if ((p[0] == '[' && p[1] == t) || p[0] == ']')
            return NULL;
        else if (p[0] == t && p[1] == ']')
            return p + 2;
    }
    return NULL;
}

static void skip_class(lx_state *st)
{
    st->p++; /* '[' */
    if (*st->p == '^')
        st->p++;
    if (*st->p == ']')
        st->p++;
    while (*st->p && *st->p != ']') {
        const char *e;
        if (st->p[0] == '[' &&
            (st->p[1] == ':' || st->p[1] == '.' || st->p[1] == '=') &&
            (e = posix_end(st->p))) { /* [:alpha:] */
            st->p = e;
            continue;
        }
        st->p += st->p[0] == '\\' && st->p[1] ? 2 : 1;
    }
    if (*st->p)
        st->p++;
    else
        st->fail = 1;
}

static size_t alternation(lx_state *st, lx_set *out);

/* Inline flags "(?i)" or a flag group "(?i:": 1 for a group to read,
 * 0 for flags alone, -1 for what this reader does not know. */
static int flags(lx_state *st)
{
    int off = 0;

    for (;; st->p++) {
        char c = *st->p;
        if (c == '-')
            off = 1;
        else if (c == 'i')
            st->caseless |= !off; /* (?-i) stays caseless: a superset */
        else if (c == 'x')
            return -1;
        else if (c == 'm' || c == 's' || c == 'n' || c == 'U' || c == 'J')
            continue;
        else if (c == ')' || c == ':')
            return *st->p++ == ':';
        else
            return -1;
    }
}

/* A group at st->p (after its '('): what it requires into sub; 0 when
 * nothing (a lookaround, flags, or an alternative without a literal). */
static size_t group(lx_state *st, lx_set *sub)
{
    const char *p = st->p;
    lx_set ignored;
    size_t q = 0;
    int look = 0, f;

    sub->n = 0;
    if (*p == '*') {
        st->fail = 1; /* (*VERB) */
        return 0;
    }
    if (*p == '?') {
        p++;
        if (*p == ':' || *p == '>' || *p == '|') {
            p++;
        } else if (*p == '=' || *p == '!') {
            p++;
            look = 1;
        } else if (*p == '<' && (p[1] == '=' || p[1] == '!')) {
            p += 2;
            look = 1;
        } else if (*p == '#') {
            st->fail = 1; /* a comment: a repeat after it is the atom's */
            return 0;
        } else if (*p == '<' || *p == '\'' || (*p == 'P' && p[1] == '<')) {
            char close = *p == '\'' ? '\'' : '>';
            while (*p && *p != close)
                p++;
            if (*p)
                p++;
        } else {
            st->p = p;
            /* flags followed by a repeat: the repeat is the atom's before */
            if ((f = flags(st)) < 0 || (f == 0 && strchr("*+?{", *st->p) &&
                                        *st->p))
                st->fail = 1;
            if (f <= 0)
                return 0;
            p = st->p;
        }
    }
    st->p = p;
    if (++st->depth > LX_MAX_DEPTH) {
        st->fail = 1;
        return 0;
    }
    q = alternation(st, look ? &ignored : sub);
    st->depth--;
    if (*st->p != ')') {
        st->fail = 1;
        return 0;
    }
    st->p++;
    if (look) {
        sub->n = 0;
        return 0;
    }
    return q;
}

/* One atom and its repeat, read into the run or the best set. */
static void atom(lx_state *st, lx_set *best, char *run, size_t *len)
{
    lx_set sub;
    size_t gq = 0, rn;
    int lit = -1, min = 1, is_group = 0;

    switch (*st->p) {
    case '(':
        st->p++;
        gq = group(st, &sub);
        is_group = 1;
        break;
    case '[':
        skip_class(st);
        break;
    case '\\':
        st->p++;
        lit = escape(st);
        break;
    case '.':
    case '^':
    case '$':
        st->p++;
        break;
    default:
        lit = (unsigned char)*st->p++;
    }
    rn = repeat_at(st->p, &min);
    st->p += rn;
    if (lit < 0 || min == 0) {
        /* not plain text, or text that may be absent: the run ends */
        flush(best, run, len);
        if (is_group && gq && min > 0)
            consider(best, &sub);
        return;
    }
    if (*len == LX_MAX_LEN)
        flush(best, run, len);
    run[(*len)++] = (char)lit;
    if (rn) /* repeated: it is there, but the run cannot go on across it */
        flush(best, run, len);
}

/* A sequence up to '|', ')' or the end: its best set into out. */
static size_t sequence(lx_state *st, lx_set *out)
{
    char run[LX_MAX_LEN + 1];
    size_t len = 0;

    out->n = 0;
    while (*st->p && *st->p != '|' && *st->p != ')' && !st->fail)
        atom(st, out, run, &len);
    flush(out, run, &len);
    return quality(out);
}

static size_t alternation(lx_state *st, lx_set *out)
{
    lx_set alt;
    int none = 0;

    sequence(st, out);
    none = out->n == 0;
    while (*st->p == '|' && !st->fail) {
        st->p++;
        sequence(st, &alt);
        if (!alt.n || out->n + alt.n > LX_MAX_LITS)
            none = 1;
        for (size_t i = 0; !none && i < alt.n; i++)
            memcpy(out->lit[out->n++], alt.lit[i], sizeof alt.lit[i]);
    }
    if (none)
        out->n = 0;
    return quality(out);
}

size_t lx_required(const char *pat, lx_set *out)
{
    lx_state st = {pat, 0, 0, 0};
    size_t q;

    out->n = 0;
    out->caseless = 0;
    q = alternation(&st, out);
    if (st.fail || *st.p) { /* an unread construct, a stray ')' */
        out->n = 0;
        return 0;
    }
    out->caseless = st.caseless;
    return q;
}
