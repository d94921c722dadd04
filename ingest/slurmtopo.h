/* SLURM's network topology as `scontrol show topology` prints it
 * (topology/tree, from topology.conf), one switch a line:
 *
 *   SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu-[001-004]
 *   SwitchName=s2 Level=1 LinkSpeed=1 Nodes=gpu-[001-008] Switches=s[0-1]
 *
 * A leaf switch (Level=0) is a node's rack: the nodes that share it are
 * the ones a rack-level fault (power, cooling, a top-of-rack switch)
 * takes together. */
#ifndef CS_SLURMTOPO_H
#define CS_SLURMTOPO_H

#include <stddef.h>

#include "core/err.h"
#include "core/strmap.h"

/* Called once a node of a leaf switch, with the switch's name. */
typedef void (*stopo_fn)(void *arg, const char *node, const char *sw);

/* Reads len bytes of text (NUL not needed). Returns the leaf switches
 * read (0: none, as when no topology plugin is configured), or -1 with
 * err naming the line when a line of a switch has no SwitchName, a bad
 * Level or a Nodes that is no hostlist. At most 4096 nodes a switch. */
int stopo_parse(const char *text, size_t len, stopo_fn fn, void *arg,
                cs_err *err);

/* The same as a map node -> its leaf switch (values malloc'd: free them
 * with strmap_free(m, free)); empty when there is no leaf switch, NULL
 * with err when malformed. */
strmap *stopo_racks(const char *text, size_t len, cs_err *err);

/* A hostlist's nodes (canary_nodes: "gpu-[001-004],gpu-010") as a set
 * (values non-NULL, not to be freed); NULL with err when it is no
 * hostlist. At most 4096 nodes. */
strmap *stopo_set(const char *hostlist, cs_err *err);

#endif
