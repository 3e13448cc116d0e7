package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/schemes/bgv"
	"github.com/tuneinsight/lattigo/v6/schemes/ckks"
)

const (
	latticeLogNMin = rlwe.MinLogN // Lattigo's own bounds (core/rlwe/params.go)
	latticeLogNMax = rlwe.MaxLogN
	maxQPrimeBits  = rlwe.MaxModuliSize     // 60: Lattigo's largest Q prime
	maxPPrimeBits  = rlwe.MaxModuliSize + 1 // 61: Lattigo's largest P prime
	defaultSigma   = rlwe.DefaultNoise      // 3.2
)

type driver struct {
	setups map[string]*fheContext
}

func newDriver() *driver {
	return &driver{setups: map[string]*fheContext{}}
}

// evaluators bundles the scheme evaluators bound to one evaluation-key set.
type evaluators struct {
	keys rlwe.EvaluationKeySet
	bgv  *bgv.Evaluator // BFV: scale-invariant (BFV-style) tensoring; BGV: standard
	resc *bgv.Evaluator // BFV/BGV: non-scale-invariant evaluator used for Rescale (mod_switch)
	ckks *ckks.Evaluator
}

// keyVal is a key value: a setup's standard key or the result of a keygen_* step.
type keyVal struct {
	kind  string // "sk", "pk", "rlk", "gk", "evk"
	sk    *rlwe.SecretKey
	pk    *rlwe.PublicKey
	rlk   *rlwe.RelinearizationKey
	gks   []*rlwe.GaloisKey
	evk   *rlwe.EvaluationKey
	owner *keyVal // pk: its secret key; evk: the secret key it switches to

	// caches, filled outside timed regions
	enc *rlwe.Encryptor
	dec *rlwe.Decryptor
	ev  *evaluators
}

func (k *keyVal) binarySize() int {
	switch k.kind {
	case "sk":
		return k.sk.BinarySize()
	case "pk":
		return k.pk.BinarySize()
	case "rlk":
		return k.rlk.BinarySize()
	case "gk":
		n := 0
		for _, g := range k.gks {
			n += g.BinarySize()
		}
		return n
	case "evk":
		return k.evk.BinarySize()
	}
	return 0
}

// fheContext is one setup: parameters, encoder, evaluators and standard keys.
type fheContext struct {
	scheme   string // "bfv", "bgv", "ckks"
	params   rlwe.Parameters
	bgvP     bgv.Parameters
	ckksP    ckks.Parameters
	slots    int
	rowLen   int // columns of the batching matrix (BFV/BGV), slots (CKKS)
	logSlots int // CKKS, a sparse bootstrapping preset: log2 of the slots every value packs (0: N/2)
	insecure bool

	kgen   *rlwe.KeyGenerator
	bgvEnc *bgv.Encoder
	ckEnc  *ckks.Encoder
	std    map[string]*keyVal // "sk", "pk", "rlk", "gk"
	ev     *evaluators        // bound to the standard rlk + gk

	boot *bootContext // CKKS bootstrapping, only for bootstrap presets

	rt *routineState // library routines' evaluators and keys (routines.go), made on first use

	pools map[string]map[string]*value // pools a request asked to keep, by id (PROTOCOL.md "Pool")
}

func (c *fheContext) isBGVFamily() bool { return c.scheme == "bfv" || c.scheme == "bgv" }

func (c *fheContext) newEvaluators(keys rlwe.EvaluationKeySet) *evaluators {
	// Fresh evaluators rather than WithKey: Lattigo v6.2.0's bgv WithKey does
	// not copy the QMul buffer pool nor the ScaleInvariant flag (BFV mul panics).
	if c.isBGVFamily() {
		return &evaluators{
			keys: keys,
			bgv:  bgv.NewEvaluator(c.bgvP, keys, c.scheme == "bfv"),
			resc: bgv.NewEvaluator(c.bgvP, keys, false),
		}
	}
	return &evaluators{keys: keys, ckks: ckks.NewEvaluator(c.ckksP, keys)}
}

func (c *fheContext) newPlaintext(level int) *rlwe.Plaintext {
	if c.isBGVFamily() {
		return bgv.NewPlaintext(c.bgvP, level)
	}
	pt := ckks.NewPlaintext(c.ckksP, level)
	if c.logSlots > 0 {
		pt.LogDimensions = ring.Dimensions{Rows: 0, Cols: c.logSlots} // sparse: what the bootstrapping expects
	}
	return pt
}

