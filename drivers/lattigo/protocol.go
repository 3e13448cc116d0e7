package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"runtime/debug"
	"strings"
)

const protocolVersion = 2

// Error kinds a driver may send (PROTOCOL.md, "Framing").
const (
	errUnsupported   = "unsupported"
	errInvalidParams = "invalid_params"
	errInsecure      = "insecure_params"
	errInternal      = "internal"
)

// driverError is an error value answered to the orchestrator.
type driverError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *driverError) Error() string { return e.Kind + ": " + e.Message }

func newErr(kind, format string, a ...any) *driverError {
	msg := fmt.Sprintf(format, a...)
	msg = strings.ReplaceAll(msg, "\n", " ")
	return &driverError{Kind: kind, Message: msg}
}

// asDriverError keeps a driverError as is and wraps anything else as internal.
func asDriverError(err error) *driverError {
	if de, ok := err.(*driverError); ok || err == nil {
		return de
	}
	return newErr(errInternal, "%v", err)
}

type request struct {
	V             int             `json:"v"`
	ID            json.RawMessage `json:"id"`
	Type          string          `json:"type"`
	SetupID       string          `json:"setup_id"`
	Scheme        string          `json:"scheme"`
	Params        *setupParams    `json:"params"`
	Rotations     []int           `json:"rotations"`
	AllowInsecure bool            `json:"allow_insecure"`
	Program       *program        `json:"program"`
	Samples       []sampleIn      `json:"samples"`
	Pool          *pool           `json:"pool"`
}

// pool: values made before a run request's first sample, that every sample may
// read; with an id they are kept with the setup, and a pool of the id alone reads
// them (PROTOCOL.md "Pool").
type pool struct {
	ID     string                `json:"id"`
	Inputs map[string]wireVector `json:"inputs"`
	Steps  []step                `json:"steps"`
}

type setupParams struct {
	N         int          `json:"N"`
	QBits     []int        `json:"q_bits"`
	PBits     []int        `json:"p_bits"`
	T         *json.Number `json:"t"`
	ScaleBits *int         `json:"scale_bits"`
	Secret    string       `json:"secret"`
	Hamming   int          `json:"hamming_weight"` // sparse_ternary: the nonzero entries of the secret
	Sigma     *float64     `json:"sigma"`
	Preset    string       `json:"preset"`
	Sparse    int          `json:"sparse_slots"` // a sparse bootstrapping preset: the slots it packs
}

type program struct {
	Steps   []step   `json:"steps"`
	Timed   []region `json:"timed"`
	Outputs []string `json:"outputs"`
	Noise   []string `json:"noise"`
	Sizes   []string `json:"sizes"`
	Levels  []string `json:"levels"`
}

// region is a timed region: consecutive, independent steps (named by their
// out) whose library calls are timed together as ns[Name].
type region struct {
	Name  string   `json:"name"`
	Steps []string `json:"steps"`
}

type step struct {
	Out   string         `json:"out"`
	Op    string         `json:"op"`
	Args  []string       `json:"args"`
	Attrs map[string]any `json:"attrs"`
	// Discard: an untimed step nothing reads (a warm-up); its result is dropped.
	Discard bool `json:"discard"`
}

type sampleIn struct {
	Inputs  map[string]wireVector `json:"inputs"`
	Scalars map[string]any        `json:"scalars"`
}

// wireVector is a vector on the wire: base64 of a little-endian i64/f64 array.
type wireVector struct {
	Dtype string `json:"dtype"`
	B64   string `json:"b64"`
}

type reply struct {
	V      int             `json:"v"`
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result any             `json:"result,omitempty"`
	Error  *driverError    `json:"error,omitempty"`
}

// handleLine answers one request line. It never panics: a panic inside a
// request becomes an `internal` error reply. stop is true after shutdown.
func (d *driver) handleLine(line []byte) (out []byte, stop bool) {
	var req request
	id := json.RawMessage("null")

	result, derr := func() (res any, derr *driverError) {
		defer func() {
			if r := recover(); r != nil {
				log.Printf("panic in request %s: %v\n%s", string(id), r, debug.Stack())
				derr = newErr(errInternal, "panic: %v", r)
			}
		}()
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			// Try to recover the id so the orchestrator can match the reply.
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &probe) == nil && len(probe.ID) > 0 {
				id = probe.ID
			}
			return nil, newErr(errInternal, "bad request: %v", err)
		}
		if len(req.ID) > 0 {
			id = req.ID
		}
		if req.V != protocolVersion {
			return nil, newErr(errInternal, "protocol version %d not supported (this driver speaks %d)", req.V, protocolVersion)
		}
		switch req.Type {
		case "capabilities":
			return d.capabilities(), nil
		case "setup":
			r, err := d.setup(&req)
			return r, asDriverError(err)
		case "run":
			r, err := d.run(&req)
			return r, asDriverError(err)
		case "shutdown":
			stop = true
			return map[string]any{}, nil
		default:
			return nil, newErr(errUnsupported, "unknown request type %q", req.Type)
		}
	}()

	rep := reply{V: protocolVersion, ID: id}
	if derr != nil {
		rep.Error = derr
	} else {
		rep.OK = true
		rep.Result = result
	}
	b, err := json.Marshal(rep)
	if err != nil {
		rep = reply{V: protocolVersion, ID: id, Error: newErr(errInternal, "cannot encode reply: %v", err)}
		b, _ = json.Marshal(rep)
		stop = false
	}
	return b, stop
}

// ---- vectors ----

func decodeVector(v wireVector) (ints []int64, floats []float64, err error) {
	raw, err := base64.StdEncoding.DecodeString(v.B64)
	if err != nil {
		return nil, nil, fmt.Errorf("bad base64: %w", err)
	}
	if len(raw)%8 != 0 {
		return nil, nil, fmt.Errorf("vector byte length %d is not a multiple of 8", len(raw))
	}
	n := len(raw) / 8
	switch v.Dtype {
	case "i64":
		ints = make([]int64, n)
		for i := range ints {
			ints[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case "f64":
		floats = make([]float64, n)
		for i := range floats {
			floats[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	default:
		return nil, nil, fmt.Errorf("unknown dtype %q", v.Dtype)
	}
	return ints, floats, nil
}

func encodeU64AsI64(vals []uint64) wireVector {
	raw := make([]byte, 8*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], x)
	}
	return wireVector{Dtype: "i64", B64: base64.StdEncoding.EncodeToString(raw)}
}

func encodeF64(vals []float64) wireVector {
	raw := make([]byte, 8*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
	}
	return wireVector{Dtype: "f64", B64: base64.StdEncoding.EncodeToString(raw)}
}
