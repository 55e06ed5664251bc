/* probe_proc.h: the probe's checks of files and processes. Each returns the
 * exit status (0: the probe itself worked, whatever it found).
 *
 *   wopen FILE...    open(O_WRONLY) each (never writes a byte)
 *   ptrace PID...    kill(PID, 0) and ptrace(PTRACE_SEIZE, PID)
 *   pids             the processes this pid namespace shows */
#ifndef TESSERA_PROBE_PROC_H
#define TESSERA_PROBE_PROC_H

int probe_proc_wopen(int argc, char **argv);
int probe_proc_ptrace(int argc, char **argv);
int probe_proc_pids(void);

#endif
