/*
 * Start-up code for the Cortex-M4F port on QEMU's mps2-an386 (and any
 * Cortex-M4F with its code at 0x0): the vector table, the reset handler
 * (FPU on, .data copied from flash, .bss zeroed, static constructors run,
 * main() called, its return value reported through semihosting), and fault
 * handlers that report and exit with status 3 instead of hanging.
 *
 * Symbols come from the linker script mps2-an386.ld.
 */
#include <stdint.h>

#include "semihosting.h"

extern uint32_t __data_load__[], __data_start__[], __data_end__[], __bss_start__[], __bss_end__[];
extern uint32_t __stack_top__[];
typedef void (*init_function)(void);
extern init_function __preinit_array_start[], __preinit_array_end[], __init_array_start[], __init_array_end[];

int main(void);
void Reset_Handler(void);
void edgeattn_port_start(void) __attribute__((noreturn, used));

/* The FPU must be on (CPACR: full access to CP10 and CP11) before the first
 * floating-point instruction, which the compiler may place anywhere in C
 * code: so the reset handler does it in assembly, then enters C. */
__attribute__((naked, noreturn)) void Reset_Handler(void) {
    __asm__ volatile(
        "ldr r0, =0xE000ED88\n"   /* SCB->CPACR */
        "ldr r1, [r0]\n"
        "orr r1, r1, #(0xF << 20)\n"
        "str r1, [r0]\n"
        "dsb\n"
        "isb\n"
        "b edgeattn_port_start\n");
}

void edgeattn_port_start(void) {
    for (uint32_t *src = __data_load__, *dst = __data_start__; dst < __data_end__;) *dst++ = *src++;
    for (uint32_t *dst = __bss_start__; dst < __bss_end__;) *dst++ = 0;
    for (init_function *f = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
    for (init_function *f = __init_array_start; f < __init_array_end; ++f) (*f)();
    semihosting_exit(main());
}

static void fault(const char *what) {
    semihosting_write(what);
    semihosting_exit(3);
}

void NMI_Handler(void) { fault("NMI\n"); }
void HardFault_Handler(void) { fault("hard fault\n"); }
void MemManage_Handler(void) { fault("memory management fault\n"); }
void BusFault_Handler(void) { fault("bus fault\n"); }
void UsageFault_Handler(void) { fault("usage fault\n"); }
void Default_Handler(void) { fault("unexpected interrupt\n"); }

/* The Cortex-M4 exceptions; no device interrupt is enabled. */
__attribute__((section(".isr_vector"), used)) void (*const vector_table[16])(void) = {
    (void (*)(void))__stack_top__,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0,
    0,
    0,
    0,
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMonitor */
    0,
    Default_Handler, /* PendSV */
    Default_Handler, /* SysTick */
};
