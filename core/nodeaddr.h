/* The other names a node is known by besides its host name (SLURM's
 * NodeAddr and NodeHostname, a Kubernetes node's status.addresses): what
 * an inventory signal's `addrs` may hold, and which of them a collector
 * offers. A leaf: it knows no signal. */
#ifndef CS_NODEADDR_H
#define CS_NODEADDR_H

/* At most this many a node, each shorter than NA_ADDR_MAX (an IPv6
 * address with a zone fits). */
#define NA_ADDRS_MAX 4
#define NA_ADDR_MAX 64

/* Whether a can be one: one word, short enough. */
int na_word(const char *a);
/* Whether a names every host alike (127.x, ::1, localhost): a collector
 * does not offer it as a node's address. */
int na_loopback(const char *a);

#endif
