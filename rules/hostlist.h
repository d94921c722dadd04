/* SLURM hostlists: "gpu-[001-003,007],cpu-1" as the names it stands for. */
#ifndef CS_HOSTLIST_H
#define CS_HOSTLIST_H

/* Expands list into at most max names of at most 128 bytes; returns the
 * count, or -1 when malformed. */
int hostlist_expand(const char *list, char names[][128], int max);

#endif
