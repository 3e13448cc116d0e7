package main

import (
	"fmt"
	"math/bits"

	"github.com/tuneinsight/lattigo/v6/circuits/ckks/bootstrapping"
	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/schemes/ckks"
	"github.com/tuneinsight/lattigo/v6/utils"
)

// bootstrapPreset selects Lattigo's first default bootstrapping parameter set,
// bootstrapping.N16QP1546H192H32 (residual Q 60+9*40 bits, P 5*61 bits,
// secret H=192, ephemeral H=32, scale 2^40, 2^15 slots). A smaller "N" in
// the setup params gives the same circuit on a smaller ring, as Lattigo's own
// example does with -short (message ratio raised by 16-logN): insecure, only
// with allow_insecure, for tests.
//
// sparsePreset is the same set bootstrapping a sparsely packed ciphertext of
// `sparse_slots` values (a power of two up to sparseMaxSlots; default 16), as
// bootstrapping.ParametersLiteral.LogSlots allows: its linear transforms need
// far fewer rotation keys, so the keys and the peak shrink (measured, see
// capabilities.json) and a bootstrap takes less time, with the same 9 levels.
//
// densePreset is Lattigo's first dense set, bootstrapping.N16QP1767H32768H32
// (DefaultParametersDense[0]: residual Q 60+13*40 bits, secret H=N/2, 2^15
// slots), the set of Lattigo's own BenchmarkConcurrentBootstrap: what
// benchmarks/fidelity_bootstrap.py times both ways. Heavier than the default
// (log QP 1767): no search declares it.
const (
	bootstrapPreset    = "lattigo_bootstrap_default"
	bootstrapPresetDoc = "Lattigo bootstrapping.N16QP1546H192H32 (N=2^16, 2^15 slots, scale 2^40, residual levels 9); a setup param N < 65536 runs the same circuit on a smaller, insecure ring (needs allow_insecure)"
	sparsePreset       = "lattigo_bootstrap_sparse"
	sparsePresetDoc    = "the same with LogSlots = log2(sparse_slots), a power of two up to 64 (default 16): fewer keys, faster bootstraps"
	densePreset        = "lattigo_bootstrap_dense"
	densePresetDoc     = "Lattigo bootstrapping.N16QP1767H32768H32 (DefaultParametersDense[0]: N=2^16, 2^15 slots, secret H=N/2, residual levels 13), the set of Lattigo's own BenchmarkConcurrentBootstrap"
	sparseDefault      = 16
	sparseMaxSlots     = 64
)

// bootSet is one of Lattigo's default bootstrapping sets, under the name its preset reports.
type bootSet struct {
	name   string
	scheme ckks.ParametersLiteral
	boot   bootstrapping.ParametersLiteral
}

var bootSets = map[string]bootSet{
	bootstrapPreset: {"bootstrapping.N16QP1546H192H32", bootstrapping.N16QP1546H192H32.SchemeParams, bootstrapping.N16QP1546H192H32.BootstrappingParams},
	sparsePreset:    {"bootstrapping.N16QP1546H192H32", bootstrapping.N16QP1546H192H32.SchemeParams, bootstrapping.N16QP1546H192H32.BootstrappingParams},
	densePreset:     {"bootstrapping.N16QP1767H32768H32", bootstrapping.N16QP1767H32768H32.SchemeParams, bootstrapping.N16QP1767H32768H32.BootstrappingParams},
}

type bootContext struct {
	params ckks.Parameters // the bootstrapping keys' parameters (their ring, modulus and secret)
	eval   *bootstrapping.Evaluator
	keys   *bootstrapping.EvaluationKeys
	facts  map[string]any
}

