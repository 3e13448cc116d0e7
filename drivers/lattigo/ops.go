package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
)

// value is anything a program step can name.
type value struct {
	kind string // "vec", "pt", "ct", "key"
	u    []uint64
	f    []float64
	pt   *rlwe.Plaintext
	ct   *rlwe.Ciphertext
	key  *keyVal
	sk   *keyVal // ct: the secret key it decrypts under (tracked for noise)
}

// execState is the state of one program copy while it runs.
type execState struct {
	c       *fheContext
	env     map[string]*value
	scalars map[string]any
	notes   map[string]bool
	post    []func() // run after the current region's calls (outside the clock), e.g. notes on their results
}

func (x *execState) note(s string) { x.notes[s] = true }

// opFn prepares one step outside the timed region and returns the closure to
// time. The closure fills out. With into, the output object is allocated here
// (before the timed region); otherwise the closure allocates it (Lattigo's
// *New variants).
type opFn func(x *execState, s *step, args []*value, out *value, into bool) (func() error, error)

type opDef struct {
	schemes string // space separated: "bfv bgv ckks"
	args    []string
	fn      opFn
	into    bool // also offered as <name>_into
}

func (o opDef) supports(scheme string) bool {
	return strings.Contains(" "+o.schemes+" ", " "+scheme+" ")
}

var opTable map[string]opDef

const all = "bfv bgv ckks"

func init() {
	base := map[string]opDef{
		"encode":         {all, []string{"vec"}, opEncode, true},
		"decode":         {all, []string{"pt"}, opDecode, true},
		"encrypt_pk":     {all, []string{"pt"}, opEncryptPK, true},
		"encrypt_sk":     {all, []string{"pt"}, opEncryptSK, true},
		"decrypt":        {all, []string{"pt"}, opDecrypt, true},
		"add":            {all, []string{"ct", "ct"}, opBinary("add"), true},
		"sub":            {all, []string{"ct", "ct"}, opBinary("sub"), true},
		"add_plain":      {all, []string{"ct", "pt"}, opBinary("add"), true},
		"mul":            {all, []string{"ct", "ct"}, opBinary("mul"), true},
		"mul_relin":      {all, []string{"ct", "ct"}, opBinary("mul_relin"), true},
		"mul_plain":      {all, []string{"ct", "pt"}, opBinary("mul"), true},
		"mul_scalar":     {all, []string{"ct"}, opMulScalar, true},
		"square":         {all, []string{"ct"}, opSquare, true},
		"square_relin":   {all, []string{"ct"}, opSquareRelin, true},
		"relinearize":    {all, []string{"ct"}, opRelinearize, true},
		"rescale":        {"ckks", []string{"ct"}, opRescale, true},
		"mod_switch":     {all, []string{"ct"}, opModSwitch, true},
		"rotate_rows":    {"bfv bgv", []string{"ct"}, opRotate, true},
		"rotate":         {"ckks", []string{"ct"}, opRotate, true},
		"rotate_columns": {"bfv bgv", []string{"ct"}, opSwap, true},
		"conjugate":      {"ckks", []string{"ct"}, opSwap, true},
		"key_switch":     {all, []string{"ct"}, opKeySwitch, true},
		"keygen_secret":  {all, nil, opKeygenSecret, false},
		"keygen_public":  {all, nil, opKeygenPublic, false},
		"keygen_relin":   {all, nil, opKeygenRelin, false},
		"keygen_galois":  {all, nil, opKeygenGalois, false},
		"keygen_switch":  {all, nil, opKeygenSwitch, false},
		"bootstrap":      {"ckks", []string{"ct"}, opBootstrap, false},
		// library routines (native variants; routines.go); linear_transform takes a
		// ciphertext and one vec per diagonal, checked by the op itself
		"inner_sum":        {all, []string{"ct"}, opInnerSum, false},
		"inner_product":    {all, []string{"ct", "ct"}, opInnerProduct, false},
		"linear_transform": {all, nil, opLinearTransform, false},
		"poly_eval":        {"ckks", []string{"ct"}, opPolyEval, false},
	}
	// decrypt takes a ciphertext
	d := base["decrypt"]
	d.args = []string{"ct"}
	base["decrypt"] = d

	opTable = map[string]opDef{}
	for name, def := range base {
		opTable[name] = def
		if def.into {
			opTable[name+"_into"] = def
		}
	}
}

