/* Request heads as clients send them, to the listener's head reader
 * (core/hlhead.c): the head's end is found at the same place whether its
 * bytes come at once or in two pieces, within what came, and a head that
 * ends is read without fault: a request line with method, URI and path,
 * or a refusal that says why. */
#include <stdlib.h>

#include <event2/buffer.h>

#include "core/hlhead.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The end found with the bytes split at `at`. */
static size_t end_in_two(const unsigned char *data, size_t size, size_t at,
                         size_t *line)
{
    struct evbuffer *b = evbuffer_new();
    size_t scan = 0, end;

    evbuffer_add(b, data, at);
    end = hlh_end(b, &scan, line);
    if (!end) {
        evbuffer_add(b, data + at, size - at);
        end = hlh_end(b, &scan, line);
    }
    evbuffer_free(b);
    return end;
}

static void read_head(struct evbuffer *b, size_t end)
{
    const char *why = NULL;
    hlh h;
    int rc = hlh_read(&h, b, end, &why);

    if (rc == 0 && (!h.head.method || !h.head.uri || !h.head.path ||
                    !h.version || h.lengths < 0))
        abort();
    if (rc == -2 && !why)
        abort();
    hlh_free(&h);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct evbuffer *b = evbuffer_new();
    size_t scan = 0, line = 0, line2 = 0, end;
    size_t at = size ? data[0] % (size + 1) : 0;

    evbuffer_add(b, data, size);
    end = hlh_end(b, &scan, &line);
    if (end > size || line > size ||
        end != end_in_two(data, size, at, &line2) || line != line2)
        abort();
    if (end)
        read_head(b, end);
    evbuffer_free(b);
    return 0;
}
