package main

import (
	"math"
	"math/big"
)

// noiseBudget returns the noise budget of a BFV/BGV ciphertext in bits,
// comparable to SEAL's invariant noise budget:
//
//	budget = log2(Q_l / (2t)) - log2(||e||_inf), clamped at 0,
//
// where Q_l is the product of the primes at the ciphertext's level and e is
// its noise polynomial: the decryption (before decoding) minus the exact
// encoding, at the same level and scale, of the decoded values. Lattigo keeps
// BFV/BGV plaintexts as [m * t^-1]_Q (MSB form), so a decryption is
// [m * t^-1 + e]_Q and decodes correctly while ||t*e + m|| < Q_l/2, that is
// while ||e|| < Q_l/(2t) (the m term is ignored, as SEAL's bound does).
// The ciphertext is decrypted under the secret key it is tracked to be
// encrypted under (after key_switch: the target key).
func (c *fheContext) noiseBudget(v *value) (int, error) {
	ct := v.ct
	sk := c.std["sk"]
	if v.sk != nil {
		sk = v.sk
	}
	dec := c.decryptorFor(sk)
	level := ct.Level()

	pt := c.newPlaintext(level)
	dec.Decrypt(ct, pt)

	vals := make([]uint64, c.slots)
	if err := c.bgvEnc.Decode(pt, vals); err != nil {
		return 0, newErr(errInternal, "noise: decode: %v", err)
	}
	ref := c.newPlaintext(level)
	*ref.MetaData = *pt.MetaData
	if err := c.bgvEnc.Encode(vals, ref); err != nil {
		return 0, newErr(errInternal, "noise: encode: %v", err)
	}

	ringQ := c.params.RingQ().AtLevel(level)
	diff := ringQ.NewPoly()
	ringQ.Sub(pt.Value, ref.Value, diff)
	if pt.IsNTT {
		ringQ.INTT(diff, diff)
	}
	coeffs := make([]*big.Int, c.params.N())
	for i := range coeffs {
		coeffs[i] = new(big.Int)
	}
	ringQ.PolyToBigintCentered(diff, 1, coeffs)
	maxAbs := new(big.Int)
	tmp := new(big.Int)
	for _, x := range coeffs {
		tmp.Abs(x)
		if tmp.Cmp(maxAbs) > 0 {
			maxAbs.Set(tmp)
		}
	}
	logQ := bigLog2(ringQ.ModulusAtLevel[level])
	logT := math.Log2(float64(c.bgvP.PlaintextModulus()))
	logE := 0.0
	if maxAbs.Sign() > 0 {
		logE = bigLog2(maxAbs)
	}
	b := logQ - 1 - logT - logE
	if b < 0 {
		b = 0
	}
	return int(math.Floor(b)), nil
}

func bigLog2(x *big.Int) float64 {
	f, _ := new(big.Float).SetInt(x).Float64()
	if !math.IsInf(f, 0) {
		return math.Log2(f)
	}
	// beyond float64 range: shift down first
	shift := x.BitLen() - 64
	y := new(big.Int).Rsh(x, uint(shift))
	fy, _ := new(big.Float).SetInt(y).Float64()
	return math.Log2(fy) + float64(shift)
}
