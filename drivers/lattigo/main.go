// Command fhemark-lattigo is the fhemark driver for Lattigo (protocol v2).
//
// It reads one JSON request per line on stdin and writes one JSON reply per
// line on stdout. Logs go to stderr only. See protocol/PROTOCOL.md.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"strconv"
)

const driverVersion = "0.11.0" // 0.11.0: a bootstrap carries the scale ratio Lattigo drops (an input at level 0 off 2^40 read 16 bits, not 25); 0.10.0: preset lattigo_bootstrap_dense (Lattigo's own bootstrapping benchmark's set); 0.9.0: scaling primes that hold the scale, values freed

func main() {
	log.SetOutput(os.Stderr)
	log.SetFlags(0)
	log.SetPrefix("fhemark-lattigo: ")

	if err := checkCapabilities(); err != nil {
		log.Fatal(err)
	}
	applyThreads() // before newDriver and before any request: no Lattigo context exists yet

	d := newDriver()
	if err := d.serve(os.Stdin, os.Stdout); err != nil {
		log.Printf("stopped: %v", err)
		os.Exit(1)
	}
}

// applyThreads sets GOMAXPROCS from FHEMARK_THREADS (default 1), the number of
// OS threads that run Go code at once; capabilities report it as `threads`. It
// runs first in main, before any context, key or evaluator exists. Lattigo's
// evaluators make every call on the calling goroutine (threads_honoured is
// false in capabilities.json; README.md, Timing), so more than 1 only lets
// Go's runtime (the collector's mark workers) run beside them.
func applyThreads() {
	n := 1
	if s := os.Getenv("FHEMARK_THREADS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		} else {
			log.Printf("ignoring FHEMARK_THREADS=%q (not a positive integer), using 1", s)
		}
	}
	runtime.GOMAXPROCS(n)
}

// serve runs the request loop until EOF or a shutdown request.
func (d *driver) serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			reply, stop := d.handleLine(line)
			if _, werr := w.Write(append(reply, '\n')); werr != nil {
				return fmt.Errorf("write reply: %w", werr)
			}
			if werr := w.Flush(); werr != nil {
				return fmt.Errorf("flush reply: %w", werr)
			}
			if stop {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
	}
}