func sortedOpNames() []string {
	names := make([]string, 0, len(opTable))
	for n := range opTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ---- attribute helpers ----

func (x *execState) attr(s *step, name string) (any, bool) {
	v, ok := s.Attrs[name]
	if !ok || v == nil {
		return nil, false
	}
	if str, isStr := v.(string); isStr && strings.HasPrefix(str, "$") {
		sv, ok := x.scalars[str[1:]]
		if !ok {
			return nil, false
		}
		return sv, true
	}
	return v, true
}

func toInt(v any) (int64, error) {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			return i, nil
		}
		f, err := t.Float64()
		if err != nil || f != math.Trunc(f) {
			return 0, fmt.Errorf("%v is not an integer", t)
		}
		return int64(f), nil
	case float64:
		if t != math.Trunc(t) {
			return 0, fmt.Errorf("%v is not an integer", t)
		}
		return int64(t), nil
	case int:
		return int64(t), nil
	case int64:
		return t, nil
	case string:
		return strconv.ParseInt(t, 10, 64)
	}
	return 0, fmt.Errorf("%v (%T) is not an integer", v, v)
}

func toBigInt(v any) (*big.Int, error) {
	switch t := v.(type) {
	case json.Number:
		if b, ok := new(big.Int).SetString(t.String(), 10); ok {
			return b, nil
		}
		i, err := toInt(t)
		return big.NewInt(i), err
	case string:
		if b, ok := new(big.Int).SetString(t, 10); ok {
			return b, nil
		}
	}
	i, err := toInt(v)
	return big.NewInt(i), err
}

