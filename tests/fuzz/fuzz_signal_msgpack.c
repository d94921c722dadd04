/* Signals as they arrive from Kafka: arbitrary bytes must be rejected
 * with a reason or accepted as a valid signal, never crash. */
#include "core/signal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    sig s;
    cs_err err;

    if (sig_parse_msgpack(&s, (const char *)data, size, &err) == 0)
        sig_free(&s);
    return 0;
}
