package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestFraming(t *testing.T) {
	in := strings.Join([]string{
		`{"v":1,"id":1,"type":"capabilities"}`,
		`not json at all`,
		`{"v":1,"id":3,"type":"no_such_type"}`,
		``,
		`{"v":1,"id":4,"type":"run","setup_id":"missing","program":{"steps":[{"out":"a","op":"encode","args":["x"]}]}}`,
		`{"v":1,"id":5,"type":"setup","setup_id":"s","scheme":"tfhe","params":{"N":1024,"q_bits":[30]}}`,
		`{"v":1,"id":6,"type":"shutdown"}`,
		`{"v":1,"id":7,"type":"capabilities"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := newDriver().serve(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	type rep struct {
		V      int             `json:"v"`
		ID     json.RawMessage `json:"id"`
		OK     bool            `json:"ok"`
		Result map[string]any  `json:"result"`
		Error  *driverError    `json:"error"`
	}
	var reps []rep
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r rep
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reply is not JSON: %v: %s", err, sc.Text())
		}
		reps = append(reps, r)
	}
	// one reply per non-empty line up to and including shutdown
	if len(reps) != 6 {
		t.Fatalf("got %d replies, want 6", len(reps))
	}
	want := []struct {
		id   string
		ok   bool
		kind string
	}{
		{"1", true, ""}, {"null", false, errInternal}, {"3", false, errUnsupported},
		{"4", false, errInternal}, {"5", false, errUnsupported}, {"6", true, ""},
	}
	for i, w := range want {
		r := reps[i]
		if string(r.ID) != w.id || r.OK != w.ok || r.V != 1 {
			t.Errorf("reply %d: id=%s ok=%v v=%d, want id=%s ok=%v", i, r.ID, r.OK, r.V, w.id, w.ok)
		}
		if !w.ok && (r.Error == nil || r.Error.Kind != w.kind) {
			t.Errorf("reply %d: error %+v, want kind %s", i, r.Error, w.kind)
		}
	}
	if reps[0].Result["library"] != "lattigo" {
		t.Errorf("capabilities: %v", reps[0].Result)
	}
}

func TestVectorRoundTrip(t *testing.T) {
	u := []uint64{0, 1, 12288, 1 << 40}
	ints, _, err := decodeVector(encodeU64AsI64(u))
	if err != nil {
		t.Fatal(err)
	}
	for i := range u {
		if uint64(ints[i]) != u[i] {
			t.Fatalf("i64 round trip: %v != %v", ints, u)
		}
	}
	f := []float64{0, -1.5, 3.25e-7}
	_, fs, err := decodeVector(encodeF64(f))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f {
		if fs[i] != f[i] {
			t.Fatalf("f64 round trip: %v != %v", fs, f)
		}
	}
}

// runOne sets up a scheme and runs encode -> encrypt -> op -> decrypt -> decode.
func runOne(t *testing.T, d *driver, sid, scheme string, op string, attrs map[string]any, in any) any {
	t.Helper()
	var inp wireVector
	switch v := in.(type) {
	case []uint64:
		inp = encodeU64AsI64(v)
	case []float64:
		inp = encodeF64(v)
	}
	prog := &program{
		Steps: []step{
			{Out: "px", Op: "encode", Args: []string{"x"}},
			{Out: "cx", Op: "encrypt_sk", Args: []string{"px"}},
			{Out: "cz", Op: op, Args: []string{"cx"}, Attrs: attrs},
			{Out: "pz", Op: "decrypt", Args: []string{"cz"}},
			{Out: "z", Op: "decode", Args: []string{"pz"}},
		},
		Timed:   []string{"cz"},
		Outputs: []string{"z"},
	}
	res, err := d.run(&request{V: 1, Type: "run", SetupID: sid, Program: prog,
		Samples: []sampleIn{{Inputs: map[string]wireVector{"x": inp}}}})
	if err != nil {
		t.Fatalf("%s %s: %v", scheme, op, err)
	}
	w := res.(map[string]any)["samples"].([]sampleOut)[0].Outputs["z"]
	ints, floats, err := decodeVector(w)
	if err != nil {
		t.Fatal(err)
	}
	if ints != nil {
		return ints
	}
	return floats
}

func setupSmall(t *testing.T, d *driver, sid, scheme string) *fheContext {
	t.Helper()
	tt := json.Number("12289")
	sb := 30
	sp := &setupParams{N: 1024, QBits: []int{36, 36}, PBits: []int{37}, Secret: "ternary"}
	if scheme == "ckks" {
		sp.QBits = []int{45, 30}
		sp.ScaleBits = &sb
	} else {
		sp.T = &tt
	}
	if _, err := d.setup(&request{V: 1, Type: "setup", SetupID: sid, Scheme: scheme, Params: sp,
		Rotations: []int{1}, RotationsPow2: true, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	return d.setups[sid]
}

// TestSlotLayoutBGV checks PROTOCOL.md's batching layout: slot i is row i/(N/2),
// rotate_rows(k) moves column c+k to c, rotate_columns swaps the rows.
func TestSlotLayoutBGV(t *testing.T) {
	d := newDriver()
	for _, scheme := range []string{"bfv", "bgv"} {
		c := setupSmall(t, d, "s-"+scheme, scheme)
		n, row := c.slots, c.rowLen
		if n != 1024 || row != 512 {
			t.Fatalf("%s: slots %d row %d", scheme, n, row)
		}
		x := make([]uint64, n)
		for i := range x {
			x[i] = uint64(i + 1)
		}
		got := runOne(t, d, "s-"+scheme, scheme, "rotate_rows", map[string]any{"steps": json.Number("3")}, x).([]int64)
		for i := range x {
			r, col := i/row, i%row
			want := x[r*row+(col+3)%row]
			if uint64(got[i]) != want {
				t.Fatalf("%s rotate_rows(3): slot %d = %d, want %d", scheme, i, got[i], want)
			}
		}
		got = runOne(t, d, "s-"+scheme, scheme, "rotate_columns", nil, x).([]int64)
		for i := range x {
			want := x[(i+row)%n]
			if uint64(got[i]) != want {
				t.Fatalf("%s rotate_columns: slot %d = %d, want %d", scheme, i, got[i], want)
			}
		}
	}
}

func TestSlotLayoutCKKS(t *testing.T) {
	d := newDriver()
	c := setupSmall(t, d, "s-ckks", "ckks")
	n := c.slots
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i%17) / 16
	}
	// 7 has no direct key: composed from power-of-two rotations.
	got := runOne(t, d, "s-ckks", "ckks", "rotate", map[string]any{"steps": json.Number("7")}, x).([]float64)
	// Values are multiples of 1/16, so a wrong slot is off by 1/16 or more; the tolerance
	// leaves room for the noise of three key switches at this small, insecure N.
	const tol = 1.0 / 64
	for i := range x {
		want := x[(i+7)%n]
		if d := got[i] - want; d > tol || d < -tol {
			t.Fatalf("rotate(7): slot %d = %v, want %v", i, got[i], want)
		}
	}
}

func TestRotationPlan(t *testing.T) {
	d := newDriver()
	c := setupSmall(t, d, "s", "bgv")
	n := int64(c.rowLen)
	for _, k := range []int64{0, 1, 2, 3, 7, 11, 255, 256, 511, -1, -7, 1000} {
		plan, err := c.rotationPlan(c.ev, k)
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		var sum int64
		for _, s := range plan {
			sum += int64(s)
		}
		if ((sum-k)%n+n)%n != 0 {
			t.Errorf("k=%d: plan %v sums to %d", k, plan, sum)
		}
		if len(plan) > 6 {
			t.Errorf("k=%d: plan %v too long", k, plan)
		}
	}
}
