#include "core/hlhead.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "core/mem.h"

size_t hlh_end(struct evbuffer *buf, size_t *scan, size_t *line)
{
    struct evbuffer_ptr at, eol;
    size_t eol_len;

    for (;;) {
        if (evbuffer_ptr_set(buf, &at, *scan, EVBUFFER_PTR_SET))
            return 0;
        eol = evbuffer_search_eol(buf, &at, &eol_len, EVBUFFER_EOL_CRLF);
        if (eol.pos < 0)
            return 0;
        if (!*line) { /* the request line, which never ends the head */
            *scan = *line = (size_t)eol.pos + eol_len;
            continue;
        }
        if ((size_t)eol.pos == *scan)
            return (size_t)eol.pos + eol_len;
        *scan = (size_t)eol.pos + eol_len;
    }
}

/* The next line of *p, cut at its end (a CR before the LF dropped); NULL
 * at the end of the text. */
static char *next_line(char **p)
{
    char *line = *p, *lf;

    if (!line || !*line)
        return NULL;
    lf = strchr(line, '\n');
    if (!lf) {
        *p = NULL;
        return line;
    }
    *p = lf + 1;
    if (lf > line && lf[-1] == '\r')
        lf--;
    *lf = '\0';
    return line;
}

static void rtrim_blanks(char *s)
{
    size_t n = strlen(s);

    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* evhttp_parse_request_line: method, URI, version. */
static int read_request_line(hlh *h, char *line)
{
    size_t len = strlen(line);
    char *uri, *version;
    int major, minor;
    char extra;

    while (len && line[len - 1] == ' ')
        line[--len] = '\0';
    if (len < strlen("GET / HTTP/1.0") || !(uri = strchr(line, ' ')))
        return -1;
    *uri++ = '\0';
    version = strrchr(uri, ' ');
    if (!version || version == uri)
        return -1;
    *version++ = '\0';
    if (sscanf(version, "HTTP/%d.%d%c", &major, &minor, &extra) != 2)
        return -1;
    h->head.method = line;
    h->head.uri = uri;
    h->head.path = "";
    h->version = version;
    /* CONNECT names an authority, which evhttp judges (and refuses: 501) */
    if (!strcmp(line, "CONNECT"))
        return 0;
    h->uri = evhttp_uri_parse_with_flags(uri, EVHTTP_URI_NONCONFORMANT);
    if (!h->uri)
        return -1;
    if (evhttp_uri_get_path(h->uri))
        h->head.path = evhttp_uri_get_path(h->uri);
    return 0;
}

static int add_field(hlh *h, const char *name, const char *value)
{
    if (evhttp_add_header(&h->fields, name, value))
        return -1;
    h->lengths += !strcasecmp(name, "Content-Length");
    return 0;
}

/* A field and the lines that continue it, joined by one space. */
static int read_field(hlh *h, char *line, char **rest)
{
    char *value = line, *name = strsep(&value, ":"), *more, *joined;
    int rc;

    if (!value)
        return -1;
    value += strspn(value, " ");
    rtrim_blanks(value);
    joined = xstrdup(value);
    while (*rest && (**rest == ' ' || **rest == '\t')) {
        more = next_line(rest);
        more += strspn(more, " \t");
        rtrim_blanks(more);
        joined = xrealloc(joined, strlen(joined) + strlen(more) + 2);
        strcat(strcat(joined, " "), more);
    }
    rc = add_field(h, name, joined);
    free(joined);
    return rc;
}

/* The body evhttp will read: chunks, or a Content-Length other than 0
 * (one it cannot read counts: it refuses that request itself). */
static int declares_body(const struct evkeyvalq *f)
{
    const char *te = evhttp_find_header(f, "Transfer-Encoding");
    const char *cl = evhttp_find_header(f, "Content-Length");
    char *end;

    if (te && !strcasecmp(te, "chunked"))
        return 1;
    return cl && (strtoll(cl, &end, 10) != 0 || !*cl || *end);
}

int hlh_read(hlh *h, struct evbuffer *buf, size_t len, const char **why)
{
    char *p, *line;
    int nul;

    memset(h, 0, sizeof *h);
    h->fields.tqh_first = NULL; /* TAILQ_INIT, which libevent leaves out */
    h->fields.tqh_last = &h->fields.tqh_first;
    h->head.headers = &h->fields;
    h->text = xmalloc(len + 1);
    evbuffer_copyout(buf, h->text, len);
    h->text[len] = '\0';
    /* evhttp reads a line up to its LF, these lines would end before */
    nul = memchr(h->text, '\0', len) != NULL;
    p = h->text;
    if (!(line = next_line(&p)) || read_request_line(h, line))
        return -1;
    if (nul) {
        *why = "NUL byte in the request head";
        return -2;
    }
    while ((line = next_line(&p)) && *line) {
        if (*line == ' ' || *line == '\t' || read_field(h, line, &p)) {
            *why = "malformed header field";
            return -2;
        }
    }
    h->head.has_body = declares_body(&h->fields);
    return 0;
}

void hlh_free(hlh *h)
{
    evhttp_clear_headers(&h->fields);
    if (h->uri)
        evhttp_uri_free(h->uri);
    free(h->text);
}
