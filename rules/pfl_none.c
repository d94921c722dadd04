/* pfl_gen's own pfl_embedded: it is the tool that compiles the built-in
 * databases, so it has none to start from. */
#include "rules/prefilter.h"

const pfl_pre *pfl_embedded(void)
{
    return NULL;
}
