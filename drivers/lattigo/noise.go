package main

import (
	"encoding/base64"
	"encoding/binary"
)

// rawDecryption returns [c0 + c1*s]_Q of a BFV/BGV ciphertext at its level, in coefficient form,
// one vector of residues per prime: the orchestrator computes the noise budget from it
// (PROTOCOL.md "Raw decryptions"). Lattigo keeps BFV and BGV plaintexts as [m * t^-1]_Q, so a
// decryption is [m * t^-1 + e]_Q: form "msb", the noise is [t * x]_Q. The ciphertext is decrypted
// under the secret key it is tracked to be encrypted under (after key_switch: the target key).
func (c *fheContext) rawDecryption(v *value) map[string]any {
	sk := c.std["sk"]
	if v.sk != nil {
		sk = v.sk
	}
	level := v.ct.Level()
	pt := c.newPlaintext(level)
	c.decryptorFor(sk).Decrypt(v.ct, pt) // no decoding: the plaintext polynomial as it is
	ringQ := c.params.RingQ().AtLevel(level)
	if pt.IsNTT {
		ringQ.INTT(pt.Value, pt.Value)
	}
	primes, residues := ringQ.ModuliChain()[:level+1], make([]string, level+1)
	buf := make([]byte, 8*c.params.N())
	for i := range residues {
		for j, x := range pt.Value.Coeffs[i] {
			binary.LittleEndian.PutUint64(buf[8*j:], x)
		}
		residues[i] = base64.StdEncoding.EncodeToString(buf)
	}
	return map[string]any{"form": "msb", "t": c.bgvP.PlaintextModulus(), "primes": primes, "residues": residues}
}
