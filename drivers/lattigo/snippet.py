"""Lattigo's parameter snippet (Go, Lattigo v6): primes of exactly the asked sizes from its own
generator, as this driver's context.go makes them.

Loaded by fhemark's snippets (src/fhemark/advise/snippets) from this folder: `build(scheme, params,
insecure)` returns the program's text. It runs in fhemark's process, never in the driver's."""

from __future__ import annotations

from fhemark.advise.snippets.common import fill, t_note
from fhemark.errors import UserError
from fhemark.model.params import ParamSet


# ---------------------------------------------------------------- Lattigo v6, as drivers/lattigo/context.go

_LATTIGO = '''
package main

import (
	"encoding/json"
	"fmt"
	"math/bits"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/schemes/${pkg}"
)

func main() {
	const logN = ${logN}
	primes := primeSource(logN)
	params, err := ${pkg}.NewParametersFromLiteral(${pkg}.ParametersLiteral{
${fields}
	})
	check(err)

	kgen := rlwe.NewKeyGenerator(params)
	sk, pk := kgen.GenKeyPairNew()
	rlk := kgen.GenRelinearizationKeyNew(sk)
	encoder := ${pkg}.NewEncoder(params)
	encryptor := rlwe.NewEncryptor(params, pk)
	decryptor := rlwe.NewDecryptor(params, sk)
	evaluator := ${evaluator}
	// your computation goes here
	_, _, _, _ = encoder, encryptor, decryptor, evaluator

	// What Lattigo built (Lattigo has no security check of its own: "security" is null).
	out, err := json.Marshal(map[string]any{"N": params.N(), "q_bits": bitLens(params.Q()), "p_bits": bitLens(params.P()),
		${reported}, "log_qp": params.LogQP(), "security": nil})
	check(err)
	fmt.Println(string(out))
}

// primeSource hands out NTT-friendly primes (1 mod 2N) of exactly the asked bit sizes, downward from
// 2^b as SEAL's CoeffModulus.Create does (LogQ/LogP would alternate around 2^b: some b+1-bit primes).
func primeSource(logN int) func(sizes ...int) []uint64 {
	gens := map[int]*ring.NTTFriendlyPrimesGenerator{}
	return func(sizes ...int) (out []uint64) {
		for _, b := range sizes {
			if gens[b] == nil {
				g := ring.NewNTTFriendlyPrimesGenerator(uint64(b), uint64(2)<<logN)
				gens[b] = &g
			}
			p, err := gens[b].NextDownstreamPrime()
			check(err)
			out = append(out, p)
		}
		return out
	}
}

func bitLens(ps []uint64) (out []int) {
	for _, p := range ps {
		out = append(out, bits.Len64(p))
	}
	return out
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
'''


def build(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if not ps.batching:
        raise UserError("Lattigo (as fhemark drives it) needs a batching t: a prime = 1 mod 2N", "use t_bits or a batching t")
    fields = [("LogN", "logN", f"N = {ps.N}"),
              ("Q", f"primes({', '.join(map(str, ps.q_bits))})", "ciphertext primes, level 0 first"),
              ("P", f"primes({', '.join(map(str, ps.p_bits))})", "key-switching primes")]
    if scheme == "ckks":
        pkg, reported = "ckks", '"scale_bits": params.LogDefaultScale()'
        fields.append(("LogDefaultScale", str(ps.scale_bits), f"the encoding scale 2^{ps.scale_bits}"))
        evaluator = "ckks.NewEvaluator(params, rlwe.NewMemEvaluationKeySet(rlk))"
    else:  # Lattigo v6 has no bfv package: BFV is the bgv scheme with scale-invariant multiplication
        pkg, reported = "bgv", '"t": params.PlaintextModulus()'
        fields.append(("PlaintextModulus", str(ps.t), t_note(ps)))
        evaluator = (f"bgv.NewEvaluator(params, rlwe.NewMemEvaluationKeySet(rlk), {'true' if scheme == 'bfv' else 'false'})"
                     f" // {'true: BFV (scale-invariant)' if scheme == 'bfv' else 'false: BGV'} multiplication")
    return fill(_LATTIGO, pkg=pkg, logN=ps.N.bit_length() - 1, fields=_go_fields(fields), evaluator=evaluator,
                 reported=reported)


def _go_fields(fields: list[tuple[str, str, str]]) -> str:
    """Composite-literal lines `Key: value, // comment`, aligned as gofmt aligns them."""
    key_w = max(len(k) for k, _, _ in fields) + 2
    value_w = max(len(v) for _, v, _ in fields) + 2
    return "\n".join(f"\t\t{k + ':':<{key_w}}{v + ',':<{value_w}}// {c}" for k, v, c in fields)
