package main

import (
	"math"
	"math/big"
)

// stableScalingPrimes replaces the CKKS scaling primes (those of q[1:] whose
// asked bit length equals the scale's) by the NTT-friendly primes that keep a
// value's scale at 2^scaleBits on every level.
//
// Why: fhemark's programs keep every value at its level's canonical scale, a
// product of two such values rescaled: S' = S^2 / q. On primes generated
// downward from 2^b (genPrimes) every q is a little below S, and the offset
// doubles at every squaring: over 25 levels of x -> x^2 at a 34-bit scale the
// scale leaves every bound (a depth-25 MLP decrypted to 1.9 bits of precision).
// Choosing each prime, from the top of the chain down, as the one nearest to
// S_l^2 / 2^b keeps S_l within about 2N / 2^b of 2^b on every level (what
// OpenFHE's FLEXIBLEAUTO does with its own chain). Such a prime may lie just
// above 2^b, by less than 2^(b-10): fhemark counts it as b bits (protocol.py
// prime_bits), and where none lies that near the chain is left as asked.
func stableScalingPrimes(logN, scaleBits int, qBits []int, q, p []uint64) []uint64 {
	if scaleBits < 12 || scaleBits > 62 {
		return q
	}
	m := uint64(2) << uint(logN)
	used := map[uint64]bool{q[0]: true} // the primes kept: the first, and P's
	for _, x := range p {
		used[x] = true
	}
	out := append([]uint64{}, q...)
	target := math.Ldexp(1, scaleBits)
	ratio := 1.0 // the scale of the current top level, over 2^scaleBits
	for i := len(q) - 1; i >= 1; i-- {
		if qBits[i] != scaleBits {
			return q // a chain the search did not shape as one scale per prime: left as asked
		}
		want := target * ratio * ratio // the prime that brings S^2 back to 2^b
		prime := nearestNTTPrime(want, m, used, uint64(1)<<uint(scaleBits-1), uint64(1)<<uint(scaleBits)+uint64(1)<<uint(scaleBits-10))
		if prime == 0 {
			return q
		}
		used[prime] = true
		out[i] = prime
		ratio = ratio * ratio * target / float64(prime)
	}
	return keepModulusSize(out, qBits, m, used)
}

// keepModulusSize lowers the first prime (no value is rescaled by it) so that
// Q stays below 2^(sum of q_bits), as primes made downward keep it: some scaling
// primes lie above 2^b, and a set asked at exactly a security bound (log QP 218
// at N = 8192) would otherwise read as above it. Where no such first prime of
// its asked size exists, the chain is left as chosen.
func keepModulusSize(q []uint64, qBits []int, m uint64, used map[uint64]bool) []uint64 {
	excess := 0.0
	for i := 1; i < len(q); i++ {
		excess += math.Log2(float64(q[i])) - float64(qBits[i])
	}
	if excess <= 0 {
		return q
	}
	top := math.Ldexp(1, qBits[0]) * math.Exp2(-excess-1e-9)
	k := uint64(top-1) / m
	for d := uint64(0); d < 1<<16 && k > d; d++ {
		c := (k-d)*m + 1
		if c >= 1<<uint(qBits[0]-1) && !used[c] && new(big.Int).SetUint64(c).ProbablyPrime(20) {
			out := append([]uint64{c}, q[1:]...)
			return out
		}
	}
	return q
}

// nearestNTTPrime is the prime = 1 mod m in [lo, hi) nearest to x not in used, 0
// where none lies within 4096 steps of m.
func nearestNTTPrime(x float64, m uint64, used map[uint64]bool, lo, hi uint64) uint64 {
	k := int64(math.Round((x - 1) / float64(m)))
	for d := int64(0); d < 4096; d++ {
		for _, j := range []int64{k - d, k + d} {
			if j <= 0 {
				continue
			}
			c := uint64(j)*m + 1
			if c >= lo && c < hi && !used[c] && new(big.Int).SetUint64(c).ProbablyPrime(20) {
				return c
			}
		}
	}
	return 0
}
