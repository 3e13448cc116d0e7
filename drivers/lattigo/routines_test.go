package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRoutines checks the library routines on BFV: inner_sum, inner_product and a
// linear_transform whose diagonals come as `$name` scalars, against their
// definitions; the Galois keys the transformation needs are made by the driver and
// noted, and a later rotate primitive by such a step still uses only the setup's
// keys (composed of power-of-two rotations, as before the routine ran). Diagonals 5
// and 3 of a 512-slot row: N1 = 4, baby steps 1 and 3, giant step 4.
func TestRoutines(t *testing.T) {
	d := newDriver()
	c := setupSmall(t, d, "s", "bfv")
	n, row := c.slots, c.rowLen
	const tm = 12289
	x, y, d0, d3 := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i := range x {
		x[i], y[i], d0[i], d3[i] = uint64(i*7+1)%tm, uint64(i*13+5)%tm, uint64(i*3+2)%tm, uint64(i*11+9)%tm
	}
	rot := func(v []uint64, k int) []uint64 { // rotate_rows
		out := make([]uint64, n)
		for j := range out {
			r, col := j/row, j%row
			out[j] = v[r*row+(col+k)%row]
		}
		return out
	}
	window := func(v []uint64, m int) []uint64 {
		out := make([]uint64, n)
		for j := 0; j < m; j++ {
			for i, a := range rot(v, j) {
				out[i] = (out[i] + a) % tm
			}
		}
		return out
	}
	prod := make([]uint64, n)
	for i := range prod {
		prod[i] = x[i] * y[i] % tm
	}
	lt := make([]uint64, n)
	r3, r5 := rot(x, 3), rot(x, 5)
	for i := range lt {
		lt[i] = (d0[i]*r5[i] + d3[i]*r3[i]) % tm
	}
	want := map[string][]uint64{"z1": window(x, 8), "z2": window(prod, 4), "z3": lt, "z4": r3}
	p := &program{Steps: []step{
		{Out: "px", Op: "encode", Args: []string{"x"}},
		{Out: "cx", Op: "encrypt_sk", Args: []string{"px"}},
		{Out: "py", Op: "encode", Args: []string{"y"}},
		{Out: "cy", Op: "encrypt_sk", Args: []string{"py"}},
		{Out: "c1", Op: "inner_sum", Args: []string{"cx"}, Attrs: map[string]any{"n": json.Number("8")}},
		{Out: "c2", Op: "inner_product", Args: []string{"cx", "cy"}, Attrs: map[string]any{"n": json.Number("4")}},
		{Out: "c3", Op: "linear_transform", Args: []string{"cx", "d0", "d3"}, Attrs: map[string]any{"diagonals": []any{"$k0", "$k1"}}},
		{Out: "c4", Op: "rotate_rows", Args: []string{"cx"}, Attrs: map[string]any{"steps": []any{json.Number("-1"), json.Number("4")}}}, // 3, spelled as keyed steps
	}, Timed: []region{{Name: "r", Steps: []string{"c1", "c2", "c3"}}}}
	for i, z := range []string{"z1", "z2", "z3", "z4"} {
		ct := "c" + string(rune('1'+i))
		p.Steps = append(p.Steps, step{Out: "p" + z, Op: "decrypt", Args: []string{ct}}, step{Out: z, Op: "decode", Args: []string{"p" + z}})
		p.Outputs = append(p.Outputs, z)
	}
	res, err := d.run(&request{V: 2, Type: "run", SetupID: "s", Program: p, Samples: []sampleIn{{
		Inputs:  map[string]wireVector{"x": encodeU64AsI64(x), "y": encodeU64AsI64(y), "d0": encodeU64AsI64(d0), "d3": encodeU64AsI64(d3)},
		Scalars: map[string]any{"k0": json.Number("5"), "k1": json.Number("3")}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.(map[string]any)
	smp := r["samples"].([]sampleOut)[0]
	for z, w := range want {
		got, _, _ := decodeVector(smp.Outputs[z])
		for j := range w {
			if uint64(got[j]) != w[j] {
				t.Fatalf("%s: slot %d = %d, want %d", z, j, got[j], w[j])
			}
		}
	}
	notes := strings.Join(r["notes"].([]string), "\n")
	for _, s := range []string{"linear_transform: the Galois keys for rotations [3] (among those Lattigo lists for the routine) were missing"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
	if _, err := c.ev.keys.GetGaloisKey(c.params.GaloisElement(3)); err == nil {
		t.Errorf("the setup's own key set gained the routine's key for rotation 3")
	}
	// poly_eval is CKKS only
	_, err = d.run(&request{V: 2, Type: "run", SetupID: "s", Program: &program{Steps: []step{
		{Out: "px", Op: "encode", Args: []string{"x"}}, {Out: "cx", Op: "encrypt_sk", Args: []string{"px"}},
		{Out: "c", Op: "poly_eval", Args: []string{"cx"}, Attrs: map[string]any{"coeffs": []any{json.Number("1"), json.Number("2")}}}}},
		Samples: []sampleIn{{Inputs: map[string]wireVector{"x": encodeU64AsI64(x)}}}})
	if de, ok := err.(*driverError); !ok || de.Kind != errUnsupported {
		t.Errorf("poly_eval on BFV: got %v, want unsupported", err)
	}
}

// TestPolyEval checks CKKS poly_eval with `$name` coefficients: the values, and the
// levels Lattigo's evaluator consumes (ceil(log2(d+1)) for d = 3), in the notes.
func TestPolyEval(t *testing.T) {
	d := newDriver()
	sb := 30
	sp := &setupParams{N: 1024, QBits: []int{45, 30, 30, 30}, PBits: []int{45}, Secret: "ternary", ScaleBits: &sb}
	if _, err := d.setup(&request{V: 2, Type: "setup", SetupID: "s", Scheme: "ckks", Params: sp, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	c := d.setups["s"]
	x := make([]float64, c.slots)
	for i := range x {
		x[i] = float64(i%41)/20 - 1
	}
	coeffs := []float64{0.5, -0.25, 0.125, 0.75}
	res, err := d.run(&request{V: 2, Type: "run", SetupID: "s", Program: &program{Steps: []step{
		{Out: "px", Op: "encode", Args: []string{"x"}}, {Out: "cx", Op: "encrypt_sk", Args: []string{"px"}},
		{Out: "c", Op: "poly_eval", Args: []string{"cx"}, Attrs: map[string]any{"coeffs": []any{"$a", json.Number("-0.25"), "$b", json.Number("0.75")}}},
		{Out: "pz", Op: "decrypt", Args: []string{"c"}}, {Out: "z", Op: "decode", Args: []string{"pz"}}},
		Timed: []region{{Name: "c", Steps: []string{"c"}}}, Outputs: []string{"z"}, Levels: []string{"c"}},
		Samples: []sampleIn{{Inputs: map[string]wireVector{"x": encodeF64(x)},
			Scalars: map[string]any{"a": json.Number("0.5"), "b": json.Number("0.125")}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.(map[string]any)
	_, got, _ := decodeVector(r["samples"].([]sampleOut)[0].Outputs["z"])
	for i, v := range x {
		w := coeffs[0] + v*(coeffs[1]+v*(coeffs[2]+v*coeffs[3]))
		if e := got[i] - w; e > 1e-3 || e < -1e-3 {
			t.Fatalf("slot %d: %v, want %v", i, got[i], w)
		}
	}
	if lv := r["levels"].(map[string]any)["c"]; lv != 1 {
		t.Errorf("level after a cubic from level 3: %v, want 1", lv)
	}
	if notes := strings.Join(r["notes"].([]string), "\n"); !strings.Contains(notes, "level 3 -> 1, 2 levels consumed") {
		t.Errorf("notes: %s", notes)
	}
}
