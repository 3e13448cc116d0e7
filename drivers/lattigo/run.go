package main

import (
	"log"
	"runtime/debug"
	"sort"
	"time"
)

// timeRegion is the one timed code path: a monotonic clock read immediately
// before and after fn.
func timeRegion(fn func() error) (int64, error) {
	t0 := time.Now()
	err := fn()
	return time.Since(t0).Nanoseconds(), err
}

// timeLoop times one loop over fns (iters > 1).
func timeLoop(fns []func() error) (int64, error) {
	t0 := time.Now()
	for _, fn := range fns {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	return time.Since(t0).Nanoseconds(), nil
}

func emptyRegion() error { return nil }

// measureOverhead is the median of 101 empty timed regions.
func measureOverhead() int64 {
	ts := make([]int64, 101)
	for i := range ts {
		ts[i], _ = timeRegion(emptyRegion)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[50]
}

type sampleOut struct {
	NS      map[string]int64      `json:"ns"`
	Outputs map[string]wireVector `json:"outputs"`
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
	outIndex := map[string]int{}
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
		outIndex[st.Out] = i
	}
	timedSet := map[string]bool{}
	for _, name := range prog.Timed {
		if _, ok := outIndex[name]; !ok {
			return nil, newErr(errInternal, "timed %q is not a step's out", name)
		}
		timedSet[name] = true
	}
	iters := req.Iters
	if iters < 1 {
		iters = 1
	}
	if iters > 1 && len(prog.Timed) != 1 {
		return nil, newErr(errInternal, "iters=%d needs exactly one timed step, got %d", iters, len(prog.Timed))
	}

	overhead := measureOverhead()
	notes := map[string]bool{}
	samples := make([]sampleOut, 0, len(req.Samples))
	var last *execState

	for si := range req.Samples {
		smp := &req.Samples[si]
		baseEnv, err := c.inputEnv(smp)
		if err != nil {
			return nil, err
		}
		ns := map[string]int64{}
		var x *execState
		if iters == 1 {
			x = &execState{c: c, env: cloneEnv(baseEnv), scalars: smp.Scalars, notes: notes}
			for i := range prog.Steps {
				st := &prog.Steps[i]
				if err := x.runStep(st, timedSet[st.Out], ns); err != nil {
					return nil, err
				}
			}
		} else {
			ti := outIndex[prog.Timed[0]]
			copies := make([]*execState, iters)
			fns := make([]func() error, iters)
			for k := range copies {
				xk := &execState{c: c, env: cloneEnv(baseEnv), scalars: smp.Scalars, notes: notes}
				for i := 0; i < ti; i++ {
					if err := xk.runStep(&prog.Steps[i], false, nil); err != nil {
						return nil, err
					}
				}
				fn, out, err := xk.prepare(&prog.Steps[ti])
				if err != nil {
					return nil, err
				}
				xk.env[prog.Steps[ti].Out] = out
				copies[k], fns[k] = xk, fn
			}
			t, err := timeLoop(fns)
			if err != nil {
				return nil, stepErr(&prog.Steps[ti], err)
			}
			ns[prog.Steps[ti].Out] = t
			x = copies[iters-1]
			for i := ti + 1; i < len(prog.Steps); i++ {
				st := &prog.Steps[i]
				if err := x.runStep(st, false, nil); err != nil {
					return nil, err
				}
			}
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
		samples = append(samples, sampleOut{NS: ns, Outputs: outs})
		last = x
	}

	res := map[string]any{
		"samples":     samples,
		"overhead_ns": overhead,
	}
	if last != nil {
		if c.isBGVFamily() {
			nb := map[string]any{}
			for _, name := range prog.Noise {
				v, ok := last.env[name]
				if !ok || v.kind != "ct" {
					return nil, newErr(errInternal, "noise %q is not a ciphertext (got %s)", name, describeKeyKind(v))
				}
				b, err := c.noiseBudget(v)
				if err != nil {
					return nil, err
				}
				nb[name] = b
			}
			res["noise_budget_bits"] = nb
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

// runStep prepares and executes one step, timing it when timed.
func (x *execState) runStep(st *step, timed bool, ns map[string]int64) (err error) {
	fn, out, err := x.prepare(st)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			log.Printf("panic in step %q (%s): %v\n%s", st.Out, st.Op, r, debug.Stack())
			err = newErr(errInternal, "step %q (%s): lattigo panic: %v", st.Out, st.Op, r)
		}
	}()
	if timed {
		t, ferr := timeRegion(fn)
		if ferr != nil {
			return stepErr(st, ferr)
		}
		ns[st.Out] = t
	} else if ferr := fn(); ferr != nil {
		return stepErr(st, ferr)
	}
	x.env[st.Out] = out
	return nil
}

func cloneEnv(e map[string]*value) map[string]*value {
	out := make(map[string]*value, len(e))
	for k, v := range e {
		out[k] = v
	}
	return out
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
		if (ints != nil && len(ints) > c.slots) || (floats != nil && len(floats) > c.slots) {
			return nil, newErr(errInternal, "input %q has more than %d slots", name, c.slots)
		}
		v := &value{kind: "vec"}
		if c.isBGVFamily() {
			if ints == nil {
				return nil, newErr(errInternal, "input %q: %s needs dtype i64", name, c.scheme)
			}
			t := int64(c.bgvP.PlaintextModulus())
			v.u = make([]uint64, len(ints))
			for i, a := range ints {
				r := a % t
				if r < 0 {
					r += t
				}
				v.u[i] = uint64(r)
			}
		} else {
			if floats == nil {
				floats = make([]float64, len(ints))
				for i, a := range ints {
					floats[i] = float64(a)
				}
			}
			v.f = floats
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
