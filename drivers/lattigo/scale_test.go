package main

import (
	"math"
	"testing"
)

// scaleAfter is log2 of a value's scale after `levels` products of two values
// at the same canonical scale, each rescaled by the chain's next prime from
// the top (fhemark's convention: S' = S^2 / q), starting at 2^scaleBits.
func scaleAfter(q []uint64, scaleBits, levels int) float64 {
	s := float64(scaleBits)
	for i := len(q) - 1; i > len(q)-1-levels; i-- {
		s = 2*s - math.Log2(float64(q[i]))
	}
	return s
}

// TestStableScalingPrimes: 40 squarings at a 41-bit scale on N = 2^16 keep the
// scale within 2^-10 of 2^41, where primes generated downward from 2^41 leave
// every bound (the depth-25 MLP's 1.9 bits); log Q stays within the bits asked,
// and every prime is a distinct NTT prime fhemark counts as 41 bits.
func TestStableScalingPrimes(t *testing.T) {
	const logN, scale, depth = 16, 41, 40
	qBits := []int{51}
	for i := 0; i < depth; i++ {
		qBits = append(qBits, scale)
	}
	q, p, err := genPrimes(logN, qBits, []int{51})
	if err != nil {
		t.Fatal(err)
	}
	if drift := scaleAfter(q, scale, depth) - scale; math.Abs(drift) < 1 {
		t.Fatalf("downward primes drift only %.3g bits: the test no longer shows the problem", drift)
	}
	stable := stableScalingPrimes(logN, scale, qBits, q, p)
	if stable[0] > q[0] || stable[0] < 1<<50 || stable[0]%(2<<logN) != 1 {
		t.Fatalf("first prime %d: not a 51-bit NTT prime at or below the one asked (%d)", stable[0], q[0])
	}
	seen := map[uint64]bool{p[0]: true}
	for l := 1; l <= depth; l++ {
		if d := scaleAfter(stable, scale, l) - scale; math.Abs(d) > 1.0/1024 {
			t.Fatalf("after %d levels the scale is 2^%.6f", l, scale+d)
		}
		x := stable[l]
		if x%(2<<logN) != 1 || seen[x] || x < 1<<(scale-1) || x >= 1<<scale+1<<(scale-10) {
			t.Fatalf("prime %d at %d: not a distinct NTT prime of %d bits (protocol.py prime_bits)", x, l, scale)
		}
		seen[x] = true
	}
	logQ := 0.0
	for _, x := range stable {
		logQ += math.Log2(float64(x))
	}
	if logQ > float64(51+scale*depth) {
		t.Fatalf("log Q %.6f above the asked %d bits: a set at a security bound would read as past it", logQ, 51+scale*depth)
	}
	mixed := append([]int{51, 40}, qBits[2:]...)
	if got := stableScalingPrimes(logN, scale, mixed, q, p); &got[0] != &q[0] {
		t.Fatal("a chain not shaped as one scale per prime must be left as asked")
	}
}
