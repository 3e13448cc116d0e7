package main

import (
	"fmt"
	"log"
	"maps"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// timeRegion is the one timed code path: a monotonic clock read (Go's
// time.Now carries the monotonic reading and time.Since uses it) immediately
// before the first library call of a region and immediately after the last.
// It returns the elapsed ns, the process's CPU time over the same calls
// (cpu: getrusage(RUSAGE_SELF), user + system over all threads, read right
// before the first clock read and right after the second, so that it covers
// the same calls and its own system calls stay out of ns; PROTOCOL.md's
// `cpu_ns`) and, on failure, the index of the
// call that failed; a panic in a call is returned as a *callPanic.
//
// cpu counts every thread of the process, so Go's own runtime lands in it too:
// the collector (its background mark workers take a quarter of GOMAXPROCS and
// run beside the library call when GOMAXPROCS > 1), sysmon, the scavenger. The
// sample's one forced collection (collect, below) runs before the first clock
// read, outside both clocks, so little of the driver's garbage is collected
// inside a region; what is collected there is the region's own allocation, paid
// in wall and CPU time alike, as in any Go application.
//
// With collect, a full collection runs first, outside the clock: the sample's
// first timed region asks for it, since the driver's untimed work (decoding
// inputs, encrypting them) leaves garbage, and without this a collection of it
// can land inside a random region. Later regions of the same sample (a
// workload's steps) and untimed steps run without one; the regions'
// allocations are timed, and so is their share of collection, as in any Go
// program. A collection before every step (7 a sample for a binary op) cost
// more than the op itself, emptied Lattigo's buffer pools, and left the heap so
// churned that a region's fresh allocations page-faulted: CKKS add at N = 8192
// read 220-260 us in the driver against 55-65 us in a plain Go loop (85 us
// without), and a 256-rotation matrix-vector product took ~90 faults a step.
func timeRegion(calls []func() error, collect bool) (ns, cpu int64, failed int, err error) {
	if collect && len(calls) > 0 {
		runtime.GC()
	}
	i := 0
	defer func() {
		if r := recover(); r != nil {
			ns, cpu, failed, err = 0, 0, i, &callPanic{value: r, stack: debug.Stack()}
		}
	}()
	// The CPU clock is read outside the wall clock (PROTOCOL.md): its system call stays out of ns.
	c0 := processCPU()
	t0 := time.Now()
	for ; i < len(calls); i++ {
		if err = calls[i](); err != nil {
			return 0, 0, i, err
		}
	}
	ns = time.Since(t0).Nanoseconds()
	return ns, processCPU() - c0, -1, nil
}

// callPanic is a panic raised by a library call inside a timed region.
type callPanic struct {
	value any
	stack []byte
}

func (p *callPanic) Error() string { return fmt.Sprintf("lattigo panic: %v", p.value) }

// measureOverhead is the median of 101 empty timed regions (their wall time,
// the same code path as every region's, CPU-time reads outside it).
func measureOverhead() int64 {
	ts := make([]int64, 101)
	for i := range ts {
		ts[i], _, _, _ = timeRegion(nil, false)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[50]
}

type sampleOut struct {
	NS      map[string]int64      `json:"ns"`
	CPU     map[string]int64      `json:"cpu_ns"`
	Outputs map[string]wireVector `json:"outputs"`
}

// regionSpan is a timed region: its name and the range of its steps.
type regionSpan struct {
	name  string
	first int
	n     int
}

// regionSpans returns the regions of program.timed by the index of their
// first step. The orchestrator checked PROTOCOL.md's rules (known, consecutive,
// independent steps, each in one region) before it sent the program; a region
// naming no step is refused.
func regionSpans(prog *program) (map[int]regionSpan, error) {
	outIndex := map[string]int{}
	for i, st := range prog.Steps {
		outIndex[st.Out] = i
	}
	spans := map[int]regionSpan{}
	for _, r := range prog.Timed {
		if len(r.Steps) == 0 {
			return nil, newErr(errInternal, "timed region %q has no steps", r.Name)
		}
		first, ok := outIndex[r.Steps[0]]
		if !ok {
			return nil, newErr(errInternal, "timed region %q: %q is not a step's out", r.Name, r.Steps[0])
		}
		spans[first] = regionSpan{name: r.Name, first: first, n: len(r.Steps)}
	}
	return spans, nil
}

func (d *driver) run(req *request) (any, error) {
	c, ok := d.setups[req.SetupID]
	if !ok {
		return nil, newErr(errInternal, "unknown setup_id %q (send setup first)", req.SetupID)
	}
	prog := req.Program
	if prog == nil || len(prog.Steps) == 0 {
		return nil, newErr(errInternal, "run without program steps")
	}
	// Validate the whole program before running anything.
	for i, st := range prog.Steps {
		def, known := opTable[st.Op]
		if !known || !def.supports(c.scheme) {
			return nil, newErr(errUnsupported, "op %q is not supported by the lattigo driver for %s", st.Op, c.scheme)
		}
		if st.Op == "bootstrap" || st.Op == "bootstrap_into" {
			if c.boot == nil {
				return nil, newErr(errUnsupported, "bootstrap needs a setup with params {\"preset\": %q}", bootstrapPreset)
			}
		}
		if st.Out == "" {
			return nil, newErr(errInternal, "step %d (%s) has no out name", i, st.Op)
		}
		if def.args != nil && len(st.Args) != len(def.args) {
			return nil, newErr(errInternal, "step %q (%s): %d args, want %d", st.Out, st.Op, len(st.Args), len(def.args))
		}
	}
	spans, err := regionSpans(prog)
	if err != nil {
		return nil, err
	}

	overhead := measureOverhead()
	notes := map[string]bool{}
	samples := make([]sampleOut, 0, len(req.Samples))
	var last *execState

	shared := map[string]*value{} // the pool's values (and inputs), read by every sample
	if req.Pool != nil {
		if shared, err = c.poolValues(req.Pool, notes); err != nil {
			return nil, err
		}
	}
	dies := deadAfter(prog, req.Samples)
	for si := range req.Samples {
		smp := &req.Samples[si]
		if last != nil {
			last.env = nil // the last sample's values freed before this one's are made
		}
		env, err := c.inputEnv(smp)
		if err != nil {
			return nil, err
		}
		maps.Copy(env, shared)
		x := &execState{c: c, env: env, scalars: smp.Scalars, notes: notes}
		ns, cpu := map[string]int64{}, map[string]int64{}
		collected := false // once a sample, before its first region or warm-up (not between: cold again)
		for i := 0; i < len(prog.Steps); {
			sp, timed := spans[i]
			if !timed {
				sp = regionSpan{first: i, n: 1}
			}
			due := timed || prog.Steps[i].Discard
			t, tc, err := x.runSteps(prog.Steps[sp.first:sp.first+sp.n], due && !collected)
			collected = collected || due
			if err != nil {
				return nil, err
			}
			if timed {
				ns[sp.name], cpu[sp.name] = t, tc
			}
			for j := sp.first; j < sp.first+sp.n; j++ {
				for _, name := range dies[j] {
					delete(x.env, name)
				}
			}
			i += sp.n
		}
		outs := map[string]wireVector{}
		for _, name := range prog.Outputs {
			v, ok := x.env[name]
			if !ok || v.kind != "vec" {
				return nil, newErr(errInternal, "output %q is not a decoded vector (got %s)", name, describeKeyKind(v))
			}
			if v.u != nil {
				outs[name] = encodeU64AsI64(v.u)
			} else {
				outs[name] = encodeF64(v.f)
			}
		}
		samples = append(samples, sampleOut{NS: ns, CPU: cpu, Outputs: outs})
		last = x
	}

	res := map[string]any{
		"samples":     samples,
		"overhead_ns": overhead,
	}
	if last != nil {
		if c.isBGVFamily() {
			raw := map[string]any{}
			for _, name := range prog.Noise {
				v, ok := last.env[name]
				if !ok || v.kind != "ct" {
					return nil, newErr(errInternal, "noise %q is not a ciphertext (got %s)", name, describeKeyKind(v))
				}
				raw[name] = c.rawDecryption(v)
			}
			res["raw_decryptions"] = raw
		}
		sizes := map[string]any{}
		for _, name := range prog.Sizes {
			v, ok := last.env[name]
			if !ok {
				return nil, newErr(errInternal, "sizes %q is not a value", name)
			}
			sizes[name] = v.binarySize()
		}
		res["sizes_bytes"] = sizes
		levels := map[string]any{}
		for _, name := range prog.Levels {
			v, ok := last.env[name]
			if !ok {
				return nil, newErr(errInternal, "levels %q is not a value", name)
			}
			switch v.kind {
			case "ct":
				levels[name] = v.ct.Level()
			case "pt":
				levels[name] = v.pt.Level()
			default:
				return nil, newErr(errInternal, "levels %q is a %s, not a ciphertext or plaintext", name, v.kind)
			}
		}
		res["levels"] = levels
	}
	if len(notes) > 0 {
		ns := make([]string, 0, len(notes))
		for n := range notes {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		res["notes"] = ns
	}
	return res, nil
}

func stepErr(st *step, err error) error {
	if de, ok := err.(*driverError); ok {
		return de
	}
	return newErr(errInternal, "step %q (%s): lattigo: %v", st.Out, st.Op, err)
}

// prepare resolves a step's args and builds its closure (outside any timed region).
func (x *execState) prepare(st *step) (fn func() error, out *value, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Printf("panic in step %q (%s): %v\n%s", st.Out, st.Op, r, debug.Stack())
			err = newErr(errInternal, "step %q (%s): lattigo panic: %v", st.Out, st.Op, r)
		}
	}()
	def := opTable[st.Op]
	args := make([]*value, len(st.Args))
	for i, name := range st.Args {
		if picked, ok := x.scalars[strings.TrimPrefix(name, "$")].(string); strings.HasPrefix(name, "$") && ok {
			name = picked // a value picked per sample (a pool's ciphertext)
		}
		v, ok := x.env[name]
		if !ok {
			return nil, nil, newErr(errInternal, "step %q (%s): unknown arg %q", st.Out, st.Op, name)
		}
		if def.args != nil && v.kind != def.args[i] {
			return nil, nil, newErr(errInternal, "step %q (%s): arg %q is a %s, want %s", st.Out, st.Op, name, describeKeyKind(v), def.args[i])
		}
		args[i] = v
	}
	into := len(st.Op) > 5 && st.Op[len(st.Op)-5:] == "_into"
	out = &value{}
	fn, err = def.fn(x, st, args, out, into)
	if err != nil {
		return nil, nil, err
	}
	return fn, out, nil
}

// runSteps runs consecutive independent steps (one timed region, or one
// untimed step): it prepares every step first, then makes their library calls
// inside one timeRegion, then stores the results. It returns the region's ns
// and cpu ns.
func (x *execState) runSteps(steps []step, collect bool) (ns, cpu int64, err error) {
	x.post = nil
	calls := make([]func() error, len(steps))
	outs := make([]*value, len(steps))
	for k := range steps {
		if calls[k], outs[k], err = x.prepare(&steps[k]); err != nil {
			return 0, 0, err
		}
	}
	ns, cpu, failed, err := timeRegion(calls, collect)
	if err != nil {
		st := &steps[failed]
		if p, ok := err.(*callPanic); ok {
			log.Printf("panic in step %q (%s): %v\n%s", st.Out, st.Op, p.value, p.stack)
			return 0, 0, newErr(errInternal, "step %q (%s): %v", st.Out, st.Op, p)
		}
		return 0, 0, stepErr(st, err)
	}
	for k := range steps {
		if !steps[k].Discard {
			x.env[steps[k].Out] = outs[k]
		}
	}
	for _, f := range x.post {
		f()
	}
	x.post = nil
	return ns, cpu, nil
}

// inputEnv decodes a sample's inputs and adds the standard keys.
func (c *fheContext) inputEnv(smp *sampleIn) (map[string]*value, error) {
	env := map[string]*value{}
	for name, k := range c.std {
		env[name] = &value{kind: "key", key: k}
	}
	for name, wv := range smp.Inputs {
		ints, floats, err := decodeVector(wv)
		if err != nil {
			return nil, newErr(errInternal, "input %q: %v", name, err)
		}
		// PROTOCOL.md: the slot count, BFV/BGV values in [0, t) (the wire's i64 read as u64)
		if len(ints)+len(floats) != c.slots || (ints == nil) == c.isBGVFamily() {
			return nil, newErr(errInternal, "input %q: want %d values of dtype %s", name, c.slots, map[bool]string{true: "i64", false: "f64"}[c.isBGVFamily()])
		}
		v := &value{kind: "vec", f: floats}
		for _, a := range ints {
			v.u = append(v.u, uint64(a))
		}
		env[name] = v
	}
	return env, nil
}

func (v *value) binarySize() int {
	switch v.kind {
	case "ct":
		return v.ct.BinarySize()
	case "pt":
		return v.pt.BinarySize()
	case "key":
		return v.key.binarySize()
	case "vec":
		return 8 * (len(v.u) + len(v.f))
	}
	return 0
}

// poolValues: what a request's pool makes, or what was kept under its id.
func (c *fheContext) poolValues(p *pool, notes map[string]bool) (map[string]*value, error) {
	if len(p.Steps) == 0 {
		kept, ok := c.pools[p.ID]
		if !ok {
			return nil, newErr(errInternal, "no kept pool %q in this setup: send it with its inputs and steps", p.ID)
		}
		return kept, nil
	}
	made, err := c.inputEnv(&sampleIn{Inputs: p.Inputs})
	if err != nil {
		return nil, err
	}
	x := &execState{c: c, env: made, notes: notes}
	for i := range p.Steps {
		if _, _, err := x.runSteps(p.Steps[i:i+1], false); err != nil {
			return nil, err
		}
	}
	if p.ID != "" {
		if c.pools == nil {
			c.pools = map[string]map[string]*value{}
		}
		c.pools[p.ID] = made
	}
	return made, nil
}
