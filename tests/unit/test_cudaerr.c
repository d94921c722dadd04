/* CUDA's error codes in every form frameworks print them (rules/cudaerr.h)
 * and what the classifier makes of them: one signature a code. */
#include <string.h>

#include "check.h"
#include "rules/classify.h"
#include "rules/cudaerr.h"
#include "rules/playbooks.h"

static classifier *c;

static void found(const char *line, int code)
{
    ce_error e = {0};
    int ok = ce_find(line, &e);

    CHECK_INT(ok, 1);
    CHECK_INT(e.code, code);
    if (!ok || e.code != code)
        fprintf(stderr, "  line: %s\n", line);
}

static void none(const char *line)
{
    ce_error e;
    int ok = ce_find(line, &e);

    CHECK_INT(ok, 0);
    if (ok)
        fprintf(stderr, "  line: %s (read as %d)\n", line, e.code);
}

/* Each form once: names, texts after the words, numbers, and the colon. */
static void test_forms(void)
{
    found("cupy.cuda.runtime.CUDARuntimeError: cudaErrorNoDevice: no "
          "CUDA-capable device is detected", 100);
    found("numba.cuda.cudadrv.driver.CudaAPIError: [100] Call to cuInit "
          "results in CUDA_ERROR_NO_DEVICE", 100);
    found("CUDA error at ../../Common/helper_cuda.h:791 code=100"
          "(cudaErrorNoDevice) \"cudaGetDeviceCount(&device_count)\"", 100);
    found("RuntimeError: CUDA error: invalid device ordinal", 101);
    found("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you "
          "run some cuda functions before calling NumCudaDevices() that might "
          "have already set an error? Error 101: invalid device ordinal", 101);
    found("RuntimeError: cuda runtime error (101) : invalid device ordinal at "
          "/pytorch/aten/src/THC/THCGeneral.cpp:47", 101);
    found("NCCL WARN Cuda failure 'CUDA driver is a stub library'", 34);
    found("CUDA failure 2: out of memory ; GPU=0 ; hostname=x", 2);
    found("CUDA error 217 at ggml-cuda.cu:6292: peer access is not supported "
          "between these two devices", 217);
    /* a number the older numbering gave another code: with its text */
    found("amrex::Abort::3::CUDA error 34 in file AMReX_GpuDevice.cpp line "
          "164: CUDA driver is a stub library !!!", 34);
    /* a long text after a colon, the line naming a driver call */
    found("LogicError: cuCtxEnablePeerAccess failed: peer access is not "
          "supported between these two devices", 217);
    found("CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has "
          "unsupported display driver / cuda driver combination", 803);
    /* the longer text of two that start alike */
    found("CUDA error: unspecified launch failure in prior launch", 53);
    found("CUDA error: unspecified launch failure", 719);
    /* a bare number whose meaning never moved */
    found("CUDA error 100 at src/main.cu:42", 100);
}

static void test_near_misses(void)
{
    none("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
    /* the warning before the exception line reports it */
    none("THCudaCheck FAIL file=/pytorch/THC/THCStorage.cu line=66 error=2 : "
         "out of memory");
    /* a build's failure in a CUDA tree is no CUDA error */
    none("make[2]: *** [CMakeFiles/cuda_kernels.dir/build.make:76] Error 2");
    /* an old release's 34 (device not ready) and 36 without their text */
    none("Warp CUDA error: Failed to get driver entry point 'cuInit' "
         "(CUDA error 34)");
    none("CUDA error 36 in kernel launch");
    /* a short text alone after a colon says nothing about CUDA */
    none("cuda_setup: out of memory");
    none("NCCL INFO cudaDriverVersion 12020");
    none("cudaErrorNotAName: out of order");
    none("error: invalid device ordinal"); /* no CUDA word, no driver call */
}

static void test_canon_and_classify(void)
{
    char buf[256];
    fact f[CLS_MAX_FACTS];
    sig s;
    cs_err err;
    const char *line =
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"app\",\"host\":\"g1\","
        "\"job\":\"7\",\"line\":\"jaxlib.xla_extension.XlaRuntimeError: "
        "INTERNAL: Failed to initialize CUDA: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH\"}";

    CHECK(ce_canon("CUDA_ERROR_OUT_OF_MEMORY: out of memory", buf, sizeof buf) > 0);
    CHECK_STR(buf, "CUDA error 2 (cudaErrorMemoryAllocation, "
                   "CUDA_ERROR_OUT_OF_MEMORY): out of memory");
    CHECK_INT((int)ce_canon("CUDA_ERROR_OUT_OF_MEMORY", buf, 10), 0);
    /* the code decides before XLA's generic INTERNAL, and the excerpt is
     * the line as printed */
    CHECK_INT(sig_parse_json(&s, line, strlen(line), &err), 0);
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_STR(f[0].scenario, "driver.kernel_mismatch");
    CHECK(strstr(f[0].excerpt, "XlaRuntimeError") != NULL);
    sig_free(&s);
}

int main(void)
{
    cs_err err;
    pb_catalog *cat = pb_catalog_embedded();

    c = cls_new(cat, &err);
    REQUIRE(c != NULL);
    test_forms();
    test_near_misses();
    test_canon_and_classify();
    cls_free(c);
    pb_catalog_free(cat);
    return check_report();
}