func (c *fheContext) newCiphertext(degree, level int) *rlwe.Ciphertext {
	if c.isBGVFamily() {
		return bgv.NewCiphertext(c.bgvP, degree, level)
	}
	return ckks.NewCiphertext(c.ckksP, degree, level)
}

// resident writes every coefficient of an `_into` op's output once, outside the clock.
// Go hands out fresh pages from the OS untouched (known to be zero, so not cleared), and
// the op's first write took their page faults inside the timed region: Lattigo BGV
// add_into at N = 8192 read 210-370 us on the samples that faulted against 30-50 us on
// the others, and its median landed on the faulting ones (2026-11-24). An application
// that writes into a preallocated output has long since touched it.
func resident(polys ...ring.Poly) {
	for _, p := range polys {
		p.Zero() // writes every word (ring.ZeroVec), which is what faults the pages in
	}
}

// timedOutput is the timed closure of an operation with a ciphertext output. The `_into`
// ops write into a ciphertext allocated here, outside the timed region; the base ops
// allocate inside it, as SEAL's and OpenFHE's bindings do: through Lattigo's own *New
// form (alloc), or, where Lattigo has none (alloc nil), by allocating before write.
func (c *fheContext) timedOutput(out *value, into bool, degree, level int,
	write func(o *rlwe.Ciphertext) error, alloc func() (*rlwe.Ciphertext, error)) func() error {
	if into {
		o := c.newCiphertext(degree, level)
		resident(o.Value...)
		out.ct = o
		return func() error { return write(o) }
	}
	if alloc == nil {
		return func() error {
			o := c.newCiphertext(degree, level)
			out.ct = o
			return write(o)
		}
	}
	return func() (err error) {
		out.ct, err = alloc()
		return err
	}
}

// genPrimes returns NTT-friendly primes (p = 1 mod 2N) with exactly the bit
// lengths asked, generated downward from 2^b with Lattigo's own generator, so
// that a b-bit request gives a prime in [2^(b-1), 2^b) as SEAL does. (Lattigo's
// LogQ/LogP fields alternate around 2^b and may give b+1-bit primes.)
func genPrimes(logN int, qBits, pBits []int) (q, p []uint64, err error) {
	count := map[int]int{}
	for _, b := range qBits {
		if b < 2 || b > maxQPrimeBits {
			return nil, nil, newErr(errInvalidParams, "q prime of %d bits: Lattigo accepts Q primes of at most %d bits", b, maxQPrimeBits)
		}
		count[b]++
	}
	for _, b := range pBits {
		if b < 2 || b > maxPPrimeBits {
			return nil, nil, newErr(errInvalidParams, "p prime of %d bits: Lattigo accepts P primes of at most %d bits", b, maxPPrimeBits)
		}
		count[b]++
	}
	pool := map[int][]uint64{}
	nthRoot := uint64(2) << uint(logN)
	for b, n := range count {
		g := ring.NewNTTFriendlyPrimesGenerator(uint64(b), nthRoot)
		ps, gerr := g.NextDownstreamPrimes(n)
		if gerr != nil {
			return nil, nil, newErr(errInvalidParams, "cannot find %d primes of %d bits that are 1 mod 2N=%d: %v", n, b, nthRoot, gerr)
		}
		for _, x := range ps {
			if bits.Len64(x) != b {
				return nil, nil, newErr(errInvalidParams, "cannot find %d primes of exactly %d bits that are 1 mod 2N=%d", n, b, nthRoot)
			}
		}
		pool[b] = ps
	}
	for _, b := range qBits {
		q = append(q, pool[b][0])
		pool[b] = pool[b][1:]
	}
	for _, b := range pBits {
		p = append(p, pool[b][0])
		pool[b] = pool[b][1:]
	}
	return q, p, nil
}

// classifyLattigoErr maps a Lattigo parameter error to a protocol error kind.
func classifyLattigoErr(err error) *driverError {
	msg := err.Error()
	if strings.Contains(strings.ToLower(msg), "insecure") {
		return newErr(errInsecure, "lattigo: %s", msg)
	}
	return newErr(errInvalidParams, "lattigo: %s", msg)
}