func toFloat(v any) (float64, error) {
	switch t := v.(type) {
	case json.Number:
		return t.Float64()
	case float64:
		return t, nil
	case int:
		return float64(t), nil
	case int64:
		return float64(t), nil
	case string:
		return strconv.ParseFloat(t, 64)
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

func (x *execState) intAttr(s *step, name string) (int64, error) {
	v, ok := x.attr(s, name)
	if !ok {
		return 0, newErr(errInternal, "step %q (%s): missing attr %q", s.Out, s.Op, name)
	}
	i, err := toInt(v)
	if err != nil {
		return 0, newErr(errInternal, "step %q (%s): attr %q: %v", s.Out, s.Op, name, err)
	}
	return i, nil
}

// keyAttr resolves a key-valued attr (a name in the environment); def is the
// standard key used when the attr is absent.
func (x *execState) keyAttr(s *step, name, wantKind string, def *keyVal) (*keyVal, error) {
	v, ok := s.Attrs[name]
	if !ok || v == nil {
		if def == nil {
			return nil, newErr(errInternal, "step %q (%s): attr %q (a %s key) is required", s.Out, s.Op, name, wantKind)
		}
		return def, nil
	}
	ref, isStr := v.(string)
	if !isStr {
		return nil, newErr(errInternal, "step %q (%s): attr %q must name a key", s.Out, s.Op, name)
	}
	if strings.HasPrefix(ref, "$") {
		sv, ok := x.scalars[ref[1:]]
		if !ok {
			return nil, newErr(errInternal, "step %q (%s): scalar %q missing", s.Out, s.Op, ref)
		}
		if ref, isStr = sv.(string); !isStr {
			return nil, newErr(errInternal, "step %q (%s): attr %q must name a key", s.Out, s.Op, name)
		}
	}
	kv, ok := x.env[ref]
	if !ok || kv.kind != "key" {
		return nil, newErr(errInternal, "step %q (%s): attr %q = %q is not a key (got %s)", s.Out, s.Op, name, ref, describeKeyKind(kv))
	}
	if kv.key.kind != wantKind {
		return nil, newErr(errInternal, "step %q (%s): attr %q = %q is a %s key, want %s", s.Out, s.Op, name, ref, kv.key.kind, wantKind)
	}
	return kv.key, nil
}

// ---- evaluators / encryptors for keys ----

func (c *fheContext) evalFor(k *keyVal) *evaluators {
	if k.ev == nil {
		switch k.kind {
		case "rlk":
			k.ev = c.newEvaluators(rlwe.NewMemEvaluationKeySet(k.rlk))
		case "gk":
			k.ev = c.newEvaluators(rlwe.NewMemEvaluationKeySet(nil, k.gks...))
		default:
			return c.ev
		}
	}
	return k.ev
}

func (c *fheContext) encryptorFor(k *keyVal) *rlwe.Encryptor {
	if k.enc == nil {
		if k.kind == "pk" {
			k.enc = rlwe.NewEncryptor(c.params, k.pk)
		} else {
			k.enc = rlwe.NewEncryptor(c.params, k.sk)
		}
	}
	return k.enc
}

func (c *fheContext) decryptorFor(k *keyVal) *rlwe.Decryptor {
	if k.dec == nil {
		k.dec = rlwe.NewDecryptor(c.params, k.sk)
	}
	return k.dec
}

// ---- operations ----

// likeAttr resolves encode's `like` attr: the ciphertext (a value of this program) whose
// level and exact scale a CKKS plaintext takes; nil without the attr.
func (x *execState) likeAttr(s *step) (*rlwe.Ciphertext, error) {
	raw, ok := s.Attrs["like"]
	if !ok || raw == nil {
		return nil, nil
	}
	if x.c.isBGVFamily() {
		return nil, newErr(errUnsupported, "encode's like attr is CKKS only (a %s plaintext has no scale)", x.c.scheme)
	}
	if _, both := x.attr(s, "level"); both {
		return nil, newErr(errInternal, "step %q: encode: give level or like, not both", s.Out)
	}
	name, isStr := raw.(string)
	if !isStr {
		return nil, newErr(errInternal, "step %q: encode: like %v is not a value's name", s.Out, raw)
	}
	v, found := x.env[name]
	if !found {
		return nil, newErr(errInternal, "step %q: encode: like %q names no value of the program", s.Out, name)
	}
	if v.kind != "ct" {
		return nil, newErr(errInternal, "step %q: encode: like %q names a %s, not a ciphertext", s.Out, name, describeKeyKind(v))
	}
	return v.ct, nil
}

func opEncode(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	level := c.params.MaxLevel()
	if v, ok := x.attr(s, "level"); ok {
		l, err := toInt(v)
		if err != nil || l < 0 || int(l) > c.params.MaxLevel() {
			return nil, newErr(errInternal, "step %q: bad level %v", s.Out, v)
		}
		level = int(l)
	}
	like, err := x.likeAttr(s)
	if err != nil {
		return nil, err
	}
	if like != nil {
		level = like.Level()
	}
	// newPt makes the plaintext at the level, with the scale of `like` where given.
	newPt := func() *rlwe.Plaintext {
		p := c.newPlaintext(level)
		if like != nil {
			p.Scale = like.Scale
		}
		return p
	}
	out.kind = "pt"
	var pt *rlwe.Plaintext
	if into {
		pt = newPt()
		resident(pt.Value)
	}
	if c.isBGVFamily() {
		vals := args[0].u
		return func() error {
			p := pt
			if p == nil {
				p = c.newPlaintext(level)
			}
			out.pt = p
			return c.bgvEnc.Encode(vals, p)
		}, nil
	}
	vals := args[0].f
	return func() error {
		p := pt
		if p == nil {
			p = newPt()
		}
		out.pt = p
		return c.ckEnc.Encode(vals, p)
	}, nil
}

// binaryOps: the binary ops bgv.Evaluator and ckks.Evaluator share, with the same signatures. The
// method is picked outside the region; the region calls it.
type binaryOps interface {
	Add(*rlwe.Ciphertext, rlwe.Operand, *rlwe.Ciphertext) error
	AddNew(*rlwe.Ciphertext, rlwe.Operand) (*rlwe.Ciphertext, error)
	Sub(*rlwe.Ciphertext, rlwe.Operand, *rlwe.Ciphertext) error
	SubNew(*rlwe.Ciphertext, rlwe.Operand) (*rlwe.Ciphertext, error)
	Mul(*rlwe.Ciphertext, rlwe.Operand, *rlwe.Ciphertext) error
	MulNew(*rlwe.Ciphertext, rlwe.Operand) (*rlwe.Ciphertext, error)
	MulRelin(*rlwe.Ciphertext, rlwe.Operand, *rlwe.Ciphertext) error
	MulRelinNew(*rlwe.Ciphertext, rlwe.Operand) (*rlwe.Ciphertext, error)
}

func opDecode(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	pt := args[0].pt
	out.kind = "vec"
	if c.isBGVFamily() {
		return decodeInto(c.slots, into, func(b []uint64) error { out.u = b; return c.bgvEnc.Decode(pt, b) }), nil
	}
	return decodeInto(c.slots, into, func(b []float64) error { out.f = b; return c.ckEnc.Decode(pt, b) }), nil
}

// decodeInto: the _into variant decodes into a vector allocated before the region; the base op
// allocates it inside, as Lattigo's callers do.
func decodeInto[T uint64 | float64](slots int, into bool, decode func([]T) error) func() error {
	var buf []T
	if into {
		buf = make([]T, slots)
	}
	return func() error {
		if buf != nil {
			return decode(buf)
		}
		return decode(make([]T, slots))
	}
}

func encryptWith(x *execState, enc *rlwe.Encryptor, owner *keyVal, args []*value, out *value, into bool) (func() error, error) {
	pt := args[0].pt
	out.kind = "ct"
	out.sk = owner
	return x.c.timedOutput(out, into, 1, pt.Level(),
		func(o *rlwe.Ciphertext) error { return enc.Encrypt(pt, o) },
		func() (*rlwe.Ciphertext, error) { return enc.EncryptNew(pt) }), nil
}

func opEncryptPK(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	k, err := x.keyAttr(s, "key", "pk", x.c.std["pk"])
	if err != nil {
		return nil, err
	}
	return encryptWith(x, x.c.encryptorFor(k), k.owner, args, out, into)
}

func opEncryptSK(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	k, err := x.keyAttr(s, "key", "sk", x.c.std["sk"])
	if err != nil {
		return nil, err
	}
	return encryptWith(x, x.c.encryptorFor(k), k, args, out, into)
}

func opDecrypt(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	k, err := x.keyAttr(s, "key", "sk", x.c.std["sk"])
	if err != nil {
		return nil, err
	}
	dec := x.c.decryptorFor(k)
	ct := args[0].ct
	out.kind = "pt"
	if into {
		pt := x.c.newPlaintext(ct.Level())
		resident(pt.Value)
		out.pt = pt
		return func() error { dec.Decrypt(ct, pt); return nil }, nil
	}
	return func() error { out.pt = dec.DecryptNew(ct); return nil }, nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// opBinary covers add, sub, add_plain, mul, mul_plain and mul_relin.
func opBinary(kind string) opFn {
	return func(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
		c := x.c
		ev := c.ev
		if kind == "mul_relin" {
			k, err := x.keyAttr(s, "key", "rlk", c.std["rlk"])
			if err != nil {
				return nil, err
			}
			ev = c.evalFor(k)
		}
		a := args[0].ct
		var b rlwe.Operand
		bDeg, bLevel := 0, 0
		if args[1].kind == "ct" {
			b = args[1].ct
			bDeg, bLevel = args[1].ct.Degree(), args[1].ct.Level()
		} else {
			b = args[1].pt
			bDeg, bLevel = 0, args[1].pt.Level()
		}
		out.kind = "ct"
		out.sk = args[0].sk
		level := minInt(a.Level(), bLevel)
		var degree int
		switch kind {
		case "add", "sub":
			degree = maxInt(a.Degree(), bDeg)
		case "mul":
			degree = a.Degree() + bDeg
		case "mul_relin":
			degree = 1
		}
		type inPlace func(*rlwe.Ciphertext, rlwe.Operand, *rlwe.Ciphertext) error
		type alloc func(*rlwe.Ciphertext, rlwe.Operand) (*rlwe.Ciphertext, error)
		var e binaryOps = ev.ckks
		if c.isBGVFamily() {
			e = ev.bgv
		}
		var f inPlace
		var g alloc
		switch kind {
		case "add":
			f, g = e.Add, e.AddNew
		case "sub":
			f, g = e.Sub, e.SubNew
		case "mul":
			f, g = e.Mul, e.MulNew
		case "mul_relin":
			f, g = e.MulRelin, e.MulRelinNew
		}
		return c.timedOutput(out, into, degree, level,
			func(o *rlwe.Ciphertext) error { return f(a, b, o) },
			func() (*rlwe.Ciphertext, error) { return g(a, b) }), nil
	}
}

func opSquare(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	return opBinary("mul")(x, s, []*value{args[0], args[0]}, out, into)
}

func opSquareRelin(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	return opBinary("mul_relin")(x, s, []*value{args[0], args[0]}, out, into)
}

// opModSwitch drops one level with the values unchanged: Rescale in BFV/BGV
// (divide-and-round by the last prime, as SEAL's mod_switch_to_next), and in
// CKKS DropLevel, which keeps the scale (used to align an operand's level).
func opModSwitch(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	if c.isBGVFamily() {
		return opRescale(x, s, args, out, into)
	}
	a := args[0].ct
	if a.Level() == 0 {
		return nil, newErr(errInternal, "step %q (mod_switch): ciphertext already at level 0", s.Out)
	}
	out.kind = "ct"
	out.sk = args[0].sk
	e := c.ev.ckks
	if into {
		o := a.CopyNew()
		out.ct = o
		return func() error { e.DropLevel(o, 1); return nil }, nil
	}
	return func() error {
		out.ct = e.DropLevelNew(a, 1)
		return nil
	}, nil
}

func opMulScalar(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	v, ok := x.attr(s, "scalar")
	if !ok {
		return nil, newErr(errInternal, "step %q (mul_scalar): missing attr \"scalar\"", s.Out)
	}
	a := args[0].ct
	out.kind = "ct"
	out.sk = args[0].sk
	if c.isBGVFamily() {
		bi, err := toBigInt(v)
		if err != nil {
			return nil, newErr(errInternal, "step %q (mul_scalar): %v", s.Out, err)
		}
		t := new(big.Int).SetUint64(c.bgvP.PlaintextModulus())
		sc := new(big.Int).Mod(bi, t).Uint64()
		e := c.ev.bgv
		// Lattigo v6.2.0's scalar Mul multiplies the polynomials but leaves the output's Scale at
		// the new ciphertext's default: after a product (whose Scale is no longer 1) the result
		// decrypted wrong in every nonzero slot. The input's Scale is carried over (a field copy,
		// inside the region as part of the call it completes).
		return c.timedOutput(out, into, a.Degree(), a.Level(),
			func(o *rlwe.Ciphertext) error {
				err := e.Mul(a, sc, o)
				o.Scale = a.Scale
				return err
			},
			func() (*rlwe.Ciphertext, error) {
				o, err := e.MulNew(a, sc)
				if o != nil {
					o.Scale = a.Scale
				}
				return o, err
			}), nil
	}
	f, err := toFloat(v)
	if err != nil {
		return nil, newErr(errInternal, "step %q (mul_scalar): %v", s.Out, err)
	}
	if f != math.Trunc(f) {
		x.note("mul_scalar (ckks): Lattigo scales a non-integer constant by the current prime q_level and multiplies the ciphertext scale by it; no rescale")
	} else {
		x.note("mul_scalar (ckks): integer constant multiplied exactly, scale unchanged")
	}
	e := c.ev.ckks
	return c.timedOutput(out, into, a.Degree(), a.Level(),
		func(o *rlwe.Ciphertext) error { return e.Mul(a, f, o) },
		func() (*rlwe.Ciphertext, error) { return e.MulNew(a, f) }), nil
}

// opRescale is CKKS rescale and BFV/BGV mod_switch: Lattigo's Rescale
// (divide and round by the last prime; BFV/BGV track the factor q_l^-1 mod t
// in the ciphertext scale, so decrypted values are unchanged). Lattigo has no
// RescaleNew: the base op allocates the output inside the timed region.
func opRescale(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	a := args[0].ct
	if a.Level() == 0 {
		return nil, newErr(errInternal, "step %q (%s): ciphertext already at level 0", s.Out, s.Op)
	}
	out.kind = "ct"
	out.sk = args[0].sk
	var f func(*rlwe.Ciphertext, *rlwe.Ciphertext) error
	if c.isBGVFamily() {
		f = c.ev.resc.Rescale
		if c.scheme == "bfv" {
			x.note("mod_switch (bfv): Lattigo's BFV-mode Rescale is a no-op; the driver calls the BGV evaluator's Rescale (DivRoundByLastModulusNTT) on the same ciphertext, which drops one level and keeps the decrypted values")
		} else {
			x.note("mod_switch (bgv): Lattigo Rescale (divide-and-round by the last prime, scale tracked mod t)")
		}
	} else {
		f = c.ev.ckks.Rescale
	}
	return c.timedOutput(out, into, a.Degree(), a.Level()-1,
		func(o *rlwe.Ciphertext) error { return f(a, o) }, nil), nil
}

// rotationPlan returns the rotation steps to apply for the step attr: one
// step, or the keyed steps fhemark spelled a step without a key of its own as
// (applied in turn), each reduced modulo the row, the identity dropped. Every
// step must have a Galois key of its own.
func (c *fheContext) rotationPlan(x *execState, s *step, ev *evaluators) ([]int, error) {
	v, ok := x.attr(s, "steps")
	if !ok {
		return nil, newErr(errInternal, "step %q (%s): missing attr \"steps\"", s.Out, s.Op)
	}
	given, isList := v.([]any)
	if !isList {
		given = []any{v}
	}
	n := int64(c.rowLen)
	var plan []int
	for _, g := range given {
		k, err := toInt(g)
		if err != nil {
			return nil, newErr(errInternal, "step %q (%s): attr \"steps\": %v", s.Out, s.Op, err)
		}
		r := ((k % n) + n) % n
		if r == 0 {
			continue
		}
		if _, err := ev.keys.GetGaloisKey(c.params.GaloisElement(int(r))); err != nil {
			return nil, newErr(errInternal, "no Galois key for rotation by %d (of %v): generate keys for that step, or keys that fhemark can spell it by", k, v)
		}
		plan = append(plan, int(r))
	}
	return plan, nil
}

func opRotate(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	k, err := x.keyAttr(s, "key", "gk", c.std["gk"])
	if err != nil {
		return nil, err
	}
	ev := c.evalFor(k)
	plan, err := c.rotationPlan(x, s, ev)
	if err != nil {
		return nil, err
	}
	a := args[0].ct
	out.kind = "ct"
	out.sk = args[0].sk
	var rot func(*rlwe.Ciphertext, int, *rlwe.Ciphertext) error
	if c.isBGVFamily() {
		rot = ev.bgv.RotateColumns
	} else {
		rot = ev.ckks.Rotate
	}
	apply := func(o *rlwe.Ciphertext) error {
		if len(plan) == 0 {
			o.Copy(a)
			return nil
		}
		src := a
		for _, st := range plan {
			if err := rot(src, st, o); err != nil {
				return err
			}
			src = o
		}
		return nil
	}
	return c.timedOutput(out, into, 1, a.Level(), apply, nil), nil
}

type unaryInto func(*rlwe.Ciphertext, *rlwe.Ciphertext) error
type unaryNew func(*rlwe.Ciphertext) (*rlwe.Ciphertext, error)

// opKeyedUnary is an operation on one ciphertext under the evaluation key named by
// the step's "key" attr (default: the setup's standard key of that kind), with the
// in-place and allocating forms of the scheme family's evaluator.
func opKeyedUnary(kind string, bgvForms, ckksForms func(ev *evaluators) (unaryInto, unaryNew)) opFn {
	return func(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
		c := x.c
		k, err := x.keyAttr(s, "key", kind, c.std[kind])
		if err != nil {
			return nil, err
		}
		ev := c.evalFor(k)
		a := args[0].ct
		out.kind = "ct"
		out.sk = args[0].sk
		forms := ckksForms
		if c.isBGVFamily() {
			forms = bgvForms
		}
		f, g := forms(ev)
		return c.timedOutput(out, into, 1, a.Level(),
			func(o *rlwe.Ciphertext) error { return f(a, o) },
			func() (*rlwe.Ciphertext, error) { return g(a) }), nil
	}
}

var (
	opRelinearize = opKeyedUnary("rlk",
		func(ev *evaluators) (unaryInto, unaryNew) { return ev.bgv.Relinearize, ev.bgv.RelinearizeNew },
		func(ev *evaluators) (unaryInto, unaryNew) { return ev.ckks.Relinearize, ev.ckks.RelinearizeNew })
	// opSwap is BFV/BGV rotate_columns (Lattigo RotateRows: swap the two rows) and CKKS conjugate.
	opSwap = opKeyedUnary("gk",
		func(ev *evaluators) (unaryInto, unaryNew) { return ev.bgv.RotateRows, ev.bgv.RotateRowsNew },
		func(ev *evaluators) (unaryInto, unaryNew) { return ev.ckks.Conjugate, ev.ckks.ConjugateNew })
)

func opKeySwitch(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	k, err := x.keyAttr(s, "key", "evk", nil)
	if err != nil {
		return nil, err
	}
	a := args[0].ct
	out.kind = "ct"
	out.sk = k.owner
	var f func(*rlwe.Ciphertext, *rlwe.EvaluationKey, *rlwe.Ciphertext) error
	var g func(*rlwe.Ciphertext, *rlwe.EvaluationKey) (*rlwe.Ciphertext, error)
	if c.isBGVFamily() {
		f, g = c.ev.bgv.ApplyEvaluationKey, c.ev.bgv.ApplyEvaluationKeyNew
	} else {
		f, g = c.ev.ckks.ApplyEvaluationKey, c.ev.ckks.ApplyEvaluationKeyNew
	}
	return c.timedOutput(out, into, a.Degree(), a.Level(),
		func(o *rlwe.Ciphertext) error { return f(a, k.evk, o) },
		func() (*rlwe.Ciphertext, error) { return g(a, k.evk) }), nil
}

func opKeygenSecret(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	out.kind = "key"
	return func() error {
		out.key = &keyVal{kind: "sk", sk: x.c.kgen.GenSecretKeyNew()}
		return nil
	}, nil
}

// keyFromSecret makes an op that derives a key from the secret key the step's `key` names (the setup's by default).
func keyFromSecret(derive func(x *execState, sk *keyVal) *keyVal) opFn {
	return func(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
		sk, err := x.keyAttr(s, "key", "sk", x.c.std["sk"])
		if err != nil {
			return nil, err
		}
		out.kind = "key"
		return func() error {
			out.key = derive(x, sk)
			return nil
		}, nil
	}
}

var opKeygenPublic = keyFromSecret(func(x *execState, sk *keyVal) *keyVal {
	return &keyVal{kind: "pk", pk: x.c.kgen.GenPublicKeyNew(sk.sk), owner: sk}
})

var opKeygenRelin = keyFromSecret(func(x *execState, sk *keyVal) *keyVal {
	return &keyVal{kind: "rlk", rlk: x.c.kgen.GenRelinearizationKeyNew(sk.sk), owner: sk}
})

func opKeygenGalois(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	c := x.c
	sk, err := x.keyAttr(s, "key", "sk", c.std["sk"])
	if err != nil {
		return nil, err
	}
	// One step or a list (step 0: the row swap / conjugation); fhemark sends the full set explicitly.
	given, err := x.listAttr(s, "steps")
	if err != nil {
		v, _ := x.attr(s, "steps")
		given = []any{v}
	}
	steps := make([]int, 0, len(given))
	for _, e := range given {
		i, err := toInt(e)
		if err != nil {
			return nil, newErr(errInternal, "step %q (keygen_galois): steps: %v", s.Out, err)
		}
		steps = append(steps, int(i))
	}
	galEls := c.galoisElements(steps)
	out.kind = "key"
	return func() error {
		out.key = &keyVal{kind: "gk", gks: c.kgen.GenGaloisKeysNew(galEls, sk.sk), owner: sk}
		return nil
	}, nil
}

func opKeygenSwitch(x *execState, s *step, args []*value, out *value, into bool) (func() error, error) {
	from, err := x.keyAttr(s, "from", "sk", nil)
	if err != nil {
		return nil, err
	}
	to, err := x.keyAttr(s, "to", "sk", nil)
	if err != nil {
		return nil, err
	}
	out.kind = "key"
	return func() error {
		out.key = &keyVal{kind: "evk", evk: x.c.kgen.GenEvaluationKeyNew(from.sk, to.sk), owner: to}
		return nil
	}, nil
}