func newBootstrapContext(req *request) (c *fheContext, err error) {
	sp := req.Params
	if req.Scheme != "ckks" {
		return nil, newErr(errUnsupported, "preset %q is a ckks preset", sp.Preset)
	}
	def, known := bootSets[sp.Preset]
	if !known {
		return nil, newErr(errInvalidParams, "unknown preset %q (known: %s, %s, %s)", sp.Preset, bootstrapPreset, sparsePreset, densePreset)
	}
	logSlots := 0
	if sp.Preset == sparsePreset {
		n := sp.Sparse
		if n == 0 {
			n = sparseDefault
		}
		if n < 1 || n&(n-1) != 0 || n > sparseMaxSlots {
			return nil, newErr(errInvalidParams, "preset %s packs a power of two of at most %d slots, not %d", sparsePreset, sparseMaxSlots, n)
		}
		logSlots = bits.Len(uint(n)) - 1
	}
	logN := def.scheme.LogN
	if sp.N != 0 {
		if sp.N < 0 || sp.N&(sp.N-1) != 0 {
			return nil, newErr(errInvalidParams, "N=%d is not a power of two", sp.N)
		}
		logN = bits.Len(uint(sp.N)) - 1
	}
	insecure := logN < def.scheme.LogN
	if insecure && !req.AllowInsecure {
		return nil, newErr(errInsecure, "preset %s with N=2^%d < 2^%d is insecure (set allow_insecure for tests)", sp.Preset, logN, def.scheme.LogN)
	}
	if logN > def.scheme.LogN || logN < 10 {
		return nil, newErr(errInvalidParams, "preset %s supports N from 2^10 to 2^%d", sp.Preset, def.scheme.LogN)
	}
	defer func() {
		if r := recover(); r != nil {
			err = newErr(errInvalidParams, "lattigo bootstrapping setup failed: %v", r)
		}
	}()

	lit := def.scheme
	lit.LogN = logN
	if t, ok := lit.Xs.(ring.Ternary); ok && 2*t.H >= 1<<def.scheme.LogN && logN < def.scheme.LogN {
		lit.Xs = ring.Ternary{H: t.H >> (def.scheme.LogN - logN)} // a dense secret (H = N/2) stays dense on a smaller ring
	}
	params, perr := ckks.NewParametersFromLiteral(lit)
	if perr != nil {
		return nil, classifyLattigoErr(perr)
	}
	btpLit := def.boot
	btpLit.LogN = utils.Pointy(logN)
	if logSlots > 0 {
		btpLit.LogSlots = utils.Pointy(logSlots)
	}
	btpParams, perr := bootstrapping.NewParametersFromLiteral(params, btpLit)
	if perr != nil {
		return nil, classifyLattigoErr(perr)
	}
	if insecure {
		btpParams.Mod1ParametersLiteral.LogMessageRatio += def.scheme.LogN - logN
	}

	slots := params.MaxSlots()
	if logSlots > 0 {
		slots = 1 << logSlots
	}
	c = &fheContext{scheme: "ckks", insecure: insecure, ckksP: params, params: params.Parameters,
		slots: slots, rowLen: slots, logSlots: logSlots, ckEnc: ckks.NewEncoder(params)}
	if err := c.makeStandardKeys(req.Rotations); err != nil {
		return nil, err
	}
	evk, _, kerr := btpParams.GenEvaluationKeys(c.std["sk"].sk)
	if kerr != nil {
		return nil, newErr(errInternal, "lattigo bootstrapping keys: %v", kerr)
	}
	ev, eerr := bootstrapping.NewEvaluator(btpParams, evk)
	if eerr != nil {
		return nil, newErr(errInternal, "lattigo bootstrapping evaluator: %v", eerr)
	}
	bp := btpParams.BootstrappingParameters
	c.boot = &bootContext{params: bp, eval: ev, keys: evk, facts: map[string]any{
		"preset":                  sp.Preset,
		"slots":                   slots,
		"lattigo_parameters":      def.name,
		"insecure":                insecure,
		"secret_hamming_weight":   params.XsHammingWeight(),
		"ephemeral_secret_weight": btpParams.EphemeralSecretWeight,
		"bootstrapping_log_n":     bp.LogN(),
		"bootstrapping_q_bits":    primeBits(bp.Q()),
		"bootstrapping_p_bits":    primeBits(bp.P()),
		"bootstrapping_log_qp":    round3(bp.LogQP()),
		"depth":                   btpParams.Depth(),
		"output_level":            ev.OutputLevel(),
		"min_input_level":         ev.MinimumInputLevel(),
		"log_message_ratio":       btpParams.Mod1ParametersLiteral.LogMessageRatio,
		"keys_bytes":              evk.BinarySize(),
	}}
	return c, nil
}

// opBootstrap times Lattigo's Bootstrap (it allocates its output).
func opBootstrap(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	if c.boot == nil {
		return nil, newErr(errUnsupported, "bootstrap needs a setup with params {\"preset\": %q}", bootstrapPreset)
	}
	// Bootstrap may work on its input's buffers: give it a private copy.
	in := args[0].ct.CopyNew()
	out.kind = "ct"
	out.sk = args[0].sk
	if c.insecure {
		x.note(fmt.Sprintf("bootstrap: insecure reduced-ring variant of %v", c.boot.facts["preset"]))
	}
	return func() error {
		// Bootstrap returns its output at the residual set's default scale whatever its input's:
		// an input at level 0 whose scale is not exactly 2^40 (any product rescaled by one of the
		// chain's primes) comes back multiplied by the ratio ScaleDown measures (errScale) and
		// Bootstrap then drops: 2^-16 relative at N = 2^16, the precision a depth-40 chain read
		// after bootstrapping where a fresh input reads 25 bits. The output's scale carries that
		// ratio, as Lattigo's own iterated Evaluate does; it is read on a copy at level 0 (a
		// scalar product), inside the region since a correct bootstrap needs it.
		_, errScale, err := c.boot.eval.ScaleDown(in.CopyNew())
		if err != nil {
			return err
		}
		ct, err := c.boot.eval.Bootstrap(in)
		if err == nil {
			ct.Scale = ct.Scale.Mul(*errScale)
		}
		out.ct = ct
		return err
	}, nil
}