func (d *driver) setup(req *request) (any, error) {
	if req.SetupID == "" {
		return nil, newErr(errInternal, "setup without setup_id")
	}
	if req.Params == nil {
		return nil, newErr(errInternal, "setup without params")
	}
	scheme := strings.ToLower(req.Scheme)
	switch scheme {
	case "bfv", "bgv", "ckks":
	default:
		return nil, newErr(errUnsupported, "scheme %q is not offered by Lattigo through this driver (bfv, bgv, ckks)", req.Scheme)
	}
	// Replacing a setup frees the old one.
	delete(d.setups, req.SetupID)

	var c *fheContext
	var err error
	if req.Params.Preset != "" {
		c, err = newBootstrapContext(req)
	} else {
		c, err = newContext(scheme, req)
	}
	if err != nil {
		return nil, err
	}
	d.setups[req.SetupID] = c
	return c.setupResult(), nil
}

func newContext(scheme string, req *request) (*fheContext, error) {
	sp := req.Params
	if sp.N <= 0 || sp.N&(sp.N-1) != 0 {
		return nil, newErr(errInvalidParams, "N=%d is not a power of two", sp.N)
	}
	logN := bits.Len(uint(sp.N)) - 1
	if logN < latticeLogNMin || logN > latticeLogNMax {
		return nil, newErr(errInvalidParams, "N=2^%d outside Lattigo's range 2^%d..2^%d", logN, latticeLogNMin, latticeLogNMax)
	}
	if len(sp.QBits) == 0 {
		return nil, newErr(errInvalidParams, "empty q_bits")
	}
	xs := rlwe.DefaultXs // ring.Ternary{P: 2/3}: uniform over {-1, 0, 1}
	switch {
	case sp.Secret == "sparse_ternary" && sp.Hamming >= 1 && sp.Hamming <= sp.N:
		xs = ring.Ternary{H: sp.Hamming} // exactly H nonzero entries of +-1
	case sp.Secret != "" && sp.Secret != "ternary":
		return nil, newErr(errInvalidParams, "secret %q (hamming_weight %d): this driver builds ternary, or sparse_ternary "+
			"with 1 <= hamming_weight <= N", sp.Secret, sp.Hamming)
	}
	sigma := defaultSigma
	if sp.Sigma != nil {
		sigma = *sp.Sigma
		if !(sigma > 0) {
			return nil, newErr(errInvalidParams, "sigma=%v must be positive", sigma)
		}
	}
	q, p, err := genPrimes(logN, sp.QBits, sp.PBits)
	if err != nil {
		return nil, err
	}
	var xe ring.DistributionParameters = rlwe.DefaultXe
	if sigma != defaultSigma {
		xe = ring.DiscreteGaussian{Sigma: sigma, Bound: 6 * sigma}
	}

	c := &fheContext{scheme: scheme, insecure: req.AllowInsecure}
	switch scheme {
	case "bfv", "bgv":
		if sp.T == nil {
			return nil, newErr(errInvalidParams, "%s needs a plaintext modulus t", scheme)
		}
		t, perr := strconv.ParseUint(sp.T.String(), 10, 64)
		if perr != nil || t < 2 {
			return nil, newErr(errInvalidParams, "bad plaintext modulus t=%s", sp.T.String())
		}
		if t%(2*uint64(sp.N)) != 1 {
			return nil, newErr(errInvalidParams, "t=%d is not 1 mod 2N=%d: Lattigo would batch fewer than N slots", t, 2*sp.N)
		}
		pl := bgv.ParametersLiteral{LogN: logN, Q: q, P: p, Xs: xs, Xe: xe, PlaintextModulus: t}
		bp, perr2 := bgv.NewParametersFromLiteral(pl)
		if perr2 != nil {
			return nil, classifyLattigoErr(perr2)
		}
		c.bgvP = bp
		c.params = bp.Parameters
		c.slots = bp.MaxSlots()
		c.rowLen = bp.MaxDimensions().Cols
		c.bgvEnc = bgv.NewEncoder(bp)
	case "ckks":
		if sp.ScaleBits == nil {
			return nil, newErr(errInvalidParams, "ckks needs scale_bits")
		}
		q = stableScalingPrimes(logN, *sp.ScaleBits, sp.QBits, q, p)
		pl := ckks.ParametersLiteral{LogN: logN, Q: q, P: p, Xs: xs, Xe: xe,
			RingType: ring.Standard, LogDefaultScale: *sp.ScaleBits}
		cp, perr := ckks.NewParametersFromLiteral(pl)
		if perr != nil {
			return nil, classifyLattigoErr(perr)
		}
		c.ckksP = cp
		c.params = cp.Parameters
		c.slots = cp.MaxSlots()
		c.rowLen = c.slots
		c.ckEnc = ckks.NewEncoder(cp)
	}
	if err := c.makeStandardKeys(req.Rotations); err != nil {
		return nil, err
	}
	return c, nil
}

// makeStandardKeys builds sk, pk, rlk and the Galois keys of a setup.
func (c *fheContext) makeStandardKeys(rotations []int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newErr(errInvalidParams, "lattigo key generation failed: %v", r)
		}
	}()
	c.kgen = rlwe.NewKeyGenerator(c.params)
	sk, pk := c.kgen.GenKeyPairNew()
	skv := &keyVal{kind: "sk", sk: sk}
	pkv := &keyVal{kind: "pk", pk: pk, owner: skv}
	rlk := c.kgen.GenRelinearizationKeyNew(sk)
	galEls := c.galoisElements(rotations)
	gks := c.kgen.GenGaloisKeysNew(galEls, sk)
	c.std = map[string]*keyVal{
		"sk":  skv,
		"pk":  pkv,
		"rlk": {kind: "rlk", rlk: rlk, owner: skv},
		"gk":  {kind: "gk", gks: gks, owner: skv},
	}
	c.ev = c.newEvaluators(rlwe.NewMemEvaluationKeySet(rlk, gks...))
	c.std["rlk"].ev = c.ev
	c.std["gk"].ev = c.ev
	return nil
}

// galoisElements lists the Galois elements of the rotation steps asked
// (normalized mod the row length). Step 0 stands for the row swap /
// conjugation (PROTOCOL.md, as SEAL's galois_elt_from_step(0) does).
func (c *fheContext) galoisElements(steps []int) []uint64 {
	set := map[uint64]bool{}
	n := c.rowLen
	for _, s := range steps {
		r := ((s % n) + n) % n
		if r == 0 {
			set[c.params.GaloisElementOrderTwoOrthogonalSubgroup()] = true
			continue
		}
		set[c.params.GaloisElement(r)] = true
	}
	out := make([]uint64, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func primeBits(ps []uint64) []int {
	out := make([]int, len(ps))
	for i, x := range ps {
		out[i] = bits.Len64(x)
	}
	return out
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// effective reports the primes; fhemark derives their bit lengths, log Q, log QP,
// the levels (len(Q) - 1) and dnum (ceil(len(Q) / len(P)), Lattigo's gadget).
func (c *fheContext) effective() map[string]any {
	eff := map[string]any{
		"N":        c.params.N(),
		"q_primes": c.params.Q(),
		"p_primes": append([]uint64{}, c.params.P()...), // [] without P, not null
		"slots":    c.slots,
		"secret":   "ternary",
		"sigma":    c.params.Xe().(ring.DiscreteGaussian).Sigma,
	}
	if xs, ok := c.params.Xs().(ring.Ternary); ok && xs.H > 0 && c.boot == nil {
		eff["secret"], eff["hamming_weight"] = "sparse_ternary", xs.H
	}
	if c.isBGVFamily() {
		eff["t"] = c.bgvP.PlaintextModulus()
		eff["scale_bits"] = nil
	} else {
		eff["t"] = nil
		eff["scale_bits"] = c.ckksP.LogDefaultScale()
	}
	return eff
}

func (c *fheContext) setupResult() map[string]any {
	pt := c.newPlaintext(c.params.MaxLevel())
	if c.isBGVFamily() {
		_ = c.bgvEnc.Encode(make([]uint64, c.slots), pt)
	} else {
		_ = c.ckEnc.Encode(make([]float64, c.slots), pt)
	}
	ctSize := 0
	if ct, err := rlwe.NewEncryptor(c.params, c.std["pk"].pk).EncryptNew(pt); err == nil {
		ctSize = ct.BinarySize()
	}
	sizes := map[string]any{
		"public_key":       c.std["pk"].binarySize(),
		"secret_key":       c.std["sk"].binarySize(),
		"relin_keys":       c.std["rlk"].binarySize(),
		"galois_keys":      c.std["gk"].binarySize(),
		"galois_key_count": len(c.std["gk"].gks),
		"plaintext":        pt.BinarySize(),
		"ciphertext":       ctSize,
	}
	res := map[string]any{"effective": c.effective(), "sizes_bytes": sizes}
	if c.boot != nil {
		eff := res["effective"].(map[string]any)
		eff["bootstrap"] = c.boot.facts
		sizes["bootstrapping_key"] = c.boot.keys.BinarySize() // its evaluation keys, counted with the others
		// The secret as drawn (the preset's sparse ternary one) and the largest modulus any key uses (the
		// bootstrapping keys live at the bootstrapping parameters' QP, above the residual Q·P): the set's
		// security is judged there (fhemark's security_of), not at the residual modulus.
		bp := c.boot.params
		eff["secret"] = "sparse_ternary"
		eff["hamming_weight"] = bp.XsHammingWeight()
		eff["key_log_qp"] = round3(bp.LogQP())
	}
	return res
}

// ---- capabilities ----

func opsFor(scheme string) []string {
	var out []string
	for _, name := range sortedOpNames() {
		if opTable[name].supports(scheme) {
			out = append(out, name)
		}
	}
	return out
}

func libraryVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/tuneinsight/lattigo/v6" {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "v6.2.0"
}

//go:embed capabilities.json
var capabilitiesJSON []byte

// staticCaps is capabilities.json, the driver's static facts (PROTOCOL.md
// "capabilities"): per scheme the deviations from the canonical boundaries (an
// `_into` form deviates as its base op), and build notes.
var staticCaps = func() (caps map[string]any) {
	if err := json.Unmarshal(capabilitiesJSON, &caps); err != nil {
		panic("capabilities.json: " + err.Error())
	}
	return caps
}()

// checkCapabilities refuses, at start-up, a capabilities.json that lacks a
// scheme of the op table, or names a scheme, or a deviation for an op, that
// the op table lacks.
func checkCapabilities() error {
	schemes := staticCaps["schemes"].(map[string]any)
	for _, scheme := range strings.Fields(all) {
		if schemes[scheme] == nil {
			return fmt.Errorf("capabilities.json: no scheme %s", scheme)
		}
	}
	for scheme, facts := range schemes {
		ops := opsFor(scheme)
		if len(ops) == 0 {
			return fmt.Errorf("capabilities.json: scheme %s, which the op table lacks", scheme)
		}
		dev, _ := facts.(map[string]any)["deviations"].(map[string]any)
		for op := range dev {
			if !slices.Contains(ops, op) {
				return fmt.Errorf("capabilities.json: %s deviation for %s, an op the op table lacks", scheme, op)
			}
		}
	}
	return nil
}

// buildFacts is capabilities.json's build notes with the computed ones.
func buildFacts() map[string]any {
	facts := maps.Clone(staticCaps["build"].(map[string]any))
	facts["go_version"], facts["goos"], facts["goarch"] = runtime.Version(), runtime.GOOS, runtime.GOARCH
	facts["gomaxprocs"] = runtime.GOMAXPROCS(0)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOAMD64", "GOARM64", "CGO_ENABLED", "-compiler", "-trimpath":
				facts[strings.TrimPrefix(s.Key, "-")] = s.Value
			}
		}
	}
	return facts
}

