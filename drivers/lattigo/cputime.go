package main

import "syscall"

// processCPU is the driver process's CPU time in ns: user + system, summed over
// all its threads (the library's, the Go runtime's and the collector's), as the
// OS counts it (getrusage(RUSAGE_SELF); Linux derives it from the scheduler's ns
// runtime and reports it in us). PROTOCOL.md's `cpu_ns`.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0 // never on Linux/macOS with a valid pointer; a 0 delta then reads as "no CPU"
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
