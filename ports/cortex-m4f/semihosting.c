/* Arm semihosting calls (see semihosting.h): on M-profile a call is
 * `bkpt 0xab` with the operation in r0 and its argument in r1. */
#include "semihosting.h"

#include <stdint.h>

enum {
    SYS_WRITE0 = 0x04,
    SYS_EXIT = 0x18,
    SYS_EXIT_EXTENDED = 0x20,
    ADP_STOPPED_APPLICATION_EXIT = 0x20026
};

static uintptr_t semihosting_call(uintptr_t op, const void *arg) {
    register uintptr_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void semihosting_write(const char *text) { semihosting_call(SYS_WRITE0, text); }

void semihosting_exit(int status) {
    /* SYS_EXIT_EXTENDED takes {reason, status}; QEMU (4.0 on) exits with
     * `status`. A host without it ignores the call: fall back to SYS_EXIT,
     * whose 32-bit form only tells success (the reason) from failure. */
    const uintptr_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uintptr_t)status};
    semihosting_call(SYS_EXIT_EXTENDED, block);
    semihosting_call(SYS_EXIT, (const void *)(uintptr_t)(status == 0 ? ADP_STOPPED_APPLICATION_EXIT : 0x20024));
    for (;;) {
    }
}
