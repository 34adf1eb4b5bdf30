/*
 * Arm semihosting for the Cortex-M4F port: the few calls a test firmware
 * needs to talk to its debugger or emulator (QEMU with
 * -semihosting-config enable=on): write text to the host's console and end
 * the run with an exit status. No heap, no stdio, no newlib syscalls.
 * On a board without a debugger attached a semihosting call is a fault:
 * use these only in tests.
 */
#ifndef EDGEATTN_PORT_SEMIHOSTING_H
#define EDGEATTN_PORT_SEMIHOSTING_H

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a NUL-terminated string to the host console (SYS_WRITE0). */
void semihosting_write(const char *text);

/* Ends the program; the host (QEMU) exits with `status` (SYS_EXIT_EXTENDED,
 * reason ADP_Stopped_ApplicationExit). Does not return. */
void semihosting_exit(int status) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif
