/* A CUDA error a line reports, in whichever form the program printed it:
 * the runtime's name (cudaErrorNoDevice: CuPy, the CUDA samples' helper),
 * the driver API's (CUDA_ERROR_NO_DEVICE: TensorFlow, JAX, numba), the
 * text cudaGetErrorString gives after "CUDA error: " or "Cuda failure "
 * (PyTorch, NCCL, ONNX Runtime), or the bare number after those words.
 * Each of the codes the table holds (CUDA 13.5's, rules/cudaerr_table.h)
 * means one thing whatever the framework, so one signature of a code
 * reads every form. A leaf: it knows no signal, fact or catalog. */
#ifndef CS_CUDAERR_H
#define CS_CUDAERR_H

#include <stddef.h>

typedef struct ce_error {
    int code;
    const char *rt;   /* cudaErrorXxx, or NULL (a driver API code only) */
    const char *drv;  /* CUDA_ERROR_XXX, or NULL (a runtime code only) */
    const char *text; /* what cudaGetErrorString says */
} ce_error;

/* The first CUDA error line names: 1 with *out, else 0. A name is
 * trusted first, then the text, then a number, and a number alone only
 * where releases before 10.1 (which numbered the runtime's codes
 * otherwise) did not give it another meaning. */
int ce_find(const char *line, ce_error *out);
/* The error as one line the signatures read, "CUDA error N (cudaErrorX,
 * CUDA_ERROR_X): text", in buf: its length, 0 when line reports none
 * (or buf is too small). */
size_t ce_canon(const char *line, char *buf, size_t len);

#endif
