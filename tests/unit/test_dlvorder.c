/* Delivery order: a report at or before its partition's last offset, or
 * without one, is told apart (the broker kept another message in its
 * place, or only said it had the batch), per topic and partition. */
#include "check.h"
#include "core/dlvorder.h"

static void order(void)
{
    dlo *d = dlo_new();

    CHECK_INT(dlo_last(d, "sig", 6), -1);
    CHECK_INT(dlo_check(d, "sig", 6, 0), 0);
    CHECK_INT(dlo_check(d, "sig", 6, 1), 0);
    /* a second message answered with the first one's offset: dropped */
    CHECK_INT(dlo_check(d, "sig", 6, 0), 1);
    CHECK_INT(dlo_check(d, "sig", 6, 1), 1);
    CHECK_INT(dlo_last(d, "sig", 6), 1);
    CHECK_INT(dlo_check(d, "sig", 6, 2), 0);
    /* other partitions and topics count on their own */
    CHECK_INT(dlo_check(d, "sig", 0, 0), 0);
    CHECK_INT(dlo_check(d, "sig", 63, 5), 0);
    CHECK_INT(dlo_check(d, "inc", 6, 0), 0);
    CHECK_INT(dlo_last(d, "inc", 6), 0);
    CHECK_INT(dlo_last(d, "sig", 63), 5);
    CHECK_INT(dlo_last(d, "sig", 62), -1);
    CHECK_INT(dlo_last(d, "act", 0), -1);
    /* a success without an offset (a duplicate sequence): not proven */
    CHECK_INT(dlo_check(d, "sig", 6, -1), 1);
    CHECK_INT(dlo_check(d, "sig", 7, -1), 1);
    CHECK_INT(dlo_last(d, "sig", 7), -1);
    /* no partition: not a report this judges */
    CHECK_INT(dlo_check(d, "sig", -1, 0), 0);
    CHECK_INT(dlo_last(d, "sig", 6), 2);
    /* a partition far out grows the array, the new slots empty */
    CHECK_INT(dlo_check(d, "sig", 1000, 7), 0);
    CHECK_INT(dlo_last(d, "sig", 999), -1);
    CHECK_INT(dlo_last(d, "sig", 6), 2);
    dlo_free(d);
}

int main(void)
{
    order();
    return check_report();
}
