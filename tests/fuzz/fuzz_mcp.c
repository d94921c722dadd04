/* What cascade mcp makes of any message an agent sends, stdio or HTTP:
 * the JSON-RPC parse and the protocol's dispatch (initialize with any
 * version and client, ping, tools/list, notifications, responses, batches,
 * ids of every type). tools/call is left out: its tools read Kafka and
 * Redis, which a fuzzer has none of (mcp.sh drives them). */
#include <string.h>

#include "mcp/rpc.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_error_t jerr;
    json_t *msg = json_loadb((const char *)data, size, 0, &jerr), *answer;
    const char *method = json_string_value(json_object_get(msg, "method"));
    mcp_env env = {0};
    mcp_session s;

    mcp_session_init(&s, NULL);
    if (!msg) {
        json_decref(mcp_parse_error(jerr.text));
        return 0;
    }
    if (!method || strcmp(method, "tools/call")) {
        answer = mcp_handle(&env, &s, msg);
        json_decref(answer);
    }
    json_decref(msg);
    return 0;
}