// capabilities is capabilities.json with the computed facts added.
func (d *driver) capabilities() map[string]any {
	limits := map[string]any{
		"log_n_min": latticeLogNMin, "log_n_max": latticeLogNMax,
		"max_prime_bits": maxQPrimeBits, "max_p_prime_bits": maxPPrimeBits,
		"sparse_secret": "any", // ring.Ternary{H: h}: any hamming_weight from 1 to N
	}
	schemes := map[string]any{}
	for name, facts := range staticCaps["schemes"].(map[string]any) {
		sc := maps.Clone(facts.(map[string]any))
		sc["ops"], sc["limits"] = opsFor(name), limits
		schemes[name] = sc
	}
	schemes["ckks"].(map[string]any)["presets"] = map[string]any{bootstrapPreset: bootstrapPresetDoc, sparsePreset: sparsePresetDoc,
		densePreset: densePresetDoc}
	caps := maps.Clone(staticCaps)
	maps.Copy(caps, map[string]any{"protocol": protocolVersion, "library_version": libraryVersion(),
		"driver_version": driverVersion, "build": buildFacts(), "threads": runtime.GOMAXPROCS(0), "schemes": schemes})
	return caps
}

func describeKeyKind(v *value) string {
	if v == nil {
		return "nothing"
	}
	if v.kind == "key" {
		return "key " + v.key.kind
	}
	return v.kind
}
