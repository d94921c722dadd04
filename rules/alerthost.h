/* The host an alert is about, from its labels. A leaf: it knows no
 * signal, fact or catalog. */
#ifndef CS_ALERTHOST_H
#define CS_ALERTHOST_H

#include <stddef.h>

#include <jansson.h>

/* The host the labels name (dcgm-exporter's Hostname first, then the
 * other exporters' labels; an instance's port cut off) in buf, or NULL
 * when they name none. */
const char *al_host(json_t *labels, char *buf, size_t len);

#endif
