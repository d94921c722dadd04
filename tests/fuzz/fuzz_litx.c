/* Required literals (rules/litx.h) against PCRE2 itself: the input is a
 * pattern and a subject, split at the first NUL. When PCRE2 compiles the
 * pattern and it matches the subject, the subject must hold one of the
 * literals lx_required gives for it: a literal missing from a matching
 * line is a line the prefilter would rule out, a fact lost. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "rules/litx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    char *pat, *subject;
    size_t plen, slen;
    pcre2_code *re;
    pcre2_match_data *md;
    int err, found = 0;
    PCRE2_SIZE off;
    lx_set ls;

    if (!nul)
        return 0;
    plen = (size_t)(nul - data);
    slen = size - plen - 1;
    pat = strndup((const char *)data, plen);
    subject = malloc(slen + 1);
    memcpy(subject, nul + 1, slen);
    subject[slen] = '\0';
    lx_required(pat, &ls);
    re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, 0, &err, &off,
                       NULL);
    if (re && ls.n && memchr(subject, 0, slen) == NULL) {
        md = pcre2_match_data_create_from_pattern(re, NULL);
        /* a bounded match: a pathological pattern is not the finding */
        pcre2_match_context *mc = pcre2_match_context_create(NULL);
        pcre2_set_match_limit(mc, 100000);
        if (pcre2_match(re, (PCRE2_SPTR)subject, slen, 0, 0, md, mc) >= 0) {
            for (size_t i = 0; i < ls.n && !found; i++)
                found = (ls.caseless ? strcasestr(subject, ls.lit[i])
                                     : strstr(subject, ls.lit[i])) != NULL;
            if (!found)
                abort(); /* the pattern matched without its literal */
        }
        pcre2_match_context_free(mc);
        pcre2_match_data_free(md);
    }
    pcre2_code_free(re);
    free(pat);
    free(subject);
    return 0;
}
