/* The console's page, carried in the binary (console/embed.cmake makes
 * it from console/assets/): it works offline, from anywhere. */
#ifndef CS_CN_ASSETS_H
#define CS_CN_ASSETS_H

#include <stddef.h>

typedef struct cn_asset {
    const char *path; /* "/index.html" */
    const char *type; /* its Content-Type */
    const char *data;
    size_t len;
} cn_asset;

/* The asset served at path, or NULL. */
const cn_asset *cn_asset_find(const char *path);

#endif
